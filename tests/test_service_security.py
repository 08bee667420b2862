"""The decision service attacked from outside (issue "Safe to expose"): uploads that name the
server's files, admin operations without an admin token, a tokens file without tokens, reads
that would hold the server, hostile parameters, a store that cannot grow. Every case runs
against a live `grantlog serve` started here."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpserver import free_port, serve, stop, workers

import grantlog

ROOT = Path(__file__).resolve().parent.parent
CHECK = "check-token-0123456789"
WRITE = "write-token-0123456789"
ADMIN = "admin-token-0123456789"
ITEMS = 3000

RULES = """\
rel item(x: string).
rel member(user: string, group: string).
rel grant(group: string, op: string, obj: string).

/// Members may do what their group was granted.
via_group: allowed(U, Op, R) :- member(U, G), grant(G, Op, R).
"""


def _facts() -> str:
    lines = [f'item("i{n:05d}").' for n in range(ITEMS)]
    lines += ['member(alice, eng).', 'grant(eng, read, "i00001").']
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Tokens for each scope, reads bounded tightly: 120 s, 64 MiB, 1000 unpaged rows; the
    headers of a request must arrive within 1 s."""
    tmp = tmp_path_factory.mktemp("secure")
    (tmp / "policy.gl").write_text(RULES)
    (tmp / "facts.gl").write_text(_facts())
    tokens = tmp / "tokens"
    tokens.write_text(f"{CHECK} check\n{WRITE} check,write\n{ADMIN} admin\n")
    tokens.chmod(0o600)
    proc, url = serve(tmp, str(tmp / "policy.gl"), str(tmp / "facts.gl"), "--tokens",
                      str(tokens), "--read-deadline", "120", "--read-memory", "64",
                      "--max-rows", "1000", "--header-timeout", "1")
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {CHECK}"},
                      timeout=30) as client:
        yield {"url": url, "client": client, "tmp": tmp, "tokens": tokens}
    stop(proc)


def _admin(client: httpx.Client) -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN}"}


# -- 1: an upload reads no file of the server -------------------------------------------------

@pytest.mark.parametrize("target", ["/etc/passwd", "../../../../../../etc/passwd",
                                    "TOKENS", "../rules/../../etc/hostname", "__init__.py"])
def test_an_upload_imports_no_file_of_the_server(server: dict[str, Any], target: str) -> None:
    c = server["client"]
    path = str(server["tokens"]) if target == "TOKENS" else target
    got = c.put("/v1/policy", headers=_admin(c), json={
        "files": {"policy.gl": f'import "{path}".\n' + RULES}})
    assert got.status_code == 422, got.text
    body = got.text
    assert got.json()["error"]["code"] == "import-not-found"
    for secret in ("root:", CHECK, WRITE, ADMIN):  # the contents (the path is the caller's)
        assert secret not in body
    assert "rules/" not in got.json()["error"]["diagnostics"][0].get("help", "")
    # the policy served is unchanged
    assert c.get("/v1/policy").json()["files"][0].endswith("policy.gl")


def test_an_upload_may_import_its_own_files_and_shipped_models(server: dict[str, Any]) -> None:
    c = server["client"]
    got = c.put("/v1/policy", headers=_admin(c), json={
        "files": {"main.gl": 'import "org/base.gl".\nimport "prelude.gl".\n',
                  "org/base.gl": "allowed(U, read, X) :- member(U, X).\n"},
        "roots": ["main.gl"]})
    assert got.status_code == 200, got.text
    sources = c.get("/v1/policy?sources=true").json()["sources"]
    assert {"main.gl", "org/base.gl"} <= set(sources)
    assert any(f.endswith("prelude.gl") for f in sources)
    # put back the policy the other tests expect
    got = c.put("/v1/policy", headers=_admin(c), json={
        "files": {"policy.gl": RULES, "facts.gl": _facts()}})
    assert got.status_code == 200, got.text


def test_loader_refuses_paths_out_of_an_upload() -> None:
    files = {"a.gl": 'import "/etc/passwd".\nimport "../x.gl".\nimport "prelude.gl".\n'}
    with pytest.raises(grantlog.GrantlogError) as err:
        grantlog.engine.compile_program(None, ["a.gl"], files=files, disk=False)
    codes = [(d.code, d.message) for d in err.value.diagnostics]
    assert codes == [("import-not-found", "cannot find `/etc/passwd`"),
                     ("import-not-found", "cannot find `../x.gl`")]
    assert "root:" not in str(err.value)


