"""Fuzzing every input grantlog reads: rule text (parser, compiler, formatter, CLI), fact files,
Gravitino REST JSON (`grantlog import gravitino`) and Spark input mappings.

Inputs start valid (tests/strategies.py: `policy_files`, `source_files`, `fact_files`,
`gravitino_dirs`) and are then mutated grammar-aware (`token_mutated`: token deletions,
duplications, swaps, truncation, random unicode, deep nesting, very long identifiers and
integers) or byte-level (`byte_mutated`: bit flips, invalid UTF-8) or structurally
(`json_mutated`: wrong types, missing keys, nulls, huge numbers, nested garbage).

The property everywhere: success, or a ``GrantlogError`` whose diagnostics each carry a code
and a span; never another exception; and every example finishes within :data:`BOUND` seconds
(in a thread joined with a timeout: hypothesis's deadline cannot stop a hang). The CLI exits
with a documented code (0, 1, 2; 3 is an internal error, a bug) and never prints a traceback.

tests/test_properties.py (part c) already throws character-level junk at the same entry points;
this file adds the grammar-aware and byte-level mutations, annotations, test blocks, argv,
stdin, fact files and JSON. Each bug it found has a regression test at the end.

Example counts are small (the file runs in well under a minute); multiply them with
``GRANTLOG_FUZZ_SCALE=20`` for a long local run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import strategies as gen
from conftest import within
from grantlog.engine.answer.testing import run_tests
from grantlog.grammar import format_text
from grantlog.grammar.parser import parse, parse_goal
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from test_properties import assert_formats_cleanly

import grantlog
from grantlog import cli
from grantlog.interop import load_gravitino_dir, to_gl

ROOT = Path(__file__).resolve().parent.parent
DEMO_POLICY = ROOT / "examples" / "demo" / "policy.gl"
#: seconds one example may take (parse, compile, format, evaluate, a handful of CLI runs)
BOUND = 10.0
SCALE = max(1, int(os.environ.get("GRANTLOG_FUZZ_SCALE", "1")))
#: the exit codes README.md documents; 3 (internal error) is documented too, but is a bug
EXIT_CODES = {0, 1, 2}


def fuzz(examples: int) -> Callable[[Any], Any]:
    """Hypothesis settings for a fuzz test: few examples (times ``GRANTLOG_FUZZ_SCALE``),
    the rest from the active profile (``ci`` is derandomized)."""
    return settings(max_examples=examples * SCALE,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def bounded(fn: Callable[[], Any]) -> Any:
    return within(BOUND, fn)


def assert_good_error(err: grantlog.GrantlogError, located: bool = True) -> None:
    """Every diagnostic has a code and a span (with a line and column when ``located``: text
    input always has a position; JSON files without a syntax error are located at line 0)."""
    assert err.diagnostics, "a GrantlogError without diagnostics"
    for d in err.diagnostics:
        assert isinstance(d.code, str) and d.code, d
        assert isinstance(d.span, grantlog.Span) and d.span.file, d
        if located:
            assert d.span.line >= 1 and d.span.col >= 1, d
    str(err)  # renders


def _valid_texts() -> st.SearchStrategy[str]:
    # policy files twice: they compile more often than `source_files`, which only parse
    return gen.policy_files() | gen.policy_files() | gen.source_files()


def _texts() -> st.SearchStrategy[str]:
    """Valid texts, and (mostly) token-mutated ones."""
    valid = _valid_texts()
    return valid | gen.token_mutated(valid) | gen.token_mutated(valid)


# ---------------------------------------------------------------------------------------------
# parser, compiler, formatter


def _parse_compile_evaluate(text: str) -> str:
    """Parse (as a file and as a goal), compile, evaluate, run the test blocks, within the
    bound; what happened, for hypothesis's statistics."""

    def run() -> str:
        for fn in (parse, parse_goal):
            try:
                fn(text, "fuzz.gl")
            except grantlog.GrantlogError as err:
                assert_good_error(err)
        try:
            program = grantlog.compile(text, filename="fuzz.gl")
        except grantlog.GrantlogError as err:
            assert_good_error(err)
            return f"refused: {err.diagnostics[0].code}"
        for w in program.warnings:
            assert w.code and w.span.line >= 1, w
        grantlog.Reasoner(program).all_rows()
        run_tests(program)
        return "compiled"

    result: str = bounded(run)
    return result


