"""Messages a new user reads (issue 27, items 7 and 8): no checkout paths, no `<api>:`
locations, `grantlog test` on a broken file, why-not trees that never give two variables one
name, singular and plural, `store dump -o x.csv`, the 401 of a wrong token, a port in use,
`make demo`, a byte-order mark and non-ASCII names. Each in the CLI and the API (and the
service where it answers)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from grantlog.grammar.diagnostics import (
    Diagnostic,
    Span,
    argument_span,
    display_path,
    error,
    plural,
)
from grantlog.rules import rules_dir
from httpserver import serve, stop

import grantlog
from grantlog.cli import main
from grantlog.service.auth import Tokens

ROOT = Path(__file__).resolve().parent.parent
FACTS = ROOT / "examples" / "gravitino" / "facts.gl"
CUSTOMERS = ("carol", "load_table", "m1.lakehouse.sales.customers")
BOM = "\ufeff"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- 7a: no absolute checkout paths ------------------------------------------------------------

def test_display_path_names_shipped_files_and_paths_under_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert display_path(str(rules_dir() / "gravitino.gl")) == "gravitino.gl"
    assert display_path(str(tmp_path / "sub" / "a.gl")) == os.path.join("sub", "a.gl")
    assert display_path("rel/as/given.gl") == "rel/as/given.gl"  # as typed
    assert display_path("/elsewhere/a.gl") == "/elsewhere/a.gl"  # outside: as typed
    span = Span(str(rules_dir() / "gravitino.gl"), 3, 1, 3, 2)
    assert str(span) == "gravitino.gl:3:1"
    d = error("x", "m", span)
    assert d.render().startswith("gravitino.gl:3:1: error[x]: m")
    assert d.to_dict()["file"] == "gravitino.gl"


def test_cli_proofs_from_another_directory_show_no_checkout_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(FACTS, tmp_path / "facts.gl")
    monkeypatch.chdir(tmp_path)
    for who, code in (("alice", 0), ("carol", 1)):
        got, out, err = run(capsys, "check", "--model", "gravitino", "--facts",
                            str(tmp_path / "facts.gl"), who, "load_table",
                            "m1.lakehouse.sales.orders" if who == "alice" else CUSTOMERS[2],
                            "--explain")
        assert got == code, err
        assert str(ROOT) not in out and str(tmp_path) not in out
        assert "fact (gravitino.gl:" in out and "fact (facts.gl:" in out
    got, out, _ = run(capsys, "check", "--model", "gravitino", "--facts", "facts.gl",
                      *CUSTOMERS, "--explain", "--json")
    assert str(ROOT) not in out


def test_api_explanations_and_hints_show_no_checkout_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(FACTS, tmp_path / "facts.gl")
    monkeypatch.chdir(tmp_path)
    r = grantlog.Reasoner(grantlog.compile(paths=[str(rules_dir() / "gravitino.gl"),
                                                  str(tmp_path / "facts.gl")]))
    ex = r.explain('allowed(carol, load_table, "m1.lakehouse.sales.customers")')
    for text in (ex.render(), json.dumps(ex.to_dict()), ex.to_dot()):
        assert str(ROOT) not in text
    assert "fact (gravitino.gl:290:1)" in ex.render() and "fact (facts.gl:81:1)" in ex.render()
    (tmp_path / "a.gl").write_text('import "nowhere.gl".\n')
    with pytest.raises(grantlog.GrantlogError) as e:
        grantlog.compile(paths=["a.gl"])
    assert str(ROOT) not in str(e.value)
    assert "among the shipped models" in str(e.value)


def test_service_answers_show_no_checkout_path(tmp_path: Path) -> None:
    """A server started elsewhere (its working directory is not the checkout): the proofs
    and rule locations of its answers name the shipped file, never its path."""
    proc, url = serve(tmp_path, "--model", "gravitino", cwd=tmp_path)
    try:
        got = httpx.post(url + "/v1/explain", json={"goal": "supports(select_table, table)"},
                         timeout=30)
        assert got.status_code == 200
        assert got.json()["explanation"]["proof"]["origin"] == "gravitino.gl:290:1"
        got = httpx.post(url + "/v1/explain", json={"goal": "allowed(carol, load_table, t)"},
                         timeout=30)
        assert str(ROOT) not in got.text and '"at":"gravitino.gl:' in got.text
        bad = httpx.post(url + "/v1/query", json={"goal": "allowed(U, load_table, T), foo(U)"},
                         timeout=30)
        assert bad.status_code == 422
        rendered = bad.json()["error"]["rendered"]
        assert rendered.startswith("error[unknown-relation]: relation `foo` does not exist "
                                   "(in the goal)")
        policy = httpx.get(url + "/v1/policy?sources=true", timeout=30).json()
        assert policy["files"] == ["gravitino.gl"] and "gravitino.gl" in policy["sources"]
        log = next(tmp_path.glob("serve-*.log")).read_text()
        assert "1 rule file," in log  # 7e: singular
    finally:
        stop(proc)


# -- 7b: no `<api>:` / `<unknown>:` locations --------------------------------------------------

def test_api_errors_have_no_pseudo_file_locations() -> None:
    r = grantlog.Reasoner(grantlog.compile("rel member(u: string, g: string).\n"))
    with pytest.raises(grantlog.GrantlogError) as e:
        r.insert("nosuch", [("a",)])
    assert str(e.value) == "error[unknown-relation]: relation `nosuch` does not exist"
    with pytest.raises(grantlog.GrantlogError) as e:
        r.insert("member", [("a",)])
    assert str(e.value).startswith("error[bad-fact]: `member` takes 2 values, got 1")
    with pytest.raises(grantlog.GrantlogError) as e:
        r.query("member(U")
    text = str(e.value)
    assert text.startswith("error[syntax-error]: unexpected end of input (in the goal)\n")
    assert " 1 | member(U" in text
    with pytest.raises(grantlog.GrantlogError) as e:
        grantlog.compile(None)
    assert str(e.value).startswith("error[no-input]: ")
    for text in (str(e.value),):
        assert "<api>" not in text and "<unknown>" not in text and "<input>" not in text


def test_rendering_of_places_that_are_not_files() -> None:
    assert Diagnostic("c", "m", Span("<api>", 0, 0, 0, 0)).render() == "error[c]: m"
    assert Diagnostic("c", "m", Span("<unknown>", 0, 0, 0, 0)).render() == "error[c]: m"
    assert Diagnostic("c", "m", argument_span("limit")).render() == \
        "error[c]: m (in argument `limit`)"
    assert Diagnostic("c", "m", Span("<goal>", 1, 5, 1, 6)).render() == \
        "error[c]: m (in the goal, column 5)"  # no source to show the caret
    assert Diagnostic("c", "m", Span("<goal>", 1, 5, 1, 6)).render({"<goal>": "p(X), q"}) \
        .splitlines()[0] == "error[c]: m (in the goal)"
    assert Diagnostic("c", "m", Span("<command line>", 0, 0, 0, 0)).render() == \
        "error[c]: m (on the command line)"
    assert Diagnostic("c", "m", Span("<stdin>", 2, 3, 2, 4)).render() == "<stdin>:2:3: error[c]: m"


def test_cli_goal_errors_say_in_the_goal(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "p.gl"
    f.write_text("rel q(x: string).\nq(a).\n")
    code, _, err = run(capsys, "query", str(f), "q(X), foo(X)")
    assert code == 2
    assert err.startswith("error[unknown-relation]: relation `foo` does not exist (in the goal)")
    assert "<goal>" not in err


# -- 7c: `grantlog test` on a file that does not compile ---------------------------------------

def test_test_command_reports_a_compile_error(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.gl"
    bad.write_text('p(X) :- q(X\ntest "t" { expect p(a). }\n')
    code, out, err = run(capsys, "test", str(bad))
    assert code == 2
    assert "bad.gl:2:1: error[syntax-error]: unexpected `test`" in err
    assert "0 passed" not in out and "1 rule file did not compile: no test ran" in err
    code, out, err = run(capsys, "test", str(bad), "--json")
    assert code == 2
    payload = json.loads(out)
    assert payload["errors"][0]["code"] == "syntax-error"
    good = tmp_path / "good.gl"
    good.write_text('rel q(x: string).\np(X) :- q(X).\ntest "t" { q(a). expect p(a). }\n')
    code, out, err = run(capsys, "test", str(good), str(bad))
    assert code == 2
    assert out.strip().endswith("1 passed, 0 failed; 1 rule file did not compile")


# -- 7d: why-not trees rename a rule's variables apart from the goal's -------------------------

CLASH = """\
rel member(u: string, g: string).
rel owner(g: string, t: string).
/// Members of the owning group read.
by_group: allowed(X, read, T) :- member(X, U), owner(U, T).
"""


def test_why_not_renames_rule_variables_that_clash_with_the_goal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = grantlog.Reasoner(grantlog.compile(CLASH + "member(alice, eng). member(alice, ops).\n"))
    text = r.explain("allowed(U, read, t1)").render()
    # the rule's `X` is the goal's `U`; the rule's own `U` (a group) is another variable
    assert text.splitlines() == [
        "allowed(U, read, t1)  <- does not hold for any U",
        "└── via rule by_group: Members of the owning group read.",
        "    ├── member(U, U1)  <- not reached",
        "    └── owner(U1, t1)  <- no base fact for any U1",
    ]
    f = tmp_path / "clash.gl"
    f.write_text(CLASH)
    code, out, _ = run(capsys, "explain", str(f), "allowed(U, read, t1)")
    assert code == 1 and "owner(U1, t1)  <- no base fact for any U1" in out
    # a real clash in a shipped model: `controls(U, O) :- owns(U, A), ancestor_or_self(A, O)`
    g = grantlog.Reasoner(grantlog.compile(paths=[str(rules_dir() / "gravitino.gl")]))
    lines = g.explain("controls(A, x)").render().splitlines()
    assert "│   ├── owns(A, A1)  <- not reached" in lines
    assert "│   └── ancestor_or_self(A1, x)  <- does not hold for any A1" in lines


# -- 7e: singular and plural -------------------------------------------------------------------

def test_plural() -> None:
    assert plural(1, "rule file") == "1 rule file"
    assert plural(0, "row") == "0 rows"
    assert plural(12000, "fact") == "12,000 facts"
    assert plural(2, "matrix", "matrices") == "2 matrices"


def test_store_messages_count_in_the_singular(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "r.gl"
    rules.write_text("rel member(u: string, g: string).\n")
    facts = tmp_path / "f.gl"
    facts.write_text("member(alice, eng).\n")
    store = f"sqlite:///{tmp_path / 's.db'}"
    code, out, err = run(capsys, "store", "init", store, "--rules", str(rules))
    assert code == 0 and ": 1 relation (member)" in out
    code, out, err = run(capsys, "store", "load", store, str(facts), "--rules", str(rules))
    assert code == 0 and "read 1 fact in" in err and "member: 1 row\n" in err
    assert "loaded 1 new fact of 1 read" in out
    r = grantlog.Reasoner(grantlog.compile("rel member(u: string, g: string).\n"))
    with pytest.raises(grantlog.GrantlogError, match="takes 2 values"):
        r.insert("member", [("a",)])
    one = grantlog.Reasoner(grantlog.compile("rel banned(u: string).\n"))
    with pytest.raises(grantlog.GrantlogError, match="`banned` takes 1 value, got 2"):
        one.insert("banned", [("a", "b")])


# -- 7f: `store dump -o x.csv` writes a file ---------------------------------------------------

def test_store_dump_to_a_named_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "r.gl"
    rules.write_text("rel member(u: string, g: string).\nrel banned(u: string).\n")
    store = f"sqlite:///{tmp_path / 's.db'}"
    assert run(capsys, "store", "init", store, "--rules", str(rules))[0] == 0
    facts = tmp_path / "f.gl"
    facts.write_text("member(alice, eng).\nmember(bob, ops).\n")
    assert run(capsys, "store", "load", store, str(facts), "--rules", str(rules))[0] == 0
    out_csv = tmp_path / "x.csv"
    code, out, err = run(capsys, "store", "dump", store, "--rules", str(rules), "-o",
                         str(out_csv))
    assert code == 0, err
    assert out_csv.is_file()
    assert out_csv.read_text().splitlines() == ["u,g", "alice,eng", "bob,ops"]
    # every relation in one JSON Lines file, which loads back
    facts.write_text("banned(carol).\n")
    assert run(capsys, "store", "load", store, str(facts), "--rules", str(rules))[0] == 0
    jl = tmp_path / "all.jsonl"
    assert run(capsys, "store", "dump", store, "--rules", str(rules), "-o", str(jl))[0] == 0
    assert jl.is_file() and '{"relation": "banned", "row": ["carol"]}' in jl.read_text()
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    assert run(capsys, "store", "init", copy, "--rules", str(rules))[0] == 0
    code, out, err = run(capsys, "store", "load", copy, str(jl), "--rules", str(rules))
    assert code == 0 and "loaded 3 new facts" in out
    # a CSV file holds one relation: two are an error, not a directory named x.csv
    out_csv.unlink()
    code, out, err = run(capsys, "store", "dump", store, "--rules", str(rules), "-o",
                         str(out_csv))
    assert code == 2 and "error[bad-option]: a CSV file holds one relation" in err
    assert not out_csv.exists()
    code, out, err = run(capsys, "store", "dump", store, "--rules", str(rules), "-o",
                         str(out_csv), "--format", "jsonl")
    assert code == 2 and "names a CSV file, but the format is jsonl" in err
    # a directory is still one file per relation
    d = tmp_path / "out"
    code, out, err = run(capsys, "store", "dump", store, "--rules", str(rules), "-o", str(d),
                         "--format", "csv")
    assert code == 0 and sorted(p.name for p in d.iterdir()) == ["banned.csv", "member.csv"]


# -- 7g: the 401 of a wrong token --------------------------------------------------------------

def test_a_wrong_token_is_not_valid_and_a_missing_one_is_needed(tmp_path: Path) -> None:
    token = "reader-token-0123456789"
    t = Tokens(((token.encode(), frozenset({"check"})),))
    assert "needed" in t.unauthorized(None)
    assert "not valid" in t.unauthorized("Bearer wrong-token-0123456789")
    assert "not a bearer token" in t.unauthorized("Basic YWxhZGRpbjpvcGVuc2VzYW1l")
    (tmp_path / "tokens").write_text(f"{token} check\n")
    os.chmod(tmp_path / "tokens", 0o600)
    proc, url = serve(tmp_path, "--model", "gravitino", "--tokens", str(tmp_path / "tokens"))
    try:
        body = {"subject": "a", "operation": "load_table", "resource": "t"}
        missing = httpx.post(url + "/v1/check", json=body, timeout=30)
        wrong = httpx.post(url + "/v1/check", json=body, timeout=30,
                           headers={"Authorization": "Bearer wrong-token-0123456789"})
        right = httpx.post(url + "/v1/check", json=body, timeout=30,
                           headers={"Authorization": f"Bearer {token}"})
        assert missing.status_code == wrong.status_code == 401 and right.status_code == 200
        assert "a bearer token is needed" in missing.json()["error"]["message"]
        assert wrong.json()["error"]["message"].startswith("the bearer token is not valid")
        assert "wrong-token" not in wrong.text  # never echoed
    finally:
        stop(proc)


# -- 7h: a port in use -------------------------------------------------------------------------

def test_serve_on_a_port_in_use_is_exit_2_before_listening() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        got = subprocess.run([sys.executable, "-m", "grantlog.cli", "serve", "--model",
                              "gravitino", "--port", str(port)],
                             capture_output=True, text=True, timeout=120)
    assert got.returncode == 2, got.stderr
    assert (f"error[cannot-listen]: cannot listen on `127.0.0.1:{port}`: the port is in use"
            in got.stderr)
    assert "listening" not in got.stderr and "Traceback" not in got.stderr


# -- 7i: `make demo` ---------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_ends_cleanly_on_the_expected_deny() -> None:
    bin_dir = Path(sys.executable).parent
    got = subprocess.run(["make", "--no-print-directory", "demo", "STAMP=",
                          f"BIN={bin_dir}"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    both = got.stdout + got.stderr
    assert got.returncode == 0, both
    assert "ALLOW allowed(alice" in both and "DENY allowed(carol" in both
    assert "expect DENY" in both
    assert "Error" not in both and "ignored" not in both
    # a real failure of the second check still fails: the recipe only accepts exit 1
    recipe = (ROOT / "Makefile").read_text().split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "|| test $$? -eq 1" in recipe and "\t-$(BIN)" not in recipe


# -- 8: a byte-order mark, non-ASCII names -----------------------------------------------------

def test_a_byte_order_mark_is_accepted_everywhere(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "r.gl"
    rules.write_bytes((BOM + "rel q(x: string).\nq(a).\n").encode())
    facts = tmp_path / "f.gl"
    facts.write_bytes((BOM + "q(b).\n").encode())
    code, out, err = run(capsys, "query", str(rules), "--facts", str(facts), "q(X)")
    assert (code, out) == (0, "X = a\nX = b\n"), err
    # the API, a text with a BOM (a file read without utf-8-sig)
    p = grantlog.compile(BOM + "rel q(x: string).\nq(a).\n")
    assert grantlog.Reasoner(p).rows("q") == {("a",)}
    with pytest.raises(grantlog.GrantlogError) as e:
        grantlog.compile(BOM + "q(a) :- .\n")
    assert str(e.value).startswith("<input>:1:9: error[syntax-error]")  # columns without it
    # stdin (`grantlog fmt -`)
    got = subprocess.run([sys.executable, "-m", "grantlog.cli", "fmt", "-"],
                         input=(BOM + "q( a ).\n").encode(), capture_output=True, timeout=60)
    assert got.returncode == 0 and got.stdout == b"q(a).\n", got.stderr
    # fact files loaded into a store: .gl, .csv, .jsonl
    (tmp_path / "q.csv").write_bytes((BOM + "x\nc\n").encode())
    (tmp_path / "q.jsonl").write_bytes((BOM + '["d"]\n').encode())
    store = f"sqlite:///{tmp_path / 's.db'}"
    assert run(capsys, "store", "init", store, "--rules", str(rules))[0] == 0
    code, out, err = run(capsys, "store", "load", store, str(facts), str(tmp_path / "q.csv"),
                         str(tmp_path / "q.jsonl"), "--rules", str(rules))
    assert code == 0 and "loaded 3 new facts" in out, err


def test_a_non_ascii_letter_in_a_bare_name_says_to_quote_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "u.gl"
    f.write_text('rel q(x: string).\nq("élan").\nq(café).\n', encoding="utf-8")
    code, _, err = run(capsys, "query", str(f), "q(X)")
    assert code == 2
    assert "u.gl:3:3: error[syntax-error]: `café` is not a bare name: `é` is not an ASCII" in err
    assert ' |   ^^^^' in err and 'quote a constant with other letters: `"café"`' in err
    with pytest.raises(grantlog.GrantlogError) as e:
        grantlog.compile("rel q(x: string).\nq(zoë).\n")
    assert e.value.diagnostics[0].help is not None and '`"zoë"`' in e.value.diagnostics[0].help
    quoted = grantlog.Reasoner(grantlog.compile('rel q(x: string).\nq("zoë").\n'))
    assert quoted.ask('q("zoë")')
    with pytest.raises(grantlog.GrantlogError, match="`zoë` is not a bare name"):
        quoted.ask("q(zoë)")
