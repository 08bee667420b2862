"""Changes: ``POST /v1/write`` (facts, with compare-and-set on the revision), ``GET``/``PUT
/v1/policy`` (the rules; replacing them needs an admin token) and ``GET /v1/watch`` (a live feed
of the watched relations' changes)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from grantlog.grammar.diagnostics import display_path

from . import policy
from .http import JSON, BadRequest, get_int, get_str, nat
from .state import Service, endpoint


def _rows(data: dict[str, Any], key: str) -> dict[str, list[tuple[Any, ...]]]:
    part = data.get(key, {})
    if not isinstance(part, dict):
        raise BadRequest(422, "bad-request", f"`{key}` must map relations to lists of rows")
    out: dict[str, list[tuple[Any, ...]]] = {}
    for rel, rows in part.items():
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise BadRequest(422, "bad-request", f"`{key}.{rel}` must be a list of rows "
                             "(lists of values)")
        out[rel] = [tuple(r) for r in rows]
    return out


def _timed(data: dict[str, Any]) -> list[tuple[str, list[tuple[Any, ...]], Any, Any]]:
    """``timed``: [{relation, rows, valid_from?, valid_until?}]: rows inserted with a validity
    interval (each bound an ISO 8601 time or seconds since the epoch; docs/history.md)."""
    groups = data.get("timed", [])
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise BadRequest(422, "bad-request", "`timed` must be a list of {relation, rows, "
                         "valid_from?, valid_until?}")
    out = []
    for g in groups:
        rel = get_str(g, "relation")
        bounds = [g.get(k) for k in ("valid_from", "valid_until")]
        if any(b is not None and (isinstance(b, bool) or not isinstance(b, str | int | float))
               for b in bounds):
            raise BadRequest(422, "bad-request", "`valid_from` and `valid_until` must be ISO "
                             "8601 times or numbers of seconds since the epoch")
        out.append((str(rel), _rows({"rows": {rel: g.get("rows")}}, "rows")[str(rel)],
                    *bounds))
    return out


@endpoint("write", "write")
async def write(svc: Service, request: Request) -> Response:
    """POST /v1/write {insert?: {rel: [rows]}, retract?: {...}, timed?: [{relation, rows,
    valid_from?, valid_until?}], if_revision?, watch?: [rel], author?, reason?, ticket?}:
    ``author`` defaults to the token's ``name=`` (auth.py); the three are recorded with the
    transaction (docs/history.md)"""
    data = await svc.body(request)
    meta = {k: get_str(data, k, False) for k in ("author", "reason", "ticket")}
    if meta["author"] is None:
        meta["author"] = svc.tokens.name(request.headers.get("authorization"))
    ins, dels, timed = _rows(data, "insert"), _rows(data, "retract"), _timed(data)
    if_revision = get_int(data, "if_revision")
    watch = data.get("watch", svc.watched)
    if not isinstance(watch, list) or not all(isinstance(w, str) for w in watch):
        raise BadRequest(422, "bad-request", "`watch` must be a list of relation names")

    def run() -> dict[str, Any]:
        with svc.write_gate, svc.reasoner.transaction(watch=watch, if_revision=if_revision,
                                                      **meta) as tx:
            for rel, rows in dels.items():
                tx.retract(rel, rows)
            for rel, rows in ins.items():
                tx.insert(rel, rows)
            for rel, rows, since, until in timed:
                tx.insert(rel, rows, since, until)
        derived = {r: c for r, c in tx.changes.to_dict().items() if r in set(watch)}
        return {"revision": tx.revision, "changes": derived}

    return JSON(await run_in_threadpool(run))


@endpoint("policy", "check")
async def get_policy(svc: Service, request: Request) -> Response:
    """GET /v1/policy?sources=true: the loaded rule files, their hash (and their texts)"""
    program = svc.program
    out = {"files": [display_path(f) for f in program.files], "hash": program.digest,
           "serial": svc.serial, "decision": program.decision,
           "revision": svc.reasoner.revision}  # a shipped model by its name, not its path
    if request.query_params.get("sources") in ("1", "true", "yes"):
        out["sources"] = {display_path(f): text for f, text in program.sources.items()}
    if svc.policy_error is not None:
        out["error"] = {"serial": svc.policy_error[0], "message": svc.policy_error[1]}
    return JSON(out)


@endpoint("policy_put", "admin")
async def put_policy(svc: Service, request: Request) -> Response:
    """PUT /v1/policy {files: {NAME: TEXT}, roots?: [NAME], if_hash?}: compiled and checked,
    then served by every worker; on any error the old policy keeps serving (422 with the
    diagnostics, 409 when ``if_hash`` is not the current hash)"""
    data = await svc.body(request)
    if_hash = get_str(data, "if_hash", False)

    def run() -> dict[str, Any]:
        return svc.replace_policy(policy.from_upload(data, svc.config.strict), if_hash)

    return JSON(await run_in_threadpool(run))


#: seconds between keep-alive comments on an idle watch stream
KEEPALIVE = 15.0


@endpoint("watch", "check")
async def watch(svc: Service, request: Request) -> Response:
    """GET /v1/watch?since=REV&relation=REL&format=sse|ndjson: each transaction's gained and
    lost rows of the watched relation, from after ``since`` (default: now) and then live;
    also, live, those of each validity interval's edge passed (``at``: its time, ISO 8601,
    at the same revision)"""
    params = request.query_params
    rel = params.get("relation", svc.decision)
    if rel not in svc.watched:
        raise BadRequest(422, "bad-request", f"`{rel}` is not watched by this server "
                         f"(watched: {', '.join(svc.watched) or 'none'}; see --watch)")
    since_text = params.get("since")
    since = nat(since_text, "since") if since_text is not None else svc.reasoner.revision
    sse = params.get("format", "sse") == "sse"
    backlog, queue = svc.subscribe(since)

    def event(entry: dict[str, Any]) -> bytes:
        if "policy" in entry:  # the rules changed (live streams only; not a transaction)
            body = orjson.dumps(entry)
            if sse:
                return b"event: policy\ndata: " + body + b"\n\n"
            return body + b"\n"
        body = orjson.dumps({"revision": entry["revision"], "relation": rel,
                             **entry["changes"][rel], **({"at": entry["at"]} if "at" in entry
                                                         else {})})
        if sse:
            return b"id: %d\nevent: change\ndata: " % entry["revision"] + body + b"\n\n"
        return body + b"\n"

    async def stream() -> AsyncIterator[bytes]:
        last = since
        try:
            for entry in backlog:
                last = entry["revision"]
                yield event(entry)
            while True:
                try:
                    entry = await asyncio.wait_for(queue.get(), KEEPALIVE)
                except TimeoutError:
                    yield b": keep-alive\n\n" if sse else b"\n"
                    continue
                if "policy" in entry:
                    yield event(entry)
                elif entry["revision"] > last or "at" in entry:  # a transaction, or an
                    last = entry["revision"]  # interval's edge passed (no new revision)
                    yield event(entry)
        finally:
            svc.unsubscribe(queue)

    return StreamingResponse(stream(), media_type="text/event-stream" if sse
                             else "application/x-ndjson",
                             headers={"Cache-Control": "no-store"})
