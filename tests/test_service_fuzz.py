"""Fuzzing the decision service over HTTP (issue 24): every endpoint of one live `grantlog serve`
gets generated bodies, headers and query strings.

The server (started once for the module, tests/httpserver.py) serves the Gravitino data model
(rules/gravitino_data.gl) over a SQLite store holding its example facts, with three bearer
tokens (check; check and write; admin), OPA's Data API for Trino and Polaris, a watched
relation, a decision log, small limits (:data:`MAX_BODY`, a batch of 100) and a short header
deadline (:data:`HEADER_TIMEOUT`).

Requests (tests/service_requests.py) start valid and are then damaged:
:func:`strategies.json_mutated` (wrong types, nulls, huge numbers, deep nesting, renamed or
missing fields) and :func:`strategies.json_bytes` (truncated, not UTF-8, a BOM, 100,000-deep
arrays), plus hostile values where they matter: ids with NUL bytes, lone surrogates, 10,000
characters; goals with syntax errors (:func:`strategies.token_mutated`); malformed cursors;
numeric query parameters spelled with non-ASCII digits (``limit=²``); bodies over the limit;
odd content types; ``Authorization`` variants (the scheme in any case, several spaces, empty,
other schemes, a token of the wrong scope or almost right); unknown paths, relations, mappings
and methods.

Properties of every answer (:func:`assert_sane`): no 5xx, no connection reset, no traceback or
server file or token in any body; an error body is ``{"error": {"code", "message", ...}}`` as
docs/service.md documents; a request without a valid token gets 401, a token without the scope
403, and a valid token never 401/403. At the end the server still answers known checks as an
in-process reasoner over the same store does, and its log holds no traceback.

An ``at_least_revision`` ahead of the server is answered 504 ``revision-timeout`` after 5 s, as
documented: the one 5xx accepted (the templates do not ask for one; a mutation rarely makes
one). Requests are sent one at a time.

A slowloris test opens connections whose headers never finish: the server must close them
within the header deadline (``--header-timeout``).

Example counts are small (the file runs in about half a minute; the long profile,
`make test-long`, runs twice as many); multiply them with ``GRANTLOG_FUZZ_SCALE=20`` for a long
local run.
"""

from __future__ import annotations

import json
import os
import select
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import conftest
import httpx
import orjson
import pytest
from httpserver import serve, stop
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from service_requests import (
    ADMIN,
    DATA_PATHS,
    MAX_BODY,
    ODD,
    READ,
    RELATIONS,
    RULES,
    WRITE,
    authorization,
    batch_doc,
    body_bytes,
    check_doc,
    cursors,
    explain_doc,
    extra_headers,
    filter_doc,
    list_doc,
    polaris_doc,
    policy_doc,
    qnums,
    query_doc,
    trino_doc,
    who_doc,
    write_doc,
)

import grantlog
from grantlog.cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
FACTS = str(ROOT / "examples" / "gravitino_data" / "facts.gl")
#: token -> its scopes (admin may do everything)
TOKENS = {READ: {"check"}, WRITE: {"check", "write"}, ADMIN: {"check", "write", "admin"}}
HEADER_TIMEOUT = 2.0
SCALE = max(1, int(os.environ.get("GRANTLOG_FUZZ_SCALE", "1")))


