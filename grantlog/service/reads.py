"""Reads: ``POST /v1/list``, ``/v1/who``, ``/v1/query``, ``/v1/explain``, ``/v1/filter`` and
``GET /v1/relations/{rel}``.

The worker checks a read's input, waits for ``at_least_revision`` if asked, and hands the rest
to a snapshot (grantlog/service/snapshots.py): the ``render_*`` functions below run there, in a
forked copy of the worker, and return the response's status, media type and body, rendered.
Every read is bounded: in time and memory by its snapshot, in rows here — an answer is either
paged (``limit`` and ``cursor``: the ``next_cursor`` of the previous page) or, unpaged, at most
``max_rows`` answers (more is ``422 too-large``, saying how to page). A read's body may ask a
shorter deadline than the server's: ``timeout_ms``.

A read (and a check) may ask about the past: ``at_revision`` (a number) or ``as_of`` (an ISO
8601 time), answered as the store's facts and policy stood then (engine/answer/history.py;
docs/history.md) in a snapshot, like every read, and saying the revision it is of.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from grantlog.engine.answer import history, validity
from grantlog.engine.answer.decide import decide_or_deny
from grantlog.engine.answer.vocabulary import to_json
from grantlog.engine.core import ir
from grantlog.engine.core.times import instant
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error

from .http import BadRequest, cursor_value, get_int, get_str, get_strict, here, nat
from .snapshots import Renderer
from .state import Service, endpoint

#: the most answers one page may hold
MAX_PAGE = 100_000
NDJSON = "application/x-ndjson"
JSON_TYPE = "application/json"

Rendered = tuple[int, str, Iterable[bytes], dict[str, Any]]


def _too_large(n: int, max_rows: int) -> GrantlogError:
    return GrantlogError([error(
        "too-large", f"the answer has {n} rows; an unpaged answer may have {max_rows}",
        Span("<request>", 0, 0, 0, 0), "page it: `limit` (at most 100000 per page) and "
        "`cursor` (the `next_cursor` of the previous page)")])


def _page(values: list[Any], after: Any, limit: int | None) -> tuple[list[Any], Any]:
    """``limit`` answers after ``after`` (None: from the first); the next page's cursor."""
    start = 0
    if after is not None:
        try:
            start = ir.position_after(values, after)
        except TypeError:  # a cursor of another shape than the answers
            raise GrantlogError([error("bad-request", "`cursor` is not one of this read's "
                                       "(pass the `next_cursor` of its previous page)",
                                       Span("<request>", 0, 0, 0, 0))]) from None
    if limit is None:
        limit = MAX_PAGE
    page = values[start:start + limit]
    more = start + limit < len(values)
    return page, (page[-1] if more and page else None)


def _answers(values: list[Any], revision: int, key: str, paged: bool, after: Any,
             limit: int | None, max_rows: int, chunk: int,
             warnings: Iterable[Diagnostic] = ()) -> Rendered:
    """A listing's answer: a page as one JSON object, or every answer as NDJSON lines (one
    ``{key: value}`` each, then ``{"revision", "count"}``); ``warnings`` (an empty answer's
    unknown constants) in the object or the last line."""
    extra = {"warnings": to_json(warnings)} if warnings else {}
    if paged:
        page, last = _page(values, after, limit)
        cursor = None if last is None else orjson.dumps(last).decode()
        return 200, JSON_TYPE, [orjson.dumps({key + "s": page, "next_cursor": cursor,
                                              "revision": revision, **extra})], \
            {"size": len(page), "revision": revision, "next_cursor": cursor is not None}
    if len(values) > max_rows:
        raise _too_large(len(values), max_rows)

    def lines() -> Iterator[bytes]:
        for i in range(0, len(values), chunk):
            yield b"".join(orjson.dumps({key: v}) + b"\n" for v in values[i:i + chunk])
        yield orjson.dumps({"revision": revision, "count": len(values), **extra}) + b"\n"

    return 200, NDJSON, lines(), {"size": len(values), "revision": revision}


def when(data: dict[str, Any]) -> dict[str, Any]:
    """A question's moment: ``at_revision`` or ``as_of`` (an ISO 8601 time, or seconds since
    the epoch), as keyword arguments of the Reasoner's questions (none: now)."""
    rev, as_of = get_int(data, "at_revision"), data.get("as_of")
    if as_of is not None and (isinstance(as_of, bool) or
                              not isinstance(as_of, str | int | float)):
        raise BadRequest(422, "bad-request", "`as_of` must be an ISO 8601 time or a number "
                         "of seconds since the epoch")
    if rev is not None and as_of is not None:
        raise BadRequest(422, "bad-request", "give `at_revision` or `as_of`, not both")
    now = data.get("now")  # the moment facts' validity intervals are read at
    if now is not None and (isinstance(now, bool) or not isinstance(now, str | int | float)):
        raise BadRequest(422, "bad-request", "`now` must be an ISO 8601 time or a number of "
                         "seconds since the epoch")
    return ({"at_revision": rev} if rev is not None else {"as_of": as_of}
            if as_of is not None else {}) | ({"now": now} if now is not None else {})


