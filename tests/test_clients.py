"""The Python and Java clients where the service is not the happy path: a service that is down,
a proxy's HTML error page in its place, a base URL with a path prefix, a relation name that
needs URL-encoding, a compare-and-set conflict, a batch's revision, and an operation that no
rule mentions (``unknown-operation``, a warning or a strict server's 422).

Each talks to a real socket: a `grantlog serve` subprocess (tests/httpserver.py) or, for what
the service itself does not answer (a proxy's page, a prefix, canned bodies), a small HTTP
server of this file on a free port of 127.0.0.1 (http.server in a thread), which records what
it was asked. The Java cases compile examples/java/src with examples/java/test/io/grantlog/
Probe.java (one client call from the command line) and skip, saying why, without a JDK.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from httpserver import free_port, serve, stop

import grantlog
from grantlog.client import RemoteDecision

ROOT = Path(__file__).resolve().parent.parent
RULES = str(ROOT / "rules" / "gravitino.gl")
FACTS = str(ROOT / "examples" / "gravitino" / "facts.gl")
READ = "reader-token-0123456789"
WRITE = "writer-token-0123456789"
TABLE = "m1.lakehouse.sales.orders"

HTML_502 = b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n" \
           b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n" \
           b"</body>\r\n</html>\r\n"
UNKNOWN = {"code": "unknown-operation",
           "message": "no rule mentions the operation `load_tabel`"}


# -- a small HTTP server that answers what a test tells it --------------------------------------

#: (status, content type, body) for a request's method, path (without the query) and body
Answer = tuple[int, str, bytes]
Route = Callable[[str, str, dict[str, Any]], Answer]


class Canned:
    """An HTTP/1.1 server on a free port of 127.0.0.1 in a thread: ``route(method, path,
    json_body)`` gives each answer; ``asked`` records ``(method, raw path with query)``."""

    def __init__(self, route: Route) -> None:
        self.asked: list[tuple[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                outer.asked.append((self.command, self.path))
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {}
                status, ctype, data = route(self.command, urlsplit(self.path).path, body)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Canned:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def query(self, path: str) -> dict[str, list[str]]:
        """The parsed query string of the last request for ``path``."""
        got = [urlsplit(p) for _, p in self.asked if urlsplit(p).path == path]
        assert got, f"nothing asked for {path}: {self.asked}"
        return parse_qs(got[-1].query)


def _json(status: int, body: Any) -> Answer:
    return status, "application/json", json.dumps(body).encode()


def _proxy_502(method: str, path: str, body: dict[str, Any]) -> Answer:
    return 502, "text/html", HTML_502


def _html_200(method: str, path: str, body: dict[str, Any]) -> Answer:
    """A captive portal or a misrouted proxy: a page where the service's JSON belongs."""
    return 200, "text/html", b"<!DOCTYPE html><html><body>Sign in to continue</body></html>"


def _service(prefix: str = "", warn_unknown: bool = False, strict: bool = False) -> Route:
    """The service's answers under ``prefix`` (a decision at revision 7, a listing, one change
    of the watch feed); an operation `load_tabel` is reported as unknown (a warning, or a 422
    when ``strict``); any other path is the proxy's 404 page."""

    def route(method: str, path: str, body: dict[str, Any]) -> Answer:
        if not path.startswith(prefix + "/v1/"):
            return 404, "text/html", b"<html><body><h1>404 Not Found</h1></body></html>"
        path = path[len(prefix):]

        def decide(c: dict[str, Any]) -> dict[str, Any]:
            if c.get("operation") == "load_tabel":
                return {"allowed": False, "reasons": [], "warnings": [UNKNOWN]}
            return {"allowed": True, "reasons": ["load_table"]}

        if strict and path.startswith("/v1/check") and (
                body.get("operation") == "load_tabel"
                or any(c.get("operation") == "load_tabel" for c in body.get("checks", []))):
            return _json(422, {"error": {**UNKNOWN, "diagnostics": [
                {**UNKNOWN, "file": "<request>", "line": 0, "col": 0,
                 "help": "the model's operations: load_table, ..."}]}})
        if path == "/v1/check":
            return _json(200, {**decide(body), "revision": 7})
        if path == "/v1/check/batch":
            return _json(200, {"results": [decide(c) for c in body["checks"]], "revision": 7})
        if path == "/v1/list":
            return 200, "application/x-ndjson", \
                b'{"resource":"a"}\n{"resource":"b"}\n{"revision":7,"count":2}\n'
        if path == "/v1/watch":
            change = {"revision": 8, "relation": "allowed", "gained": [["dave", "x", "y"]],
                      "lost": []}
            return 200, "text/event-stream", \
                f"id: 8\nevent: change\ndata: {json.dumps(change)}\n\n".encode()
        return _json(404, {"error": {"code": "not-found", "message": path}})

    return route


