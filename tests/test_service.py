"""The decision service end to end: a real `grantlog serve` subprocess on a free port, talked
to over real HTTP (httpx, keep-alive), answers checked against an in-process Reasoner."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from httpserver import serve, workers

import grantlog
from grantlog.service import auth

ROOT = Path(__file__).resolve().parent.parent
RULES = str(ROOT / "rules" / "gravitino.gl")
FACTS = str(ROOT / "examples" / "gravitino" / "facts.gl")
READ = "reader-token-0123456789"
WRITE = "writer-token-0123456789"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One server for the module: the Gravitino model, its example facts in a SQLite store,
    a read token and a write token, a batch limit of 100."""
    tmp = tmp_path_factory.mktemp("serve")
    store = f"sqlite:///{tmp / 'facts.db'}"
    from grantlog.cli import main

    assert main(["store", "load", store, FACTS, "--rules", RULES, "--create"]) == 0
    (tmp / "tokens").write_text(f"# tokens\n{READ} check\n{WRITE} check,write\n")
    proc, url = serve(tmp, RULES, "--store", store, "--tokens", str(tmp / "tokens"),
                       "--max-batch", "100", "--max-body", "200000", "--watch", "allowed")
    program = grantlog.compile(paths=[RULES])
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {READ}"},
                      timeout=30) as client:
        yield {"url": url, "client": client, "store": store, "program": program}
    proc.terminate()
    proc.wait(timeout=30)


def _reasoner(server: dict[str, Any]) -> grantlog.Reasoner:
    return grantlog.Reasoner(server["program"], store=server["store"], follow=False)


CASES = [("alice", "load_table", "m1.lakehouse.sales.orders"),
         ("carol", "load_table", "m1.lakehouse.sales.customers"),
         ("bob", "load_table", "m1.lakehouse.sales.orders"),
         ("nobody", "drop_table", "m1.lakehouse.sales.orders")]


def test_check_answers_as_the_reasoner(server: dict[str, Any]) -> None:
    c = server["client"]
    with _reasoner(server) as r:
        for s, o, res in CASES:
            got = c.post("/v1/check", json={"subject": s, "operation": o, "resource": res})
            assert got.status_code == 200
            body = got.json()
            d = r.check(s, o, res)
            assert (body["allowed"], body["reasons"]) == (d.allowed, list(d.reasons))
            assert body["revision"] == d.revision
    assert any(c.post("/v1/check", json=dict(zip(("subject", "operation", "resource"), x,
                                                  strict=True))).json()["allowed"]
               for x in CASES)
    got = c.post("/v1/check", json={"subject": "carol", "operation": "load_table",
                                    "resource": "m1.lakehouse.sales.customers",
                                    "explain": True}).json()
    assert got["allowed"] is False and got["explanation"]["holds"] is False


def test_batch_equals_single_checks_and_is_limited(server: dict[str, Any]) -> None:
    c = server["client"]
    checks = [dict(zip(("subject", "operation", "resource"), x, strict=True)) for x in CASES]
    got = c.post("/v1/check/batch", json={"checks": checks * 5}).json()
    singles = [c.post("/v1/check", json=x).json() for x in checks]
    assert [(x["allowed"], x["reasons"]) for x in got["results"]] == \
        [(x["allowed"], x["reasons"]) for x in singles] * 5
    over = c.post("/v1/check/batch", json={"checks": checks * 30})
    assert over.status_code == 413 and over.json()["error"]["code"] == "batch-too-large"


