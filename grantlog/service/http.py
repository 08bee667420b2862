"""The service's request plumbing: JSON responses, error bodies, reading bodies and parameters
(with limits), and what an error may show of the server.

Every error body is ``{"error": {"code", "message", "diagnostics": [...]}}`` (and
``rendered``, the diagnostics as the CLI prints them, when they point into rule text the caller
sent). Nothing in an error names the server's files or its store: a store's URL (user, host,
database) is replaced by ``<store>`` wherever it would appear.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import orjson
from starlette.requests import Request
from starlette.responses import Response

from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span

#: seconds a request's body may take to arrive after its headers
BODY_TIMEOUT = 30.0


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class BadRequest(Exception):
    def __init__(self, status: int, code: str, message: str,
                 diagnostics: list[Diagnostic] | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.diagnostics = diagnostics or []
        self.extra = extra


def here(where: str = "<request>") -> Span:
    return Span(where, 0, 0, 0, 0)


def diag_dict(d: Diagnostic) -> dict[str, Any]:
    out = d.to_dict()
    return out if isinstance(out, dict) else {"code": d.code, "message": d.message}


def problem_body(status: int, code: str, message: str,
                 diagnostics: Sequence[Diagnostic] = (), rendered: str | None = None,
                 **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"error": {"code": code, "message": message,
                                      "diagnostics": [diag_dict(d) for d in diagnostics]}}
    if rendered is not None:  # as the CLI prints them: file:line:col, the line, a caret
        body["error"]["rendered"] = rendered
    body.update(extra)
    return body


def problem(status: int, code: str, message: str,
            diagnostics: Sequence[Diagnostic] = (), rendered: str | None = None,
            **extra: Any) -> JSON:
    return JSON(problem_body(status, code, message, diagnostics, rendered, **extra),
                status_code=status)


#: the HTTP status of an error code (422 when not listed; ``store-*``: 503)
STATUS = {"revision-conflict": 409, "policy-conflict": 409, "revision-timeout": 504,
          "deadline-exceeded": 504, "too-large": 422, "reads-busy": 503, "read-failed": 503,
          "store-schema-mismatch": 422, "decision-log-failed": 503}


def status_of(code: str) -> int:
    if code in STATUS:
        return STATUS[code]
    return 503 if code.startswith("store-") else 422


class Redactor:
    """Removes a store's URL and its parts (user, password, host, database) from errors."""

    def __init__(self, url: str | None) -> None:
        self.url = url
        secrets: list[str] = []
        if url:
            secrets.append(url)
            try:
                parts = urlsplit(url)
                secrets += [p for p in (parts.netloc, parts.username, parts.password,
                                        parts.hostname, parts.path.lstrip("/"), parts.path)
                            if p and len(p) > 2]
            except ValueError:
                pass
        #: longest first, so that a part inside another is not left half replaced
        self.secrets = sorted(set(secrets), key=len, reverse=True)

    def text(self, s: str) -> str:
        for secret in self.secrets:
            if secret in s:
                s = s.replace(secret, "<store>")
        return s

    def diagnostic(self, d: Diagnostic) -> Diagnostic:
        if not self.secrets:
            return d
        span = d.span
        if span is not None and span.file and any(s in span.file for s in self.secrets):
            span = dataclasses.replace(span, file="<store>")
        return dataclasses.replace(d, message=self.text(d.message), span=span,
                                   help=self.text(d.help) if d.help else d.help)

    def error(self, exc: GrantlogError) -> tuple[str, str, list[Diagnostic], str | None]:
        """(code, message, diagnostics, rendered) of an error, fit to send."""
        diags = [self.diagnostic(d) for d in exc.diagnostics]
        code = diags[0].code if diags else "error"
        message = diags[0].message if diags else self.text(str(exc))
        rendered = self.text(str(exc)) if exc.sources else None
        return code, message, diags, rendered


def nat(text: str, name: str, cap: int | None = None) -> int:
    """A query string's non-negative integer: ASCII digits only (``²`` is not a number)."""
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise BadRequest(422, "bad-request", f"`{name}` must be a non-negative integer")
    n = int(text)
    return n if cap is None else min(n, cap)


