"""Progress of long work (issue #26, item 4): engine/core/progress.py and the commands' flags.

Library code reports through ``progress.task``; only a front end turns display on. The CLI's
commands that compile rules take ``--progress`` (always) and ``--quiet``/``-q`` (never); by
default bars show when stderr is a terminal. Bars go to stderr, never stdout. The delay before
a bar appears is set to 0 through ``GRANTLOG_PROGRESS_DELAY`` so the tests are fast.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from grantlog.engine.core import progress

import grantlog
from grantlog.cli import main
from grantlog.cli.main import build_parser
from grantlog.cli.parser import actions, walk

ROOT = Path(__file__).resolve().parent.parent
#: the generated program's chain length; its closure has N (N + 1) / 2 rows
N = 120
REACH = N * (N + 1) // 2
#: the commands that compile rules or evaluate, each with --progress and -q/--quiet
COMMANDS = ("check", "query", "explain", "eval", "test", "list", "who", "filter", "diff",
            "plan", "lint", "store load", "spark run")


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bars appear at once (no half-second delay)."""
    monkeypatch.setenv(progress.DELAY_VARIABLE, "0")


@pytest.fixture
def program(tmp_path: Path) -> Path:
    """A generated program: a chain of 120 edges, its transitive closure (recursive, many
    rounds) and derived relations over it."""
    path = tmp_path / "chain.gl"
    lines = [f'edge("n{i}", "n{i + 1}").' for i in range(N)]
    lines += ["reach(X, Y) :- edge(X, Y).", "reach(X, Z) :- reach(X, Y), edge(Y, Z).",
              f'far(X) :- reach(X, "n{N}").', 'allowed(U, read, R) :- reach(U, R).']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    got = capsys.readouterr()
    return code, got.out, got.err


# ---- the facility ----------------------------------------------------------------------------

def test_tasks_are_silent_unless_reporting(now: None, capfd: pytest.CaptureFixture[str]) -> None:
    assert not progress.enabled()
    with progress.task("work", 3) as advance:
        advance(1)
        advance(2, postfix="done")
    items = [1, 2, 3]
    assert progress.each("loop", items) is items  # not shown: the loop pays nothing per item
    assert capfd.readouterr().err == ""
    stream = io.StringIO()  # not a terminal: off by default, on when asked
    with progress.reporting(stream=stream) as shown:
        assert not shown and not progress.enabled()
        with progress.task("work", 3) as advance:
            advance(3)
    assert stream.getvalue() == ""
    with progress.reporting(True, stream) as shown:
        assert shown and progress.enabled()
        with progress.task("work", 3, "step") as advance:
            advance(1, postfix="first")
            advance(2)
        progress.note("a line of its own")
        assert list(progress.each("looping", items, "item", lambda: "so far")) == items
    text = stream.getvalue()
    assert "work" in text and "3/3" in text and "first" in text and "step" in text, text
    assert "a line of its own\n" in text
    assert "looping" in text and "3/3" in text and "so far" in text, text
    assert not progress.enabled()  # the block ended: off again
    with progress.reporting(False, stream):
        progress.note("never")
    assert "never" not in stream.getvalue()


def test_a_short_task_prints_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work shorter than the delay stays quiet even when progress is on."""
    monkeypatch.delenv(progress.DELAY_VARIABLE, raising=False)
    stream = io.StringIO()
    with progress.reporting(True, stream), progress.task("quick", 10) as advance:
        advance(10)
    assert stream.getvalue() == ""


def test_a_long_step_shows_its_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A task that does not advance is still drawn once its delay has passed (the elapsed
    time runs on): the ticker redraws it."""
    monkeypatch.setenv(progress.DELAY_VARIABLE, "0.05")
    stream = io.StringIO()
    with progress.reporting(True, stream), progress.task("one long step"):
        threading.Event().wait(1.0)
    assert "one long step" in stream.getvalue()