# -- the live service ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`grantlog serve` of the Gravitino model over its example facts in a SQLite store, with a
    read and a write token; its URL."""
    tmp = tmp_path_factory.mktemp("serve")
    store = f"sqlite:///{tmp / 'facts.db'}"
    from grantlog.cli import main

    assert main(["store", "load", store, FACTS, "--rules", RULES, "--create"]) == 0
    (tmp / "tokens").write_text(f"{READ} check\n{WRITE} check,write\n")
    proc, url = serve(tmp, RULES, "--store", store, "--tokens", str(tmp / "tokens"),
                      "--watch", "allowed")
    yield url
    stop(proc)


def _write(url: str, member: tuple[str, str]) -> int:
    """A write through plain HTTP (not the client under test): its revision."""
    got = httpx.post(url + "/v1/write", json={"insert": {"member": [list(member)]}},
                     headers={"Authorization": f"Bearer {WRITE}"}, timeout=30)
    assert got.status_code == 200, got.text
    return int(got.json()["revision"])


# -- Python -------------------------------------------------------------------------------------

def _code(info: pytest.ExceptionInfo[grantlog.GrantlogError]) -> str:
    return info.value.diagnostics[0].code


def test_python_every_call_says_service_unavailable_when_it_is_down() -> None:
    """Nothing listens on the port: every method raises `service-unavailable`, the streamed
    ones (list, who, watch) included, never httpx's own exception."""
    with grantlog.Client(f"http://127.0.0.1:{free_port()}", timeout=5) as c:
        calls: list[Callable[[], object]] = [
            lambda: c.check("alice", "load_table", TABLE),
            lambda: c.check_many([("alice", "load_table", TABLE)]),
            lambda: c.list("alice", "load_table"),
            lambda: c.who("load_table", TABLE),
            lambda: next(c.watch(since=0, relation="allowed")),
            lambda: c.query("allowed(U, load_table, T)"),
            lambda: c.insert("member", [("dave", "analysts")]),
        ]
        for call in calls:
            with pytest.raises(grantlog.GrantlogError) as info:
                call()
            assert _code(info) == "service-unavailable"
            assert "cannot reach the service" in str(info.value)


def test_python_a_proxys_html_page_is_a_grantlog_error() -> None:
    with Canned(_proxy_502) as proxy, grantlog.Client(proxy.url) as c:
        for call in (lambda: c.check("alice", "load_table", TABLE),
                     lambda: c.list("alice", "load_table"),
                     lambda: next(c.watch(since=0))):
            with pytest.raises(grantlog.GrantlogError) as info:
                call()
            assert _code(info) == "http-502" and "502 Bad Gateway" in str(info.value)
    with Canned(_html_200) as portal, grantlog.Client(portal.url) as c:
        for call in (lambda: c.check("alice", "load_table", TABLE),
                     lambda: c.list("alice", "load_table")):
            with pytest.raises(grantlog.GrantlogError) as info:
                call()
            assert _code(info) == "bad-response" and "Sign in" in str(info.value)