def get_str(data: dict[str, Any], key: str, required: bool = True) -> str | None:
    v = data.get(key)
    if v is None and not required:
        return None
    if not isinstance(v, str):
        raise BadRequest(422, "bad-request", f"`{key}` must be a string" +
                         ("" if key in data else " (missing)"))
    return v


def get_int(data: dict[str, Any], key: str) -> int | None:
    v = data.get(key)
    if v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v >= 2**63:
        raise BadRequest(422, "bad-request", f"`{key}` must be a non-negative integer")
    return v


def _value(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))


def cursor_value(data: dict[str, Any]) -> Any:
    """The decoded ``cursor`` of a paged request (None: the first page): the last answer of
    the previous page, as the server wrote it (a value, or a list of values)."""
    cursor = data.get("cursor")
    if cursor is None:
        return None
    if not isinstance(cursor, str):
        raise BadRequest(422, "bad-request", "`cursor` must be the string a page returned")
    try:
        after = orjson.loads(cursor)
    except orjson.JSONDecodeError:
        after = None
    if not _value(after) and not (isinstance(after, list) and after
                                   and all(_value(v) for v in after)):
        raise BadRequest(422, "bad-request", "`cursor` is not one this server made "
                         "(pass the `next_cursor` of the previous page as it was)")
    return tuple(after) if isinstance(after, list) else after


async def receive_body(receive: Any, max_body: int, length: str | None = None) -> bytes:
    """The raw body of an ASGI request (its ``receive``): at most ``max_body`` bytes,
    arriving within :data:`BODY_TIMEOUT` of the headers. The one reader of bodies: the
    service's endpoints (:func:`read_body`), ``POST /v1/check``'s fast path and the explorer
    at /ui. A declared ``length`` (the ``Content-Length`` header) above the limit, or not a
    number, is refused before anything is read; a body sent in chunks (without a length) is
    cut off as soon as it passes the limit (413 ``body-too-large``); a stalled one is 408
    ``request-timeout``; a client gone before the end raises starlette's ``ClientDisconnect``."""
    if length is not None:
        if not (length.isascii() and length.isdigit()):
            raise BadRequest(400, "bad-request", "the `Content-Length` header is not a number")
        if int(length) > max_body:
            raise BadRequest(413, "body-too-large",
                             f"the body has {length} bytes; the limit is {max_body}")
    chunks: list[bytes] = []
    total = 0

    async def read() -> None:
        nonlocal total
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                from starlette.requests import ClientDisconnect

                raise ClientDisconnect()
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > max_body:
                raise BadRequest(413, "body-too-large", f"the body exceeds {max_body} bytes")
            chunks.append(chunk)
            if not message.get("more_body"):
                return

    try:
        await asyncio.wait_for(read(), BODY_TIMEOUT)
    except TimeoutError:
        raise BadRequest(408, "request-timeout", f"the body did not arrive within "
                         f"{BODY_TIMEOUT:g} s") from None
    return b"".join(chunks)


async def read_body(request: Request, max_body: int) -> bytes:
    """A Starlette request's raw body, read by :func:`receive_body`."""
    return await receive_body(request.receive, max_body, request.headers.get("content-length"))


async def send_problem(send: Any, exc: BadRequest) -> None:
    """Answer ``exc`` over raw ASGI (where no Starlette response is at hand); the
    connection is closed after it (the body may not have been read to its end)."""
    out = orjson.dumps(problem_body(exc.status, exc.code, exc.message, exc.diagnostics))
    await send({"type": "http.response.start", "status": exc.status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(out)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": out})


def parse_object(raw: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(raw) if raw else {}
    except orjson.JSONDecodeError as exc:
        raise BadRequest(400, "malformed-json", f"the body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BadRequest(400, "malformed-json", "the body must be a JSON object")
    return data



def get_strict(data: dict[str, Any], server: bool) -> bool:
    """A question's ``strict`` (a constant no rule, declaration or fact mentions is a 422
    ``unknown-constant`` instead of a warning): the request's, or the server's ``--strict``."""
    v = data.get("strict", False)
    if not isinstance(v, bool):
        raise BadRequest(422, "bad-request", "`strict` must be true or false")
    return v or server