@fuzz(25)
@given(text=gen.policy_files())
def test_compile_valid_programs(text: str) -> None:
    """Programs that mostly compile (long rules among them), evaluated, their tests run."""
    note(repr(text[:2000]))
    event(_parse_compile_evaluate(text))


@fuzz(60)
@given(text=_texts())
def test_parse_and_compile(text: str) -> None:
    note(repr(text[:2000]))
    event(_parse_compile_evaluate(text))


@fuzz(60)
@given(text=_texts())
def test_format(text: str) -> None:
    """`grantlog fmt`'s code path: a text that parses formats to a text that re-parses to the
    same AST, keeps its comments and is a fixed point; one that does not parse is refused with
    a located GrantlogError."""
    note(repr(text[:2000]))

    def run() -> None:
        try:
            parse(text, "fuzz.gl")
        except grantlog.GrantlogError:
            with pytest.raises(grantlog.GrantlogError) as info:
                format_text(text, "fuzz.gl")
            assert_good_error(info.value)
            return
        assert_formats_cleanly(text)

    bounded(run)


# ---------------------------------------------------------------------------------------------
# the CLI


def run_cli(argv: list[str], stdin: bytes = b"") -> tuple[int, str, str]:
    """``grantlog ARGV`` in-process: (exit code, stdout, stderr). stdin is strict UTF-8, as a
    terminal's usually is."""
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as e:  # argparse: usage errors (2), --help / --version (0)
                code = e.code if isinstance(e.code, int) else 2
            except BaseException:
                pytest.fail(f"grantlog {argv} raised:\n{traceback.format_exc()}")
    finally:
        sys.stdin = old_stdin
    return code, out.getvalue(), err.getvalue()


def assert_cli_ok(argv: list[str], stdin: bytes = b"") -> int:
    code, out, err = run_cli(argv, stdin)
    assert code in EXIT_CODES, (argv, code, err[-3000:])
    assert "Traceback" not in err, (argv, err[-3000:])
    if code == 2:
        assert err.strip() or out.strip(), f"{argv}: exit 2 without saying why"
    return code


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _rule_bytes() -> st.SearchStrategy[bytes]:
    valid = _valid_texts()
    as_bytes = st.one_of(valid, gen.token_mutated(valid)).map(
        lambda t: t.encode("utf-8", "surrogatepass"))
    return as_bytes | gen.byte_mutated(valid)


@fuzz(30)
@given(data=_rule_bytes(), json_out=st.booleans(), goal=st.sampled_from(
    ["p(X)", "r0(X, Y), not r1(X)", "p(", "allowed(U, read, t1)", "X = 1", "é(", ""]))
def test_cli_on_rule_files(workdir: Path, data: bytes, json_out: bool, goal: str) -> None:
    note(repr(data[:2000]))
    f = workdir / "fuzz.gl"
    f.write_bytes(data)
    path = str(f)
    js = ["--json"] if json_out else []
    runs = [
        ["check", path, "alice", "read", "t1", *js], ["eval", path, *js], ["fmt", "--check", path],
        ["lint", path, *js], ["test", path, *js], ["query", path, goal, *js],
        ["explain", path, goal, "--format", "dot" if json_out else "text"],
    ]

    def run() -> None:
        for argv in runs:
            assert_cli_ok(argv)
        assert_cli_ok(["fmt", "-"], stdin=data)

    bounded(run)


#: words argv is made of: every subcommand but `spark` (it would start a JVM), options, values
_ARGV_WORDS = (
    "eval", "query", "explain", "check", "test", "fmt", "list", "who", "lint", "diff", "models",
    "import", "gravitino", "--json", "--strict", "--model", "-m", "--facts", "-f", "-r",
    "--relation", "--format", "dot", "mermaid", "xml", "--check", "--diff", "--coverage", "-v",
    "--type", "-t", "--before", "--after", "--facts-before", "--facts-after", "--no-proofs",
    "--metalake", "--explain", "--version", "-h", "demo", "nope", "alice", "read", "t1",
    "allowed(U, O, R)", "p(", "", "-", "--", "é", "\x00",
)


