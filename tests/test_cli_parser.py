"""The command line's parser (issue #27, items 5 and 6): options anywhere among the
positionals, one meaning per flag in every command, help for every option, usage lines that
read well, shell completion (argcomplete) and man pages generated from the parser."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grantlog.cli import build_parser, main
from grantlog.cli.parser import actions, command_help, commands, walk

ROOT = Path(__file__).resolve().parent.parent
FACTS = str(ROOT / "examples" / "gravitino" / "facts.gl")
DEMO_RULES = str(ROOT / "examples" / "demo" / "policy.gl")
DEMO_FACTS = str(ROOT / "examples" / "demo" / "facts.gl")
ORDERS = "m1.lakehouse.sales.orders"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def every_parser() -> list[tuple[str, argparse.ArgumentParser]]:
    return [(" ".join(("grantlog", *path)), p) for path, p in walk(build_parser())]


# ---- 5. options anywhere ---------------------------------------------------------------------


def test_check_takes_options_between_its_positionals(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    # the example: RULES --json FACTS alice ... was "unrecognized arguments"
    rules = str(ROOT / "rules" / "gravitino.gl")
    code, out, _ = run(capsys, "check", rules, "--json", FACTS, "alice", "load_table", ORDERS)
    assert code == 0 and json.loads(out)["allowed"] is True
    code, out, _ = run(capsys, "check", "alice", "--model", "gravitino", "load_table",
                       "--facts", FACTS, ORDERS, "--json")
    assert code == 0 and json.loads(out)["allowed"] is True
    a = parse("check", "a.gl", "-f", "f.gl", "b.gl", "--json", "s", "-m", "gravitino", "o", "r")
    assert (a.files, a.subject, a.operation, a.resource) == (["a.gl", "b.gl"], "s", "o", "r")
    assert (a.facts, a.model, a.json) == (["f.gl"], "gravitino", True)


def test_options_anywhere_in_other_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list", "--model", "gravitino", "alice", "--type", "table",
                       "load_table", "--facts", FACTS, "--json")
    assert code == 0 and ORDERS in json.loads(out)
    code, out, _ = run(capsys, "who", "load_table", "--json", "--model", "gravitino", ORDERS,
                       "-f", FACTS)
    assert code == 0 and "alice" in json.loads(out)
    code, out, _ = run(capsys, "query", DEMO_RULES, "-r" if False else "--json", DEMO_FACTS,
                       "allowed(U, O, R)")
    assert code == 0 and json.loads(out)
    code, out, _ = run(capsys, "eval", DEMO_RULES, "-r", "allowed", DEMO_FACTS)
    assert code == 0 and "// allowed:" in out and DEMO_FACTS not in out
    # nested commands parse the same way
    a = parse("store", "load", "--model", "gravitino", "sqlite:///x.db", "--json", "d1.gl",
              "--rules", "r.gl", "d2.csv")
    assert (a.store, a.data, a.rules, a.model, a.json) == (
        "sqlite:///x.db", ["d1.gl", "d2.csv"], ["r.gl"], "gravitino", True)
    a = parse("logs", "replay", "a.log", "--rules", "new.gl", "b.log", "-s", "sqlite:///x.db")
    assert (a.logs, a.rules, a.store) == (["a.log", "b.log"], ["new.gl"], "sqlite:///x.db")
    a = parse("spark", "run", "a.gl", "--output", "out", "b.gl", "-r", "allowed", "--json")
    assert (a.files, a.output, a.relation, a.json) == (["a.gl", "b.gl"], "out", ["allowed"],
                                                       True)
    a = parse("import", "gravitino", "--metalake", "m2", "dir", "-o", "x.gl")
    assert (a.dir, a.metalake, a.output) == ("dir", "m2", "x.gl")
    a = parse("diff", "a.gl", "-r", "member", "b.gl", "--facts-after", "f.gl")
    assert (a.files, a.relation, a.facts_after) == (["a.gl", "b.gl"], "member", ["f.gl"])


def test_store_load_rules_take_one_file_each(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    # `--rules` swallowed the positionals after it: `store load --rules R STORE DATA` failed
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    assert run(capsys, "store", "init", "--rules", DEMO_RULES, url)[0] == 0
    code, out, err = run(capsys, "store", "load", "--rules", DEMO_RULES, url, DEMO_FACTS,
                         "--json")
    assert code == 0, err
    assert json.loads(out)["added"] > 0
    code, out, _ = run(capsys, "check", "--store", url, DEMO_RULES, "--json", "carol", "read",
                       "t1")
    assert code in (0, 1) and "allowed" in json.loads(out)


def test_a_missing_positional_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", "--model", "gravitino", "alice", "load_table"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "usage: grantlog check [options] [FILE ...] SUBJECT OPERATION RESOURCE" in err
    assert "required: RESOURCE" in err


# ---- 6. one meaning per flag -----------------------------------------------------------------

#: flag -> (dest, action class name) in every command that has it
MEANING = {
    "-r": ("relation", None), "--relation": ("relation", None),
    "-m": ("model", "_StoreAction"), "--model": ("model", "_StoreAction"),
    "-f": ("facts", "_AppendAction"), "--facts": ("facts", "_AppendAction"),
    "-s": ("store", "_StoreAction"), "--store": ("store", "_StoreAction"),
    "--rules": ("rules", "_AppendAction"),
    "--json": ("json", "_StoreTrueAction"),
    "--strict": ("strict", "_StoreTrueAction"),
}


def test_each_flag_means_the_same_in_every_command() -> None:
    seen: dict[str, set[str]] = {}
    for prog, parser in every_parser():
        for action in actions(parser):
            for flag in action.option_strings:
                if flag not in MEANING:
                    continue
                seen.setdefault(flag, set()).add(prog)
                dest, kind = MEANING[flag]
                if prog == "grantlog explain" and flag == "--json":  # --format json
                    assert (action.dest, action.const) == ("format", "json")
                    continue
                assert action.dest == dest, (prog, flag, action.dest)
                assert kind is None or type(action).__name__ == kind, (prog, flag)
    # the commands the issue names have the inputs it asks for
    assert {"grantlog serve", "grantlog diff", "grantlog logs replay",
            "grantlog spark run"} <= seen["--facts"]
    assert {"grantlog logs replay", "grantlog spark run", "grantlog test",
            "grantlog lint", "grantlog store init"} <= seen["--model"]
    assert {"grantlog filter", "grantlog serve", "grantlog spark run",
            "grantlog store verify", "grantlog logs replay"} <= seen["--json"]
    assert "grantlog store load" not in seen["-f"] and "grantlog store dump" not in seen["-f"]


def test_every_command_reading_rules_takes_them_the_same_way() -> None:
    for prog, parser in every_parser():
        flags = {f for a in actions(parser) for f in a.option_strings}
        dests = {a.dest for a in actions(parser)}
        if "--model" not in flags:
            continue
        assert "-m" in flags, prog
        # the rule files: positionals FILE..., or --rules FILE where the positionals are other
        assert "files" in dests or "--rules" in flags or prog in (
            "grantlog test", "grantlog lint", "grantlog filter"), prog


def test_every_option_positional_and_command_has_help() -> None:
    missing = []
    for prog, parser in every_parser():
        listed = command_help(parser)
        assert set(listed) == set(commands(parser)), prog
        missing += [f"{prog} {name}" for name, text in listed.items() if not text]
        for action in actions(parser):
            if listed and not action.option_strings and action.dest in (
                    "command", "store_command", "logs_command", "system", "spark_command"):
                continue  # the COMMAND positional: its commands' help is checked above
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{prog} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


@pytest.mark.parametrize(("argv", "usage"), [
    (["check"], "grantlog check [options] [FILE ...] SUBJECT OPERATION RESOURCE"),
    (["query"], "grantlog query [options] [FILE ...] GOAL"),
    (["list"], "grantlog list [options] [FILE ...] SUBJECT OPERATION"),
    (["who"], "grantlog who [options] [FILE ...] OPERATION RESOURCE"),
    (["store", "load"], "grantlog store load [options] STORE DATA [DATA ...]"),
    (["spark", "run"], "grantlog spark run [options] [FILE ...]"),
])
def test_usage_lines_read_well(argv: list[str], usage: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--help"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.splitlines()[0] == f"usage: {usage}"


def test_filter_json_with_sql(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sqlglot")
    layout = tmp_path / "layout.toml"
    layout.write_text('table = "objects"\nid = "id"\ntype = "type"\npath = "path"\n')
    args = ["filter", "--model", "gravitino", "-f", FACTS, "alice", "load_table", "--type",
            "table", "--sql", "sqlite", "--layout", str(layout)]
    code, sql, _ = run(capsys, *args)
    assert code == 0
    code, out, _ = run(capsys, *args, "--json")
    assert code == 0 and json.loads(out) == {"dialect": "sqlite", "sql": sql.strip()}


def test_test_and_lint_take_a_model(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "test", "--model", "three_tier", "--json")
    report = json.loads(out)
    assert code == 0 and report["passed"] > 0 and report["failed"] == 0
    assert {Path(t["file"]).name for t in report["tests"]} == {"three_tier_test.gl"}
    code, _, err = run(capsys, "lint", "-m", "nosuch")
    assert code == 2 and "unknown-model" in err


def test_serve_and_diff_read_facts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("uvicorn")
    missing = str(tmp_path / "nosuch.gl")
    code, _, err = run(capsys, "serve", "--model", "gravitino", "--facts", missing)
    assert code == 2 and "nosuch.gl" in err and "listening" not in err
    revoked = tmp_path / "revoked.gl"
    revoked.write_text("")
    # --facts is on both sides: the same facts, so nothing changes
    code, out, _ = run(capsys, "diff", "--model", "gravitino", "-f", FACTS, "--facts-after",
                       str(revoked), "--json", "--no-proofs")
    assert code == 0 and json.loads(out)["gained"] == [] and json.loads(out)["lost"] == []


def test_serve_announces_its_start_as_json(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    from httpserver import serve, stop

    proc, url = serve(tmp_path, "--model", "gravitino", "--facts", FACTS, "--json")
    try:
        lines = next(tmp_path.glob("serve-*.log")).read_text().splitlines()
        info = next(json.loads(x)["serving"] for x in lines if x.startswith("{"))
        assert info["url"] == url and info["workers"] == 1 and info["rule_files"] >= 2
        assert len(info["policy"]) > 8
    finally:
        stop(proc)


def test_spark_run_takes_the_common_inputs_and_json(spark: object, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code, stdout, err = run(capsys, "spark", "run", DEMO_RULES, "-o", str(out), "--json",
                            "-f", DEMO_FACTS, "-r", "allowed")
    assert code == 0, err
    summary = json.loads(stdout.splitlines()[-1])
    assert summary["relations"] == {"allowed": str(out / "allowed")}
    assert (out / "allowed").is_dir()


# ---- completion and man pages ----------------------------------------------------------------


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "completion", shell)
    assert code == 0 and "grantlog" in out
    assert ("complete" in out) and len(out.splitlines()) > 5


def _complete(line: str, tmp_path: Path) -> list[str]:
    """What argcomplete answers a shell completing ``line`` (its environment protocol)."""
    answer = tmp_path / "completions.txt"
    env = {**os.environ, "_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line)),
           "_ARGCOMPLETE_STDOUT_FILENAME": str(answer), "_ARGCOMPLETE_IFS": "\n"}
    grantlog = Path(sys.executable).parent / "grantlog"
    proc = subprocess.run([str(grantlog)], env=env, capture_output=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return answer.read_text().split()


def test_argcomplete_completes_commands_options_and_models(tmp_path: Path) -> None:
    if not (Path(sys.executable).parent / "grantlog").exists():
        pytest.skip("the grantlog script is not installed next to this Python")
    assert _complete("grantlog ch", tmp_path) == ["check"]
    assert _complete("grantlog store lo", tmp_path) == ["load", "log"]
    assert _complete("grantlog check rules.gl --js", tmp_path) == ["--json"]
    assert _complete("grantlog check --model grav", tmp_path) == ["gravitino", "gravitino_data"]


def test_man_pages_are_up_to_date() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_man.py"), "--check"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (ROOT / "docs" / "man" / "grantlog.1").read_text(encoding="utf-8")
    assert page.startswith(".TH GRANTLOG") and "grantlog check" in page
    assert (ROOT / "docs" / "man" / "grantlog-store-load.1").exists()