def _at(r: Any, moment: dict[str, Any] | None) -> Any:
    """The reasoner that answers at ``moment`` (:func:`when`): ``r`` itself, or the read-only
    reasoner of that past revision; with ``now``, of the facts valid then
    (engine/answer/validity.py)."""
    if not moment:
        return r
    if "at_revision" in moment or "as_of" in moment:
        r = history.past(r, moment.get("at_revision"), moment.get("as_of"))
    now = moment.get("now", moment.get("as_of"))  # as of a time: its intervals then, too
    return r if now is None else validity.at(r, instant(now, "now"))


# -- what the snapshots run (module-level functions: they travel by name) -----------------------

def render_check(r: Any, triples: list[tuple[str, str, str]], moment: dict[str, Any],
                 batch: bool) -> Rendered:
    """Checks at a past moment (failing closed as every check: an error while deciding is a
    deny carrying it; a moment the store cannot answer at is an error)."""
    r = _at(r, moment)
    results: list[dict[str, Any]] = []
    for s, o, x in triples:
        d, failure = decide_or_deny(r, s, o, x)
        out: dict[str, Any] = {"allowed": d.allowed, "reasons": list(d.reasons)}
        if failure is not None:
            out["error"] = {"code": failure.code, "message": failure.message}
        elif d.warnings:
            out["warnings"] = to_json(d.warnings)
        results.append(out if batch else out | {"revision": r.revision})
    body = orjson.dumps({"results": results, "revision": r.revision} if batch else results[0])
    return 200, JSON_TYPE, [body], {"size": len(results), "revision": r.revision}


def render_list(r: Any, subject: str, operation: str, type: str | None, within: str | None,
                strict: bool = False, moment: dict[str, Any] | None = None,
                **page: Any) -> Rendered:
    r = _at(r, moment)
    got = r.list(subject, operation, type, within, strict=strict)
    return _answers(list(got), got.revision, "resource", **page, warnings=got.warnings)


def render_who(r: Any, operation: str, resource: str, strict: bool = False,
               moment: dict[str, Any] | None = None, **page: Any) -> Rendered:
    r = _at(r, moment)
    got = r.who(operation, resource, strict=strict)
    return _answers(list(got), got.revision, "subject", **page, warnings=got.warnings)


def render_query(r: Any, goal: str, paged: bool, after: Any, limit: int | None,
                 max_rows: int, chunk: int, moment: dict[str, Any] | None = None) -> Rendered:
    got = _at(r, moment).query(goal)
    answers = list(got)
    names = list(answers[0]) if answers else []
    if paged:
        rows = [tuple(a.values()) for a in answers]
        page, last = _page(rows, after, limit)
        return 200, JSON_TYPE, [orjson.dumps({
            "answers": [dict(zip(names, row, strict=True)) for row in page],
            "next_cursor": None if last is None else orjson.dumps(list(last)).decode(),
            "revision": got.revision})], \
            {"size": len(page), "revision": got.revision, "next_cursor": last is not None}
    if len(answers) > max_rows:
        raise _too_large(len(answers), max_rows)
    return 200, JSON_TYPE, [orjson.dumps({"answers": answers, "revision": got.revision})], \
        {"size": len(answers), "revision": got.revision}


def render_explain(r: Any, goal: str, fmt: str,
                   moment: dict[str, Any] | None = None) -> Rendered:
    r = _at(r, moment)
    ex = r.explain(goal)
    revision = r.revision
    if fmt == "json":
        body = {"holds": ex.holds, "explanation": ex.to_dict(), "revision": revision}
    elif fmt == "tree":  # a check's explanation: the tree alone
        body = ex.to_dict()
    else:
        text = {"text": ex.render, "dot": ex.to_dot, "mermaid": ex.to_mermaid}[fmt]()
        body = {"holds": ex.holds, "explanation": text, "format": fmt, "revision": revision}
    out = orjson.dumps(body)
    return 200, JSON_TYPE, [out], {"size": len(out), "unit": "bytes", "revision": revision,
                                   "holds": ex.holds}