@fuzz(40)
@given(words=st.lists(st.sampled_from(_ARGV_WORDS) | st.sampled_from(
    ["@FILE", "@FACTS", "@DIR", "@MISSING", "@JUNK"]), max_size=8))
def test_cli_argv(workdir: Path, words: list[str]) -> None:
    """Arbitrary command lines over a valid policy, a fact file, a junk file, a directory and a
    missing file: a documented exit code, no traceback."""
    d = workdir / "argv"
    d.mkdir(exist_ok=True)
    (d / "policy.gl").write_text(DEMO_POLICY.read_text(encoding="utf-8"), encoding="utf-8")
    (d / "facts.gl").write_text('member(alice, analysts).\n', encoding="utf-8")
    (d / "junk.gl").write_bytes(b"p(X :- \xff\n")
    paths = {"@FILE": d / "policy.gl", "@FACTS": d / "facts.gl", "@DIR": d,
             "@MISSING": d / "missing.gl", "@JUNK": d / "junk.gl"}
    argv = [str(paths[w]) if w in paths else w for w in words]
    note(repr(argv))
    bounded(lambda: assert_cli_ok(argv))


# ---------------------------------------------------------------------------------------------
# fact files (`--facts`)


@fuzz(25)
@given(data=st.one_of(
    gen.fact_files().map(str.encode), gen.token_mutated(gen.fact_files()).map(
        lambda t: t.encode("utf-8", "surrogatepass")), gen.byte_mutated(gen.fact_files())),
    explain=st.booleans())
def test_fact_files(workdir: Path, data: bytes, explain: bool) -> None:
    note(repr(data[:2000]))
    facts = workdir / "facts.gl"
    facts.write_bytes(data)
    rules, f = str(DEMO_POLICY), str(facts)
    more = ["--explain"] if explain else ["--json"]
    runs = [
        ["check", rules, "--facts", f, "alice", "load_table", "m1.c1.s1.t1", *more],
        ["eval", rules, "-f", f, "-r", "allowed"],
        ["query", rules, "--facts", f, "allowed(U, Op, R), not member(U, _)"],
        ["list", rules, "--facts", f, "alice", "load_table"],
        ["who", rules, "--facts", f, "load_table", "m1.c1.s1.t1"],
        ["diff", rules, "--facts-before", str(ROOT / "examples" / "demo" / "facts.gl"),
         "--facts-after", f],
    ]

    def run() -> None:
        for argv in runs:
            assert_cli_ok(argv)

    bounded(run)


@fuzz(6)
@given(data=gen.token_mutated(gen.fact_files()))
def test_fact_files_for_a_shipped_model(workdir: Path, data: str) -> None:
    """`--model gravitino --facts F`: the shipped model with a damaged fact file (few examples:
    the model takes a third of a second to compile)."""
    facts = workdir / "model_facts.gl"
    facts.write_bytes(data.encode("utf-8", "surrogatepass"))
    argv = ["check", "--model", "gravitino", "--facts", str(facts), "alice", "load_table",
            "m1.c1.s1.t1"]
    bounded(lambda: assert_cli_ok(argv))


# ---------------------------------------------------------------------------------------------
# Gravitino REST JSON (`grantlog import gravitino DIR`)


@st.composite
def _gravitino_files(draw: st.DrawFn) -> dict[str, bytes]:
    docs = draw(gen.gravitino_dirs())
    out: dict[str, bytes] = {}
    for path, doc in docs.items():
        if draw(st.integers(0, 2)) == 0:  # one file in three is damaged
            doc = draw(gen.json_mutated(doc))
            out[path] = draw(gen.json_bytes(doc))
        else:
            out[path] = json.dumps(doc).encode()
    return out


def _write_dir(root: Path, files: dict[str, bytes]) -> None:
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


