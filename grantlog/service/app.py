"""The decision service: an ASGI application (Starlette) over one Reasoner per worker.

Every worker process compiles the rules, opens the store and follows its change log
(grantlog/store/journal.py), so any worker answers at the latest revision it has applied and
``at_least_revision`` makes a read wait for a client's own write. Endpoints and their JSON are
in docs/service.md and in the OpenAPI document served at ``/openapi.json``; the threat model in
docs/security.md.

The endpoints live in one module per kind: :mod:`.decide` (checks, batches, OPA's Data API),
:mod:`.reads` (list, who, query, explain, filter, rows: answered in forked snapshots,
:mod:`.snapshots`, so that no read holds the checks), :mod:`.writes` (facts, the policy, the
watch feed); :mod:`.state` holds what they share and :mod:`.http` the request plumbing.

Errors: bad input (malformed JSON, a missing field, an unknown relation, a bad goal, an oversized
body, a batch over the limit) is a 4xx whose body carries the diagnostics
(``{"error": {"code", "message", "diagnostics": [...]}}``); a failure while deciding is a deny
carrying the error (fail closed), never an allow and never a 500.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from grantlog.grammar.diagnostics import GrantlogError

from . import decide, reads, timelines, writes
from .decide import FastCheck
from .http import JSON, problem
from .openapi import document
from .state import CONFIG_ENV, WRITE_RETRY, Config, Service, check_watched

__all__ = ["CONFIG_ENV", "Config", "Service", "check_watched", "create_app", "from_env"]


async def healthz(request: Request) -> Response:
    return JSON({"status": "ok"})


async def readyz(request: Request) -> Response:
    """Ready when the policy is loaded, the store answers and this worker is caught up."""
    svc: Service = request.app.state.service
    out: dict[str, Any] = {"policy": svc.program.digest, "revision": svc.reasoner.revision}
    failed = svc.write_error
    if failed is not None and time.monotonic() - failed[2] < WRITE_RETRY:
        # the store answers reads but refused the last write (full, say)
        out.update(ready=False, reason=f"writes fail: {failed[1]}", code=failed[0])
        return JSON(out, status_code=503)
    if svc.dlog is not None and not svc.dlog.ready():
        out.update(ready=False, reason=f"the decision log fails: {svc.dlog.last_error}",
                   code="decision-log-failed")
        return JSON(out, status_code=503)
    store = getattr(svc.reasoner, "store", None)
    if store is not None:
        try:
            head, _ = await run_in_threadpool(store.head)
        except GrantlogError as exc:
            svc.metrics.store_errors.inc()
            code, message, _, _ = svc.redact.error(exc)
            out.update(ready=False, reason=message, code=code)
            return JSON(out, status_code=503)
        out["store_revision"] = head
        svc.metrics.lag.set(max(0, head - svc.reasoner.revision))
        if head > svc.reasoner.revision + 1:
            out.update(ready=False, reason="catching up with the store")
            return JSON(out, status_code=503)
    out["ready"] = True
    return JSON(out)


async def not_found(request: Request, exc: Exception) -> Response:
    """The router's own errors (no such path, a method the path does not take) in the
    service's error shape."""
    status = getattr(exc, "status_code", 404)
    code, message = ("method-not-allowed", f"`{request.method}` is not served at this path") \
        if status == 405 else ("not-found", "no endpoint at this path (see /openapi.json)")
    return problem(status, code, message)


async def metrics_endpoint(request: Request) -> Response:
    svc: Service = request.app.state.service
    body, ctype = await run_in_threadpool(svc.metrics.render)
    return Response(body, media_type=ctype)


async def openapi(request: Request) -> Response:
    return JSON(document())


#: the routes: (path, endpoint, method)
ROUTES = (
    ("/v1/check", decide.check, "POST"),
    ("/v1/check/batch", decide.check_batch, "POST"),
    ("/v1/list", reads.list_, "POST"),
    ("/v1/who", reads.who, "POST"),
    ("/v1/filter", reads.filter_, "POST"),
    ("/v1/explain", reads.explain, "POST"),
    ("/v1/query", reads.query, "POST"),
    ("/v1/timeline", timelines.timeline, "POST"),
    ("/v1/write", writes.write, "POST"),
    ("/v1/watch", writes.watch, "GET"),
    ("/v1/relations/{rel}", reads.relation_rows, "GET"),
    ("/v1/data", decide.opa_data, "POST"),  # OPA's root document: a path of its own
    ("/v1/data/{path:path}", decide.opa_data, "POST"),
    ("/v1/policy", writes.get_policy, "GET"),
    ("/v1/policy", writes.put_policy, "PUT"),
    ("/healthz", healthz, "GET"),
    ("/readyz", readyz, "GET"),
    ("/metrics", metrics_endpoint, "GET"),
    ("/openapi.json", openapi, "GET"),
)


def create_app(config: Config) -> FastCheck:
    """The ASGI application for ``config`` (compiles the rules and opens the store now): the
    Starlette application behind the :class:`FastCheck` path."""
    service = Service(config)
    # move the loaded heap out of the collector's sight, as a long-running service should:
    # full collections would rescan millions of rows and pause every request
    gc.collect()
    gc.freeze()
    app = Starlette(routes=[Route(path, fn, methods=[method]) for path, fn, method in ROUTES],
                    exception_handlers={404: not_found, 405: not_found})
    # no 307 to the path with a slash added: every route is answered where it is asked (an
    # unauthenticated redirect would answer before the token is checked)
    app.router.redirect_slashes = False
    app.state.service = service
    if config.ui:  # the explorer at /ui, behind the tokens (grantlog/service/ui.py)
        from .ui import mount

        app.state.ui = mount(app, service)
    return FastCheck(app, service)


def from_env() -> FastCheck:
    """The worker processes' factory (``uvicorn --factory``): the configuration comes in
    :data:`CONFIG_ENV`."""
    return create_app(Config.from_env())
