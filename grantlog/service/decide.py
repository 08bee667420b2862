"""Decisions: ``POST /v1/check``, ``/v1/check/batch``, OPA's Data API (``/v1/data/...``) and
the framework-free fast path of ``/v1/check`` (:class:`FastCheck`).

Decisions are answered in the worker itself (a check is a point query: microseconds), failing
closed: an error while deciding is a deny carrying the error. An explanation asked with a check
is a read, answered in a snapshot (grantlog/service/snapshots.py); so is a check of the past
(``at_revision`` or ``as_of``: :func:`past_checks`).
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from grantlog.engine.answer.decide import decide_or_deny
from grantlog.engine.answer.vocabulary import CODE, to_json
from grantlog.engine.core import ir
from grantlog.grammar.diagnostics import GrantlogError, error

from . import reads
from .http import (
    JSON,
    BadRequest,
    get_int,
    get_str,
    get_strict,
    here,
    receive_body,
    send_problem,
)
from .state import Service, endpoint


def answer_check(svc: Service, subject: str, operation: str, resource: str,
                 at_least: int | None) -> dict[str, Any]:
    """One decision, failing closed: an error while deciding is a deny carrying it
    (engine/answer/decide.py). Waiting for ``at_least`` comes first, as for a batch: not
    reaching it is an error answer (504 ``revision-timeout``), not a decision."""
    if at_least is not None and at_least > svc.reasoner.revision:
        svc.reasoner.wait_for(at_least)
    d, failure = decide_or_deny(svc.reasoner, subject, operation, resource)
    if failure is not None:
        svc.metrics.decided["error"].inc()
        return {"allowed": False, "reasons": [], "revision": d.revision,
                "error": {"code": failure.code, "message": failure.message}}
    svc.metrics.decided["allow" if d.allowed else "deny"].inc()
    out: dict[str, Any] = {"allowed": d.allowed, "reasons": list(d.reasons),
                           "revision": d.revision}
    if d.warnings:  # a deny that is only a typo (engine/answer/vocabulary.py)
        out["warnings"] = to_json(d.warnings)
    return out


def strict_unknown(answers: list[dict[str, Any]], strict: bool) -> None:
    """With ``strict`` (the request's or the server's), a check of a constant no rule,
    declaration or fact mentions is an error (422 ``unknown-constant``), not a deny."""
    if not strict:
        return
    for out in answers:
        for w in out.get("warnings", ()):
            if w["code"] == CODE:
                raise BadRequest(422, CODE, w["message"],
                                 [error(CODE, w["message"], here("<request>"), w["help"])])


async def past_checks(svc: Service, triples: list[tuple[str, str, str]],
                      moment: dict[str, Any], batch: bool,
                      ) -> tuple[dict[str, Any] | None, Response]:
    """Checks at a past revision or time: a read, answered in a snapshot (the past reasoner
    is built from the store there, not in the worker). The answer's body, or None and the
    error response (a moment the store cannot answer at)."""
    response = await reads._run(svc, None, {}, None, reads.render_check, triples=triples,
                                moment=moment, batch=batch)
    if response.status_code != 200:
        return None, response
    body = orjson.loads(response.body)
    for x in body["results"] if batch else [body]:
        svc.metrics.decided["error" if "error" in x else "allow" if x["allowed"]
                            else "deny"].inc()
    return dict(body), response


@endpoint("check", "check")
async def check(svc: Service, request: Request) -> Response:
    """POST /v1/check {subject, operation, resource, at_least_revision?, explain?, strict?,
    at_revision?, as_of?}"""
    data = await svc.body(request)
    s, o, r = (get_str(data, k) for k in ("subject", "operation", "resource"))
    assert s is not None and o is not None and r is not None
    at_least = get_int(data, "at_least_revision")
    strict = get_strict(data, svc.config.strict)
    moment = reads.when(data)
    t0 = time.perf_counter()
    if moment:
        past, failed = await past_checks(svc, [(s, o, r)], moment, False)
        if past is None:
            return failed
        out = past
        if data.get("explain"):
            goal = ir.show_atom(svc.decision, (s, o, r))
            out["explanation"] = await reads.explanation(svc, goal, moment)
    elif (at_least is not None and at_least > svc.reasoner.revision) or data.get("explain"):
        out = await run_in_threadpool(answer_check, svc, s, o, r, at_least)
        if data.get("explain"):
            goal = ir.show_atom(svc.decision, (s, o, r))
            out["explanation"] = await reads.explanation(svc, goal)
    else:
        out = answer_check(svc, s, o, r, None)  # no thread hop
    strict_unknown([out], strict)
    if svc.dlog is not None:
        svc.dlog.log("check", svc.dlog.request_id(request.headers),
                     {"subject": s, "operation": o, "resource": r, **moment},
                     {k: v for k, v in out.items() if k != "explanation"}, t0,
                     out["revision"])
    return JSON(out)


@endpoint("check_batch", "check")
async def check_batch(svc: Service, request: Request) -> Response:
    """POST /v1/check/batch {checks: [{subject, operation, resource}...], at_least_revision?,
    strict?, at_revision?, as_of?}"""
    data = await svc.body(request)
    checks = data.get("checks")
    if not isinstance(checks, list):
        raise BadRequest(422, "bad-request", "`checks` must be a list")
    if len(checks) > svc.config.max_batch:
        raise BadRequest(413, "batch-too-large", f"{len(checks)} checks; the limit is "
                         f"{svc.config.max_batch} per call")
    triples = []
    for i, c in enumerate(checks):
        if not isinstance(c, dict) or not all(isinstance(c.get(k), str)
                                              for k in ("subject", "operation", "resource")):
            raise BadRequest(422, "bad-request", f"checks[{i}] needs string `subject`, "
                             "`operation` and `resource`")
        triples.append((c["subject"], c["operation"], c["resource"]))
    at_least = get_int(data, "at_least_revision")
    strict = get_strict(data, svc.config.strict)
    moment = reads.when(data)
    if moment:
        t0 = time.perf_counter()
        past, failed = await past_checks(svc, triples, moment, True)
        if past is None:
            return failed
        strict_unknown(past["results"], strict)
        if svc.dlog is not None:
            rid = svc.dlog.request_id(request.headers)
            for i, ((s, o, r), x) in enumerate(zip(triples, past["results"], strict=True)):
                svc.dlog.log("check_batch", f"{rid}/{i}", {"subject": s, "operation": o,
                                                           "resource": r, **moment}, x, t0,
                             past["revision"])
        return JSON(past)

    def run() -> dict[str, Any]:
        if at_least is not None:
            svc.reasoner.wait_for(at_least)
        t0 = time.perf_counter()
        results = [answer_check(svc, s, o, r, None) for s, o, r in triples]
        strict_unknown(results, strict)
        revision = max((x["revision"] for x in results), default=svc.reasoner.revision)
        dlog = svc.dlog
        rid = dlog.request_id(request.headers) if dlog is not None else ""
        for i, ((s, o, r), x) in enumerate(zip(triples, results, strict=True)):
            if dlog is not None:
                dlog.log("check_batch", f"{rid}/{i}", {"subject": s, "operation": o,
                                                       "resource": r}, x, t0, x["revision"])
            del x["revision"]
        return {"results": results, "revision": revision}

    return JSON(await run_in_threadpool(run))


@endpoint("opa_data", "check")
async def opa_data(svc: Service, request: Request) -> Response:
    """POST /v1/data/{path} {input}: OPA's Data API for the mapped platforms (docs/opa.md):
    ``{"result": ...}`` as the platform's plugin parses it, ``reason`` with a deny's why-not,
    ``decision_id`` (the decision log's request id)."""
    path = request.path_params.get("path", "").strip("/")
    got = svc.opa.get(path)
    if got is None:
        raise BadRequest(404, "not-found", f"no mapping serves the Data API path `{path}` "
                         f"(served: {', '.join(sorted(svc.opa)) or 'none; start with --opa'})")
    mapping, kind = got
    data = await svc.body(request)
    inp = data.get("input")
    if not isinstance(inp, dict):
        raise BadRequest(422, "bad-request", "the body is `{\"input\": {...}}`")
    t0 = time.perf_counter()
    if kind == "row_filters":  # a partial evaluation: off the event loop
        ans = await run_in_threadpool(mapping.answer, kind, inp, svc.reasoner)
    else:  # checks and lookups, as fast as /v1/check's: no thread hop
        ans = mapping.answer(kind, inp, svc.reasoner)
    revision = svc.reasoner.revision
    rid = svc.dlog.request_id(request.headers) if svc.dlog is not None else ""
    if svc.dlog is not None:
        where = {"mapping": mapping.name, "path": path}
        for i, d in enumerate(ans.decisions):
            svc.dlog.log(f"opa:{path}", f"{rid}/{i}" if len(ans.decisions) > 1 else rid,
                         {"subject": d.subject, "operation": d.operation,
                          "resource": d.resource, "opa": where},
                         {"allowed": d.decision.allowed, "reasons": list(d.decision.reasons)}
                         | ({"error": d.error} if d.error else {}), t0, revision)
        if not ans.decisions:
            svc.dlog.log(f"opa:{path}", rid, {"opa": where} | ans.detail,
                         {"result": ans.result} | ({"reason": ans.reason} if ans.reason
                                                   else {}), t0, revision)
    for d in ans.decisions:
        svc.metrics.decided["error" if d.error else "allow" if d.decision.allowed
                            else "deny"].inc()
    out: dict[str, Any] = {"result": ans.result}
    if ans.reason and kind != "allow_object":  # allow_object carries it in the result
        out["reason"] = ans.reason
    if rid:
        out["decision_id"] = rid
    return JSON(out)


class FastCheck:
    """``POST /v1/check`` without the framework: the body read, the token checked, the
    decision made and the answer sent straight over ASGI (~40 µs less per check than through
    Starlette's request, routing and response objects, which is most of a check's cost at 1M
    tables). Anything else — other paths, ``explain``, ``at_least_revision``, bad input — goes
    to the Starlette application (the body is replayed to it), which answers as documented."""

    def __init__(self, app: Starlette, service: Service) -> None:
        self.app = app
        self.service = service
        self.state = app.state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/v1/check" or \
                scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        svc = self.service
        t0 = time.perf_counter()
        length = auth_header = None
        for k, v in scope["headers"]:
            if k == b"content-length":
                length = v.decode("latin-1")
            elif k == b"authorization":
                auth_header = v.decode("latin-1")
        if svc.tokens.allows(auth_header, "check") != 200:
            await self.app(scope, receive, send)  # 401/403 as documented, before the body
            return
        try:
            raw = await receive_body(receive, svc.config.max_body, length)
        except BadRequest as exc:  # too large, not a number, or too slow: answered here
            await send_problem(send, exc)
            return
        except ClientDisconnect:
            return
        data: Any = None
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            data = None
        decided: dict[str, Any] | None = None
        if (type(data) is dict and len(data) == 3 and type(data.get("subject")) is str
                and type(data.get("operation")) is str and type(data.get("resource")) is str):
            decided = answer_check(svc, data["subject"], data["operation"], data["resource"], None)
        if decided is not None and svc.config.strict and "warnings" in decided:
            decided = None  # the slow path answers 422 unknown-constant
        if decided is not None:
            status = 200
            if svc.dlog is not None:
                rid = next((v.decode("latin-1") for k, v in scope["headers"]
                            if k == b"x-request-id"), None)
                try:
                    svc.dlog.log("check", rid[:200] if rid else svc.dlog.request_id(None),
                                 data, decided, t0, decided["revision"])
                except GrantlogError as exc:  # --decision-log-required: fail closed
                    d = exc.diagnostics[0]
                    status, decided = 503, {"error": {"code": d.code, "message": d.message}}
            out = orjson.dumps(decided)
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(out)).encode())]})
            await send({"type": "http.response.body", "body": out})
            svc.metrics.latency_of("check").observe(time.perf_counter() - t0)
            return
        sent = False

        async def replay() -> Any:  # the slow path reads the body again
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