# -- 2 and 3: admin operations and tokens -----------------------------------------------------

def test_unauthenticated_writes_do_not_open_the_policy(tmp_path: Path) -> None:
    (tmp_path / "policy.gl").write_text(RULES)
    proc, url = serve(tmp_path, str(tmp_path / "policy.gl"), "--allow-unauthenticated-writes")
    try:
        got = httpx.put(url + "/v1/policy", json={"files": {"p.gl": "x(a)."}})
        assert got.status_code == 403, got.text
        assert "admin token" in got.json()["error"]["message"]
        got = httpx.post(url + "/v1/write", json={"insert": {"member": [["bob", "eng"]]}})
        assert got.status_code == 200, got.text
    finally:
        stop(proc)


def _serve_fails(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp / "policy.gl").write_text(RULES)
    return subprocess.run([sys.executable, "-m", "grantlog.cli", "serve", "--port",
                           str(free_port()), str(tmp / "policy.gl"), *args],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "GRANTLOG_TOKENS": ""})


@pytest.mark.parametrize("text", ["", "# no tokens here\n\n"])
def test_a_tokens_file_without_tokens_is_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / "tokens").write_text(text)
    got = _serve_fails(tmp_path, "--tokens", str(tmp_path / "tokens"))
    assert got.returncode == 2, got.stderr
    assert "no-tokens" in got.stderr and "holds no token" in got.stderr


