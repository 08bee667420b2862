"""The explorer's HTTP routes (Starlette): the page, its static files (loaded from the package
at start: no path of a request is opened), and the JSON API the page calls.

- ``GET /api/state``: the documents, their diagnostics, the pins, the base relations and the
  ask bar's completions
- ``POST /api/edit`` ``{doc, text}``: a document's new text: its diagnostics; when it compiles
  it becomes the live program and the pins re-run
- ``POST /api/ask`` ``{question}``: the answer, with the proof or why-not graph
- ``GET /api/facts?rel=R&contains=S``: a base relation as a table
- ``POST /api/pins`` ``{question}``, ``DELETE /api/pins/{id}``: pin and unpin

Bounds: request bodies of at most :data:`MAX_BODY` bytes, JSON only (a cross-site form cannot
post one), the Host header 127.0.0.1 or localhost (no DNS rebinding), and each answer within
:data:`DEADLINE` seconds (the service's defaults)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error

from . import ask, coverage, facts, filters, rules, suggestions, whatif
from .workspace import Workspace

#: the largest request body accepted (the service's ``--max-body`` default)
MAX_BODY = 8 * 2**20
#: the longest an answer may take before the page is told so (the service's read deadline)
DEADLINE = 30.0
REQUEST = Span("<request>", 0, 0, 0, 0)
TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
         ".html": "text/html; charset=utf-8"}


def _package_files(folder: str) -> dict[str, bytes]:
    """Every file under the package's ``folder``, by its path below it (read once)."""
    out: dict[str, bytes] = {}
    root = resources.files(__package__).joinpath(folder)

    def walk(node: Any, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            else:
                out[prefix + child.name] = child.read_bytes()
    walk(root, "")
    return out


STATIC = _package_files("static")
PAGE = _package_files("templates")["index.html"].decode("utf-8")


def _errors(found: list[Diagnostic], status: int = 422) -> JSONResponse:
    return JSONResponse({"errors": rules.diagnostics(found, [])}, status_code=status)


def _fail(code: str, message: str, hint: str | None = None) -> GrantlogError:
    return GrantlogError([error(code, message, REQUEST, hint)])


async def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object (``body-too-large``, ``malformed-json``)."""
    if "application/json" not in request.headers.get("content-type", ""):
        raise _fail("malformed-json", "the body must be JSON (`content-type: "
                    "application/json`)")
    from grantlog.service.http import BadRequest, read_body

    try:  # the service's one reader of bodies: the limit, chunks, the deadline
        raw = await read_body(request, MAX_BODY)
    except BadRequest as exc:
        raise _fail(exc.code, exc.message) from None
    try:
        body = json.loads(raw or b"null")
    except ValueError as e:
        raise _fail("malformed-json", f"the body is not JSON ({e})") from None
    if not isinstance(body, dict):
        raise _fail("malformed-json", "the body must be a JSON object")
    return body


def _field(body: dict[str, Any], name: str, kind: type) -> Any:
    v = body.get(name)
    if not isinstance(v, kind) or (isinstance(v, bool) and kind is not bool):
        raise _fail("bad-request", f"`{name}` must be a {kind.__name__}")
    return v


async def _run(fn: Callable[[], Any]) -> Any:
    """``fn`` on a worker thread, answered within :data:`DEADLINE` (``deadline-exceeded``;
    the computation itself is not cancelled)."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(fn), DEADLINE)
    except TimeoutError:
        raise _fail("deadline-exceeded", f"the answer took longer than {DEADLINE:g} s",
                    "ask a narrower question") from None


def create_app(ws: Workspace, hosts: Sequence[str] | None = ("127.0.0.1", "localhost"),
               ) -> Starlette:
    """The explorer over workspace ``ws``, answering requests whose Host is one of ``hosts``
    (None: any; the server it is mounted in checks it: grantlog/service/ui.py)."""

    def handled(fn: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            try:
                result: Response = await fn(request)
                return result
            except GrantlogError as e:
                status = {"body-too-large": 413, "malformed-json": 400, "request-timeout": 408,
                          "deadline-exceeded": 504}.get(e.diagnostics[0].code, 422)
                return _errors(list(e.diagnostics), status)
        return endpoint

    def paths() -> list[str]:
        return [d.path for d in ws.docs]

    def state() -> dict[str, Any]:
        with ws.lock:
            return {
                "docs": [{"doc": i, "name": d.name, "text": d.text, "editable": d.editable,
                          "live": d.text == d.live} for i, d in enumerate(ws.docs)],
                "diagnostics": rules.diagnostics(ws.warnings, paths()),
                "pins": ws.pins.to_list(),
                "relations": facts.relations(ws.reasoner),
                "vocabulary": ws.vocabulary(),
            }

    async def page(request: Request) -> Response:
        return HTMLResponse(PAGE)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        data = STATIC.get(name)
        if data is None:
            return Response("not found", status_code=404, media_type="text/plain")
        kind = TYPES.get(name[name.rfind("."):], "text/plain; charset=utf-8")
        return Response(data, media_type=kind, headers={"cache-control": "no-cache"})

    async def get_state(request: Request) -> Response:
        return JSONResponse(await _run(state))

    async def edit(request: Request) -> Response:
        body = await _body(request)
        doc, text = _field(body, "doc", int), _field(body, "text", str)
        if not 0 <= doc < len(ws.docs) or not ws.docs[doc].editable:
            raise _fail("bad-request", f"no editable document {doc}")

        def run() -> dict[str, Any]:
            with ws.lock:
                found = ws.compile({doc: text})
                live = ws.docs[doc].live == text
                return {"live": live, "diagnostics": rules.diagnostics(found, paths()),
                        "pins": ws.pins.to_list(),
                        "relations": facts.relations(ws.reasoner) if live else None}
        return JSONResponse(await _run(run))

    async def ask_route(request: Request) -> Response:
        q = ask.parse(_field(await _body(request), "question", str))

        def run() -> dict[str, Any]:
            with ws.lock:
                return ask.answer(ws.reasoner, q)
        return JSONResponse(await _run(run))

    async def table(request: Request) -> Response:
        rel = request.query_params.get("rel", "")
        contains = request.query_params.get("contains", "")

        def run() -> dict[str, Any]:
            with ws.lock:
                return facts.table(ws.reasoner, rel, contains)
        return JSONResponse(await _run(run))

    async def pin(request: Request) -> Response:
        text = _field(await _body(request), "question", str)

        def run() -> dict[str, Any]:
            with ws.lock:
                ws.pins.add(ws.reasoner, text)
                return {"pins": ws.pins.to_list()}
        return JSONResponse(await _run(run))

    async def unpin(request: Request) -> Response:
        try:
            pin_id = int(request.path_params["pin"])
        except ValueError:
            raise _fail("bad-request", "a pin's id is a number") from None
        with ws.lock:
            if not ws.pins.remove(pin_id):
                return _errors([error("not-found", f"no pin {pin_id}", REQUEST)], 404)
            return JSONResponse({"pins": ws.pins.to_list()})

    routes = [
        Route("/", page),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Route("/static/{name:path}", static),
        Route("/api/state", handled(get_state)),
        Route("/api/edit", handled(edit), methods=["POST"]),
        Route("/api/ask", handled(ask_route), methods=["POST"]),
        Route("/api/facts", handled(table)),
        Route("/api/pins", handled(pin), methods=["POST"]),
        Route("/api/pins/{pin}", handled(unpin), methods=["DELETE"]),
        *whatif.routes(ws, handled, _body, _run),
        *suggestions.routes(ws, handled, _body, _run),
        *coverage.routes(ws, handled, _body, _run), *filters.routes(ws, handled, _body, _run),
        *facts.routes(ws, handled, _body, _run),
    ]
    if hosts is None:  # mounted in a server that checks the Host itself (serve --ui)
        return Starlette(routes=routes)
    return Starlette(routes=routes, middleware=[Middleware(TrustedHostMiddleware,
                                                           allowed_hosts=list(hosts))])
