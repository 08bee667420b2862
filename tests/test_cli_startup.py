"""The command line's start-up (issue 26): a command builds and imports only its own group's
parsers, not the service's, the store's or Spark's; `import grantlog` leaves the client for
first use; ``eval --json`` writes the same text as ``json.dumps(..., indent=2)``, faster."""

from __future__ import annotations

import gc
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from grantlog.engine.core.ir import sorted_rows

from grantlog.cli.main import COMMANDS, GROUPS, build_parser, chosen, main
from grantlog.cli.parser import commands
from grantlog.cli.rules import json_relations

#: modules a one-shot `grantlog eval` has no use for
NOT_FOR_EVAL = ("grantlog.service", "grantlog.store", "grantlog.spark_bridge", "grantlog.client",
                "grantlog.lsp", "grantlog.filters", "tqdm", "argcomplete", "httpx", "starlette",
                "uvicorn", "pyspark", "orjson")


def imported_after(code: str) -> set[str]:
    """The modules loaded by a fresh interpreter after running ``code``."""
    listing = "\nimport sys\nprint('\\n'.join(sys.modules))"
    got = subprocess.run([sys.executable, "-c", code + listing], check=True,
                         capture_output=True, text=True)
    return set(got.stdout.split())


def unwanted(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if any(m == n or m.startswith(n + ".") for n in NOT_FOR_EVAL))


def test_eval_imports_no_front_end(tmp_path: Path) -> None:
    rules = tmp_path / "r.gl"
    rules.write_text('edge("a", "b").\npath(X, Y) :- edge(X, Y).\n', encoding="utf-8")
    mods = imported_after(
        "import contextlib, io\nfrom grantlog.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['eval', {str(rules)!r}, '--json']) == 0\n")
    assert "grantlog.cli.rules" in mods
    assert unwanted(mods) == []
    assert "grantlog.cli.authoring" not in mods and "grantlog.cli.listing" not in mods


def test_import_grantlog_leaves_the_client_for_first_use() -> None:
    mods = imported_after("import grantlog")
    assert unwanted(mods) == []
    mods = imported_after("import grantlog\nassert grantlog.Client.__name__ == 'Client'\n"
                          "from grantlog import Client\nassert 'Client' in dir(grantlog)")
    assert "grantlog.client" in mods


def test_command_table_matches_the_groups() -> None:
    """``COMMANDS`` names, for every command, the group that registers it, in the order
    ``grantlog -h`` lists them; a group built alone registers exactly its commands."""
    assert list(commands(build_parser())) == list(COMMANDS)
    for group in GROUPS:
        mine = [c for c, g in COMMANDS.items() if g == group]
        assert mine, group
        assert list(commands(build_parser(mine[0]))) == mine


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_parses_and_helps_as_in_the_whole_parser(command: str) -> None:
    whole = commands(build_parser())[command]
    alone = commands(build_parser(command))[command]
    assert alone.format_help() == whole.format_help()
    assert alone.prog == whole.prog == f"grantlog {command}"


def test_chosen_only_for_a_leading_command() -> None:
    assert chosen(["eval", "x.gl"]) == "eval"
    assert chosen(["--version"]) is None
    assert chosen(["-h", "eval"]) is None
    assert chosen(["evl"]) is None  # the whole parser says what the choices are
    assert chosen([]) is None


def test_unknown_command_lists_every_choice(capsys: pytest.CaptureFixture[str]) -> None:
    from grantlog.cli import main

    with pytest.raises(SystemExit) as e:
        main(["evl"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'evl'" in err and "'serve'" in err and "'completion'" in err


def rows_cases() -> list[dict[str, set[tuple[object, ...]]]]:
    cases: list[dict[str, set[tuple[object, ...]]]] = [
        {}, {"a": set()}, {"z": {()}}, {"r": {("x", 1), ("y", 2)}, "e": set(), "p": {()}},
        {"ü\"k": {("],\n      [", -5), ("a]", 3), ("\n", 0), ("é\u2028", 10**20)}},
    ]
    rnd = random.Random(1)
    values: list[object] = ["a", "b]", "[c", ",", "\\", '"', 1, -2, "x\ny", "\x00", "],"]
    strings: list[object] = ["a", "b]", "[c", ",", '"', "x\ny", "\x01", "é", "\u2028", "u0000",
                             '",\n      "', "a b"]
    for _ in range(100):
        case = {}
        for k in range(rnd.randrange(4)):
            width = rnd.randrange(1, 4)
            case[f"s{k}"] = {tuple(rnd.choice(strings) for _ in range(width))
                             for _ in range(rnd.randrange(8))}
        cases.append(case)
    for _ in range(100):
        case = {}
        for k in range(rnd.randrange(4)):
            width = rnd.randrange(4)
            case[f"r{k}"] = {tuple(rnd.choice(values) for _ in range(width))
                             for _ in range(rnd.randrange(6))}
        cases.append(case)
    return cases


def test_json_relations_is_json_dumps_indented() -> None:
    for case in rows_cases():
        want = json.dumps({k: list(map(list, sorted_rows(v))) for k, v in case.items()},
                          indent=2, ensure_ascii=False)
        assert json_relations(case) == want, case


#: a fresh `grantlog eval` that records, at the start of every collection, how many objects
#: generation 0 held (what a collection of it walks), then prints the largest
_WALKS = """
import gc, sys
most = [0]
gc.callbacks.append(lambda phase, info: phase == "start" and most.__setitem__(
    0, max(most[0], gc.get_count()[0])))
from grantlog.cli.main import main
sys.argv = ["grantlog", "eval", *sys.argv[1:]]
code = main()
sys.stderr.write(f"{most[0]}\\n")
sys.exit(code)
"""


def test_eval_freezes_its_rows_before_the_collector_returns(tmp_path: Path) -> None:
    """A one-shot ``eval`` makes its rows with the collector off; it freezes them before
    switching it back on, so no collection walks them (before: the first one after the
    command walked every row, ~0.5 s of the hmmer-like case). Called from Python (``main(argv)``),
    nothing is frozen: the caller's objects stay collectable."""
    rules, facts = tmp_path / "r.gl", tmp_path / "f.gl"
    rules.write_text("rel edge(a: string, b: string).\n"
                     "path(X, Y) :- edge(X, Y).\npath(X, Z) :- edge(X, Y), path(Y, Z).\n",
                     encoding="utf-8")
    facts.write_text("".join(f'edge("n{i}", "n{i + 1}").\n' for i in range(300)),
                     encoding="utf-8")
    got = subprocess.run([sys.executable, "-c", _WALKS, str(rules), str(facts), "--json"],
                         check=True, capture_output=True, text=True)
    assert len(json.loads(got.stdout)["path"]) == 300 * 301 // 2
    assert int(got.stderr.split()[-1]) < 5_000  # a collection's usual threshold: 700

    frozen = gc.get_freeze_count()
    assert main(["eval", str(rules), str(facts)]) == 0  # (prints to the captured stdout)
    assert gc.get_freeze_count() == frozen
