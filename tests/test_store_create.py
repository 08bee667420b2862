"""Opening a store that does not exist is `store-not-found` unless asked to create it (issue
#27, item 3): a misspelt store URL must never answer DENY from a new, empty store. Created by
``grantlog store init``, ``--create`` (``check``, ``serve``, ``store load``, ``import``...),
``Reasoner(..., create=True)`` and ``open_store(..., create=True)``."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from httpserver import free_port, serve, stop

import grantlog
from grantlog.cli import main
from grantlog.store import open_store

ROOT = Path(__file__).resolve().parent.parent
FACTS = str(ROOT / "examples" / "gravitino" / "facts.gl")
RULES = str(ROOT / "rules" / "gravitino.gl")
ORDERS = ("alice", "load_table", "m1.lakehouse.sales.orders")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _files(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir())


def _not_found(exc: pytest.ExceptionInfo[grantlog.GrantlogError]) -> grantlog.Diagnostic:
    d = exc.value.diagnostics[0]
    assert d.code == "store-not-found"
    assert d.help is not None and "grantlog store init" in d.help and "--create" in d.help
    return d


@pytest.fixture(scope="module")
def program() -> grantlog.Program:
    return grantlog.compile(paths=[RULES])


# -- the API --------------------------------------------------------------------------------------

def test_a_missing_sqlite_store_is_refused_and_no_file_is_left(
        tmp_path: Path, program: grantlog.Program) -> None:
    url = f"sqlite:///{tmp_path / 'typo.db'}"
    with pytest.raises(grantlog.GrantlogError) as exc:
        grantlog.Reasoner(program, store=url)
    assert "typo.db" in _not_found(exc).message
    with pytest.raises(grantlog.GrantlogError) as exc:
        open_store(url)
    _not_found(exc)
    assert _files(tmp_path) == []  # no empty database, no -wal or -shm file


def test_create_makes_the_store_and_then_it_opens_without(
        tmp_path: Path, program: grantlog.Program) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    with grantlog.Reasoner(program, store=url, follow=False, create=True) as r:
        r.insert("member", [("zed", "analysts")])
    assert (tmp_path / "facts.db").exists()
    with grantlog.Reasoner(program, store=url, follow=False) as r:
        assert ("zed", "analysts") in r.rows("member") and r.revision == 1
    with grantlog.Reasoner(program, store=url, follow=False, create=True) as r:  # no reset
        assert r.revision == 1


def test_open_store_create_without_rules_makes_an_empty_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    open_store(url, create=True).close()
    st = open_store(url)  # it exists now
    try:
        st.attach()
        assert st.head() == (0, 0) and st.tables == {}
    finally:
        st.close()


def test_a_sqlite_database_that_is_not_a_store(tmp_path: Path,
                                               program: grantlog.Program) -> None:
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(grantlog.GrantlogError) as exc:
        grantlog.Reasoner(program, store=f"sqlite:///{db}")
    assert "holds no grantlog store" in _not_found(exc).message
    with sqlite3.connect(db) as conn:  # nothing was added to it
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert names == {"t"}


def test_a_postgres_database_without_a_store(pg_server: object,
                                             program: grantlog.Program) -> None:
    url = pg_server.schema_url()  # type: ignore[attr-defined]
    with pytest.raises(grantlog.GrantlogError) as exc:
        grantlog.Reasoner(program, store=url, follow=False)
    _not_found(exc)
    with grantlog.Reasoner(program, store=url, follow=False, create=True) as r:
        r.insert("member", [("zed", "analysts")])
    with grantlog.Reasoner(program, store=url, follow=False) as r:
        assert r.revision == 1


def test_a_postgres_server_that_refuses_is_still_unavailable(
        program: grantlog.Program) -> None:
    pytest.importorskip("psycopg")
    url = f"postgresql://nobody@127.0.0.1:{free_port()}/nothing?connect_timeout=2"
    with pytest.raises(grantlog.GrantlogError) as exc:
        grantlog.Reasoner(program, store=url, create=True)
    assert exc.value.diagnostics[0].code == "store-unavailable"


# -- the command line -----------------------------------------------------------------------------

def test_check_with_a_misspelt_store_is_an_error_not_deny(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'typo.db'}"
    code, out, err = run(capsys, "check", "--model", "gravitino", "--store", url, *ORDERS)
    assert code == 2 and out == "" and "error[store-not-found]" in err
    assert "grantlog store init" in err and "Traceback" not in err
    assert _files(tmp_path) == []
    code, out, _ = run(capsys, "check", "--model", "gravitino", "--store", url, "--create",
                       *ORDERS)
    assert code == 1 and out.startswith("DENY")  # a new, empty store: asked for
    assert (tmp_path / "typo.db").exists()


@pytest.mark.parametrize("command", [
    ["store", "stats"], ["store", "verify"], ["store", "log"],
    ["store", "compact", "--keep", "1"],
    ["store", "dump", "--model", "gravitino", "-o", "out.gl"],
    ["store", "load", FACTS, "--model", "gravitino"],
    ["who", "--model", "gravitino", "load_table", "m1.lakehouse.sales.orders", "--store"],
    ["list", "--model", "gravitino", "alice", "load_table", "--store"],
    ["query", "--model", "gravitino", "member(U, G)", "--store"],
    ["eval", "--model", "gravitino", "-r", "member", "--store"],
    ["diff", "--before", RULES, "--after", RULES, "--store"],
])
def test_commands_refuse_a_missing_store(command: list[str], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'typo.db'}"
    args = [*command[:2], url, *command[2:]] if command[0] == "store" else [*command, url]
    code, _, err = run(capsys, *args)
    assert code == 2 and "error[store-not-found]" in err, err
    assert _files(tmp_path) == []


def test_store_init_creates_and_load_needs_create(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    code, out, _ = run(capsys, "store", "init", url, "--model", "gravitino")
    assert code == 0 and "revision 0" in out
    code, out, _ = run(capsys, "store", "load", url, FACTS, "--model", "gravitino")
    assert code == 0 and "as revision 1" in out
    other = f"sqlite:///{tmp_path / 'other.db'}"
    code, out, _ = run(capsys, "store", "load", other, FACTS, "--model", "gravitino",
                       "--create", "--json")
    assert code == 0 and json.loads(out)["revision"] == 1
    code, out, _ = run(capsys, "check", "--model", "gravitino", "--store", other, *ORDERS)
    assert code == 0 and out.startswith("ALLOW")


def test_import_into_a_store_needs_create(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'grav.db'}"
    src = str(ROOT / "examples/gravitino/json")
    code, _, err = run(capsys, "import", "gravitino", src, "--store", url)
    assert code == 2 and "error[store-not-found]" in err and _files(tmp_path) == []
    code, _, err = run(capsys, "import", "gravitino", src, "--store", url, "--create")
    assert code == 0 and "revision 1" in err


def test_serve_refuses_a_missing_store_and_creates_one_when_asked(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    done = subprocess.run([sys.executable, "-m", "grantlog.cli", "serve", "--port",
                           str(free_port()), RULES, "--store", url],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "error[store-not-found]" in done.stderr, done.stderr
    assert "listening" not in done.stderr and not (tmp_path / "facts.db").exists()
    logs = tmp_path / "logs"
    logs.mkdir()
    proc, base = serve(logs, RULES, "--store", url, "--create",
                       "--allow-unauthenticated-writes")
    try:
        import httpx

        with httpx.Client(base_url=base, timeout=30) as c:
            got = c.post("/v1/check", json=dict(zip(("subject", "operation", "resource"),
                                                   ORDERS, strict=True)))
            assert got.status_code == 200 and got.json()["allowed"] is False
    finally:
        stop(proc)
    assert (tmp_path / "facts.db").exists()