def test_python_keeps_the_base_urls_path_prefix() -> None:
    with Canned(_service("/grantlog")) as gw, \
            grantlog.Client(gw.url + "/grantlog/") as c:
        assert c.check("alice", "load_table", TABLE).allowed
        assert list(c.list("alice", "load_table")) == ["a", "b"]
        assert [p for _, p in gw.asked] == ["/grantlog/v1/check", "/grantlog/v1/list"]


def test_python_a_compare_and_set_conflict_says_what_was_expected(server: str) -> None:
    now = _write(server, ("cas-a", "analysts"))
    with grantlog.Client(server, token=WRITE) as c, \
            pytest.raises(grantlog.RevisionConflict) as info, \
            c.transaction(if_revision=now - 1) as tx:
        tx.insert("member", [("cas-b", "analysts")])
    assert (info.value.expected, info.value.actual) == (now - 1, now)
    assert f"expected revision {now - 1}, but the facts are at {now}" in str(info.value)


def test_python_every_read_advances_the_clients_revision(server: str) -> None:
    """The revision of an answer is one the client saw: its later reads wait for it."""
    reads: list[Callable[[grantlog.Client], object]] = [
        lambda c: c.check_many([("alice", "load_table", TABLE)]),
        lambda c: c.check("alice", "load_table", TABLE),
        lambda c: c.list("alice", "load_table"),
        lambda c: c.who("load_table", TABLE),
        lambda c: c.query(f'allowed(U, load_table, "{TABLE}")'),
    ]
    for i, read in enumerate(reads):
        now = _write(server, (f"rev-{i}", "analysts"))  # by someone else
        with grantlog.Client(server, token=READ) as c:
            assert c.revision == 0
            read(c)
            assert c.revision == now


def test_python_an_unknown_operation_is_reported() -> None:
    with Canned(_service()) as svc, grantlog.Client(svc.url) as c:
        d = c.check("alice", "load_tabel", TABLE)
        assert isinstance(d, RemoteDecision) and not d.allowed
        assert d.warned("unknown-operation") and d.warnings[0].severity == "warning"
        assert "load_tabel" in d.warnings[0].message
        ok, bad = c.check_many([("alice", "load_table", TABLE),
                                ("alice", "load_tabel", TABLE)])
        assert ok.allowed and not ok.warnings and bad.warned("unknown-operation")
        # equal to the embedded Reasoner's decision with the same answer and reasons
        assert d == grantlog.Decision(False, ()) and ok == grantlog.Decision(True, ("load_table",))
    with Canned(_service(strict=True)) as svc, grantlog.Client(svc.url) as c:
        for call in (lambda: c.check("alice", "load_tabel", TABLE),
                     lambda: c.check_many([("alice", "load_tabel", TABLE)])):
            with pytest.raises(grantlog.GrantlogError) as info:
                call()
            assert _code(info) == "unknown-operation"
            assert "load_tabel" in str(info.value)


def test_python_an_items_failure_in_a_batch_is_in_its_warnings() -> None:
    def route(method: str, path: str, body: dict[str, Any]) -> Answer:
        return _json(200, {"results": [{"allowed": False, "reasons": [], "error": {
            "code": "internal-error", "message": "RecursionError"}}], "revision": 3})

    with Canned(route) as svc, grantlog.Client(svc.url) as c:
        (d,) = c.check_many([("alice", "load_table", TABLE)])
    assert not d.allowed and d.warned("internal-error")


