"""``grantlog serve --ui``: the explorer (grantlog/explorer) mounted at ``/ui`` of the decision
service, behind the service's tokens.

A browser cannot put a bearer token in a header, so the page signs in once and then carries a
session cookie (``HttpOnly``, ``SameSite=Strict``, ``Path=/ui``, ``Secure`` over HTTPS):

- ``GET /ui/login`` is a form where a token is pasted (``POST /ui/login``, in the body: never
  in the address, which proxies log and browsers keep in their history);
- a one-time login link ``/ui/login#CODE`` carries a code in the fragment (which browsers never
  send to a server: the page posts it to ``POST /ui/login/link``): ``serve --ui`` prints one
  (the ``check`` scope: to view and ask) and ``POST /ui/login/link`` with ``Authorization:
  Bearer TOKEN`` makes one with that token's scopes; a code serves once, within
  :data:`LINK_TTL` seconds.

Every other request under ``/ui`` needs a session or an ``Authorization: Bearer`` header
(scripts), and a scope: ``check`` to view, ask, pin and compare drafts, ``admin`` to edit the
rules (and any other request that changes something: :data:`READS` lists the requests that
change nothing). A token in the query string is refused (``token-in-url``), so that none is
ever logged. A request that changes something must come from the page itself: its ``Origin``
(or ``Sec-Fetch-Site``) must be this server's, and one signed in by cookie must say so
(``cross-site``). The Host must be one of the server's names (``--ui-host``; no DNS
rebinding), and bodies are bounded by ``--max-body`` (read by the service's one reader,
grantlog/service/http.py ``receive_body``). Sessions live in the worker's memory: ``--ui``
serves from one worker. A session is only as good as the token it was made from, *now*: each
request re-checks it against the tokens in force (the tokens file is read again when it
changes), so revoking a token, letting it expire (``expires=``) or rotating it away ends its
sessions at their next request (401, the cookie cleared), and reducing its scopes reduces
theirs. Signing in always makes a new session id (one the browser had before is ended: no
fixation); signing out ends the session on the server; sessions are capped per token.

Without tokens the service's reads are open and so is the page's viewing (as on
``grantlog explore``); editing needs an admin token, which needs tokens."""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import ClientDisconnect
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.types import Message, Receive, Scope, Send

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from .auth import SCOPES, Source, Tokens
from .http import BadRequest, receive_body

PREFIX = "/ui"
COOKIE = "grantlog_ui"
#: seconds a session lasts, and a one-time login link
SESSION_TTL, LINK_TTL = 8 * 3600, 600
#: sessions (and unused link codes) kept at most, per token and in all: the oldest ends
PER_TOKEN, MAX_SESSIONS = 16, 4096
#: query parameters that look like credentials: refused wherever they appear
TOKEN_PARAMS = frozenset({"token", "access_token", "bearer", "api_key", "apikey", "auth",
                          "authorization", "key", "code"})
#: (method, path below /ui) that change nothing: the ``check`` scope suffices; anything else
#: that is not a GET needs ``admin``
READS = frozenset({("POST", "/api/ask"), ("POST", "/api/pins"), ("DELETE", "/api/pins/*"),
                   ("POST", "/api/whatif/diff"), ("POST", "/api/whatif/proof"),
                   ("POST", "/api/whatif/replay"), ("POST", "/api/suggest"),
                   ("POST", "/api/tests"), ("POST", "/api/tests/why"), ("POST", "/api/filter")})
