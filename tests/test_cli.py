"""The `grantlog` command line: outputs, exit codes, errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grantlog.cli import main

GRAPH = """\
edge(1, 2).
edge(2, 3).
path(X, Y) :- edge(X, Y).
path(X, Z) :- path(X, Y), edge(Y, Z).

test "reaches" {
    edge(3, 4).
    expect path(1, 4).
}

test "wrong on purpose" {
    expect not path(1, 3).
}
"""


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    f = tmp_path / "graph.gl"
    f.write_text(GRAPH)
    return f


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_eval_text_and_json(graph: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "eval", str(graph))
    assert code == 0
    assert "path(1, 3)." in out and "// path: 3 rows" in out
    code, out, _ = run(capsys, "eval", str(graph), "--json")
    assert json.loads(out)["path"] == [[1, 2], [1, 3], [2, 3]]


def test_query_answers_and_no(graph: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "query", str(graph), "path(1, X)") == (0, "X = 2\nX = 3\n", "")
    assert run(capsys, "query", str(graph), "path(3, X)")[:2] == (1, "no\n")
    assert run(capsys, "query", str(graph), "path(1, 3)")[:2] == (0, "yes\n")


def test_test_command_counts(graph: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "test", str(graph))
    assert code == 1
    assert out.splitlines()[-1] == "1 passed, 1 failed"
    assert "FAIL wrong on purpose" in out
    assert "expected no answer for `path(1, 3)`" in out


def test_check_and_explain(capsys: pytest.CaptureFixture[str]) -> None:
    files = ["examples/demo/policy.gl", "examples/demo/facts.gl"]
    code, out, _ = run(capsys, "check", *files, "alice", "load_table", "m1.c1.s1.t1")
    assert code == 0 and out.startswith("ALLOW ")
    code, out, _ = run(capsys, "check", *files, "bob", "load_table", "m1.c1.s1.t2")
    assert code == 1 and out.startswith("DENY ")
    code, out, _ = run(capsys, "explain", *files, 'allowed(carol, drop_table, "m1.c1.s1.t1")')
    assert code == 0 and "owner_all" in out and "owner(carol" in out


def test_user_errors_exit_2_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.gl"
    bad.write_text("p(X) :- q(Y).\nq(1).\n")
    code, out, err = run(capsys, "eval", str(bad))
    assert code == 2 and out == ""
    assert "error[unsafe-variable]" in err and "Traceback" not in err
    code, _, err = run(capsys, "eval", str(tmp_path / "missing.gl"))
    assert code == 2 and "error[file-not-found]" in err
    code, _, err = run(capsys, "query", "examples/demo/policy.gl", "allowed(X")
    assert code == 2 and "error[syntax-error]" in err


def test_fmt_check_and_rewrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "messy.gl"
    f.write_text("p(X):-q(X) ,r( X ).  // keep me\nq(1). r(1).\n")
    code, out, _ = run(capsys, "fmt", "--check", str(f))
    assert code == 1 and "would reformat" in out
    assert run(capsys, "fmt", str(f))[0] == 0
    assert f.read_text() == "p(X) :- q(X), r(X).  // keep me\nq(1).\nr(1).\n"
    assert run(capsys, "fmt", "--check", str(f))[0] == 0


def test_lint_reports_style_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "lint.gl"
    f.write_text("rel unused(a).\np(X) :- q(X, Y).\nq(1, 2).\n")
    code, _, err = run(capsys, "lint", str(f))
    assert code == 1
    assert "warning[singleton-variable]" in err and "warning[unused-relation]" in err
    clean = tmp_path / "clean.gl"
    clean.write_text("p(X) :- q(X).\nq(1).\n")
    assert run(capsys, "lint", str(clean))[0] == 0


def test_console_script_is_installed() -> None:
    exe = Path(sys.executable).parent / "grantlog"
    res = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "grantlog 0.1.0"


def test_models_and_model_inputs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "models")
    names = [line.split()[0] for line in out.splitlines()]
    assert code == 0 and names == ["cdap_entity", "cdap_parent", "gravitino", "gravitino_data",
                                   "onehouse", "three_tier"]
    code, _, err = run(capsys, "check", "-m", "nosuch", "a", "b", "c")
    assert code == 2 and "error[unknown-model]" in err
    # every command reads --model through grantlog.cli.inputs: the same diagnostic
    for argv in (["diff", "-m", "nosuch", "--facts-after", "x.gl"],
                 ["plan", "-m", "nosuch", "p(X)"], ["serve", "-m", "nosuch"]):
        code, _, other = run(capsys, *argv)
        assert code == 2 and other == err, argv


def test_every_command_group_registers_its_commands(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()
              if line.startswith("    ") and not line.startswith("     ")}
    assert listed == {
        "eval", "query", "explain", "check", "test", "fmt", "lint", "lsp", "models", "list",
        "filter", "who", "import", "spark", "store", "serve", "logs", "diff", "plan",
        "history", "review", "explore", "completion"}


def test_list_who_on_a_shipped_model(capsys: pytest.CaptureFixture[str]) -> None:
    facts = ["-m", "gravitino", "-f", "examples/gravitino/facts.gl"]
    code, out, _ = run(capsys, "list", *facts, "alice", "load_table", "--type", "table")
    tables = out.split()
    assert code == 0 and tables and all(t.startswith('"m1.') for t in tables)
    code, out, _ = run(capsys, "who", *facts, "load_table", tables[0].strip('"'))
    assert code == 0 and "alice" in out.split()
    schema = tables[0].strip('"').rsplit(".", 1)[0]
    code, out, _ = run(capsys, "list", *facts, "alice", "load_table", "--within", schema)
    below = out.split()
    assert code == 0 and below and set(below) <= set(tables)
    assert all(t.strip('"').startswith(schema + ".") for t in below)
    assert below == [t for t in tables if t.strip('"').startswith(schema + ".")]
    code, out, _ = run(capsys, "list", *facts, "alice", "load_table", "-w", "m1.nosuch")
    assert code == 1 and out == ""


def test_import_gravitino_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "import", "gravitino", "examples/gravitino/json")
    assert code == 0 and "privilege(" in out and "role_of(" in out
    bad = tmp_path / "users.json"
    bad.write_text("[{")
    code, _, err = run(capsys, "import", "gravitino", str(tmp_path))
    assert code == 2 and "error[bad-import]" in err


def test_test_coverage_report(graph: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "test", "--coverage", str(graph))
    assert code == 1  # one test in the file fails on purpose
    assert "rule coverage: 2/2 rules fired in some test (100.0%)" in out
