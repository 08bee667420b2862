"""``grantlog store verify`` and verifying on open (issue "Safe to expose", item 10): a store
whose tables no longer match its change log — a changed byte in a fact, a row deleted or
added behind grantlog's back, a changed log row, a head that disagrees — is reported (exit 1,
naming the relation, the revision and the facts), and refused when opened with verification
(``store-corrupt``). SQLite and a real PostgreSQL server (``store_url``)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from httpserver import free_port, serve, stop

import grantlog
from grantlog.cli import main
from grantlog.store import open_store, writer

ROOT = Path(__file__).resolve().parent.parent
RULES = str(ROOT / "rules" / "gravitino.gl")
FACTS = str(ROOT / "examples" / "gravitino" / "facts.gl")
ORDERS = "m1.lakehouse.sales.orders"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _with_option(url: str, option: str) -> str:
    return url + ("&" if "?" in url else "?") + option


@pytest.fixture
def raw(store_url: str) -> Iterator[Callable[..., Any]]:
    """SQL on the store's database behind grantlog's back."""
    if store_url.startswith("sqlite:"):
        conn: Any = sqlite3.connect(store_url[len("sqlite:///"):], isolation_level=None)
    else:
        import psycopg

        conn = psycopg.connect(store_url, autocommit=True)

    def execute(sql: str, *params: Any) -> list[Any]:
        if not store_url.startswith("sqlite:"):
            sql = sql.replace("?", "%s")
        cur = conn.execute(sql, params)
        return list(cur.fetchall()) if cur.description else []

    yield execute
    conn.close()


def _loaded(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The Gravitino examples loaded, then a few grants and revokes by a reasoner."""
    assert run(capsys, "store", "load", store_url, FACTS, "--rules", RULES)[0] == 0
    program = grantlog.compile(paths=[RULES])
    with grantlog.Reasoner(program, store=store_url, follow=False) as r:
        r.insert("privilege", [("analysts", "select_table", ORDERS, "allow")])
        r.insert("metalake_user", [("zed", "m1")])
        r.retract("metalake_user", [("zed", "m1")])
        with r.transaction() as tx:
            tx.insert("owner", [(ORDERS, "zed")])
            tx.retract("privilege", [("analysts", "select_table", ORDERS, "allow")])