#: paths anyone may fetch: the page's own files (package data) and the login page
OPEN = ("/static/", "/login", "/_mount.js", "/favicon.ico")
SAFE = frozenset({"GET", "HEAD"})
HEADERS = [(b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY"),
           (b"x-content-type-options", b"nosniff"), (b"cache-control", b"no-store")]

#: run before the page's scripts: the explorer asks ``/api/...`` and loads ``/static/...``;
#: mounted, both live under /ui
MOUNT_JS = b"""// grantlog serve --ui: the explorer's requests go under /ui
"use strict";
(() => {
  const base = "/ui", fetch0 = window.fetch.bind(window);
  window.fetch = (url, init) => fetch0(typeof url === "string" && /^\\/(api|static)\\//.test(url)
    ? base + url : url, Object.assign({ credentials: "same-origin" }, init || {}));
})();
"""

LOGIN = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>grantlog explorer: sign in</title>
<style>body{{font:15px system-ui,sans-serif;max-width:36em;margin:3em auto;padding:0 1em}}
input{{font:14px monospace;width:100%;padding:.4em}}button{{margin-top:.6em;padding:.4em 1em}}
.err{{color:#b71c1c}}</style></head><body>
<h1>grantlog explorer</h1>
<p id="says" class="{cls}" role="status">{message}</p>
<form method="post" action="/ui/login">
<label for="token">Token (the service's bearer token: <code>check</code> to view and ask,
<code>admin</code> to edit)</label>
<input id="token" name="token" type="password" autocomplete="off" required>
<button type="submit">Sign in</button>
</form>
<script>
// a one-time link carries its code in the fragment, which is never sent to the server
if (location.hash.length > 1) {{
  const code = location.hash.slice(1);
  history.replaceState(null, "", location.pathname);
  fetch("/ui/login/link", {{method: "POST", headers: {{"content-type": "application/json"}},
    body: JSON.stringify({{code}})}}).then((r) => {{
      if (r.ok) location.replace("/ui/");
      else document.getElementById("says").textContent =
        "this link is used or expired: sign in with a token";
  }});
}}
</script>
</body></html>
"""


def _error(status: int, code: str, message: str, hint: str | None = None) -> JSONResponse:
    """The explorer's error shape (``{"errors": [...]}``: the page shows it)."""
    from grantlog.explorer.rules import diagnostics

    found = [error(code, message, Span("<request>", 0, 0, 0, 0), hint)]
    return JSONResponse({"errors": diagnostics(found, [])}, status_code=status)


@dataclass
class Session:
    """A signed-in page: the token it was made from (None: the link ``serve --ui`` printed),
    the scopes it was given (never more than its token has now), when it ends."""

    token: str | None
    scopes: frozenset[str]
    until: float


class Sessions:
    """Signed-in pages (cookie value -> :class:`Session`) and unused one-time link codes.

    A session is as good as its token *now*: every request re-checks the token it was made
    from against the tokens in force (the tokens file is read again when it changes), so a
    token revoked, expired or rotated away ends its sessions at the next request, and one
    whose scopes were reduced keeps only what is left. At most :data:`PER_TOKEN` sessions
    per token (the oldest ends) and :data:`MAX_SESSIONS` in all."""

    def __init__(self, tokens: Source | Tokens) -> None:
        #: the tokens in force: a :class:`Source` (its file read again when changed) or fixed
        self.source = tokens
        self.lock = threading.Lock()
        self.sessions: dict[str, Session] = {}
        self.codes: dict[str, Session] = {}

    @property
    def tokens(self) -> Tokens:
        return self.source.current() if isinstance(self.source, Source) else self.source

    def scopes_of(self, header: str | None) -> frozenset[str]:
        """The scopes a request's ``Authorization`` header (or no token, when the server has
        none) grants."""
        tokens = self.tokens
        return frozenset(s for s in SCOPES if tokens.allows(header, s) == 200)

    def link(self, scopes: frozenset[str], token: str | None = None) -> str:
        """A new one-time code granting ``scopes`` (those of ``token``, while it has them)."""
        code = secrets.token_urlsafe(24)
        with self.lock:
            self._expire()
            if len(self.codes) >= MAX_SESSIONS:  # the oldest unused code goes
                del self.codes[min(self.codes, key=lambda k: self.codes[k].until)]
            self.codes[code] = Session(token, scopes, time.monotonic() + LINK_TTL)
        return code

    def redeem(self, given: str) -> str | None:
        """A new session for an unused, unexpired one-time code ``given`` (then spent)."""
        with self.lock:
            self._expire()
            found = None
            for known in list(self.codes):  # compared in constant time, each
                if hmac.compare_digest(known.encode(), given.encode()):
                    found = known
            if found is None:
                return None
            made = self.codes.pop(found)
        return self.open(made.scopes, made.token)

    def open(self, scopes: frozenset[str], token: str | None = None) -> str:
        """A new session (a new random id: an id set before signing in is never one)."""
        sid = secrets.token_urlsafe(32)
        with self.lock:
            self._expire()
            mine = [k for k, v in self.sessions.items() if v.token == token]
            for k in mine[:max(0, len(mine) + 1 - PER_TOKEN)]:  # oldest first (dict order)
                del self.sessions[k]
            while len(self.sessions) >= MAX_SESSIONS:
                del self.sessions[next(iter(self.sessions))]
            self.sessions[sid] = Session(token, scopes, time.monotonic() + SESSION_TTL)
        return sid

    def scopes(self, sid: str | None) -> frozenset[str] | None:
        """The scopes of session ``sid`` now (None: no such session, or it ended: its token
        is no longer valid, it expired, or it has none of its scopes left)."""
        if not sid:
            return None
        with self.lock:
            self._expire()
            got = self.sessions.get(sid)
        if got is None:
            return None
        scopes = got.scopes
        if got.token is not None:  # as good as its token now
            scopes = scopes & self.scopes_of(f"Bearer {got.token}")
        elif self.tokens.closed:
            scopes = frozenset()  # the tokens file is broken: nobody is let in
        if not scopes:
            self.close(sid)
            return None
        return scopes

    def close(self, sid: str | None) -> None:
        with self.lock:
            self.sessions.pop(sid or "", None)

    def _expire(self) -> None:
        now = time.monotonic()
        for d in (self.sessions, self.codes):
            for k in [k for k, v in d.items() if v.until < now]:
                del d[k]


def _header(scope: Scope, name: bytes) -> str | None:
    for k, v in scope["headers"]:
        if k == name:
            return str(v.decode("latin-1"))
    return None


def _cookie(scope: Scope) -> str | None:
    raw = _header(scope, b"cookie") or ""
    for part in raw.split(";"):
        k, _, v = part.strip().partition("=")
        if k == COOKIE:
            return v
    return None


def _host(value: str) -> str:
    """A Host header's name, without its port (``[::1]:80`` -> ``[::1]``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value.split("]", 1)[0] + "]"
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def required(method: str, path: str) -> str:
    """The scope a request under /ui needs."""
    if method in SAFE:
        return "check"
    key = path if (method, path) in READS else path.rsplit("/", 1)[0] + "/*"
    return "check" if (method, key) in READS else "admin"


class Gate:
    """The ASGI application at /ui: the Host, the address, the body's size, the session or
    token and its scope, the request's origin; then the explorer."""

    def __init__(self, explorer: Any, sessions: Sessions, hosts: frozenset[str],
                 max_body: int, before: Any = None) -> None:
        self.explorer = explorer
        self.sessions = sessions
        self.hosts = hosts
        self.max_body = max_body
        #: called (on a worker thread) before an API request: the page's reasoner catches up
        self.before = before

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        root = scope.get("root_path", "")
        path = scope["path"]
        path = path[len(root):] if root and path.startswith(root) else path
        path = path or "/"

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *HEADERS]}
            await send(message)

        body: list[bytes] = []
        try:
            response = await self.screen(scope, path, receive, body)
        except ClientDisconnect:  # gone before its body ended: nobody to answer
            return
        if response is not None:
            await response(scope, receive, secured)
            return
        if scope["method"] in SAFE:
            await self.explorer(scope, receive, secured)
            return
        replayed = False

        async def replay() -> Message:  # the body read here, once, then as it is
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body[0], "more_body": False}
        await self.explorer(scope, replay, secured)

    async def screen(self, scope: Scope, path: str, receive: Any,
                     body: list[bytes]) -> Response | None:
        """The answer that stops the request here, or None: on to the explorer (a body,
        read here within the limit, is put in ``body``)."""
        method = scope["method"]
        host = _host(_header(scope, b"host") or "")
        if host not in self.hosts:
            return _error(400, "bad-host", f"`{host}` is not a name of this server",
                          "start the server with `--ui-host NAME` for each name the page "
                          "is opened by")
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"),
                         keep_blank_values=True)
        if TOKEN_PARAMS & {k.lower() for k in query}:
            return _error(400, "token-in-url", "a credential in the address is refused: "
                          "addresses are logged and kept in histories",
                          "send `Authorization: Bearer TOKEN`, or sign in at /ui/login")
        size = _header(scope, b"content-length")
        if size is not None and (not size.isdigit() or int(size) > self.max_body):
            return _error(413, "body-too-large", f"the body is larger than {self.max_body} "
                          "bytes")
        cookie = _cookie(scope)
        if method not in SAFE:
            if not self.same_origin(scope, cookie is not None):
                return _error(403, "cross-site", "a request from another site is refused",
                              "use the page itself")
            try:  # the service's one reader: its limit, its deadline
                body.append(await receive_body(receive, self.max_body, size))
            except BadRequest as exc:
                return _error(exc.status, exc.code, exc.message)
        if path == "/login":
            return self.login(scope, method, body)
        if path == "/login/link" and method == "POST":
            return self.link(scope, body[0])
        if path == "/logout" and method == "POST":
            self.sessions.close(cookie)
            out = RedirectResponse(PREFIX + "/login", status_code=303)
            out.delete_cookie(COOKIE, path=PREFIX)
            return out
        if path == "/_mount.js":
            return Response(MOUNT_JS, media_type="text/javascript; charset=utf-8")
        if path.startswith(OPEN):
            return None  # the page's own files: package data, no secret
        header = _header(scope, b"authorization")
        # a session is re-checked against its token on every request (Sessions.scopes)
        scopes = self.sessions.scopes(cookie) if header is None and cookie else None
        ended = header is None and cookie is not None and scopes is None
        if scopes is None:
            scopes = self.sessions.scopes_of(header)
        if header is not None and not scopes:
            return _error(401, "unauthorized", Tokens.unauthorized(header))
        need = required(method, path)
        if need not in scopes and "admin" not in scopes:
            if not scopes:
                refused: Response = RedirectResponse(PREFIX + "/login", status_code=303) \
                    if path == "/" else _error(
                        401, "unauthorized", "the session has ended (signed out, timed out, "
                        "or its token was revoked or expired)" if ended else "sign in first",
                        "open /ui/login, or send `Authorization: Bearer TOKEN`")
                if ended:  # the browser forgets it
                    refused.delete_cookie(COOKIE, path=PREFIX)
                return refused
            return _error(403, "forbidden", f"this needs the `{need}` scope",
                          "sign in with a token that has it")
        if path == "/" and method in SAFE:
            return HTMLResponse(self.page())
        if path.startswith("/api/") and self.before is not None:
            from starlette.concurrency import run_in_threadpool

            try:
                await run_in_threadpool(self.before)
            except GrantlogError:
                return _error(503, "store-unavailable", "the page cannot catch up with the "
                              "store", "retry; `/readyz` says whether the store answers")
        return None

    def same_origin(self, scope: Scope, by_cookie: bool) -> bool:
        """Whether a request that changes something comes from this server's own page."""
        site = _header(scope, b"sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            return False
        origin = _header(scope, b"origin")
        if origin is None:
            return not by_cookie  # a browser sends one; a script with a token need not
        host = _header(scope, b"host") or ""
        return origin.lower() == f"{scope.get('scheme', 'http')}://{host}".lower()

    def login(self, scope: Scope, method: str, body: list[bytes]) -> Response:
        if method in SAFE:
            return HTMLResponse(LOGIN.format(cls="", message="Sign in with a token."))
        raw = body[0]
        token = parse_qs(raw.decode("utf-8", "replace")).get("token", [""])[0].strip()
        scopes = self.sessions.scopes_of(f"Bearer {token}") if token else frozenset()
        if not token or not self.sessions.tokens.enabled or not scopes:
            why = ("this server has no tokens: viewing needs none, editing is refused"
                   if not self.sessions.tokens.enabled else "that token is not valid")
            return HTMLResponse(LOGIN.format(cls="err", message=escape(why)), status_code=401)
        return self.signed_in(scope, self.sessions.open(scopes, token))

    def link(self, scope: Scope, raw: bytes) -> Response:
        header = _header(scope, b"authorization")
        if header is not None:  # make a link with this token's scopes
            scopes = self.sessions.scopes_of(header)
            if not scopes or not self.sessions.tokens.enabled:
                return _error(401, "unauthorized", Tokens.unauthorized(header))
            code = self.sessions.link(scopes, header.strip().partition(" ")[2].strip())
            return JSONResponse({"url": f"{PREFIX}/login#{code}", "expires_in": LINK_TTL,
                                 "scopes": sorted(scopes)})
        import json

        try:
            given = json.loads(raw or b"{}").get("code")
        except (ValueError, AttributeError):
            given = None
        sid = self.sessions.redeem(given) if isinstance(given, str) and given else None
        if sid is None:
            return _error(401, "bad-link", "the link is used, expired or not one of this "
                          "server's", "sign in with a token at /ui/login")
        return self.signed_in(scope, sid, JSONResponse({"signed_in": True}))

    def signed_in(self, scope: Scope, sid: str,
                  out: Response | None = None) -> Response:
        self.sessions.close(_cookie(scope))  # a session the browser had before ends here
        out = out or RedirectResponse(PREFIX + "/", status_code=303)
        out.set_cookie(COOKIE, sid, max_age=SESSION_TTL, path=PREFIX, httponly=True,
                       samesite="strict", secure=scope.get("scheme") == "https")
        return out

    def page(self) -> str:
        from grantlog.explorer.app import PAGE

        page = PAGE.replace('="/static/', f'="{PREFIX}/static/')
        return page.replace("<head>", f'<head>\n<script src="{PREFIX}/_mount.js"></script>', 1)


def hosts_of(bind: str, names: list[str] | None) -> frozenset[str]:
    """The Host names the page answers: the loopback names, the bound address unless it is
    every address, and ``names``."""
    out = {"127.0.0.1", "localhost", "[::1]"}
    if bind not in ("0.0.0.0", "::", ""):
        out.add(f"[{bind}]" if ":" in bind else bind)
    out.update(n.strip().lower() for n in names or [] if n.strip())
    return frozenset(out)


def mount(app: Any, service: Any) -> Gate:
    """Mount the explorer at /ui of the service's Starlette ``app``, over the service's rules
    and store (a workspace of its own: what the page edits never changes what the service
    serves); answers the gate (its sessions make the login links)."""
    from grantlog.explorer.app import create_app
    from grantlog.explorer.workspace import Document, Workspace

    config = service.config

    def documents(program: Any) -> list[Document]:
        ordered = [*program.files, *(p for p in program.sources if p not in program.files)]
        return [Document(p, program.sources[p]) for p in ordered if p in program.sources]

    served = [service.program.digest]
    ws = Workspace(documents(service.program), config.store)
    found = ws.compile({})
    if any(d.severity == "error" for d in found):
        raise GrantlogError(found)
    if config.decision_log and config.decision_log != "-":
        ws.log = config.decision_log

    def catch_up() -> None:
        """The page's program follows the service's policy (a new one, `PUT /v1/policy`,
        replaces the page's documents) and its facts the store's head."""
        with ws.lock:
            program = service.program
            if program.digest != served[0]:
                ws.docs[:] = documents(program)
                ws.compile({})
                served[0] = program.digest
            elif config.store:
                ws.reasoner.sync()

    gate = Gate(create_app(ws, hosts=None), Sessions(service.token_source),
                hosts_of(config.ui_bind, config.ui_hosts), config.max_body, catch_up)
    gate.workspace = ws  # type: ignore[attr-defined]
    app.router.routes.append(Route(PREFIX, lambda request: RedirectResponse(PREFIX + "/",
                                                                             status_code=308)))
    app.router.routes.append(Mount(PREFIX, app=gate))
    return gate
