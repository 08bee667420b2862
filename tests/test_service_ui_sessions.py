"""``grantlog serve --ui`` sessions against their tokens, over real HTTP (one `grantlog serve`
subprocess whose tokens file the tests rewrite and put back): a session is only as good as the
token it was made from *now* — a token revoked (its line removed), expired (``expires=``) or
rotated away ends its sessions at the next request (401, the cookie cleared); scopes reduced
are reduced for its sessions; a tokens file made unreadable fails closed. And the session
attacks: an id set before signing in is never accepted (fixation), signing out ends the session
on the server (its cookie replayed is refused), sessions per token are capped. And the one
reader of request bodies (grantlog/service/http.py ``receive_body``) behind the check's fast
path, the service's endpoints and the page at /ui: the same limit, in chunks or not."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from httpserver import serve, stop

ROOT = Path(__file__).resolve().parent.parent
FACTS = str(ROOT / "examples" / "gravitino" / "facts.gl")
READ = "sess-read-token-0123456789"
ADMIN = "sess-admin-token-0123456789"
DOOMED = "sess-doomed-token-0123456789"  # revoked, reduced, expired by the tests
BASE = f"{READ} check\n{ADMIN} admin\n{DOOMED} admin\n"
CHECK = "check alice load_table m1.lakehouse.sales.orders"
MAX_BODY = 150_000  # a draft of the whole model fits (~60 kB)


class Server:
    def __init__(self, url: str, tokens: Path) -> None:
        self.url, self.tokens = url, tokens

    def h(self) -> dict[str, str]:
        return {"origin": self.url}

    def rewrite(self, text: str) -> None:
        self.tokens.write_text(text)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("serve-ui-sessions")
    tokens = tmp / "tokens"
    tokens.write_text(BASE)
    tokens.chmod(0o600)
    proc, url = serve(tmp, "--model", "gravitino", "--facts", FACTS, "--tokens", str(tokens),
                      "--ui", "--max-body", str(MAX_BODY))
    yield Server(url, tokens)
    stop(proc)


@pytest.fixture
def srv(server: Server) -> Iterator[Server]:
    """The server with its tokens file as it was put back after the test."""
    yield server
    server.rewrite(BASE)
    _until(lambda: _bearer(server, DOOMED) == 200)


def _until(ok: Callable[[], bool], seconds: float = 5.0) -> None:
    """Wait until ``ok()`` (the server reads its tokens file again within a second)."""
    end = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < end, "the server did not notice the tokens file"
        time.sleep(0.05)


def _bearer(server: Server, token: str) -> int:
    return httpx.post(server.url + "/v1/check", headers={"authorization": f"Bearer {token}"},
                      json={"subject": "a", "operation": "b", "resource": "c"}).status_code


def _sign_in(server: Server, token: str) -> httpx.Client:
    c = httpx.Client(base_url=server.url, timeout=60)
    r = c.post("/ui/login", data={"token": token}, headers=server.h())
    assert r.status_code == 303, r.text
    return c


def _edit(c: httpx.Client, server: Server) -> int:
    """An admin request that changes nothing: the first document put back as it is."""
    text = c.get("/ui/api/state").json()["docs"][0]["text"]
    return c.post("/ui/api/edit", json={"doc": 0, "text": text},
                  headers=server.h()).status_code


def test_a_revoked_token_ends_its_sessions_at_the_next_request(srv: Server) -> None:
    with closing(_sign_in(srv, DOOMED)) as c, closing(_sign_in(srv, ADMIN)) as other:
        assert c.get("/ui/api/state").status_code == 200
        srv.rewrite(BASE.replace(f"{DOOMED} admin\n", ""))  # revoked
        _until(lambda: _bearer(srv, DOOMED) == 401)
        r = c.get("/ui/api/state")
        assert r.status_code == 401
        assert "token was revoked" in r.json()["errors"][0]["message"]
        cleared = r.headers["set-cookie"]
        assert cleared.startswith('grantlog_ui=""') and "Max-Age=0" in cleared
        a = c.post("/ui/api/ask", json={"question": CHECK}, headers=srv.h())
        assert a.status_code == 401
        # ended on the server: putting the token back does not bring the session back
        srv.rewrite(BASE)
        _until(lambda: _bearer(srv, DOOMED) == 200)
        sid = r.request.headers["cookie"].split("=", 1)[1]
        again = httpx.get(srv.url + "/ui/api/state", cookies={"grantlog_ui": sid})
        assert again.status_code == 401
        assert other.get("/ui/api/state").status_code == 200  # another token's: untouched


def test_reduced_scopes_are_the_sessions_scopes(srv: Server) -> None:
    with closing(_sign_in(srv, DOOMED)) as c:
        assert _edit(c, srv) == 200
        srv.rewrite(BASE.replace(f"{DOOMED} admin", f"{DOOMED} check"))  # reduced
        _until(lambda: httpx.put(srv.url + "/v1/policy", json={"files": {}}, headers={
            "authorization": f"Bearer {DOOMED}"}).status_code == 403)
        assert _edit(c, srv) == 403  # admin routes refused
        a = c.post("/ui/api/ask", json={"question": CHECK}, headers=srv.h())
        assert a.status_code == 200  # viewing and asking still allowed
        # given back its scope, a session never gains more than it was given at sign-in
    with closing(_sign_in(srv, READ)) as c:
        srv.rewrite(BASE.replace(f"{READ} check", f"{READ} admin"))
        _until(lambda: httpx.put(srv.url + "/v1/policy", json={"files": {}}, headers={
            "authorization": f"Bearer {READ}"}).status_code != 403)
        assert _edit(c, srv) == 403


def test_a_link_made_with_a_token_is_as_good_as_the_token(srv: Server) -> None:
    r = httpx.post(srv.url + "/ui/login/link", headers={"authorization": f"Bearer {DOOMED}"})
    code = r.json()["url"].split("#", 1)[1]
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        assert c.post("/ui/login/link", json={"code": code}, headers=srv.h()).status_code == 200
        assert _edit(c, srv) == 200
        srv.rewrite(BASE.replace(DOOMED, "sess-rotated-token-0123456789"))  # rotated away
        _until(lambda: _bearer(srv, DOOMED) == 401)
        assert c.get("/ui/api/state").status_code == 401


def test_an_expired_token_signs_nobody_in_and_ends_its_sessions(srv: Server) -> None:
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat(timespec="seconds")
    srv.rewrite(BASE.replace(f"{DOOMED} admin", f"{DOOMED} admin expires={past}"))
    _until(lambda: _bearer(srv, DOOMED) == 401)
    r = httpx.post(srv.url + "/ui/login", data={"token": DOOMED}, headers=srv.h())
    assert r.status_code == 401 and "set-cookie" not in r.headers
    soon = datetime.now(UTC) + timedelta(seconds=3)
    srv.rewrite(BASE.replace(f"{DOOMED} admin",
                             f"{DOOMED} admin expires={soon.isoformat(timespec='seconds')}"))
    _until(lambda: _bearer(srv, DOOMED) == 200)
    with closing(_sign_in(srv, DOOMED)) as c:
        assert c.get("/ui/api/state").status_code == 200
        _until(lambda: c.get("/ui/api/state").status_code == 401, 6.0)  # at its expiry


def test_a_broken_tokens_file_fails_closed(srv: Server) -> None:
    with closing(_sign_in(srv, ADMIN)) as c:
        srv.rewrite("this is not a tokens file\n")
        _until(lambda: _bearer(srv, READ) == 401)
        assert _bearer(srv, ADMIN) == 401
        # no token valid, yet reads are not open as on a server without tokens
        r = httpx.post(srv.url + "/v1/check", json={"subject": "a", "operation": "b",
                                                    "resource": "c"})
        assert r.status_code == 401
        assert c.get("/ui/api/state").status_code == 401
        assert httpx.get(srv.url + "/ui/api/state").status_code == 401


def test_an_id_set_before_signing_in_is_never_a_session(srv: Server) -> None:
    planted = "attacker-chose-this-session-id-0123456789abcdef"
    with httpx.Client(base_url=srv.url, timeout=60, cookies={"grantlog_ui": planted}) as c:
        assert c.get("/ui/api/state").status_code == 401
        r = c.post("/ui/login", data={"token": READ}, headers=srv.h())
        assert r.status_code == 303
        assert planted not in r.headers["set-cookie"]
        assert c.get("/ui/api/state").status_code == 200  # with the id the server made
    r = httpx.get(srv.url + "/ui/api/state", cookies={"grantlog_ui": planted})
    assert r.status_code == 401
    # a session the browser had is ended when it signs in again (as someone else, say)
    with closing(_sign_in(srv, READ)) as c:
        first = c.cookies["grantlog_ui"]
        assert c.post("/ui/login", data={"token": ADMIN}, headers=srv.h()).status_code == 303
        assert c.cookies["grantlog_ui"] != first
        assert httpx.get(srv.url + "/ui/api/state",
                         cookies={"grantlog_ui": first}).status_code == 401
        assert _edit(c, srv) == 200


def test_signing_out_ends_the_session_on_the_server(srv: Server) -> None:
    with closing(_sign_in(srv, READ)) as c:
        sid = c.cookies["grantlog_ui"]
        r = c.post("/ui/logout", headers=srv.h())
        assert r.status_code == 303 and "Max-Age=0" in r.headers["set-cookie"]
    r = httpx.get(srv.url + "/ui/api/state", cookies={"grantlog_ui": sid})
    assert r.status_code == 401  # the cookie replayed: refused


def test_sessions_per_token_are_capped_the_oldest_ends(srv: Server) -> None:
    from grantlog.service.ui import PER_TOKEN

    clients = [_sign_in(srv, DOOMED) for _ in range(PER_TOKEN + 1)]
    try:
        assert clients[0].get("/ui/api/state").status_code == 401
        assert all(c.get("/ui/api/state").status_code == 200 for c in clients[1:])
    finally:
        for c in clients:
            c.close()


def test_expires_is_a_time_and_an_expired_token_is_not_valid() -> None:
    from grantlog.grammar.diagnostics import GrantlogError

    from grantlog.service import auth

    with pytest.raises(GrantlogError) as e:
        auth.parse(f"{READ} check expires=soon\n", "tokens.txt")
    assert e.value.diagnostics[0].code == "bad-tokens"
    assert e.value.diagnostics[0].message == "`soon` is not a time"
    text = f"{READ} check expires=2000-01-01\n{ADMIN} admin expires=2999-01-01T00:00:00+02:00\n"
    t = auth.Tokens(tuple(auth.parse(text, "t")), expires=tuple(auth.expiries(text)))
    assert t.allows(f"Bearer {READ}", "check") == 401  # expired
    assert t.allows(f"Bearer {ADMIN}", "admin") == 200
    assert auth.Tokens(closed=True).allows(None, "check") == 401  # fail closed, not open


def test_one_body_reader_bounds_every_path(srv: Server) -> None:
    """The check's fast path, a Starlette endpoint and the page at /ui refuse a body over
    --max-body the same way, whether its length is declared or it comes in chunks."""
    h = {"authorization": f"Bearer {ADMIN}", "content-type": "application/json",
         "origin": srv.url}
    big = b'{"subject": "' + b"x" * MAX_BODY + b'", "operation": "o", "resource": "r"}'
    with httpx.Client(base_url=srv.url, timeout=60, headers=h) as c:
        for path in ("/v1/check", "/v1/list", "/ui/api/ask"):
            for body in (big, iter([big[:100_000], big[100_000:]])):  # declared, chunked
                r = c.post(path, content=body)
                assert r.status_code == 413, (path, r.text)
                doc = r.json()
                code = doc["errors"][0]["code"] if path.startswith("/ui") else \
                    doc["error"]["code"]
                assert code == "body-too-large", (path, doc)
        ok = c.post("/v1/check", json={"subject": "alice", "operation": "load_table",
                                       "resource": "m1.lakehouse.sales.orders"})
        assert ok.status_code == 200 and ok.json()["allowed"] is True
        # without a valid token the fast path says 401 before reading the body
        r = c.post("/v1/check", content=big, headers={"authorization": "Bearer nope"})
        assert r.status_code == 401


def test_a_stalled_body_is_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """``receive_body`` over a receive that never sends the rest: 408 ``request-timeout``
    (the deadline shortened here; the server's is 30 s)."""
    import asyncio

    from grantlog.service import http

    monkeypatch.setattr(http, "BODY_TIMEOUT", 0.2)

    async def stalled() -> dict[str, object]:
        if not sent:
            sent.append(1)
            return {"type": "http.request", "body": b"{", "more_body": True}
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    sent: list[int] = []
    with pytest.raises(http.BadRequest) as e:
        asyncio.run(http.receive_body(stalled, 1000))
    assert (e.value.status, e.value.code) == (408, "request-timeout")
    with pytest.raises(http.BadRequest) as e:
        asyncio.run(http.receive_body(stalled, 1000, "99999"))  # refused before reading
    assert (e.value.status, e.value.code) == (413, "body-too-large")