def render_filter(r: Any, subject: str, operation: str, type: str | None, layout: Any,
                  dialect: str | None, strict: bool = False) -> Rendered:
    f = r.filter(subject, operation, type, strict=strict)
    out: dict[str, Any] = {"condition": f.to_dict()["condition"], "revision": f.revision}
    if f.warnings:
        out["warnings"] = to_json(f.warnings)
    if layout is not None and dialect is not None:
        from grantlog.filters import to_sql

        out["sql"] = to_sql(f, layout, dialect)
    body = orjson.dumps(out)
    return 200, JSON_TYPE, [body], {"size": len(body), "unit": "bytes", "revision": f.revision}


def render_rows(r: Any, rel: str, after: Any, limit: int) -> Rendered:
    rows = sorted(r.rows(rel), key=ir.row_key)
    page, last = _page(rows, after, limit)
    return 200, JSON_TYPE, [orjson.dumps({
        "relation": rel, "rows": [list(x) for x in page],
        "next_cursor": None if last is None else orjson.dumps(list(last)).decode(),
        "revision": r.revision})], \
        {"size": len(page), "revision": r.revision, "next_cursor": last is not None}


# -- the worker's side -------------------------------------------------------------------------

async def _run(svc: Service, request: Request | None, asked: dict[str, Any],
               at_least: int | None, fn: Renderer, **args: Any) -> Response:
    """Wait for ``at_least`` (if asked), then answer ``fn`` in a snapshot; log what was asked
    and the answer's size (the decision log, when there is one and ``request``)."""
    t0 = time.perf_counter()
    if at_least is not None and at_least > svc.reasoner.revision:
        await run_in_threadpool(svc.reasoner.wait_for, at_least)
    timeout = get_int(asked, "timeout_ms")
    reply = await svc.snapshots.run(svc.reasoner, svc.generation, fn,
                                    None if timeout is None else timeout / 1000, **args)
    if svc.dlog is not None and request is not None and reply.status == 200:
        meta = dict(reply.meta)
        size, revision = meta.pop("size", 0), meta.pop("revision", svc.reasoner.revision)
        svc.dlog.log_read(request.url.path.removeprefix("/v1/").split("/")[0],
                          svc.dlog.request_id(request.headers),
                          {k: v for k, v in asked.items() if v is not None and k != "timeout_ms"},
                          size, revision,
                          t0, meta.pop("unit", "answers"), **meta)
    if reply.media_type == NDJSON and reply.status == 200:
        return StreamingResponse(reply.chunks, media_type=NDJSON)
    body = b"".join([c async for c in reply.chunks])
    return Response(body, status_code=reply.status, media_type=reply.media_type)


def _paging(svc: Service, data: dict[str, Any], scalar: bool) -> dict[str, Any]:
    """A read's paging arguments: ``paged`` when ``limit`` or ``cursor`` is given."""
    limit = get_int(data, "limit")
    after = cursor_value(data)
    if after is not None and isinstance(after, tuple) == scalar:
        raise BadRequest(422, "bad-request", "`cursor` is not one of this read's (pass the "
                         "`next_cursor` of its previous page)")
    return {"paged": limit is not None or after is not None, "after": after,
            "limit": None if limit is None else min(limit, MAX_PAGE),
            "max_rows": svc.config.max_rows, "chunk": svc.config.chunk}


async def explanation(svc: Service, goal: str, moment: dict[str, Any] | None = None) -> Any:
    """A check's explanation tree, made in a snapshot (at ``moment``: :func:`when`)."""
    response = await _run(svc, None, {}, None, render_explain, goal=goal, fmt="tree",
                          moment=moment)
    if response.status_code != 200:
        raise BadRequest(response.status_code, "explain-failed",
                         orjson.loads(response.body)["error"]["message"])
    return orjson.loads(response.body)


@endpoint("list", "check")
async def list_(svc: Service, request: Request) -> Response:
    """POST /v1/list {subject, operation, type?, within?, at_least_revision?, limit?, cursor?,
    strict?, at_revision?, as_of?}"""
    data = await svc.body(request)
    s, o = get_str(data, "subject"), get_str(data, "operation")
    typ, within = get_str(data, "type", False), get_str(data, "within", False)
    paging = _paging(svc, data, True)
    moment = when(data)
    asked = {"subject": s, "operation": o, "type": typ, "within": within,
             "limit": paging["limit"], "cursor": data.get("cursor"),
             "timeout_ms": data.get("timeout_ms"), **moment}
    return await _run(svc, request, asked, get_int(data, "at_least_revision"), render_list,
                      subject=s, operation=o, type=typ, within=within,
                      strict=get_strict(data, svc.config.strict), moment=moment, **paging)