@fuzz(50)
@given(files=_gravitino_files())
def test_gravitino_import(workdir: Path, files: dict[str, bytes]) -> None:
    """The importer reports what is wrong (`bad-import`) or returns facts whose `.gl` rendering
    compiles back to exactly those facts; the CLI agrees (exit 0 and the file, or exit 2)."""
    note(repr({k: v[:500] for k, v in files.items()}))
    root = workdir / "gravitino"
    _write_dir(root, files)
    out = workdir / "imported.gl"

    def run() -> str:
        try:
            facts = load_gravitino_dir(root, "m1")
        except grantlog.GrantlogError as err:
            assert_good_error(err, located=False)
            assert {d.code for d in err.diagnostics} == {"bad-import"}
            assert run_cli(["import", "gravitino", str(root), "-o", str(out)])[0] == 2
            return "refused"
        text = to_gl(facts)
        r = grantlog.Reasoner(grantlog.compile(text, filename="imported.gl"))
        for rel, rows in facts.items():
            assert r.rows(rel) == rows, rel
        assert assert_cli_ok(["import", "gravitino", str(root), "-o", str(out)]) == 0
        assert out.read_text(encoding="utf-8") == text
        return "imported"

    event(bounded(run))


# ---------------------------------------------------------------------------------------------
# Spark input mappings (`grantlog spark run --inputs MAPPING.json|.toml`; no Spark needed)


@st.composite
def _mappings(draw: st.DrawFn) -> gen.Json:
    entry = st.one_of(
        st.sampled_from(["m.csv", "data/m.parquet", "s3a://b/m"]),
        st.fixed_dictionaries(
            {"path": st.sampled_from(["m.csv", "/abs/m.jsonl", "d"])},
            optional={"format": st.sampled_from(["csv", "json", "parquet", "jsonl"]),
                      "columns": st.lists(st.sampled_from(["user", "group", "x"]), max_size=3),
                      "header": st.booleans(),
                      "options": st.dictionaries(st.sampled_from(["sep", "quote"]),
                                                 st.sampled_from([",", ";", '"']))}))
    doc: gen.Json = draw(st.dictionaries(st.sampled_from(["member", "grant", "e"]), entry,
                                         max_size=3))
    if draw(st.booleans()):
        doc = draw(gen.json_mutated(doc))
    return doc


@fuzz(40)
@given(doc=_mappings(), toml=st.booleans())
def test_spark_input_mapping(workdir: Path, doc: gen.Json, toml: bool) -> None:
    from grantlog.spark_bridge import load_mapping

    f = workdir / ("inputs.toml" if toml else "inputs.json")
    text = json.dumps(doc)
    if toml and isinstance(doc, dict):
        # one table per relation, its keys as JSON values (valid TOML for strings, numbers,
        # booleans and arrays of them; anything else makes a file TOML cannot read)
        text = "".join(f"[{json.dumps(rel)}]\n" + "".join(
            f"{json.dumps(k)} = {json.dumps(v)}\n"
            for k, v in (entry.items() if isinstance(entry, dict) else [("path", entry)]))
            for rel, entry in doc.items())
    f.write_bytes(text.encode("utf-8", "surrogatepass"))

    def run() -> None:
        try:
            specs = load_mapping(f)
        except grantlog.GrantlogError as err:
            assert_good_error(err, located=False)
            assert {d.code for d in err.diagnostics} == {"bad-input"}
            return
        for spec in specs:
            assert isinstance(spec.path, str) and spec.format in ("csv", "json", "parquet")

    bounded(run)


# ---------------------------------------------------------------------------------------------
# regressions: the bugs the fuzzers found, pinned down


def test_integer_literal_too_long_is_a_syntax_error() -> None:
    # was: lark.exceptions.VisitError (ValueError: Exceeds the limit (4300 digits) for integer
    # string conversion) out of grantlog.compile, parse_goal and every CLI command; integers
    # are now 64-bit (what the stores and JSON keep alike): a longer literal is refused
    for text in ("9" * 4301, "9" * 25, str(2**63), str(-(2**63) - 1)):
        for fn in (lambda t: grantlog.compile(t),
                   lambda t: parse_goal(t.removesuffix(".") + ".")):
            with pytest.raises(grantlog.GrantlogError) as info:
                fn("p(" + text + ").")
            [d] = info.value.diagnostics
            assert (d.code, d.span.line, d.span.col) == ("syntax-error", 1, 3)
            assert "out of the 64-bit range" in d.message
    for v in (2**63 - 1, -(2**63)):
        assert grantlog.Reasoner(grantlog.compile(f"p({v}).")).rows("p") == {(v,)}
    r = grantlog.Reasoner(grantlog.compile("rel p(x: int)."))
    with pytest.raises(grantlog.GrantlogError) as info:
        r.insert("p", [(2**63,)])
    assert info.value.diagnostics[0].code == "bad-fact"