def test_a_tokens_file_others_may_read_is_warned_about(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{CHECK} check\n")
    tokens.chmod(0o644)
    (tmp_path / "policy.gl").write_text(RULES)
    proc, _ = serve(tmp_path, str(tmp_path / "policy.gl"), "--tokens", str(tokens))
    stop(proc)
    log = next(tmp_path.glob("serve-*.log")).read_text()
    assert "may be read by other users" in log and "chmod 600" in log


def test_the_bearer_scheme_is_case_insensitive(server: dict[str, Any]) -> None:
    check = {"subject": "alice", "operation": "read", "resource": "i00001"}
    for scheme in ("Bearer", "bearer", "BEARER", "BeArEr"):
        got = httpx.post(server["url"] + "/v1/check", json=check,
                         headers={"Authorization": f"{scheme} {CHECK}"})
        assert got.status_code == 200 and got.json()["allowed"] is True, (scheme, got.text)
    got = httpx.post(server["url"] + "/v1/check", json=check,
                     headers={"Authorization": f"Basic {CHECK}"})
    assert got.status_code == 401


# -- 5: reads are bounded and do not hold the checks ------------------------------------------

#: a goal with no answer whose evaluation takes minutes (nested loops over 3000 items)
ENDLESS = "item(X), item(Y), item(Z), X < Y, Y < Z, Z < X"


def test_a_slow_read_is_cancelled_and_checks_go_on(server: dict[str, Any]) -> None:
    c = server["client"]
    result: dict[str, Any] = {}

    def heavy() -> None:
        t0 = time.monotonic()
        result["response"] = httpx.post(server["url"] + "/v1/query",
                                        json={"goal": ENDLESS, "timeout_ms": 2000},
                                        headers={"Authorization": f"Bearer {CHECK}"},
                                        timeout=60)
        result["seconds"] = time.monotonic() - t0

    t = threading.Thread(target=heavy)
    t.start()
    time.sleep(0.3)
    slowest = 0.0
    check = {"subject": "alice", "operation": "read", "resource": "i00001"}
    while t.is_alive():
        t0 = time.monotonic()
        got = c.post("/v1/check", json=check, timeout=10)
        slowest = max(slowest, time.monotonic() - t0)
        assert got.json()["allowed"] is True
        time.sleep(0.01)
    t.join()
    got = result["response"]
    assert got.status_code == 504, got.text
    assert got.json()["error"]["code"] == "deadline-exceeded"
    assert result["seconds"] < 10
    assert slowest < 0.5, f"a check waited {slowest:.2f} s behind the read"


def test_a_read_past_its_memory_is_too_large(server: dict[str, Any]) -> None:
    got = server["client"].post("/v1/query", json={"goal": "item(X), item(Y)", "limit": 10})
    assert got.status_code == 422, got.text[:400]
    assert got.json()["error"]["code"] == "too-large"
    # the server answers on
    got = server["client"].post("/v1/query", json={"goal": "member(U, G)"})
    assert got.status_code == 200 and got.json()["answers"] == [{"U": "alice", "G": "eng"}]


def test_unpaged_answers_are_bounded_and_pages_add_up(server: dict[str, Any]) -> None:
    c = server["client"]
    got = c.post("/v1/query", json={"goal": "item(X)"})
    assert got.status_code == 422 and got.json()["error"]["code"] == "too-large"
    assert "cursor" in got.json()["error"]["diagnostics"][0]["help"]
    seen: list[str] = []
    cursor = None
    while True:
        got = c.post("/v1/query", json={"goal": "item(X)", "limit": 700}
                     | ({"cursor": cursor} if cursor else {}))
        assert got.status_code == 200, got.text
        seen += [a["X"] for a in got.json()["answers"]]
        cursor = got.json()["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"i{n:05d}" for n in range(ITEMS)]


def test_reads_in_a_row_share_a_snapshot(server: dict[str, Any]) -> None:
    c = server["client"]
    for _ in range(20):
        got = c.post("/v1/who", json={"operation": "read", "resource": "i00001"})
        assert got.status_code == 200
        assert got.text.splitlines()[0] == '{"subject":"alice"}'


# -- 7: hostile parameters, slow headers ------------------------------------------------------

@pytest.mark.parametrize("query", ["limit=%C2%B2", "limit=%D9%A3", "limit=-1", "limit=1e3",
                                   "limit=99999999999999999999999", "cursor=%7B%22a%22%3A1%7D",
                                   "cursor=nope", "cursor=%5B%5D", "cursor=%22x%22",
                                   "cursor=%5B%7B%7D%5D"])
def test_bad_query_strings_are_422(server: dict[str, Any], query: str) -> None:
    got = server["client"].get(f"/v1/relations/item?{query}")
    assert got.status_code == 422, (query, got.status_code, got.text[:200])
    assert got.json()["error"]["code"] == "bad-request"


@pytest.mark.parametrize("cursor", ["{}", "[1, 2]", '"x', "[[1]]", "null", "[]", "true"])
def test_bad_cursors_in_bodies_are_422(server: dict[str, Any], cursor: str) -> None:
    c = server["client"]
    for path, body in (("/v1/list", {"subject": "alice", "operation": "read"}),
                       ("/v1/who", {"operation": "read", "resource": "i00001"}),
                       ("/v1/query", {"goal": "item(X)"})):
        got = c.post(path, json=body | {"cursor": cursor, "limit": 5})
        # a query's answers are rows: a list of values is a cursor of theirs
        expected = 200 if (cursor, path) == ("[1, 2]", "/v1/query") else 422
        assert got.status_code == expected, (path, cursor, got.status_code, got.text[:200])


def test_slow_headers_are_cut_off(server: dict[str, Any]) -> None:
    host, port = server["url"].removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\n")  # and never the rest
        t0 = time.monotonic()
        s.settimeout(10)
        assert s.recv(1024) == b""  # closed by the server
        assert time.monotonic() - t0 < 5
    with socket.create_connection((host, int(port)), timeout=10) as s:  # nothing at all
        s.settimeout(10)
        t0 = time.monotonic()
        assert s.recv(1024) == b""
        assert time.monotonic() - t0 < 5


def test_nul_in_a_fact_is_a_bad_fact(server: dict[str, Any]) -> None:
    c = server["client"]
    got = c.post("/v1/write", headers={"Authorization": f"Bearer {WRITE}"},
                 json={"insert": {"member": [["a\u0000b", "eng"]]}})
    assert got.status_code == 422, got.text
    assert got.json()["error"]["code"] == "bad-fact"


def test_nul_is_refused_alike_by_every_store(store_url: str) -> None:
    program = grantlog.compile(RULES)
    with grantlog.Reasoner(program, store=store_url) as r, \
            pytest.raises(grantlog.GrantlogError) as err:
        r.insert("member", [("a\x00b", "eng")])
    assert err.value.diagnostics[0].code == "bad-fact"


def test_a_store_that_cannot_grow_makes_the_server_unready(tmp_path: Path) -> None:
    """Writes fail with store-full (the store's files may not grow past 1 MB): readyz says so,
    and no error body names the store."""
    (tmp_path / "policy.gl").write_text(RULES)
    db = tmp_path / "secret-name.db"
    store = f"sqlite:///{db}"
    from grantlog.cli import main

    assert main(["store", "init", store, "--rules", str(tmp_path / "policy.gl")]) == 0
    limit = 1 << 20

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc, url = serve(tmp_path, str(tmp_path / "policy.gl"), "--store", store,
                      "--allow-unauthenticated-writes", preexec_fn=cap)
    try:
        assert httpx.get(url + "/readyz").status_code == 200
        failed = None
        for n in range(200):
            rows = [[f"user{n}-{i}-" + "x" * 200, "eng"] for i in range(100)]
            got = httpx.post(url + "/v1/write", json={"insert": {"member": rows}}, timeout=30)
            if got.status_code != 200:
                failed = got
                break
        assert failed is not None, "the store never filled up"
        assert failed.status_code == 503, failed.text
        # ENOSPC is store-full; the file size limit here is an I/O error: store-error
        assert failed.json()["error"]["code"] in ("store-full", "store-error"), failed.text
        assert "secret-name" not in failed.text and str(tmp_path) not in failed.text
        ready = httpx.get(url + "/readyz")
        assert ready.status_code == 503, ready.text
        assert ready.json()["code"] == failed.json()["error"]["code"]
        assert "secret-name" not in ready.text
    finally:
        stop(proc)


@pytest.mark.parametrize("stopped", [False, True])
def test_a_snapshot_does_not_outlive_its_worker(tmp_path: Path, stopped: bool) -> None:
    """A worker killed mid-read (SIGKILL: nothing runs) takes its snapshot along, also one
    the CPU throttle holds stopped at that moment (none of its threads can run then)."""
    (tmp_path / "policy.gl").write_text(RULES)
    (tmp_path / "facts.gl").write_text(_facts())
    proc, url = serve(tmp_path, str(tmp_path / "policy.gl"), str(tmp_path / "facts.gl"))
    try:
        def heavy() -> None:
            with contextlib.suppress(httpx.HTTPError):
                httpx.post(url + "/v1/query", json={"goal": ENDLESS}, timeout=60)

        threading.Thread(target=heavy, daemon=True).start()
        snapshots: list[int] = []
        for _ in range(100):
            snapshots = workers(proc.pid)
            if snapshots:
                break
            time.sleep(0.1)
        assert snapshots, "no snapshot process started"
        if stopped:
            for p in snapshots:
                os.kill(p, signal.SIGSTOP)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() and
                                              "zombie" not in _state(p) for p in snapshots):
        time.sleep(0.2)
    assert not [p for p in snapshots if Path(f"/proc/{p}").exists() and
                "zombie" not in _state(p)], "a snapshot outlived its worker"


def _state(pid: int) -> str:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # gone: read as a zombie's line
        return "State:\tZ (zombie)"
    return next((line for line in status.splitlines() if line.startswith("State:")), "")


# -- an unknown operation is not a policy decision --------------------------------------------

def test_an_unknown_operation_is_reported_not_just_denied(server: dict[str, Any]) -> None:
    c = server["client"]
    typo = c.post("/v1/check", json={"subject": "alice", "operation": "raed",
                                     "resource": "i00001"}).json()
    assert typo["allowed"] is False
    assert [w["code"] for w in typo["warnings"]] == ["unknown-constant"]
    denied = c.post("/v1/check", json={"subject": "alice", "operation": "read",
                                       "resource": "i00002"}).json()
    # an item no grant names can be no resource of `allowed` either: reported too (issue 27)
    assert denied["allowed"] is False
    assert [w["message"] for w in denied["warnings"]] == [
        "no rule, declaration or fact has `i00002` as the resource"]
    batch = c.post("/v1/check/batch", json={"checks": [
        {"subject": "alice", "operation": "raed", "resource": "i00001"},
        {"subject": "alice", "operation": "read", "resource": "i00001"}]}).json()["results"]
    assert [r.get("warnings", [{}])[0].get("code") for r in batch] == ["unknown-constant", None]
    # an operation that arrives with the facts is known from then on
    got = c.post("/v1/write", headers={"Authorization": f"Bearer {WRITE}"},
                 json={"insert": {"grant": [["ops", "publish", "i00003"]]}})
    assert got.status_code == 200, got.text
    later = c.post("/v1/check", json={"subject": "alice", "operation": "publish",
                                      "resource": "i00001"}).json()
    assert later["allowed"] is False and "warnings" not in later
    with grantlog.Client(server["url"], CHECK) as client:
        d = client.check("alice", "raed", "i00001")
        assert not d.allowed and d.warned("unknown-constant")


def test_a_strict_server_refuses_unknown_operations(tmp_path: Path) -> None:
    facts = str(ROOT / "examples" / "gravitino" / "facts.gl")
    proc, url = serve(tmp_path, "--model", "gravitino", facts, "--strict")
    try:
        got = httpx.post(url + "/v1/check", json={"subject": "alice", "operation": "load_tabel",
                                                  "resource": "m1.lakehouse.sales.orders"})
        assert got.status_code == 422, got.text
        err = got.json()["error"]
        assert err["code"] == "unknown-constant"
        assert "load_table" in err["diagnostics"][0]["help"]
        got = httpx.post(url + "/v1/check", json={"subject": "alice", "operation": "load_table",
                                                  "resource": "m1.lakehouse.sales.orders"})
        assert got.status_code == 200 and got.json()["allowed"] is True
        with grantlog.Client(url) as client, pytest.raises(grantlog.GrantlogError) as info:
            client.check("alice", "load_tabel", "m1.lakehouse.sales.orders")
        assert info.value.diagnostics[0].code == "unknown-constant"
    finally:
        stop(proc)


def test_a_busy_snapshot_gets_a_share_of_a_cpu(server: dict[str, Any]) -> None:
    """--read-cpu (0.25 by default): a computing snapshot is stopped and continued in turn,
    and runs at the idle priority."""
    t = threading.Thread(target=lambda: httpx.post(
        server["url"] + "/v1/query", json={"goal": ENDLESS, "timeout_ms": 2500},
        headers={"Authorization": f"Bearer {CHECK}"}, timeout=30))
    t.start()
    seen: set[str] = set()
    policies: set[str] = set()
    t0 = time.monotonic()
    while time.monotonic() - t0 < 2.0:
        for p in _snapshots(server):
            state = _state(p)
            if state:
                seen.add(state.split()[1])
            with contextlib.suppress(OSError):
                policies.add(Path(f"/proc/{p}/sched").read_text().split("policy")[1].split()[1])
        time.sleep(0.003)
    t.join()
    assert {"T", "R"} <= seen, seen  # stopped (SIGSTOP) and running, in turn
    assert "5" in policies, policies  # SCHED_IDLE (a child just forked is briefly still 0)


def _snapshots(server: dict[str, Any]) -> list[int]:
    """The server's snapshot processes (the children of the process serving its port)."""
    port = server["url"].rsplit(":", 1)[1]
    out: list[int] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            cmd = (proc / "cmdline").read_bytes()
            if b"serve" in cmd and f"{port}".encode() in cmd:
                out += workers(int(proc.name))
    return out


# -- a path asked without its slash: no redirect answered before the token is checked ---------

@pytest.mark.parametrize(("path", "anonymous_status"), [
    ("/v1/data", 401), ("/v1/data/.", 401), ("/v1/check/", 404), ("/v1/list/", 404)])
def test_no_redirect_answers_before_the_token(server: dict[str, Any], path: str,
                                              anonymous_status: int) -> None:
    with httpx.Client(base_url=server["url"], timeout=30) as anonymous:
        got = anonymous.post(path, json={"input": {}}, follow_redirects=False)
    assert got.status_code == anonymous_status, (got.status_code, got.headers)
    got = server["client"].post(path, json={"input": {}}, follow_redirects=False)
    assert got.status_code != 307 and got.status_code < 500, (got.status_code, got.text)
