"""The store suite: one set of tests, run against SQLite and a real PostgreSQL server
(``store_url`` is parametrized; tests/pgserver.py starts the server once per run)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

import grantlog
from grantlog.store import open_store

RULES = """
rel member(user: string, group: string).
rel grant(group: string, op: string, res: string).
rel banned(user: string).
rel level(user: string, n: int).
rel tag(x: any, y: any).
member(root, admins).
grant(admins, read, t1).
allowed(U, O, R) :- member(U, G), grant(G, O, R), not banned(U).
senior(U) :- level(U, N), N >= 3.
"""


@pytest.fixture
def program() -> grantlog.Program:
    return grantlog.compile(RULES, filename="store_rules.gl")


def _state(r: grantlog.Reasoner) -> dict[str, set[tuple[object, ...]]]:
    return {rel: r.rows(rel) for rel in ("member", "grant", "banned", "level", "tag",
                                         "allowed", "senior")}


def test_facts_survive_a_restart_with_revisions(store_url: str,
                                                program: grantlog.Program) -> None:
    with grantlog.Reasoner(program, store=store_url, follow=False) as r:
        assert r.revision == 0
        assert not r.check("alice", "read", "t1")
        ch = r.insert("member", [("alice", "eng")])
        assert ch.revision == r.revision == 1
        assert r.insert("member", [("alice", "eng")]).revision == 1  # nothing new: no revision
        with r.transaction() as tx:
            tx.insert("grant", [("eng", "read", "t1"), ("eng", "write", "t2")])
            tx.insert("level", [("alice", 3), ("bob", 1)])
            tx.insert("tag", [("x", 1), (1, "x"), ("1", 1)])
        assert tx.revision == 2
        d = r.check("alice", "read", "t1")
        assert d.allowed and d.revision == 2
        assert r.query("allowed(alice, O, R)").revision == 2
        assert r.list("alice", "write").revision == 2
        assert r.who("read", "t1") == ["alice", "root"]
        r.retract("grant", [("eng", "write", "t2")])
        before = _state(r)
    with grantlog.Reasoner(program, store=store_url, follow=False) as again:
        assert again.revision == 3
        assert _state(again) == before
        # ints and strings stay apart in untyped columns, through both stores
        assert again.rows("tag") == {("x", 1), (1, "x"), ("1", 1)}
        assert again.rows("senior") == {("alice",)}
    fresh = grantlog.Reasoner(program)
    for rel in ("member", "grant", "level", "tag"):
        fresh.insert(rel, before[rel] - {row for row in before[rel] if rel == "member"
                                         and row == ("root", "admins")}
                     - ({("admins", "read", "t1")} if rel == "grant" else set()))
    assert _state(fresh) == before


def test_a_transaction_is_durable_entirely_or_not_at_all(store_url: str,
                                                         program: grantlog.Program) -> None:
    with grantlog.Reasoner(program, store=store_url, follow=False) as r:
        with pytest.raises(grantlog.GrantlogError) as info, r.transaction() as tx:
            tx.insert("member", [("bob", "eng")])
            tx.insert("level", [("bob", "three")])  # a string in an int column
        assert info.value.diagnostics[0].code == "bad-fact"
        with pytest.raises(RuntimeError), r.transaction() as tx:
            tx.insert("member", [("bob", "eng")])
            raise RuntimeError("the caller gave up")
        assert r.revision == 0 and r.rows("member") == {("root", "admins")}
    assert open_store(store_url, program).head() == (0, 0)


def test_a_second_reasoner_follows_the_log(store_url: str, program: grantlog.Program) -> None:
    with grantlog.Reasoner(program, store=store_url) as writer, \
            grantlog.Reasoner(program, store=store_url) as reader:
        rev = writer.insert("member", [("carol", "admins")]).revision
        d = reader.check("carol", "read", "t1", at_least=rev)
        assert d.allowed and d.revision >= rev
        writer.insert("banned", [("carol",)])
        deadline = time.monotonic() + 10  # the follower thread, with no at_least
        while reader.revision < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert reader.revision == 2 and not reader.check("carol", "read", "t1")
        # the reader writes too: it catches up first, then commits the next revision
        with reader.transaction(watch="allowed") as tx:
            tx.retract("banned", [("carol",)])
        assert tx.revision == 3
        assert tx.changes.gained("allowed") == {("carol", "read", "t1")}
        assert writer.check("carol", "read", "t1", at_least=3)


def test_compare_and_set_and_waiting(store_url: str, program: grantlog.Program) -> None:
    with grantlog.Reasoner(program, store=store_url, follow=False) as a, \
            grantlog.Reasoner(program, store=store_url, follow=False) as b:
        a.insert("member", [("dave", "eng")])
        assert b.revision == 0  # not following: b has not read the log yet
        with pytest.raises(grantlog.RevisionConflict) as info, \
                b.transaction(if_revision=0) as tx:
            tx.insert("member", [("erin", "eng")])
        assert (info.value.expected, info.value.actual) == (0, 1)
        assert b.revision == 1  # it caught up while checking
        with b.transaction(if_revision=1) as tx:
            tx.insert("member", [("erin", "eng")])
        assert tx.revision == 2
        with pytest.raises(grantlog.GrantlogError) as info2:
            a.wait_for(5, timeout=0.2)
        assert info2.value.diagnostics[0].code == "revision-timeout"
        assert a.check("erin", "x", "y", at_least=2).revision == 2


def test_policy_facts_cannot_be_retracted_through_a_store(store_url: str,
                                                          program: grantlog.Program) -> None:
    with grantlog.Reasoner(program, store=store_url, follow=False) as r:
        with pytest.raises(grantlog.GrantlogError) as info:
            r.retract("member", [("root", "admins")])
        d = info.value.diagnostics[0]
        assert d.code == "policy-fact" and (d.span.file, d.span.line) == ("store_rules.gl", 7)
        # storing a policy fact keeps it (and retracting the stored copy leaves the policy's)
        assert r.insert("member", [("root", "admins")]).revision == 1
        assert r.retract("member", [("root", "admins")]).revision == 2
        assert r.rows("member") == {("root", "admins")}


def test_schema_changes(store_url: str, program: grantlog.Program) -> None:
    with grantlog.Reasoner(program, store=store_url, follow=False) as r:
        r.insert("level", [("alice", 3)])
    # a new relation: its table is added
    grown = grantlog.compile(RULES + "rel audit(who: string).\n", filename="v2.gl")
    with grantlog.Reasoner(grown, store=store_url, follow=False) as r:
        r.insert("audit", [("alice",)])
        assert r.rows("level") == {("alice", 3)}
    # a changed type: refused, naming the relation and how to migrate
    changed = grantlog.compile(RULES.replace("n: int", "n: string").replace("N >= 3", "N = x")
                               + "rel audit(who: string).", filename="v3.gl")
    with pytest.raises(grantlog.GrantlogError) as info:
        grantlog.Reasoner(changed, store=store_url)
    d = info.value.diagnostics[0]
    assert d.code == "store-schema-mismatch" and "`level`" in d.message
    assert d.help is not None and "grantlog store dump" in d.help
    # a relation dropped while it has facts: refused
    with pytest.raises(grantlog.GrantlogError) as info:
        grantlog.Reasoner(program, store=store_url)
    assert "`audit`" in info.value.diagnostics[0].message
    with grantlog.Reasoner(grown, store=store_url, follow=False) as r:
        r.retract("audit", [("alice",)])
    # ... and dropped when empty
    with grantlog.Reasoner(program, store=store_url, follow=False) as r:
        assert r.rows("level") == {("alice", 3)}
        assert "audit" not in r.store.tables


def test_installed_policies_are_kept_in_order(store_url: str,
                                              program: grantlog.Program) -> None:
    st = open_store(store_url, program)
    try:
        assert st.policy() is None and st.policy_serial() == 0
        first = st.put_policy(program)
        assert (first.serial, first.hash, first.revision) == (1, program.digest, 0)
        with grantlog.Reasoner(program, store=st, follow=False) as r:
            r.insert("banned", [("eve",)])
        v2 = grantlog.compile(RULES + "rel audit(who: string).\n", filename="v2.gl")
        st.open(v2)
        with pytest.raises(grantlog.GrantlogError) as info:
            st.put_policy(v2, if_hash="0" * 16)
        assert info.value.diagnostics[0].code == "policy-conflict"
        second = st.put_policy(v2, if_hash=program.digest)
        got = st.policy()
        assert got == second and (got.serial, got.revision) == (2, 1)
        assert got.roots == ["v2.gl"] and got.sources == {"v2.gl": v2.sources["v2.gl"]}
        assert st.policy_serial() == 2 and st.head() == (1, 0)  # not a transaction
        again = grantlog.compile(None, paths=got.roots, files=got.sources, disk=False)
        assert again.digest == v2.digest
    finally:
        st.close()


def test_compaction_bounds_the_log_and_followers_reload(store_url: str,
                                                        program: grantlog.Program) -> None:
    with grantlog.Reasoner(program, store=store_url, follow=False) as w, \
            grantlog.Reasoner(program, store=store_url, follow=False) as behind:
        for i in range(10):
            w.insert("member", [(f"u{i}", "eng")])
        w.retract("member", [("u0", "eng")])
        st = w.store.stats()
        assert st["log_rows"] == 11 and st["log_transactions"] == 11
        assert w.store.compact(keep=3) == 8
        st = w.store.stats()
        assert (st["log_rows"], st["horizon"], st["revision"]) == (3, 8, 11)
        with pytest.raises(grantlog.GrantlogError) as info:
            w.store.since(2)
        assert info.value.diagnostics[0].code == "revision-compacted"
        assert behind.sync() == 11  # too far behind for the log: reloaded
        assert behind.rows("member") == w.rows("member")
        assert behind.check("u5", "read", "t2").revision == 11


def test_bulk_loads_log_only_new_rows(store_url: str, program: grantlog.Program) -> None:
    st = open_store(store_url, program)
    try:
        many = [(f"u{i}", "eng") for i in range(500)]
        with st.writing() as w:  # an empty table, with a row given twice
            assert w.load("member", [*many, many[0]]) == 500
        with st.writing() as w:  # a table with rows: only the new ones
            assert w.load("member", [*many[:10], ("new", "eng")] * 300) == 1
        with st.writing() as w:
            assert w.load("member", many) == 0
        assert w.committed is None and st.head() == (2, 0)
        assert st.stats()["log_rows"] == 501
    finally:
        st.close()
    with grantlog.Reasoner(program, store=store_url) as r:
        assert len(r.rows("member")) == 502


def test_merged_revisions_equal_one_by_one(tmp_path: Path, program: grantlog.Program) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with grantlog.Reasoner(program, store=url, follow=False, create=True) as w, \
            grantlog.Reasoner(program, store=url, follow=False) as behind:
        for i in range(100):  # more than MERGE_ABOVE: the follower merges them
            if i % 3:
                w.insert("member", [(f"u{i % 7}", "eng")])
            else:
                w.retract("member", [(f"u{(i + 1) % 7}", "eng")])
        behind.sync()
        assert behind.revision == w.revision and behind.all_rows() == w.all_rows()


def test_derived_relations_get_their_table_with_the_first_base_fact(store_url: str) -> None:
    program = grantlog.compile(RULES + "@writable rel allowed(u: string, o: string, r: string).\n",
                               filename="store_rules.gl")
    with grantlog.Reasoner(program, store=store_url, follow=False) as r:
        assert "allowed" not in r.store.tables
        r.insert("allowed", [("zed", "read", "t9")])
    with grantlog.Reasoner(program, store=store_url, follow=False) as r:
        assert r.check("zed", "read", "t9")


def test_concurrent_writers_in_threads_lose_nothing(store_url: str,
                                                    program: grantlog.Program) -> None:
    reasoners = [grantlog.Reasoner(program, store=store_url, follow=False) for _ in range(3)]

    def work(k: int) -> None:
        for i in range(15):
            reasoners[k].insert("member", [(f"w{k}-{i}", "eng")])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        for r in reasoners:
            r.sync()
            assert r.revision == 45
            assert len(r.rows("member")) == 46
    finally:
        for r in reasoners:
            r.close()


def test_store_errors_leave_memory_unchanged(tmp_path: Path, program: grantlog.Program) -> None:
    url = f"sqlite:///{tmp_path / 'locked.db'}?timeout=0.2"
    with grantlog.Reasoner(program, store=url, follow=False, create=True) as r:
        r.insert("member", [("a", "eng")])
        blocker = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
        blocker.execute("BEGIN EXCLUSIVE")
        with pytest.raises(grantlog.GrantlogError) as info:
            r.insert("member", [("b", "eng")])
        assert info.value.diagnostics[0].code == "store-locked"
        assert r.revision == 1 and ("b", "eng") not in r.rows("member")
        blocker.execute("ROLLBACK")
        blocker.close()
        assert r.insert("member", [("b", "eng")]).revision == 2  # usable again


def test_a_lost_postgres_connection_is_an_error_then_recovers(
        pg_server: object, program: grantlog.Program) -> None:
    import psycopg

    url = pg_server.schema_url()  # type: ignore[attr-defined]
    with grantlog.Reasoner(program, store=url, follow=False, create=True) as r:
        r.insert("member", [("a", "eng")])
        with psycopg.connect(pg_server.url, autocommit=True) as admin:  # type: ignore[attr-defined]
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE pid <> pg_backend_pid() AND datname = current_database()")
        with pytest.raises(grantlog.GrantlogError) as info:
            r.insert("member", [("b", "eng")])
        assert info.value.diagnostics[0].code == "store-unavailable"
        assert r.revision == 1 and ("b", "eng") not in r.rows("member")
        assert r.insert("member", [("b", "eng")]).revision == 2  # reconnected


def test_a_full_disk_is_an_error_and_nothing_is_applied(tmp_path: Path,
                                                        program: grantlog.Program) -> None:
    with grantlog.Reasoner(program, store=f"sqlite:///{tmp_path / 'full.db'}",
                           follow=False, create=True) as r:
        r.insert("member", [("a", "eng")])
        conn = r.store.connection  # type: ignore[union-attr,attr-defined]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full now
        with pytest.raises(grantlog.GrantlogError) as info:
            r.insert("member", [(f"user{i:05d}", "g" * 200) for i in range(2000)])
        assert info.value.diagnostics[0].code == "store-full"
        assert r.revision == 1 and len(r.rows("member")) == 2
        conn.execute("PRAGMA max_page_count = 1073741823")  # space again
        assert r.insert("member", [("b", "eng")]).revision == 2
    with grantlog.Reasoner(program, store=f"sqlite:///{tmp_path / 'full.db'}") as again:
        assert again.rows("member") == {("root", "admins"), ("a", "eng"), ("b", "eng")}


def test_a_follower_survives_a_lost_postgres_connection(pg_server: object,
                                                        program: grantlog.Program) -> None:
    import psycopg

    url = pg_server.schema_url()  # type: ignore[attr-defined]
    with grantlog.Reasoner(program, store=url, follow=False, create=True) as writer, \
            grantlog.Reasoner(program, store=url) as follower:
        writer.insert("member", [("a", "eng")])
        follower.wait_for(1, timeout=10)
        with psycopg.connect(pg_server.url, autocommit=True) as admin:  # type: ignore[attr-defined]
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE pid <> pg_backend_pid() AND datname = current_database()")
        with pytest.raises(grantlog.GrantlogError):
            writer.insert("member", [("b", "eng")])  # the writer's connection was lost too
        writer.insert("member", [("b", "eng")])
        deadline = time.monotonic() + 15  # the follower reconnects with backoff, by itself
        while follower.revision < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert follower.revision == 2 and ("b", "eng") in follower.rows("member")


def test_load_files_into_a_reasoner(tmp_path: Path, program: grantlog.Program) -> None:
    (tmp_path / "member.csv").write_text("user,group\nx,eng\ny,eng\n", encoding="utf-8")
    (tmp_path / "more.gl").write_text('level(x, 4).\ngrant(eng, read, "t.2").\n',
                                      encoding="utf-8")
    r = grantlog.Reasoner(program)
    ch = r.load([str(tmp_path)])
    assert ch.revision == 1 and r.check("x", "read", "t.2") and r.rows("senior") == {("x",)}


@pytest.mark.parametrize("url", ["mysql://x", "sqlite://", "sqlite:////nonexistent/dir/x.db"])
def test_bad_store_urls(url: str, program: grantlog.Program) -> None:
    with pytest.raises(grantlog.GrantlogError) as info:
        grantlog.Reasoner(program, store=url)
    assert info.value.diagnostics[0].code in ("bad-store-url", "store-not-found")


def test_a_file_that_is_not_a_database(tmp_path: Path, program: grantlog.Program) -> None:
    (tmp_path / "x.db").write_text("hello, not sqlite" * 100)
    with pytest.raises(grantlog.GrantlogError) as info:
        grantlog.Reasoner(program, store=f"sqlite:///{tmp_path / 'x.db'}")
    assert info.value.diagnostics[0].code == "store-unavailable"


def test_other_backends_refuse_a_store(program: grantlog.Program, tmp_path: Path) -> None:
    with pytest.raises(grantlog.GrantlogError) as info:
        grantlog.Reasoner(program, backend="pydatalog", store=f"sqlite:///{tmp_path}/x.db")
    assert info.value.diagnostics[0].code == "unsupported-feature"