@endpoint("who", "check")
async def who(svc: Service, request: Request) -> Response:
    """POST /v1/who {operation, resource, at_least_revision?, limit?, cursor?, strict?,
    at_revision?, as_of?}"""
    data = await svc.body(request)
    o, r = get_str(data, "operation"), get_str(data, "resource")
    paging = _paging(svc, data, True)
    moment = when(data)
    asked = {"operation": o, "resource": r, "limit": paging["limit"],
             "cursor": data.get("cursor"), "timeout_ms": data.get("timeout_ms"), **moment}
    return await _run(svc, request, asked, get_int(data, "at_least_revision"), render_who,
                      operation=o, resource=r, strict=get_strict(data, svc.config.strict),
                      moment=moment, **paging)


@endpoint("query", "check")
async def query(svc: Service, request: Request) -> Response:
    """POST /v1/query {goal, at_least_revision?, limit?, cursor?, at_revision?, as_of?}"""
    data = await svc.body(request)
    goal = get_str(data, "goal")
    paging = _paging(svc, data, False)
    moment = when(data)
    asked = {"goal": goal, "limit": paging["limit"], "cursor": data.get("cursor"),
             "timeout_ms": data.get("timeout_ms"), **moment}
    return await _run(svc, request, asked, get_int(data, "at_least_revision"), render_query,
                      goal=goal, moment=moment, **paging)


@endpoint("explain", "check")
async def explain(svc: Service, request: Request) -> Response:
    """POST /v1/explain {goal, format?: json|text|dot|mermaid, at_least_revision?,
    at_revision?, as_of?}"""
    data = await svc.body(request)
    goal = get_str(data, "goal")
    fmt = data.get("format", "json")
    if fmt not in ("json", "text", "dot", "mermaid"):
        raise BadRequest(422, "bad-request", "`format` is one of json, text, dot, mermaid")
    moment = when(data)
    return await _run(svc, request, {"goal": goal, "format": fmt,
                                     "timeout_ms": data.get("timeout_ms"), **moment},
                      get_int(data, "at_least_revision"), render_explain, goal=goal, fmt=fmt,
                      moment=moment)


@endpoint("filter", "check")
async def filter_(svc: Service, request: Request) -> Response:
    """POST /v1/filter {subject, operation, type?, sql?: sqlite|postgres|spark|trino,
    layout?: {table, schema?, catalog?, id, type?, parent?, path?, path_separator?},
    at_least_revision?, timeout_ms?, strict?}: the
    condition a resource must meet (docs/filters.md), as JSON and, with ``sql`` and
    ``layout``, as a WHERE condition over the caller's catalog table."""
    data = await svc.body(request)
    s, o = get_str(data, "subject"), get_str(data, "operation")
    typ, dialect = get_str(data, "type", False), get_str(data, "sql", False)
    layout = data.get("layout")
    if (dialect is None) != (layout is None):
        raise BadRequest(422, "bad-request", "`sql` and `layout` go together")
    lay = None
    if layout is not None and dialect is not None:
        from grantlog.filters import Layout, check_dialect

        lay = Layout.from_dict(layout, here("<request>"))
        check_dialect(dialect)
    asked = {"subject": s, "operation": o, "type": typ, "sql": dialect,
             "layout_table": lay.table if lay is not None else None,
             "timeout_ms": data.get("timeout_ms")}
    return await _run(svc, request, asked, get_int(data, "at_least_revision"), render_filter,
                      subject=s, operation=o, type=typ, layout=lay, dialect=dialect,
                      strict=get_strict(data, svc.config.strict))


@endpoint("relations", "check")
async def relation_rows(svc: Service, request: Request) -> Response:
    """GET /v1/relations/{rel}?limit=N&cursor=C: base facts, sorted, paged"""
    rel = request.path_params["rel"]
    params = request.query_params
    limit = nat(params["limit"], "limit", MAX_PAGE) if "limit" in params else 1000
    after = cursor_value({"cursor": params.get("cursor")})
    if after is not None and not isinstance(after, tuple):
        raise BadRequest(422, "bad-request", "`cursor` is not one of this read's (pass the "
                         "`next_cursor` of its previous page)")
    if rel not in svc.program.relations:
        raise GrantlogError([error("unknown-relation", f"relation `{rel}` does not exist",
                                   here("<request>"))])
    return await _run(svc, None, {}, None, render_rows, rel=rel, after=after, limit=limit)