# -- Java ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., list[str]]:
    """``java(url, token, command, *args)``: Probe's output lines (it must exit 0: any
    exception but GrantlogException escaping the client fails the test with its trace)."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("no `javac`/`java` on PATH: the Java client needs a JDK 17")
    out = tmp_path_factory.mktemp("java") / "classes"
    src = sorted(str(p) for p in (ROOT / "examples" / "java").rglob("*.java"))
    built = subprocess.run(["javac", "--release", "17", "-Xlint:all", "-Werror", "-d", str(out),
                            *src], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr

    def run(url: str, token: str, command: str, *args: str) -> list[str]:
        got = subprocess.run(["java", "-cp", str(out), "io.grantlog.Probe", url, token, command,
                              *args], capture_output=True, text=True, timeout=60)
        assert got.returncode == 0, got.stderr
        return got.stdout.splitlines()

    return run


def test_java_a_proxys_html_page_is_a_grantlog_exception(java: Callable[..., list[str]]
                                                         ) -> None:
    with Canned(_proxy_502) as proxy:
        (line,) = java(proxy.url, "", "check", "alice", "load_table", TABLE)
        assert line.startswith("GrantlogException 502 http-502: ") and "502 Bad Gateway" in line
        (line,) = java(proxy.url, "", "watch", "0", "allowed")
        assert line.startswith("GrantlogException 502 http-502: ")
    with Canned(_html_200) as portal:
        (line,) = java(portal.url, "", "check", "alice", "load_table", TABLE)
        assert line.startswith("GrantlogException 200 bad-response: ") and "Sign in" in line


def test_java_keeps_the_base_urls_path_prefix(java: Callable[..., list[str]]) -> None:
    with Canned(_service("/grantlog")) as gw:
        for base in (gw.url + "/grantlog", gw.url + "/grantlog/"):
            assert java(base, "", "check", "alice", "load_table", TABLE) == \
                ["ALLOW reasons=[load_table] revision=7 warnings=[]"]
        assert java(gw.url + "/grantlog", "", "watch", "0", "allowed") == \
            ["change 8 allowed gained 1 lost 0"]
        assert {p.split("?")[0] for _, p in gw.asked} == {"/grantlog/v1/check",
                                                          "/grantlog/v1/watch"}


def test_java_watch_url_encodes_the_relation(java: Callable[..., list[str]]) -> None:
    with Canned(_service()) as svc:
        weird = "allowed&since=99 #x"
        assert java(svc.url, "", "watch", "5", weird) == ["change 8 allowed gained 1 lost 0"]
        assert svc.query("/v1/watch") == {"since": ["5"], "relation": [weird]}


def test_java_an_unknown_operation_is_reported(java: Callable[..., list[str]]) -> None:
    with Canned(_service()) as svc:
        assert java(svc.url, "", "check", "alice", "load_tabel", TABLE) == \
            ["DENY reasons=[] revision=7 warnings=[unknown-operation]"]
        assert java(svc.url, "", "batch", "alice", "load_table", TABLE,
                    "alice", "load_tabel", TABLE) == \
            ["ALLOW reasons=[load_table] revision=7 warnings=[]",
             "DENY reasons=[] revision=7 warnings=[unknown-operation]",
             "client revision 7"]
    with Canned(_service(strict=True)) as svc:
        for command in (["check", "alice", "load_tabel", TABLE],
                        ["batch", "alice", "load_tabel", TABLE]):
            (line,) = java(svc.url, "", *command)
            assert line.startswith("GrantlogException 422 unknown-operation: ")
            assert "load_tabel" in line


def test_java_down_and_live(java: Callable[..., list[str]], server: str) -> None:
    """Down: `service-unavailable`. Live: a batch's revision is one the client saw (its later
    reads wait for it), as a single check's is."""
    (line,) = java(f"http://127.0.0.1:{free_port()}", "", "check", "a", "b", "c")
    assert line.startswith("GrantlogException 0 service-unavailable: ")
    now = _write(server, ("java-batch", "analysts"))
    assert java(server, READ, "batch", "alice", "load_table", TABLE)[-1] == \
        f"client revision {now}"
    out = java(server, READ, "check", "alice", "load_table", TABLE)
    assert out[0].startswith("ALLOW reasons=[load_table") and f"revision={now} " in out[0]