def _verify(capsys: pytest.CaptureFixture[str], url: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run(capsys, "store", "verify", url, "--json")
    return code, json.loads(out)


def test_a_sound_store_verifies(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _loaded(store_url, capsys)
    code, out, _ = run(capsys, "store", "verify", store_url)
    assert code == 0 and ": OK" in out.splitlines()[0], out
    code, rep = _verify(capsys, store_url)
    assert code == 0 and rep["ok"] and rep["problems"] == [] and rep["tables_checked"]
    assert rep["revision"] == 5 and rep["revisions"] == 5
    assert rep["checksummed"] == 5  # the load too: it is small
    assert rep["facts"] == sum(json.loads(run(capsys, "store", "stats", store_url, "--json")[1])
                               ["facts"].values())
    # opening with verification: the same answers
    program = grantlog.compile(paths=[RULES])
    with grantlog.Reasoner(program, store=store_url, follow=False, verify=True) as r:
        assert r.check("alice", "load_table", ORDERS).allowed
    code, out, _ = run(capsys, "check", "--store", _with_option(store_url, "verify=1"),
                       RULES, "alice", "load_table", ORDERS)
    assert code == 0 and out.startswith("ALLOW")


def test_rows_changed_deleted_or_added_behind_its_back(store_url: str, raw: Any,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    _loaded(store_url, capsys)
    program = grantlog.compile(paths=[RULES])
    # a changed fact
    raw("UPDATE rel_metalake_user SET \"user\" = 'alicf' WHERE \"user\" = 'alice'")
    code, rep = _verify(capsys, store_url)
    assert code == 1 and not rep["ok"]
    (p,) = rep["problems"]
    assert p["kind"] == "table" and p["relation"] == "metalake_user"
    assert p["only_in_table"] == ["metalake_user(alicf, m1)"]
    assert p["only_in_log"] == ["metalake_user(alice, m1)"]
    code, out, _ = run(capsys, "store", "verify", store_url)
    assert code == 1 and "CORRUPT (1 problem)" in out and "`metalake_user`" in out
    assert "only in the table: metalake_user(alicf, m1)" in out
    # refused when opened with verification, through the API and the URL
    with pytest.raises(grantlog.GrantlogError) as err:
        grantlog.Reasoner(program, store=store_url, follow=False, verify=True)
    assert err.value.diagnostics[0].code == "store-corrupt"
    assert "metalake_user" in err.value.diagnostics[0].message
    code, _, errout = run(capsys, "who", "--store", _with_option(store_url, "verify=1"),
                          RULES, "load_table", ORDERS)
    assert code == 2 and "store-corrupt" in errout
    raw("UPDATE rel_metalake_user SET \"user\" = 'alice' WHERE \"user\" = 'alicf'")
    assert _verify(capsys, store_url)[0] == 0
    # a deleted fact, an added one
    raw("DELETE FROM rel_owner WHERE object = ?", ORDERS)
    raw("INSERT INTO rel_contains VALUES ('m1', 'm1.intruder')")
    code, rep = _verify(capsys, store_url)
    assert code == 1
    got = {p["relation"]: p for p in rep["problems"]}
    assert set(got) == {"owner", "contains"}
    assert got["owner"]["only_in_log"] == [f'owner("{ORDERS}", zed)']
    assert got["owner"]["only_in_table"] == []
    assert "holds 11 facts, the log gives 12" in got["owner"]["message"]
    assert got["contains"]["only_in_table"] == ['contains(m1, "m1.intruder")']


def test_a_changed_log_row_names_its_revision(store_url: str, raw: Any,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    _loaded(store_url, capsys)
    raw("UPDATE grantlog_log SET row = ? WHERE revision = 3 AND relation = 'metalake_user'",
        '["zee","m1"]')
    code, rep = _verify(capsys, store_url)
    assert code == 1
    kinds = {(p["kind"], p["relation"], p["revision"]) for p in rep["problems"]}
    # revision 3's rows no longer match the checksum it committed with; replayed, the log
    # now removes a fact never added (zed stays, zee goes negative)
    assert ("log", None, 3) in kinds and ("table", "metalake_user", None) in kinds, kinds
    # a log row deleted: the revision's counts no longer match its record
    raw("DELETE FROM grantlog_log WHERE revision = 2")
    code, rep = _verify(capsys, store_url)
    msgs = [p["message"] for p in rep["problems"] if p["revision"] == 2]
    assert code == 1 and msgs and "the log has 0 added and 0 removed" in msgs[0], rep


def test_the_head_and_the_revisions_must_agree(store_url: str, raw: Any,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _loaded(store_url, capsys)
    raw("DELETE FROM grantlog_revisions WHERE revision = 4")
    code, rep = _verify(capsys, store_url)
    assert code == 1 and any("have no record: 4" in p["message"] for p in rep["problems"])
    assert any(p["revision"] == 4 and "no record of the revision" in p["message"]
               for p in rep["problems"])
    raw("UPDATE grantlog_head SET revision = 3")
    code, rep = _verify(capsys, store_url)
    assert any("above the head (3)" in p["message"] for p in rep["problems"]), rep


def test_a_changed_byte_in_a_sqlite_file(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: one byte of one fact changed in the file, and `who` answers less,
    silently. Verification finds it, names the fact, and refuses the store on open."""
    db = tmp_path / "facts.db"
    url = f"sqlite:///{db}"
    assert run(capsys, "store", "load", url, FACTS, "--rules", RULES, "--create")[0] == 0
    code, before, _ = run(capsys, "who", "--store", url, RULES, "load_table", ORDERS)
    assert code == 0 and len(before.split()) >= 3
    _flip(db, "rel_entity", ORDERS.encode(), len(ORDERS) - 1, ord("t"))
    code, after, _ = run(capsys, "who", "--store", url, RULES, "load_table", ORDERS)
    assert after != before  # wrong, and nothing says so
    code, out, _ = run(capsys, "store", "verify", url)
    assert code == 1, out
    assert 'only in the table: entity("m1.lakehouse.sales.ordert", table)' in out
    assert f'only in the log:   entity("{ORDERS}", table)' in out
    code, _, err = run(capsys, "who", "--store", url + "?verify=1", RULES,
                       "load_table", ORDERS)
    assert code == 2 and "store-corrupt" in err and "entity" in err
    # a byte that makes the text invalid UTF-8: reported, not a failure to read
    _flip(db, "rel_entity", b"m1.lakehouse.sales.ordert", len(ORDERS) - 1, 0xFF)
    code, rep = _verify(capsys, url)
    assert code == 1 and rep["problems"][0]["relation"] == "entity"
    assert "order\\udcff" in rep["problems"][0]["only_in_table"][0]


def _flip(db: Path, table: str, needle: bytes, offset: int, value: int) -> None:
    """Write ``value`` at ``offset`` into the one occurrence of ``needle`` in ``table``'s
    only page of the file (the log, which holds the same fact, is left alone)."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (root,) = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?",
                           (table,)).fetchone()
    (size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    data = bytearray(db.read_bytes())
    page = data[(root - 1) * size: root * size]
    assert page[0] == 0x0A, "the table spans several pages"  # a leaf of an index b-tree
    at = page.find(needle)
    assert at >= 0 and page.find(needle, at + 1) < 0
    data[(root - 1) * size + at + offset] = value
    db.write_bytes(bytes(data))


def test_compaction_keeps_a_checkpoint(store_url: str, raw: Any,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    _loaded(store_url, capsys)
    assert run(capsys, "store", "compact", store_url, "--keep", "2")[0] == 0
    code, rep = _verify(capsys, store_url)
    assert code == 0 and rep["horizon"] == 3 and rep["tables_checked"], rep
    assert rep["revisions"] == 2
    raw("DELETE FROM rel_privilege WHERE role = 'm1/role/analyst' AND privilege = "
        "'use_catalog'")
    code, rep = _verify(capsys, store_url)
    (p,) = rep["problems"]
    assert code == 1 and p["relation"] == "privilege" and "was compacted" in p["message"]
    # compacting again carries the difference forward: it is still found
    assert run(capsys, "store", "compact", store_url, "--keep", "0")[0] == 0
    code, rep = _verify(capsys, store_url)
    assert code == 1 and rep["problems"][0]["relation"] == "privilege"


def test_a_store_from_before_checksums_keeps_working(store_url: str, raw: Any,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """A store made before checksums (no `digest`, no checkpoint), even one whose log was
    compacted: it opens, verifies with a note, gets checksums for new revisions, and a
    compaction takes the checkpoint that makes its tables checkable again."""
    _loaded(store_url, capsys)
    st = open_store(store_url, create=False)  # the older shape: what the upgrade adds, gone
    st.attach()
    st.compact(keep=2)
    st.close()
    raw("ALTER TABLE grantlog_revisions DROP COLUMN digest")
    raw("ALTER TABLE grantlog_head DROP COLUMN checkpoint")
    raw("DROP TABLE grantlog_checkpoint")
    code, rep = _verify(capsys, store_url)
    assert code == 0 and not rep["tables_checked"] and rep["checksummed"] == 0
    assert any("before a checkpoint was kept" in n for n in rep["notes"])
    program = grantlog.compile(paths=[RULES])
    with grantlog.Reasoner(program, store=store_url, follow=False) as r:  # upgrades it
        r.insert("metalake_user", [("yves", "m1")])
    code, rep = _verify(capsys, store_url)
    assert code == 0 and rep["checksummed"] == 1 and rep["revisions"] == 3
    assert any("without a checksum" in n for n in rep["notes"])
    assert not rep["tables_checked"]
    assert run(capsys, "store", "compact", store_url, "--keep", "1")[0] == 0
    code, rep = _verify(capsys, store_url)
    assert code == 0 and rep["tables_checked"]
    raw("DELETE FROM rel_metalake_user WHERE \"user\" = 'yves'")
    assert _verify(capsys, store_url)[0] == 1


def test_big_bulk_loads_record_no_checksum(store_url: str, raw: Any,
                                           monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(writer, "CHECKSUM_LOAD_MAX", 10)
    _loaded(store_url, capsys)
    code, rep = _verify(capsys, store_url)
    assert code == 0 and rep["checksummed"] == 4  # all but the load
    (digest,) = raw("SELECT digest FROM grantlog_revisions WHERE revision = 1")[0]
    assert digest is None
    # a changed log row of the load is still found: against the tables
    raw("UPDATE grantlog_log SET row = ? WHERE revision = 1 AND relation = 'metalake_user' "
        "AND row LIKE ?", '["alicf","m1"]', "%alice%")
    code, rep = _verify(capsys, store_url)
    assert code == 1 and rep["problems"][0]["only_in_log"] == ["metalake_user(alicf, m1)"]


def test_verifying_while_others_write(store_url: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A verification reads one consistent view: writers committing meanwhile make no
    false alarm."""
    _loaded(store_url, capsys)
    program = grantlog.compile(paths=[RULES])
    stop_writing = threading.Event()

    def writer() -> None:
        with grantlog.Reasoner(program, store=store_url, follow=False) as r:
            n = 0
            while not stop_writing.is_set():
                n += 1
                r.insert("metalake_user", [(f"w{n}", "m1")])
                if n % 3 == 0:
                    r.retract("metalake_user", [(f"w{n - 1}", "m1")])

    t = threading.Thread(target=writer)
    t.start()
    try:
        st = open_store(store_url, create=False)
        st.attach()
        for _ in range(15):
            rep = st.verify()
            assert rep.ok, rep.render()
        st.close()
    finally:
        stop_writing.set()
        t.join()
    assert _verify(capsys, store_url)[0] == 0


def test_verify_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    assert run(capsys, "store", "verify", url)[0] == 2  # no store there
    assert run(capsys, "store", "init", url, "--rules", RULES)[0] == 0
    code, out, _ = run(capsys, "store", "verify", url)
    assert code == 0 and "OK" in out  # an empty store is sound
    code, _, err = run(capsys, "check", "--store", url + "?verify=maybe", RULES,
                       "alice", "load_table", ORDERS)
    assert code == 2 and "bad-store-url" in err
    assert run(capsys, "store", "verify", url, "--limit", "-1")[0] == 2
    with pytest.raises(SystemExit) as exit_:
        main(["store", "verify"])
    assert exit_.value.code == 2
    capsys.readouterr()
    from grantlog.store import verify_option

    assert verify_option("postgresql://u@h/db?options=-csearch_path%3Dx&verify=1") == \
        ("postgresql://u@h/db?options=-csearch_path%3Dx", True)
    assert verify_option("sqlite:///f.db?verify=0&timeout=3") == ("sqlite:///f.db?timeout=3",
                                                                   False)
    assert verify_option("sqlite:///f.db") == ("sqlite:///f.db", False)


def test_serve_refuses_a_corrupt_store_when_asked(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`grantlog serve --store URL?verify=1`: a sound store is served; a corrupt one stops
    the server before it listens (exit 2, the problem on stderr)."""
    db = tmp_path / "facts.db"
    url = f"sqlite:///{db}"
    assert run(capsys, "store", "load", url, FACTS, "--rules", RULES, "--create")[0] == 0
    tokens = tmp_path / "tokens"
    tokens.write_text("verify-token-0123456789 check\n")
    tokens.chmod(0o600)
    proc, _ = serve(tmp_path, RULES, "--store", url + "?verify=1", "--tokens", str(tokens))
    stop(proc)
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM rel_owner")
    port = free_port()
    done = subprocess.run([sys.executable, "-m", "grantlog.cli", "serve", "--port", str(port),
                           RULES, "--store", url + "?verify=1", "--tokens", str(tokens)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "store-corrupt" in done.stderr and "owner" in done.stderr