def test_quick_work_does_not_even_import_tqdm() -> None:
    """A bar is made once its task has lasted its delay: a quick command shown on a terminal
    neither draws nor pays for tqdm's import."""
    code = ("import io, sys\n"
            "from grantlog.engine.core import progress\n"
            "with progress.reporting(True, io.StringIO()):\n"
            "    with progress.task('quick', 3) as advance:\n"
            "        advance(3)\n"
            "    assert list(progress.each('loop', [1, 2])) == [1, 2]\n"
            "print('tqdm' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if k != progress.DELAY_VARIABLE}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=60, check=True)
    assert proc.stdout.strip() == "False", proc.stdout + proc.stderr


def test_library_use_prints_nothing(now: None, program: Path,
                                    capfd: pytest.CaptureFixture[str]) -> None:
    compiled = grantlog.compile(paths=[str(program)])
    r = grantlog.Reasoner(compiled)
    assert len(r.rows("reach")) == REACH
    r.insert("edge", [(f"n{N}", f"n{N + 1}")])
    assert r.ask('far("n0")')
    got = capfd.readouterr()
    assert got.out == "" and got.err == ""


def test_evaluation_and_maintenance_report_per_stratum(now: None, program: Path) -> None:
    compiled = grantlog.compile(paths=[str(program)])
    stream = io.StringIO()
    with progress.reporting(True, stream):
        r = grantlog.Reasoner(compiled)
        r.rows("reach")
        evaluated = stream.getvalue()
        r.insert("edge", [(f"n{N}", f"n{N + 1}")])
    assert "evaluating" in evaluated and "stratum" in evaluated, evaluated
    assert f"{REACH:,} rows" in evaluated  # the rows derived: the bar's postfix
    maintained = stream.getvalue()[len(evaluated):]
    # the new edge and the N + 1 rows of `reach` that reach its end
    assert "applying changes" in maintained and f"{N + 2} changed" in maintained, maintained


# ---- the command line ------------------------------------------------------------------------

def test_commands_that_compile_rules_take_progress_and_quiet() -> None:
    found: dict[str, tuple[Any, Any]] = {}
    for path, parser in walk(build_parser()):
        flags = {f: a for a in actions(parser) for f in a.option_strings}
        if "--progress" in flags or "--quiet" in flags or "-q" in flags:
            # one meaning: one argument `progress`, True, False or None (a terminal decides)
            assert flags["--progress"].dest == flags["--quiet"].dest == "progress", path
            assert flags["-q"] is flags["--quiet"], path
            assert (flags["--progress"].const, flags["--quiet"].const) == (True, False)
            assert flags["--progress"].default is None, path
            found[" ".join(path)] = (flags["--progress"], flags["--quiet"])
    assert set(COMMANDS) <= set(found), set(COMMANDS) - set(found)
    assert "fmt" not in found and "serve" not in found
    with pytest.raises(SystemExit):  # one or the other
        build_parser().parse_args(["eval", "x.gl", "-q", "--progress"])


def test_eval_shows_progress_on_stderr_when_asked(now: None, program: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, plain, err = run(capsys, "eval", str(program))
    assert code == 0 and err == ""  # capsys' stderr is not a terminal: quiet by default
    code, out, err = run(capsys, "eval", str(program), "--progress")
    assert code == 0 and out == plain  # stdout unchanged
    assert "evaluating" in err and "writing" in err and "row" in err, err
    code, out, err = run(capsys, "eval", str(program), "--quiet")
    assert (code, out, err) == (0, plain, "")
    code, out, err = run(capsys, "eval", str(program), "-q")
    assert (code, out, err) == (0, plain, "")


def test_json_output_stays_json(now: None, program: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "eval", str(program), "--json", "--progress")
    assert code == 0 and "evaluating" in err
    assert len(json.loads(out)["reach"]) == REACH
    code, out, err = run(capsys, "check", str(program), "--json", "--progress",
                         "n0", "read", "n1")
    assert code == 0 and "deciding" in err
    assert json.loads(out)["allowed"] is True
    code, out, err = run(capsys, "query", str(program), "far(X)", "--json", "--progress")
    assert code == 0 and "answering" in err and len(json.loads(out)) == N


def test_other_commands_take_the_flags(now: None, program: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["query", str(program), "far(X)"], ["explain", str(program), 'far("n0")'],
                 ["plan", str(program), "far(X)"], ["test", str(program)],
                 ["lint", str(program)]):
        code, _, err = run(capsys, *argv, "-q")
        assert err == "", (argv, err)
    code, _, err = run(capsys, "query", str(program), "far(X)", "--progress")
    assert code == 0 and "answering" in err and "evaluating" in err
    facts = tmp_path / "more.gl"
    facts.write_text(f'edge("n{N}", "n{N + 1}").\n', encoding="utf-8")
    code, out, err = run(capsys, "diff", str(program), "--facts-after", str(facts), "-r", "reach",
                         "--progress", "--no-proofs")
    assert code == 1 and "comparing" in err and f"n{N + 1}" in out


def test_store_load_and_reads_show_progress(now: None, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "rules.gl"
    rules.write_text("rel edge(from: string, to: string).\n"
                     "reach(X, Y) :- edge(X, Y).\nreach(X, Z) :- reach(X, Y), edge(Y, Z).\n"
                     "allowed(U, read, R) :- reach(U, R).\n", encoding="utf-8")
    facts = tmp_path / "facts.gl"
    facts.write_text("".join(f'edge("n{i}", "n{i + 1}").\n' for i in range(N)),
                     encoding="utf-8")
    store = f"sqlite:///{tmp_path / 'facts.db'}"
    code, out, err = run(capsys, "store", "load", store, str(facts), "--rules", str(rules),
                         "--create", "--json", "--progress")
    assert code == 0, err
    assert json.loads(out)["added"] == N
    assert "storing" in err and "edge" in err, err
    code, out, err = run(capsys, "check", str(rules), "--store", store, "--progress",
                         "n0", "read", f"n{N}")
    assert code == 0 and out.startswith("ALLOW"), err
    assert "reading the store" in err and "deciding" in err, err
    code, out, err = run(capsys, "check", str(rules), "--store", store, "n0", "read", "n1")
    assert code == 0 and err == ""


def _pty_stderr(argv: list[str], env: dict[str, str]) -> tuple[int, bytes, bytes]:
    """Run ``argv`` with stderr on a pseudo-terminal (80 x 24) and stdout on a pipe: its exit
    code, stdout and what the terminal received."""
    pty = pytest.importorskip("pty")
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    received: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the other side closed
                return
            if not data:
                return
            received.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=slave, env=env, timeout=120,
                              check=False)
    finally:
        os.close(slave)
        reader.join(10)
        os.close(master)
    return proc.returncode, proc.stdout, b"".join(received)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_on_a_terminal_bars_show_by_default(program: Path) -> None:
    env = dict(os.environ, **{progress.DELAY_VARIABLE: "0"})
    cli = [sys.executable, "-m", "grantlog.cli"]
    code, out, shown = _pty_stderr([*cli, "eval", str(program), "-r", "reach"], env)
    assert code == 0 and out.count(b"\n") == 1 + REACH  # stdout: only the rows
    assert b"evaluating" in shown and b"\r" in shown, shown[:400]
    assert b"evaluating" not in out
    code, out, shown = _pty_stderr([*cli, "eval", str(program), "-r", "reach", "-q"], env)
    assert code == 0 and shown == b""


# ---- Spark -----------------------------------------------------------------------------------

def test_spark_strata_report_through_the_same_facility(spark: Any, now: None) -> None:
    """A Spark run's strata advance one bar, and its per-stratum lines go above it (the
    command line's --progress and --quiet: tests/test_spark_goalless.py)."""
    from grantlog import spark_bridge as sb

    program = grantlog.compile("e(a, b). e(b, c). e(c, d).\n"
                               "p(X, Y) :- e(X, Y). p(X, Z) :- p(X, Y), e(Y, Z).\n")
    stream = io.StringIO()
    with progress.reporting(True, stream):
        result = sb.run(program, spark, progress=progress.note)
        assert result.relations["p"].count() == 6
    text = stream.getvalue()
    assert "Spark strata" in text and "stratum" in text, text
    assert "stratum 0 [e]" in text or "[p]" in text, text  # a line per stratum