def fuzz(examples: int) -> Callable[[Any], Any]:
    """Few examples (times ``GRANTLOG_FUZZ_SCALE``; half of them outside the long profile),
    the rest from the active profile."""
    return settings(max_examples=conftest.examples(examples // 2, examples) * SCALE,
                    deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


class Live:
    """The module's server: its URL, a client, its store, its folder and log, its rules."""

    def __init__(self, url: str, client: httpx.Client, store: str, tmp: Path, log: Path,
                 program: Any) -> None:
        self.url, self.client, self.store = url, client, store
        self.tmp, self.log, self.program = tmp, log, program

    def __repr__(self) -> str:  # hypothesis prints the fixtures of a failing example
        return f"Live({self.url})"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("fuzz")
    store = f"sqlite:///{tmp / 'facts.db'}"
    assert cli_main(["store", "load", store, FACTS, "--rules", RULES, "--create"]) == 0
    tokens = tmp / "tokens"
    tokens.write_text(f"{READ} check\n{WRITE} check,write\n{ADMIN} admin\n")
    tokens.chmod(0o600)
    proc, url = serve(tmp, RULES, "--store", store, "--tokens", str(tokens), "--opa", "trino",
                      "--opa", "polaris", "--watch", "allowed", "--max-body", str(MAX_BODY),
                      "--max-batch", "100", "--decision-log", str(tmp / "decisions.jsonl"),
                      "--header-timeout", str(HEADER_TIMEOUT))
    log = tmp / f"serve-{urlsplit(url).port}.log"
    program = grantlog.compile(paths=[RULES])
    with httpx.Client(base_url=url, timeout=30) as client:
        yield Live(url, client, store, tmp, log, program)
    stop(proc)


# -- sending and the properties ---------------------------------------------------------------

@dataclass
class Sent:
    method: str
    target: str
    headers: list[tuple[bytes, bytes]]
    body: bytes | None
    scope: str | None  #: the scope the route needs (None: an open or an unknown route)
    token: str | None  #: the valid token the request carries

    def show(self) -> str:
        body = b"" if self.body is None else self.body
        return (f"{self.method} {self.target[:300]} headers={self.headers!r:.300} "
                f"body={body[:300]!r} ({len(body)} bytes)")


def send(live: Live, r: Sent, streaming: bool = False) -> tuple[int, httpx.Headers, bytes]:
    """The request over the module's keep-alive client: status, headers, body (a streaming
    200 is not read: a watch stream never ends). A reset or a hang fails the test."""
    try:
        with live.client.stream(r.method, r.target, headers=r.headers, content=r.body) as resp:
            if streaming and resp.status_code == 200:
                return resp.status_code, resp.headers, b""
            return resp.status_code, resp.headers, resp.read()
    except httpx.TransportError as exc:
        raise AssertionError(f"{type(exc).__name__} ({exc}) for {r.show()}") from None


LEAKS = ("Traceback (most recent call last)", 'File "/', "root:x:0:0",
         READ, WRITE, ADMIN)


def assert_sane(live: Live, r: Sent, status: int, headers: httpx.Headers, body: bytes) -> None:
    where = f"{r.show()}\n-> {status} {body[:600]!r}"
    if status == 504 and b'"revision-timeout"' in body:
        return  # documented: an `at_least_revision` ahead of the server, waited for 5 s
    assert status < 500, f"a server error: {where}"
    text = body.decode("utf-8", "replace")
    for leak in (*LEAKS, str(live.tmp)):
        assert leak not in text, f"the body shows {leak[:40]!r}: {where}"
    if status >= 400:
        assert headers.get("content-type", "").startswith("application/json"), \
            f"an error that is not JSON: {where}"
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise AssertionError(f"an error body that is not JSON: {where}") from None
        err = doc.get("error") if isinstance(doc, dict) else None
        assert isinstance(err, dict) and isinstance(err.get("code"), str) and err["code"] \
            and isinstance(err.get("message"), str), f"not the documented error shape: {where}"
    ctype = headers.get("content-type", "")
    if status < 300 and body and ctype.startswith(("application/json", "application/x-ndjson")):
        lines = body.splitlines() if "ndjson" in ctype else [body]
        try:  # a complete answer: a stream cut short by an error would end in a torn line
            for line in lines:
                if line:
                    orjson.loads(line)
        except orjson.JSONDecodeError:
            raise AssertionError(f"a {status} answer that is not JSON: {where}") from None
    if r.scope is not None and status not in (404, 405):
        needed = r.scope
        if r.token is None:
            assert status == 401, f"no valid token, yet not 401: {where}"
        elif needed not in TOKENS[r.token]:
            assert status == 403, f"a token without the `{needed}` scope, yet not 403: {where}"
        else:
            assert status not in (401, 403), f"a valid token refused: {where}"


def request(draw: st.DrawFn, method: str, target: str, scope: str | None,
            body: bytes | None) -> Sent:
    auth, token = draw(authorization())
    headers = draw(extra_headers())
    if auth is not None:
        headers.insert(0, (b"authorization", auth))
    if draw(st.integers(0, 9)) == 0:  # junk in the query string of any endpoint
        target += "?" + urlencode(draw(st.lists(st.tuples(
            st.sampled_from(("limit", "cursor", "x", "", "since")), qnums), max_size=3)))
    return Sent(method, target, headers, body, scope, token)


def run(live: Live, r: Sent, streaming: bool = False) -> None:
    status, headers, body = send(live, r, streaming)
    assert_sane(live, r, status, headers, body)


# -- the fuzz tests, one per kind of endpoint --------------------------------------------------

POSTS: dict[str, Callable[[], st.SearchStrategy[dict[str, Any]]]] = {
    "/v1/check": check_doc, "/v1/check/batch": batch_doc, "/v1/list": list_doc,
    "/v1/who": who_doc, "/v1/filter": filter_doc, "/v1/explain": explain_doc,
    "/v1/query": query_doc}


@st.composite
def reads(draw: st.DrawFn, path: str) -> Sent:
    return request(draw, "POST", path, "check", draw(body_bytes(POSTS[path]())))


def _read_test(path: str, examples: int) -> Callable[[Live], None]:
    @fuzz(examples)
    @given(r=reads(path))
    def test(live: Live, r: Sent) -> None:
        run(live, r)
    return test


test_check_fuzz = _read_test("/v1/check", 840)
test_check_batch_fuzz = _read_test("/v1/check/batch", 560)
test_list_fuzz = _read_test("/v1/list", 840)
test_who_fuzz = _read_test("/v1/who", 560)
test_filter_fuzz = _read_test("/v1/filter", 560)
test_explain_fuzz = _read_test("/v1/explain", 560)
test_query_fuzz = _read_test("/v1/query", 840)


def _known(method: str, target: str, scope: str, body: Any, token: str | None = READ) -> Sent:
    headers = [] if token is None else [(b"authorization", f"Bearer {token}".encode())]
    raw = None if body is None else json.dumps(body).encode()
    return Sent(method, target, headers, raw, scope, token)


@example(r=_known("POST", "/v1/list", "check", {"subject": "alice", "operation": "select_table",
                                                  "cursor": "[]"}))
@example(r=_known("POST", "/v1/list", "check", {"subject": "alice", "operation": "select_table",
                                                  "limit": 1, "cursor": '["a", 1]'}))
@example(r=_known("POST", "/v1/query", "check", {"goal": "allowed(U, select_table, R)",
                                                   "cursor": '"x"'}))
@example(r=_known("POST", "/v1/list", "check", {"subject": "alice", "operation": "select_table",
                                                  "cursor": "null", "limit": 1}))
@example(r=_known("POST", "/v1/list", "check", {"subject": "alice", "operation": "select_table",
                                                  "cursor": "{}"}))
@example(r=_known("POST", "/v1/check", "check", {"subject": "alice\x00", "operation":
                                                   "select_table", "resource": "m1"}))
@example(r=_known("POST", "/v1/explain", "check",
                  {"goal": "allowed(U, select_table, 99999999999999999999999)"}))
@example(r=_known("POST", "/v1/query", "check", {"goal": "X = 99999999999999999999999"}))
@fuzz(280)
@given(r=st.sampled_from(sorted(POSTS)).flatmap(reads))
def test_known_bad_requests(live: Live, r: Sent) -> None:
    """Issue 24's cases (malformed cursors, NUL in ids) and the ones this fuzzer found (an
    integer over 64 bits in an answer or an explanation), then any read."""
    run(live, r)


@st.composite
def writes(draw: st.DrawFn) -> Sent:
    return request(draw, "POST", "/v1/write", "write", draw(body_bytes(write_doc())))


@example(r=_known("POST", "/v1/write", "write", {"insert": {"entity": [["fz\x00x", "table"]]}},
                  WRITE))
@fuzz(840)
@given(r=writes())
def test_write_fuzz(live: Live, r: Sent) -> None:
    run(live, r)


@st.composite
def policy_requests(draw: st.DrawFn) -> Sent:
    if draw(st.booleans()):
        q = draw(st.sampled_from(("", "?sources=true", "?sources=²", "?sources=\x00")))
        return request(draw, "GET", "/v1/policy" + q.replace("\x00", "%00"), "check", None)
    return request(draw, "PUT", "/v1/policy", "admin", draw(body_bytes(policy_doc())))


@example(r=_known("PUT", "/v1/policy", "admin", {"files": {"p.gl": 'import "/etc/passwd".\n'},
                                                   "if_hash": "0000000000000000"}, ADMIN))
@fuzz(450)
@given(r=policy_requests())
def test_policy_fuzz(live: Live, r: Sent) -> None:
    run(live, r)


@st.composite
def data_requests(draw: st.DrawFn) -> Sent:
    path = draw(st.one_of(st.sampled_from(DATA_PATHS), st.sampled_from((
        "", "trino", "trino/", "trino/allow/", "../healthz", "trino/allow/../batch", "%00",
        "polaris/allow/x", "x" * 2000, "trino%2Fallow", "é")), st.text(max_size=8)))
    doc = polaris_doc() if path.startswith("polaris") else trino_doc()
    if draw(st.integers(0, 5)) == 0:
        doc = st.builds(lambda d: d["input"], doc)  # the input without its envelope
    target = "/v1/data/" + quote(path, safe="/%")
    return request(draw, "POST", target, "check", draw(body_bytes(doc)))


@fuzz(1120)
@given(r=data_requests())
def test_opa_data_api_fuzz(live: Live, r: Sent) -> None:
    run(live, r)


@st.composite
def get_requests(draw: st.DrawFn) -> Sent:
    """GETs with query strings: /v1/relations/{rel}, /v1/watch, and the open endpoints."""
    kind = draw(st.sampled_from(("relations", "relations", "watch", "watch", "open")))
    params: list[tuple[str, str]] = []
    if kind == "relations":
        rel = draw(st.one_of(st.sampled_from((*RELATIONS, "allowed", "row_visible")),
                             st.sampled_from(ODD[:12]), st.text(max_size=8)))
        if draw(st.booleans()):
            params.append(("limit", draw(qnums)))
        if draw(st.booleans()):
            c = draw(cursors)
            params.append(("cursor", c if isinstance(c, str) else json.dumps(c)))
        target = "/v1/relations/" + quote(rel.encode("utf-8", "surrogatepass"), safe="")
        scope = "check"
    elif kind == "watch":
        if draw(st.booleans()):
            params.append(("since", draw(st.one_of(qnums, st.sampled_from(("1", "2", "3"))))))
        if draw(st.booleans()):
            params.append(("relation", draw(st.sampled_from(("allowed", "entity", "", "nope",
                                                             "\x00")))))
        if draw(st.booleans()):
            params.append(("format", draw(st.sampled_from(("sse", "ndjson", "", "xml")))))
        target, scope = "/v1/watch", "check"
    else:
        target = draw(st.sampled_from(("/healthz", "/readyz", "/metrics", "/openapi.json")))
        scope = None
    if params:
        target += "?" + urlencode(params)
    return request(draw, "GET", target, scope, None)


@example(r=_known("GET", "/v1/relations/entity?limit=%C2%B2", "check", None))
@example(r=_known("GET", "/v1/relations/entity?cursor=%5B%5D", "check", None))
@example(r=_known("GET", "/v1/relations/entity?cursor=%22x%22", "check", None))
@example(r=_known("GET", "/v1/relations/entity?limit=%D9%A3&cursor=%5B1%5D", "check", None))
@example(r=_known("GET", "/v1/watch?since=%C2%B2", "check", None))
@fuzz(1120)
@given(r=get_requests())
def test_get_endpoints_fuzz(live: Live, r: Sent) -> None:
    run(live, r, streaming=r.target.startswith("/v1/watch"))


ROUTES = (("POST", "/v1/check"), ("POST", "/v1/check/batch"), ("POST", "/v1/list"),
          ("POST", "/v1/who"), ("POST", "/v1/filter"), ("POST", "/v1/explain"),
          ("POST", "/v1/query"), ("POST", "/v1/write"), ("GET", "/v1/watch"),
          ("GET", "/v1/relations/entity"), ("POST", "/v1/data/trino/allow"),
          ("GET", "/v1/policy"), ("PUT", "/v1/policy"), ("GET", "/healthz"),
          ("GET", "/readyz"), ("GET", "/metrics"), ("GET", "/openapi.json"))


@st.composite
def misrouted(draw: st.DrawFn) -> Sent:
    """A known path with another method, or a path no route serves."""
    if draw(st.booleans()):
        method, path = draw(st.sampled_from(ROUTES))
        other = draw(st.sampled_from(("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")))
        if other == method or (path == "/v1/policy" and other in ("GET", "PUT")):
            other = "DELETE"
        return request(draw, other, path, None, b"{}" if other != "GET" else None)
    path = draw(st.sampled_from(("/", "/v1", "/v1/", "/v2/check", "/v1/checks", "/v1/check/",
                                 "/v1/relations/", "/v1/data", "/V1/check", "/v1/check/batch/x",
                                 "/%2e%2e/etc/passwd", "/v1//check")))
    return request(draw, draw(st.sampled_from(("GET", "POST"))), path, None, b"{}")


@fuzz(340)
@given(r=misrouted())
def test_unknown_routes_and_methods_answer_the_error_shape(live: Live, r: Sent) -> None:
    run(live, r)


# -- raw sockets: headers httpx would not send, and headers that never finish ------------------

def raw_exchange(live: Live, data: bytes, timeout: float = 20.0) -> bytes:
    """Send ``data`` on a new connection and read until the server closes it."""
    u = urlsplit(live.url)
    with socket.create_connection((u.hostname or "127.0.0.1", u.port or 80),
                                  timeout=timeout) as s:
        s.sendall(data)
        chunks: list[bytes] = []
        try:
            while chunk := s.recv(65536):
                chunks.append(chunk)
        except ConnectionResetError:
            raise AssertionError(f"connection reset after {data[:200]!r}") from None
    return b"".join(chunks)


@pytest.mark.parametrize("value", [b"  Bearer  " + READ.encode() + b"  ",
                                   b"\tbearer " + READ.encode() + b"\t",
                                   b"Bearer\t" + READ.encode(), b"BEARER\t\t" + READ.encode(),
                                   b" ", b"\t", b"Bearer \x80\xff", b"Bearer " + b"\xe9" * 16])
def test_authorization_whitespace_variants(live: Live, value: bytes) -> None:
    """Leading and trailing whitespace (the server strips it, RFC 9110 OWS) and tabs: never a
    5xx, and an error in the documented shape."""
    body = b'{"subject": "alice", "operation": "select_table", "limit": 1}'
    got = raw_exchange(live, b"POST /v1/list HTTP/1.1\r\nHost: x\r\nAuthorization: " + value +
                       b"\r\nContent-Type: application/json\r\nContent-Length: " +
                       str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    head, _, payload = got.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    headers = httpx.Headers([tuple(line.split(b": ", 1)) for line in head.split(b"\r\n")[1:]])
    valid = value.strip(b" \t").split(b" ")
    token = READ if (len([v for v in valid if v]) == 2 and valid[0].lower() == b"bearer"
                     and valid[-1] == READ.encode()) else None
    sent = Sent("POST", "/v1/list", [(b"authorization", value)], body, "check", token)
    if token is None and b"\t" in value and READ.encode() in value:
        sent.scope = None  # a tab between scheme and token: either answer is fair
    assert_sane(live, sent, status, headers, payload)


def _closed_within(live: Live, trickle: bytes, bound: float) -> float:
    """Open a connection, send ``trickle`` a byte every 0.2 s (and then nothing); seconds
    until the server closes it (fails when it is still open after ``bound``)."""
    u = urlsplit(live.url)
    s = socket.create_connection((u.hostname or "127.0.0.1", u.port or 80), timeout=5)
    t0 = time.monotonic()
    try:
        i = 0
        while time.monotonic() - t0 < bound:
            if i < len(trickle):
                try:
                    s.sendall(trickle[i:i + 1])
                except (BrokenPipeError, ConnectionResetError):
                    return time.monotonic() - t0
                i += 1
            ready, _, _ = select.select([s], [], [], 0.2)
            if ready:
                try:
                    if not s.recv(4096):
                        return time.monotonic() - t0
                except ConnectionResetError:
                    return time.monotonic() - t0
        raise AssertionError(f"the connection is still open after {bound:g} s "
                             f"({i} bytes of headers sent)")
    finally:
        s.close()


def test_slowloris_headers_that_never_finish_are_cut(live: Live) -> None:
    """Headers sent a byte at a time for ever, and a connection that sends nothing: the server
    closes both within its header deadline (plus scheduling slack), and still answers."""
    bound = HEADER_TIMEOUT + 8
    head = (b"POST /v1/check HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + READ.encode() +
            b"\r\n" + b"X-Slow: " + b"a" * 1000)
    assert _closed_within(live, head, bound) < HEADER_TIMEOUT + 3
    assert _closed_within(live, b"", bound) < HEADER_TIMEOUT + 3
    assert live.client.get("/healthz").status_code == 200


# -- after the run -----------------------------------------------------------------------------

#: checks no fuzzed write can change (their subjects and roles are never written)
SENTINELS = [("alice", "select_table", "m1.lakehouse.sales.orders", True),
             ("bob", "select_table", "m1.lakehouse.sales.customers", True),
             ("nobody", "drop_table", "m1.lakehouse.sales.orders", False)]


def test_the_server_still_answers_right_and_logged_no_traceback(live: Live) -> None:
    """Last in the file: known checks answer as before the fuzzing and as an in-process
    reasoner over the same store does; the server's log holds no traceback."""
    auth = {"Authorization": f"Bearer {READ}"}
    with grantlog.Reasoner(live.program, store=live.store, follow=False) as r:
        for s, o, res, want in SENTINELS:
            got = live.client.post("/v1/check", headers=auth, json={
                "subject": s, "operation": o, "resource": res})
            assert got.status_code == 200, got.text
            body = got.json()
            d = r.check(s, o, res)
            assert body["allowed"] is want is d.allowed, (s, o, res, body)
            assert body["reasons"] == list(d.reasons)
    trino = {"input": {"context": {"identity": {"user": "alice", "groups": []}},
                       "action": {"operation": "SelectFromColumns", "resource": {"table": {
                           "catalogName": "lakehouse", "schemaName": "sales",
                           "tableName": "orders", "columns": ["id"]}}}}}
    got = live.client.post("/v1/data/trino/allow", headers=auth, json=trino)
    assert got.status_code == 200 and got.json()["result"] is True, got.text
    assert live.client.get("/readyz").status_code == 200
    log = live.log.read_text(errors="replace")
    assert "Traceback" not in log, f"the server's log holds a traceback:\n{log[-3000:]}"