def test_list_and_who_stream_everything_and_page(server: dict[str, Any]) -> None:
    c = server["client"]
    with _reasoner(server) as r:
        want = list(r.list("alice", "load_table"))
        who = list(r.who("load_table", "m1.lakehouse.sales.orders"))
    with c.stream("POST", "/v1/list", json={"subject": "alice", "operation": "load_table"}) \
            as resp:
        assert resp.headers["content-type"].startswith("application/x-ndjson")
        lines = [orjson.loads(x) for x in resp.iter_lines() if x]
    assert [x["resource"] for x in lines[:-1]] == want and lines[-1]["count"] == len(want)
    pages: list[Any] = []
    cursor = None
    while True:
        body = {"subject": "alice", "operation": "load_table", "limit": 1}
        if cursor:
            body["cursor"] = cursor
        page = c.post("/v1/list", json=body).json()
        pages += page["resources"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == want and len(want) > 1
    lines = [orjson.loads(x) for x in c.post(
        "/v1/who", json={"operation": "load_table",
                         "resource": "m1.lakehouse.sales.orders"}).text.splitlines()]
    assert [x["subject"] for x in lines[:-1]] == who


def test_filters_over_http(server: dict[str, Any]) -> None:
    """POST /v1/filter (and Client.filter): the reasoner's filter as JSON, and its SQL over a
    layout, which run in SQLite keeps exactly what list answers."""
    import sqlite3

    from grantlog.client import Client
    from grantlog.filters import Layout, select_sql

    with _reasoner(server) as r:
        want = r.filter("alice", "load_table", "table")
        listed = list(r.list("alice", "load_table", type="table"))
        objects = [(x, t) for x, t in r.rows("entity")]
        parent = {c: p for p, c in r.rows("contains")}
    got = server["client"].post("/v1/filter", json={
        "subject": "alice", "operation": "load_table", "type": "table"}).json()
    assert got["condition"] == want.to_dict()["condition"] and "sql" not in got
    layout = {"table": "objects", "id": "id", "type": "type", "path": "path"}
    with Client(server["url"], token=READ) as client:
        sql = client.filter("alice", "load_table", "table", sql="sqlite", layout=layout)
    assert sql["sql"] == select_sql(want, Layout(**layout), "sqlite").split(" WHERE ", 1)[1]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE objects (id text, type text, path text)")
    for x, t in objects:
        chain = [x]
        while chain[-1] in parent:
            chain.append(parent[chain[-1]])
        db.execute("INSERT INTO objects VALUES (?, ?, ?)",
                   (x, t, "/" + "/".join(reversed(chain)) + "/"))
    rows = db.execute(f"SELECT id FROM objects WHERE {sql['sql']} ORDER BY id").fetchall()
    assert [x for (x,) in rows] == listed and listed
    c = server["client"]
    for body, code in (({"subject": "alice", "operation": "load_table", "sql": "sqlite"},
                        "bad-request"),
                       ({"subject": "alice", "operation": "load_table", "sql": "sqlite",
                         "layout": {"id": "id"}}, "bad-layout"),
                       ({"subject": "alice", "operation": "load_table", "sql": "oracle",
                         "layout": layout}, "bad-option"),
                       ({"subject": "alice", "operation": "load_table", "sql": "sqlite",
                         "layout": {"table": "t"}}, "filter-layout")):
        bad = c.post("/v1/filter", json=body)
        assert bad.status_code == 422 and bad.json()["error"]["code"] == code, bad.text


def test_explain_and_query(server: dict[str, Any]) -> None:
    c = server["client"]
    goal = 'allowed(alice, load_table, "m1.lakehouse.sales.orders")'
    j = c.post("/v1/explain", json={"goal": goal}).json()
    assert j["holds"] and j["explanation"]["holds"]
    for fmt, marker in (("text", "allowed"), ("dot", "digraph"), ("mermaid", "flowchart")):
        assert marker in c.post("/v1/explain", json={"goal": goal, "format": fmt}).json()[
            "explanation"]
    q = c.post("/v1/query", json={"goal": 'allowed(U, load_table, "m1.lakehouse.sales.orders")'})
    with _reasoner(server) as r:
        assert q.json()["answers"] == list(r.query(
            'allowed(U, load_table, "m1.lakehouse.sales.orders")'))


def test_writes_need_the_write_scope_and_take_effect(server: dict[str, Any]) -> None:
    c = server["client"]
    row = ["dave", "analysts"]
    assert c.post("/v1/write", json={"insert": {"member": [row]}}).status_code == 403
    assert httpx.post(server["url"] + "/v1/write", json={"insert": {"member": [row]}}
                      ).status_code == 401
    assert httpx.post(server["url"] + "/v1/check", json={
        "subject": "a", "operation": "b", "resource": "c"},
        headers={"Authorization": "Bearer wrong-token-0123456789"}).status_code == 401
    w = {"Authorization": f"Bearer {WRITE}"}
    before = c.get("/v1/policy").json()["revision"]
    got = c.post("/v1/write", json={"insert": {"member": [row]}}, headers=w)
    assert got.status_code == 200, got.text
    rev = got.json()["revision"]
    assert rev == before + 1
    assert any(g[0] == "dave" for g in got.json()["changes"]["allowed"]["gained"])
    d = c.post("/v1/check", json={"subject": "dave", "operation": "load_table",
                                  "resource": "m1.lakehouse.sales.orders",
                                  "at_least_revision": rev}).json()
    assert d["revision"] >= rev
    conflict = c.post("/v1/write", json={"retract": {"member": [row]}, "if_revision": before},
                      headers=w)
    assert conflict.status_code == 409
    assert conflict.json()["error"]["code"] == "revision-conflict"
    ok = c.post("/v1/write", json={"retract": {"member": [row]}, "if_revision": rev}, headers=w)
    assert ok.status_code == 200 and ok.json()["revision"] == rev + 1
    with _reasoner(server) as r:  # durable: another process sees it in the store
        assert r.revision == rev + 1 and ("dave", "analysts") not in r.rows("member")


@pytest.mark.parametrize(("path", "body", "status", "code"), [
    ("/v1/check", b"{not json", 400, "malformed-json"),
    ("/v1/check", b"[1, 2]", 400, "malformed-json"),
    ("/v1/check", b'{"subject": "a", "operation": "b"}', 422, "bad-request"),
    ("/v1/check", b'{"subject": 1, "operation": "b", "resource": "c"}', 422, "bad-request"),
    ("/v1/query", b'{"goal": "allowed(U, "}', 422, "syntax-error"),
    ("/v1/query", b'{"goal": "alowed(U, V, W)"}', 422, "unknown-relation"),
    ("/v1/write", b'{"insert": {"membr": [["a", "b"]]}}', 422, "unknown-relation"),
    ("/v1/write", b'{"insert": {"member": [["a"]]}}', 422, "bad-fact"),
    ("/v1/write", b'{"insert": {"member": "nope"}}', 422, "bad-request"),
    ("/v1/list", b'{"subject": "a", "operation": "b", "cursor": 5}', 422, "bad-request"),
    ("/v1/check", b'{"pad": "' + b"x" * 300_000 + b'"}', 413, "body-too-large"),
])
def test_bad_input_is_a_4xx_with_diagnostics(server: dict[str, Any], path: str, body: bytes,
                                            status: int, code: str) -> None:
    c = server["client"]
    got = c.post(path, content=body, headers={"Authorization": f"Bearer {WRITE}",
                                              "content-type": "application/json"})
    assert got.status_code == status, got.text
    assert got.json()["error"]["code"] == code
    if code == "syntax-error":
        d = got.json()["error"]["diagnostics"][0]
        assert d["file"] == "<goal>" and d["line"] == 1 and d["col"] > 1
    assert c.get("/healthz").status_code == 200  # and it keeps serving


def test_health_readiness_metrics_openapi_relations(server: dict[str, Any]) -> None:
    c = server["client"]
    assert c.get("/healthz").json() == {"status": "ok"}
    ready = c.get("/readyz").json()
    assert ready["ready"] and ready["store_revision"] >= 1
    c.post("/v1/check", json={"subject": "alice", "operation": "load_table",
                              "resource": "m1.lakehouse.sales.orders"})
    m = c.get("/metrics").text
    assert 'grantlog_decisions_total{result="allow"}' in m
    assert "grantlog_request_seconds_bucket" in m and "grantlog_revision " in m
    spec = c.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.1") and "/v1/check" in spec["paths"]
    page = c.get("/v1/relations/member", params={"limit": 2}).json()
    assert len(page["rows"]) == 2 and page["next_cursor"]
    rest = c.get("/v1/relations/member", params={"cursor": page["next_cursor"],
                                                 "limit": 10_000}).json()
    with _reasoner(server) as r:
        assert sorted(map(tuple, page["rows"] + rest["rows"])) == sorted(r.rows("member"))
    assert c.get("/v1/relations/nope").status_code == 422
    pol = c.get("/v1/policy").json()
    assert pol["hash"] == server["program"].digest


def test_tokens() -> None:
    t = auth.Tokens(tuple(auth.parse("aaaaaaaaaaaaaaaa check\nbbbbbbbbbbbbbbbb check,write\n"
                                     "cccccccccccccccc admin", "t")))
    assert t.allows(None, "check") == 401
    assert t.allows("Bearer aaaaaaaaaaaaaaaa", "check") == 200
    assert t.allows("Bearer aaaaaaaaaaaaaaaa", "write") == 403
    assert t.allows("Bearer bbbbbbbbbbbbbbbb", "write") == 200
    assert t.allows("Bearer cccccccccccccccc", "admin") == 200
    assert t.allows("Bearer dddddddddddddddd", "check") == 401
    open_ = auth.Tokens()
    assert open_.allows(None, "check") == 200 and open_.allows(None, "write") == 403
    assert auth.Tokens((), True).allows(None, "write") == 200
    for bad in ("short check", "aaaaaaaaaaaaaaaa read", "aaaaaaaaaaaaaaaa"):
        with pytest.raises(grantlog.GrantlogError):
            auth.parse(bad, "t")


def test_a_failure_while_deciding_is_a_deny() -> None:
    from grantlog.service.decide import answer_check
    from grantlog.service.metrics import Metrics

    class Broken:
        revision = 7

        def check(self, *a: Any, **k: Any) -> Any:
            raise RuntimeError("the disk caught fire")

    class Svc:
        reasoner = Broken()
        metrics = Metrics()

    got = answer_check(Svc(), "a", "b", "c", None)  # type: ignore[arg-type]
    assert got["allowed"] is False and got["error"]["code"] == "internal-error"


def test_several_workers_share_the_store(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'w.db'}"
    from grantlog.cli import main

    assert main(["store", "load", store, FACTS, "--rules", RULES, "--create"]) == 0
    proc, url = serve(tmp_path, RULES, "--store", store, "--workers", "2",
                       "--allow-unauthenticated-writes")
    try:
        with httpx.Client(base_url=url, timeout=30) as c:
            for i in range(10):
                row = [f"user{i}", "analysts"]
                rev = c.post("/v1/write", json={"insert": {"member": [row]}}).json()["revision"]
                for _ in range(4):  # whichever worker answers has applied it
                    d = c.post("/v1/check", json={"subject": f"user{i}",
                                                  "operation": "load_table",
                                                  "resource": "m1.lakehouse.sales.orders",
                                                  "at_least_revision": rev}).json()
                    assert d["revision"] >= rev
        for _ in range(30):  # new connections: both workers decide
            httpx.post(url + "/v1/check", json={"subject": "alice", "operation": "load_table",
                                                "resource": "m1.lakehouse.sales.orders"})
        # /metrics on either worker answers for both: 70 decisions, a revision per worker
        for _ in range(6):
            text = httpx.get(url + "/metrics").text
            total = sum(float(line.split()[-1]) for line in text.splitlines()
                        if line.startswith("grantlog_decisions_total{"))
            assert total == 70
            revisions = [line for line in text.splitlines()
                         if line.startswith("grantlog_revision{")]
            assert len(revisions) == 2 and all('pid="' in x for x in revisions)
            assert all(float(x.split()[-1]) == 11 for x in revisions)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    with grantlog.Reasoner(grantlog.compile(paths=[RULES]), store=store) as r:
        assert {f"user{i}" for i in range(10)} <= {u for u, _ in r.rows("member")}


def test_serve_refuses_workers_without_a_store(capsys: pytest.CaptureFixture[str]) -> None:
    from grantlog.cli import main

    assert main(["serve", RULES, "--workers", "2"]) == 2
    assert "need a store" in capsys.readouterr().err


def test_watch_streams_derived_changes_live_and_since(server: dict[str, Any]) -> None:
    import threading

    c = server["client"]
    w = {"Authorization": f"Bearer {WRITE}"}
    start = c.get("/v1/policy").json()["revision"]
    events: list[dict[str, Any]] = []
    opened = threading.Event()

    def listen() -> None:
        with httpx.Client(base_url=server["url"], timeout=30,
                          headers={"Authorization": f"Bearer {READ}"}) as lc, \
                lc.stream("GET", "/v1/watch", params={"since": start}) as resp:
            assert resp.headers["content-type"].startswith("text/event-stream")
            opened.set()
            for line in resp.iter_lines():
                if line.startswith("data: "):
                    events.append(orjson.loads(line[6:]))
                    if len(events) == 2:
                        return

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    assert opened.wait(10)
    r1 = c.post("/v1/write", json={"insert": {"member": [["dave", "analysts"]]}},
                headers=w).json()["revision"]
    r2 = c.post("/v1/write", json={"retract": {"member": [["dave", "analysts"]]}},
                headers=w).json()["revision"]
    t.join(timeout=20)
    assert [e["revision"] for e in events] == [r1, r2]
    gained = {tuple(x) for x in events[0]["gained"]}
    assert gained and all(x[0] == "dave" for x in gained)
    assert {tuple(x) for x in events[1]["lost"]} == gained and not events[1]["gained"]
    # the feed replays from `since` (NDJSON this time)
    with c.stream("GET", "/v1/watch", params={"since": r1, "format": "ndjson"}) as resp:
        first = orjson.loads(next(resp.iter_lines()))
    assert first["revision"] == r2 and {tuple(x) for x in first["lost"]} == gained
    assert c.get("/v1/watch", params={"since": 0}).status_code == 410
    assert c.get("/v1/watch", params={"relation": "member"}).status_code == 422
    # without --watch, a server streams nothing and its writes report no derived changes



def test_the_python_client_answers_as_the_reasoner(server: dict[str, Any]) -> None:
    with grantlog.Client(server["url"], token=WRITE) as client, _reasoner(server) as r:
        for s, o, res in CASES:
            assert client.check(s, o, res) == r.check(s, o, res)
        assert client.list("alice", "load_table") == r.list("alice", "load_table")
        assert client.who("load_table", "m1.lakehouse.sales.orders") == \
            r.who("load_table", "m1.lakehouse.sales.orders")
        goal = 'allowed(U, load_table, "m1.lakehouse.sales.orders")'
        assert client.query(goal) == r.query(goal)
        ex = client.explain('allowed(carol, load_table, "m1.lakehouse.sales.customers")')
        assert not ex.holds and "allowed" in ex.render()
        with client.transaction(watch="allowed") as tx:
            tx.insert("member", [("dave", "analysts")])
        assert tx.revision == client.revision and tx.changes.gained("allowed")
        # read-your-writes: the client's reads wait for its own revision
        d = client.check("dave", "load_table", "m1.lakehouse.sales.orders")
        assert d.revision >= tx.revision
        lost = client.retract("member", [("dave", "analysts")]).lost("allowed")
        assert lost == tx.changes.gained("allowed")
        with pytest.raises(grantlog.RevisionConflict), \
                client.transaction(if_revision=0) as tx2:
            tx2.insert("member", [("dave", "analysts")])
        with pytest.raises(grantlog.GrantlogError) as info:
            client.query("allowed(U, ")
        assert info.value.diagnostics[0].code == "syntax-error"
        assert info.value.diagnostics[0].span.file == "<goal>"
    with grantlog.Client(server["url"], token=READ) as reader, \
            pytest.raises(grantlog.GrantlogError) as info:
        reader.insert("member", [("x", "y")])
    assert info.value.diagnostics[0].code == "forbidden"


def test_the_java_client_against_the_live_server(server: dict[str, Any],
                                                 tmp_path: Path) -> None:
    import shutil

    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("no `javac`/`java` on PATH: the Java client example needs a JDK 17")
    src = sorted(str(p) for p in (ROOT / "examples" / "java" / "src").rglob("*.java"))
    out = tmp_path / "classes"
    built = subprocess.run(["javac", "--release", "17", "-Xlint:all", "-Werror", "-d", str(out),
                            *src], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    run = subprocess.run(["java", "-cp", str(out), "io.grantlog.Demo", server["url"], READ,
                          WRITE], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("check alice load_table ALLOW [load_table")
    assert lines[1] == "batch ALLOW DENY"
    rev = int(lines[2].rsplit(" ", 1)[1])
    assert lines[3] == f"check dave load_table ALLOW at {rev}"
    assert lines[4].startswith(f"watch revision {rev} gained ") and lines[4].endswith(" lost 0")
    assert lines[5] == "compare-and-set refused 409 revision-conflict"
    assert lines[6] == "reader write refused 403 forbidden"


def test_decision_logs_and_their_replay(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    store = f"sqlite:///{tmp_path / 'log.db'}"
    from grantlog.cli import main

    assert main(["store", "load", store, FACTS, "--rules", RULES, "--create"]) == 0
    capsys.readouterr()
    log = tmp_path / "decisions.jsonl"
    proc, url = serve(tmp_path, RULES, "--store", store, "--decision-log", str(log))
    try:
        with httpx.Client(base_url=url, timeout=30) as c:
            for s, o, res in CASES:
                c.post("/v1/check", json={"subject": s, "operation": o, "resource": res},
                       headers={"X-Request-Id": f"req-{s}"})
            c.post("/v1/check", json={"subject": "alice", "operation": "load_table",
                                      "resource": "m1.lakehouse.sales.orders",
                                      "explain": True})
            c.post("/v1/check/batch", json={"checks": [
                {"subject": s, "operation": o, "resource": res} for s, o, res in CASES]},
                headers={"X-Request-Id": "batch"})
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    entries = [orjson.loads(x) for x in log.read_text().splitlines()]
    assert len(entries) == 2 * len(CASES) + 1
    first = entries[0]
    assert first["request_id"] == "req-alice" and first["endpoint"] == "check"
    assert first["input"] == {"subject": "alice", "operation": "load_table",
                              "resource": "m1.lakehouse.sales.orders"}
    assert first["result"]["allowed"] is True and first["result"]["reasons"]
    assert first["policy"] == grantlog.compile(paths=[RULES]).digest
    assert first["revision"] == 1 and first["latency_us"] > 0 and first["time"].endswith("Z")
    assert [e["request_id"] for e in entries[-len(CASES):]] == [
        f"batch/{i}" for i in range(len(CASES))]
    # replay under rules where a DENY grant no longer wins: carol's denial would change
    new = tmp_path / "new.gl"
    old = "allow_applies(U, P, O), not denied(U, P, O)."
    assert old in Path(RULES).read_text()
    new.write_text(Path(RULES).read_text().replace(old, "allow_applies(U, P, O)."))
    code = main(["logs", "replay", str(log), "--rules", str(new), "--store", store])
    out = capsys.readouterr().out
    assert code == 1 and "DENY -> ALLOW allowed(carol, load_table" in out
    assert f"{len(entries)} replayed" in out and "would change" in out
    # the same rules: nothing changes
    assert main(["logs", "replay", str(log), "--rules", RULES, "--store", store]) == 0
    assert "0 would change" in capsys.readouterr().out


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc to find "
                    "the worker processes")
def test_a_killed_worker_loses_no_acknowledged_write(tmp_path: Path) -> None:
    import signal
    import threading

    store = f"sqlite:///{tmp_path / 'kill.db'}"
    from grantlog.cli import main

    assert main(["store", "load", store, FACTS, "--rules", RULES, "--create"]) == 0
    proc, url = serve(tmp_path, RULES, "--store", store, "--workers", "2",
                       "--allow-unauthenticated-writes")
    acked: list[str] = []
    revisions: list[int] = []
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            try:  # a new connection each time: the kill may take the old one's worker
                got = httpx.post(url + "/v1/write", timeout=10,
                                 json={"insert": {"member": [[f"k{i}", "analysts"]]}})
            except httpx.HTTPError:
                continue
            if got.status_code == 200:
                acked.append(f"k{i}")
                revisions.append(got.json()["revision"])

    try:
        deadline = time.monotonic() + 30
        while len(workers(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        started = workers(proc.pid)
        assert len(started) == 2
        t = threading.Thread(target=writer, daemon=True)
        t.start()
        time.sleep(1.0)
        os.kill(started[0], signal.SIGKILL)
        # the other worker keeps answering meanwhile
        for _ in range(20):
            got = httpx.post(url + "/v1/check", timeout=10, json={
                "subject": "alice", "operation": "load_table",
                "resource": "m1.lakehouse.sales.orders"})
            assert got.status_code == 200 and got.json()["allowed"]
        time.sleep(1.0)
        stop.set()
        t.join(timeout=30)
        deadline = time.monotonic() + 60  # uvicorn starts a new worker, which catches up
        while time.monotonic() < deadline:
            alive = workers(proc.pid)
            if len(alive) == 2 and started[0] not in alive:
                break
            time.sleep(0.2)
        alive = workers(proc.pid)
        assert len(alive) == 2 and started[0] not in alive, "no new worker replaced the dead"
        last = max(revisions)
        for _ in range(20):  # whichever worker answers, it has applied every write
            got = httpx.post(url + "/v1/check", timeout=30, json={
                "subject": "alice", "operation": "load_table",
                "resource": "m1.lakehouse.sales.orders", "at_least_revision": last})
            assert got.status_code == 200 and got.json()["revision"] >= last
        # the new worker swept the dead one's gauges when it started (its process exists a
        # while before it has, under load): a revision for each live worker
        deadline = time.monotonic() + 60
        while True:
            text = httpx.get(url + "/metrics", timeout=30).text
            pids = {int(line.split('pid="')[1].split('"')[0]) for line in text.splitlines()
                    if line.startswith("grantlog_revision{")}
            if pids == set(alive) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert pids == set(alive)
    finally:
        stop.set()
        proc.terminate()
        proc.wait(timeout=30)
    assert len(acked) > 10
    with grantlog.Reasoner(grantlog.compile(paths=[RULES]), store=store) as r:
        stored = {u for u, _ in r.rows("member")}
    assert set(acked) <= stored, "an acknowledged write was lost"