@pytest.mark.parametrize("literal", ["not r(X, {i})", "X != {i}"])
def test_long_run_of_negations_or_comparisons_evaluates(literal: str) -> None:
    # was: IndentationError ("too many levels of indentation") from the generated code of a
    # rule with 100 or more negations or comparisons (one nested `if` each)
    body = ", ".join(literal.format(i=i + 5) for i in range(150))
    program = grantlog.compile(f"q(1). q(7). r(7, 7). p(X) :- q(X), {body}.")
    assert grantlog.Reasoner(program).rows("p") == {(1,)}


@pytest.mark.parametrize(("content", "message"), [
    ('[{"name": ' + "1" * 5000 + "}]", "more than 4300 digits"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('[{"name": "a", "roles": ' + "[" * 3000 + "]" * 3000 + "}]", "nested too deeply"),
    ('[{"name": "a\\ud800"}]', "holds a character a rule file cannot"),
    ('[{"name": "a", "roles": ["x\\ry"]}]', "holds a character a rule file cannot"),
])
def test_gravitino_import_reports_unreadable_json(tmp_path: Path, content: str,
                                                  message: str) -> None:
    # was: ValueError (a 5000-digit number) and RecursionError (deep nesting) out of
    # load_gravitino_dir; a lone surrogate was imported and then crashed writing the .gl file
    # (UnicodeEncodeError), a carriage return was written raw and the file did not parse
    (tmp_path / "users.json").write_text(content, encoding="utf-8")
    with pytest.raises(grantlog.GrantlogError) as info:
        load_gravitino_dir(tmp_path, "m1")
    [d] = info.value.diagnostics
    assert d.code == "bad-import" and message in d.message, d
    code, _, err = run_cli(["import", "gravitino", str(tmp_path), "-o",
                            str(tmp_path / "out.gl")])
    assert code == 2 and "bad-import" in err


@pytest.mark.parametrize(("content", "message"), [
    ("[1, 2]", "must be an object"),
    ("null", "must be an object"),
    ('{"m": {"path": 1}}', "needs a `path`"),
    ('{"m": {"path": "m.csv", "format": 3}}', "`format` must be a string"),
    ('{"m": {"path": "m.csv", "columns": 3}}', "`columns` must be a list of strings"),
    ('{"m": {"path": "m.csv", "header": "yes"}}', "`header` must be true or false"),
    ('{"m": {"path": "m.csv", "options": [1]}}', "`options` must map"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
])
def test_spark_input_mapping_reports_bad_shapes(tmp_path: Path, content: str,
                                                message: str) -> None:
    # was: AttributeError / TypeError / RecursionError out of load_mapping
    from grantlog.spark_bridge import load_mapping

    f = tmp_path / "inputs.json"
    f.write_text(content, encoding="utf-8")
    with pytest.raises(grantlog.GrantlogError) as info:
        load_mapping(f)
    [d] = info.value.diagnostics
    assert d.code == "bad-input" and message in d.message, d


def test_fmt_stdin_that_is_not_utf8() -> None:
    # was: UnicodeDecodeError traceback from `grantlog fmt -` when stdin is strict UTF-8
    code, out, err = run_cli(["fmt", "-"], stdin=b'p(1).\nq("\xff").\n')
    assert code == 2 and out == ""
    assert "<stdin>:2:4: error[bad-encoding]" in err
    assert run_cli(["fmt", "-"], stdin=b"p( 1 ).")[:2] == (0, "p(1).\n")


def test_check_usage_error_exits_2() -> None:
    # was: SystemExit with a message, i.e. exit status 1 ("denied") for a usage error
    code, _, err = run_cli(["check", str(DEMO_POLICY), "alice"])
    assert code == 2 and "usage: grantlog check" in err


def test_internal_error_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    # was: a traceback and exit status 1; README documents 3 for internal errors
    def boom(*args: object) -> int:
        raise KeyError("bug")

    from grantlog.cli import authoring

    monkeypatch.setattr(authoring, "cmd_models", boom)
    code, _, err = run_cli(["models"])
    assert code == 3 and "internal error" in err and "KeyError" in err
