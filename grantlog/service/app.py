"""The decision service: an ASGI application (Starlette) over one Reasoner per worker.

Every worker process compiles the rules, opens the store and follows its change log
(grantlog/store/reasoner.py), so any worker answers at the latest revision it has applied and
``at_least_revision`` makes a read wait for a client's own write. Endpoints and their JSON are
in docs/service.md and in the OpenAPI document served at ``/openapi.json``.

Errors: bad input (malformed JSON, a missing field, an unknown relation, a bad goal, an oversized
body, a batch over the limit) is a 4xx whose body carries the diagnostics
(``{"error": {"code", "message", "diagnostics": [...]}}``); a failure while deciding is a deny
carrying the error (fail closed), never an allow and never a 500.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import json
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from grantlog.engine import ir
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error
from grantlog.reasoner import Reasoner
from grantlog.store import StoredPolicy
from grantlog.store.base import policy_conflict
from grantlog.store.reasoner import StoredReasoner

from . import auth, metrics, policy
from .decisionlog import DecisionLog
from .openapi import document

#: the environment variable that carries the configuration to worker processes
CONFIG_ENV = "GRANTLOG_SERVE_CONFIG"


@dataclass
class Config:
    rules: list[str]
    store: str | None = None
    tokens: str | None = None
    allow_unauthenticated_writes: bool = False
    strict: bool = False
    #: request bodies larger than this are refused (413)
    max_body: int = 8 * 2**20
    #: checks in one /v1/check/batch call at most
    max_batch: int = 10_000
    #: list/who answers per NDJSON chunk
    chunk: int = 1000
    #: relations whose changes /v1/watch streams and every write computes (none by default:
    #: the derived changes of a grant can cost far more than the grant itself)
    watch: list[str] | None = None
    #: transactions the watch feed keeps for ``since=`` in the past
    feed: int = 10_000
    #: decision log: a file (rotated by size) or ``-`` for stdout; None: no log
    decision_log: str | None = None
    decision_log_sample: float = 1.0
    decision_log_mask: list[str] | None = None
    decision_log_max_bytes: int = 100 * 2**20
    #: OPA Data API mappings served under /v1/data/ (grantlog/interop/opa.py): shipped names
    #: (``trino``, ``polaris``) or mapping files
    opa: list[str] | None = None
    #: install ``rules`` in the store as its policy when starting (the command line's process;
    #: the workers it starts read the store's newest policy instead)
    install: bool = True

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_env() -> Config:
        return Config(**json.loads(os.environ[CONFIG_ENV]))


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class BadRequest(Exception):
    def __init__(self, status: int, code: str, message: str,
                 diagnostics: list[Diagnostic] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.diagnostics = diagnostics or []


def _diag(d: Diagnostic) -> dict[str, Any]:
    out = d.to_dict()
    return out if isinstance(out, dict) else {"code": d.code, "message": d.message}


def _problem(status: int, code: str, message: str,
             diagnostics: list[Diagnostic] | None = None, rendered: str | None = None,
             **extra: Any) -> JSON:
    body: dict[str, Any] = {"error": {"code": code, "message": message,
                                      "diagnostics": [_diag(d) for d in diagnostics or []]}}
    if rendered is not None:  # as the CLI prints them: file:line:col, the line, a caret
        body["error"]["rendered"] = rendered
    body.update(extra)
    return JSON(body, status_code=status)


def _here(where: str) -> Span:
    return Span(where, 0, 0, 0, 0)


class Service:
    """What the endpoints share: the reasoner, tokens, limits, metrics."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.tokens = auth.load(config.tokens, config.allow_unauthenticated_writes)
        self.program, self.serial = policy.initial(config.rules, config.store, config.install,
                                                   config.strict)
        self.decision = self.program.decision
        self.watched = list(config.watch or [])
        check_watched(self.program, self.watched, "<command line>")
        self.reasoner = self._reasoner(self.program)
        self.metrics = metrics.Metrics()
        #: OPA Data API paths (no leading slash) -> (mapping, what is answered there)
        self.opa: dict[str, tuple[Any, str]] = {}
        if config.opa:
            from grantlog.interop.opa import Mapping
        for name in config.opa or []:
            m = Mapping.load(name)
            for path, kind in m.endpoints.items():
                if path in self.opa:
                    raise GrantlogError([error(
                        "bad-mapping", f"the Data API path `{path}` of `{m.name}` is already "
                        f"served by `{self.opa[path][0].name}`", _here("<command line>"))])
                self.opa[path] = (m, kind)
        self.started = time.time()
        self.dlog: DecisionLog | None = None
        if config.decision_log:
            self.dlog = DecisionLog(config.decision_log, config.decision_log_sample,
                                    config.decision_log_mask, config.decision_log_max_bytes,
                                    self.program.digest)
        # the watch feed: recent transactions' changes of the watched relations, and the
        # queues of the open /v1/watch streams (filled from whichever thread applied them)
        self._feed_lock = threading.Lock()
        self.feed: collections.deque[dict[str, Any]] = collections.deque(maxlen=config.feed)
        #: the oldest revision the feed can replay from
        self.feed_floor = self.reasoner.revision
        self.watchers: set[tuple[asyncio.AbstractEventLoop, asyncio.Queue[dict[str, Any]]]] \
            = set()
        #: what the service hears of every applied transaction (moved along on a swap)
        self._listeners = [self._applied]
        if self.watched:  # nothing to feed otherwise
            self._listeners.append(self._on_change)
        self.reasoner.listeners.extend(self._listeners)
        self.metrics.revision.set(self.reasoner.revision)
        # policy changes: one at a time; writes wait while the reasoners are swapped
        self._policy_lock = threading.Lock()
        self.write_gate = threading.Lock()
        #: the last policy this worker failed to switch to (serial, error)
        self.policy_error: tuple[int, str] | None = None
        self._watcher: policy.Watcher | None = None
        if config.store:
            self._watcher = policy.Watcher(config.store, lambda: self.serial, self.follow_policy,
                                           self._policy_failed)
            self._watcher.start()

    def _reasoner(self, program: ir.Program) -> Reasoner:
        r = Reasoner(program, watch=self.watched, store=self.config.store) \
            if self.config.store else Reasoner(program, watch=self.watched)
        try:
            r.prepare()  # evaluate, plan the checks and build their indexes now, not on the
            # first requests (at 1M tables those took ~0.3 s each, the p99 of the first minute)
        except BaseException:
            r.close()
            raise
        return r

    # -- the policy ----------------------------------------------------------------------------

    def replace_policy(self, program: ir.Program, if_hash: str | None = None,
                       serial: int | None = None) -> dict[str, Any]:
        """Serve ``program`` instead of the current policy: a reasoner for it is built beside
        the serving one (which keeps answering), the policy is installed in the store (unless
        ``serial``: another worker installed it), then the two are swapped. Any error leaves
        the old policy serving."""
        check_watched(program, self.watched, "<request>")
        with self._policy_lock:
            old = self.reasoner
            previous = self.program.digest
            if if_hash is not None and if_hash != previous and not self.config.store:
                raise policy_conflict(if_hash, previous, "<request>")
            if self.config.store:
                new = self._reasoner(program)  # checks the store fits; old keeps serving
                assert isinstance(new, StoredReasoner)
                try:
                    if serial is None:
                        serial = new.store.put_policy(program, if_hash).serial
                    with self.write_gate:
                        new.sync()
                        self._swap(old, new, program, serial)
                except BaseException:
                    new.close()
                    raise
            else:
                with self.write_gate:  # no store: the run-time facts move to the new reasoner
                    facts = policy.carried_facts(old, program)
                    new = self._reasoner(program)
                    new.seed(facts, old.revision)
                    self._swap(old, new, program, 0)
            self.policy_error = None
        old.close()
        # the old reasoner's rows were frozen out of the collector's sight: let it free them
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        return {"hash": program.digest, "previous": previous, "files": program.files,
                "serial": self.serial, "revision": new.revision,
                "warnings": [_diag(d) for d in program.warnings]}

    def _swap(self, old: Reasoner, new: Reasoner, program: ir.Program, serial: int) -> None:
        for fn in self._listeners:
            old.listeners.remove(fn)
            new.listeners.append(fn)
        self.metrics.revision.set(new.revision)
        self.reasoner, self.program, self.decision, self.serial = \
            new, program, program.decision, serial
        if self.dlog is not None:
            self.dlog.policy = program.digest
        self.metrics.policy_changes.inc()
        event = {"policy": program.digest, "revision": new.revision}
        with self._feed_lock:
            for loop, queue in list(self.watchers):
                loop.call_soon_threadsafe(queue.put_nowait, event)

    def follow_policy(self, stored: StoredPolicy) -> None:
        """Another worker installed ``stored`` in the store: serve it too."""
        if stored.serial <= self.serial or (self.policy_error is not None
                                            and self.policy_error[0] >= stored.serial):
            return  # served already, or failed already (wait for a newer one)
        try:
            program = policy.from_store(stored, self.config.strict)
            self.replace_policy(program, serial=stored.serial)
        except GrantlogError as exc:
            self.policy_error = (stored.serial, str(exc))
            raise

    def _policy_failed(self, exc: Exception) -> None:
        if isinstance(exc, GrantlogError) and exc.diagnostics and \
                exc.diagnostics[0].code.startswith("store-"):
            self.metrics.store_errors.inc()
        else:
            self.metrics.policy_errors.inc()

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop.set()
        self.reasoner.close()
        if self.dlog is not None:
            self.dlog.close()

    def _applied(self, changes: Any) -> None:
        self.metrics.revision.set(changes.revision)

    def _on_change(self, changes: Any) -> None:
        entry = {"revision": changes.revision,
                 "changes": {rel: {"gained": sorted((list(r) for r in changes.gained(rel)),
                                                    key=ir.row_key),
                                   "lost": sorted((list(r) for r in changes.lost(rel)),
                                                  key=ir.row_key)}
                             for rel in self.watched}}
        with self._feed_lock:
            if len(self.feed) == self.feed.maxlen:
                self.feed_floor = self.feed[0]["revision"]
            self.feed.append(entry)
            for loop, queue in list(self.watchers):
                loop.call_soon_threadsafe(queue.put_nowait, entry)

    def subscribe(self, since: int) -> tuple[list[dict[str, Any]],
                                             asyncio.Queue[dict[str, Any]]]:
        """The feed's entries after ``since`` and a queue of the ones to come."""
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        with self._feed_lock:
            if since < self.feed_floor:
                raise BadRequest(410, "watch-gone",
                                 f"the feed starts after revision {self.feed_floor}; revision "
                                 f"{since} is older (`grantlog store log --derived` replays "
                                 "the store's log)")
            backlog = [e for e in self.feed if e["revision"] > since]
            self.watchers.add((asyncio.get_running_loop(), queue))
        return backlog, queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        with self._feed_lock:
            self.watchers = {w for w in self.watchers if w[1] is not queue}

    # -- request plumbing ---------------------------------------------------------------------

    async def body(self, request: Request) -> dict[str, Any]:
        size = request.headers.get("content-length")
        if size is not None and size.isdigit() and int(size) > self.config.max_body:
            raise BadRequest(413, "body-too-large",
                             f"the body has {size} bytes; the limit is {self.config.max_body}")
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > self.config.max_body:
                raise BadRequest(413, "body-too-large",
                                 f"the body exceeds {self.config.max_body} bytes")
        try:
            data = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError as exc:
            raise BadRequest(400, "malformed-json", f"the body is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise BadRequest(400, "malformed-json", "the body must be a JSON object")
        return data

    def authorize(self, request: Request, scope: str) -> None:
        status = self.tokens.allows(request.headers.get("authorization"), scope)
        if status == 401:
            raise BadRequest(401, "unauthorized", "a bearer token is needed "
                             "(`Authorization: Bearer TOKEN`)")
        if status == 403:
            why = (f"the token lacks the `{scope}` scope" if self.tokens.enabled else
                   "writes need tokens (start the server with --tokens FILE) or "
                   "--allow-unauthenticated-writes")
            raise BadRequest(403, "forbidden", why)


def check_watched(program: ir.Program, watched: list[str], where: str) -> None:
    """Every watched relation must exist in ``program``."""
    missing = [rel for rel in watched if rel not in program.relations]
    if missing:
        raise GrantlogError([error("unknown-relation", f"relation `{rel}` does not exist "
                                   "(it is watched: --watch)", _here(where)) for rel in missing])


def _str(data: dict[str, Any], key: str, required: bool = True) -> str | None:
    v = data.get(key)
    if v is None and not required:
        return None
    if not isinstance(v, str):
        raise BadRequest(422, "bad-request", f"`{key}` must be a string" +
                         ("" if key in data else " (missing)"))
    return v


def _int(data: dict[str, Any], key: str) -> int | None:
    v = data.get(key)
    if v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise BadRequest(422, "bad-request", f"`{key}` must be a non-negative integer")
    return v


Handler = Callable[[Service, Request], Awaitable[Response]]


def endpoint(name: str, scope: str | None) -> Callable[[Handler], Callable[[Request],
                                                                          Awaitable[Response]]]:
    """A route handler with authorization, error bodies and latency metrics."""

    def wrap(fn: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            svc: Service = request.app.state.service
            t0 = time.perf_counter()
            try:
                if scope is not None:
                    svc.authorize(request, scope)
                response = await fn(svc, request)
            except BadRequest as exc:
                response = _problem(exc.status, exc.code, exc.message, exc.diagnostics)
            except GrantlogError as exc:
                code = exc.diagnostics[0].code if exc.diagnostics else "error"
                status = {"revision-conflict": 409, "policy-conflict": 409,
                          "revision-timeout": 504}.get(code, 422)
                if code.startswith("store-") and code != "store-schema-mismatch":
                    status = 503
                    svc.metrics.store_errors.inc()
                response = _problem(status, code, str(exc.diagnostics[0].message
                                                      if exc.diagnostics else exc),
                                    exc.diagnostics,
                                    str(exc) if exc.sources else None,
                                    revision=svc.reasoner.revision)
            svc.metrics.latency_of(name).observe(time.perf_counter() - t0)
            return response

        handle.__name__ = fn.__name__
        handle.__doc__ = fn.__doc__
        return handle

    return wrap


# -- decisions ---------------------------------------------------------------------------------

def _decide(svc: Service, subject: str, operation: str, resource: str,
            at_least: int | None) -> dict[str, Any]:
    """One decision, failing closed: an error while deciding is a deny carrying it."""
    try:
        d = svc.reasoner.check(subject, operation, resource, at_least=at_least)
    except GrantlogError as exc:
        if exc.diagnostics and exc.diagnostics[0].code == "revision-timeout":
            raise
        svc.metrics.decided["error"].inc()
        return {"allowed": False, "reasons": [], "revision": svc.reasoner.revision,
                "error": {"code": exc.diagnostics[0].code if exc.diagnostics else "error",
                          "message": str(exc)}}
    except Exception as exc:  # fail closed, whatever went wrong
        svc.metrics.decided["error"].inc()
        return {"allowed": False, "reasons": [], "revision": svc.reasoner.revision,
                "error": {"code": "internal-error", "message": f"{type(exc).__name__}: {exc}"}}
    svc.metrics.decided["allow" if d.allowed else "deny"].inc()
    return {"allowed": d.allowed, "reasons": list(d.reasons), "revision": d.revision}


@endpoint("check", "check")
async def check(svc: Service, request: Request) -> Response:
    """POST /v1/check {subject, operation, resource, at_least_revision?, explain?}"""
    data = await svc.body(request)
    s, o, r = (_str(data, k) for k in ("subject", "operation", "resource"))
    assert s is not None and o is not None and r is not None
    at_least = _int(data, "at_least_revision")
    t0 = time.perf_counter()
    if (at_least is not None and at_least > svc.reasoner.revision) or data.get("explain"):
        out = await run_in_threadpool(_decide, svc, s, o, r, at_least)
        if data.get("explain"):
            goal = ir.show_atom(svc.decision, (s, o, r))
            ex = await run_in_threadpool(svc.reasoner.explain, goal)
            out["explanation"] = ex.to_dict()
    else:
        out = _decide(svc, s, o, r, None)  # no thread hop
    if svc.dlog is not None:
        svc.dlog.log("check", svc.dlog.request_id(request.headers),
                     {"subject": s, "operation": o, "resource": r},
                     {k: v for k, v in out.items() if k != "explanation"}, t0,
                     out["revision"])
    return JSON(out)


@endpoint("check_batch", "check")
async def check_batch(svc: Service, request: Request) -> Response:
    """POST /v1/check/batch {checks: [{subject, operation, resource}...], at_least_revision?}"""
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
    at_least = _int(data, "at_least_revision")

    def run() -> dict[str, Any]:
        if at_least is not None:
            svc.reasoner.wait_for(at_least)
        t0 = time.perf_counter()
        results = [_decide(svc, s, o, r, None) for s, o, r in triples]
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


async def _stream(values: list[Any], revision: int, key: str, chunk: int,
                  ) -> AsyncIterator[bytes]:
    for i in range(0, len(values), chunk):
        yield b"".join(orjson.dumps({key: v}) + b"\n" for v in values[i:i + chunk])
    yield orjson.dumps({"revision": revision, "count": len(values)}) + b"\n"


def _page(values: list[Any], data: dict[str, Any]) -> tuple[list[Any], str | None]:
    """``limit`` answers after ``cursor`` (the last answer of the previous page, as JSON)."""
    limit = _int(data, "limit")
    cursor = data.get("cursor")
    start = 0
    if cursor is not None:
        if not isinstance(cursor, str):
            raise BadRequest(422, "bad-request", "`cursor` must be the string a page returned")
        try:
            after = orjson.loads(cursor)
        except orjson.JSONDecodeError:
            raise BadRequest(422, "bad-request", "`cursor` is not one this server made") \
                from None
        start = ir.position_after(values, after)
    if limit is None:
        return values[start:], None
    page = values[start:start + limit]
    more = start + limit < len(values)
    return page, (orjson.dumps(page[-1]).decode() if more and page else None)


async def _answers(svc: Service, request: Request, data: dict[str, Any], values: list[Any],
                   revision: int, key: str) -> Response:
    if "limit" in data or "cursor" in data:
        page, cursor = _page(values, data)
        return JSON({key + "s": page, "next_cursor": cursor, "revision": revision})
    return StreamingResponse(_stream(values, revision, key, svc.config.chunk),
                             media_type="application/x-ndjson")


@endpoint("list", "check")
async def list_(svc: Service, request: Request) -> Response:
    """POST /v1/list {subject, operation, type?, within?, at_least_revision?, limit?, cursor?}"""
    data = await svc.body(request)
    s, o = _str(data, "subject"), _str(data, "operation")
    typ, within = _str(data, "type", False), _str(data, "within", False)
    assert s is not None and o is not None
    got = await run_in_threadpool(svc.reasoner.list, s, o, typ, within,
                                  _int(data, "at_least_revision"))
    return await _answers(svc, request, data, list(got), got.revision, "resource")


@endpoint("filter", "check")
async def filter_(svc: Service, request: Request) -> Response:
    """POST /v1/filter {subject, operation, type?, sql?: sqlite|postgres|spark|trino,
    layout?: {table, id, type?, parent?, path?, path_separator?}, at_least_revision?}: the
    condition a resource must meet (docs/filters.md), as JSON and, with ``sql`` and
    ``layout``, as a WHERE condition over the caller's catalog table."""
    data = await svc.body(request)
    s, o = _str(data, "subject"), _str(data, "operation")
    typ, dialect = _str(data, "type", False), _str(data, "sql", False)
    assert s is not None and o is not None
    layout = data.get("layout")
    if (dialect is None) != (layout is None):
        raise BadRequest(422, "bad-request", "`sql` and `layout` go together")
    lay = None
    if layout is not None:
        from grantlog.filters import Layout

        lay = Layout.from_dict(layout, _here("<request>"))

    def run() -> dict[str, Any]:
        f = svc.reasoner.filter(s, o, typ, at_least=_int(data, "at_least_revision"))
        out = {"condition": f.to_dict()["condition"], "revision": f.revision}
        if lay is not None and dialect is not None:
            from grantlog.filters import to_sql

            out["sql"] = to_sql(f, lay, dialect)
        return out

    return JSON(await run_in_threadpool(run))


@endpoint("opa_data", "check")
async def opa_data(svc: Service, request: Request) -> Response:
    """POST /v1/data/{path} {input}: OPA's Data API for the mapped platforms (docs/opa.md):
    ``{"result": ...}`` as the platform's plugin parses it, ``reason`` with a deny's why-not,
    ``decision_id`` (the decision log's request id)."""
    path = request.path_params["path"].strip("/")
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
                         {"allowed": d.allowed, "reasons": d.reasons}
                         | ({"error": d.error} if d.error else {}), t0, revision)
        if not ans.decisions:
            svc.dlog.log(f"opa:{path}", rid, {"opa": where} | ans.detail,
                         {"result": ans.result} | ({"reason": ans.reason} if ans.reason
                                                   else {}), t0, revision)
    for d in ans.decisions:
        svc.metrics.decided["error" if d.error else "allow" if d.allowed else "deny"].inc()
    out: dict[str, Any] = {"result": ans.result}
    if ans.reason and kind != "allow_object":  # allow_object carries it in the result
        out["reason"] = ans.reason
    if rid:
        out["decision_id"] = rid
    return JSON(out)


@endpoint("who", "check")
async def who(svc: Service, request: Request) -> Response:
    """POST /v1/who {operation, resource, at_least_revision?, limit?, cursor?}"""
    data = await svc.body(request)
    o, r = _str(data, "operation"), _str(data, "resource")
    assert o is not None and r is not None
    got = await run_in_threadpool(svc.reasoner.who, o, r, _int(data, "at_least_revision"))
    return await _answers(svc, request, data, list(got), got.revision, "subject")


@endpoint("explain", "check")
async def explain(svc: Service, request: Request) -> Response:
    """POST /v1/explain {goal, format?: json|text|dot|mermaid, at_least_revision?}"""
    data = await svc.body(request)
    goal = _str(data, "goal")
    assert goal is not None
    fmt = data.get("format", "json")
    if fmt not in ("json", "text", "dot", "mermaid"):
        raise BadRequest(422, "bad-request", "`format` is one of json, text, dot, mermaid")
    at_least = _int(data, "at_least_revision")

    def run() -> tuple[Any, int]:
        if at_least is not None:
            svc.reasoner.wait_for(at_least)
        ex = svc.reasoner.explain(goal)
        return ex, svc.reasoner.revision

    ex, revision = await run_in_threadpool(run)
    if fmt == "json":
        return JSON({"holds": ex.holds, "explanation": ex.to_dict(), "revision": revision})
    text = {"text": ex.render, "dot": ex.to_dot, "mermaid": ex.to_mermaid}[fmt]()
    return JSON({"holds": ex.holds, "explanation": text, "format": fmt, "revision": revision})


@endpoint("query", "check")
async def query(svc: Service, request: Request) -> Response:
    """POST /v1/query {goal, at_least_revision?}"""
    data = await svc.body(request)
    goal = _str(data, "goal")
    assert goal is not None
    got = await run_in_threadpool(svc.reasoner.query, goal, _int(data, "at_least_revision"))
    return JSON({"answers": list(got), "revision": got.revision})


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


@endpoint("write", "write")
async def write(svc: Service, request: Request) -> Response:
    """POST /v1/write {insert?: {rel: [rows]}, retract?: {...}, if_revision?, watch?: [rel]}"""
    data = await svc.body(request)
    ins, dels = _rows(data, "insert"), _rows(data, "retract")
    if_revision = _int(data, "if_revision")
    watch = data.get("watch", svc.watched)
    if not isinstance(watch, list) or not all(isinstance(w, str) for w in watch):
        raise BadRequest(422, "bad-request", "`watch` must be a list of relation names")

    def run() -> dict[str, Any]:
        with svc.write_gate, svc.reasoner.transaction(watch=watch,
                                                      if_revision=if_revision) as tx:
            for rel, rows in dels.items():
                tx.retract(rel, rows)
            for rel, rows in ins.items():
                tx.insert(rel, rows)
        derived = {r: c for r, c in tx.changes.to_dict().items() if r in set(watch)}
        return {"revision": tx.revision, "changes": derived}

    return JSON(await run_in_threadpool(run))


@endpoint("relations", "check")
async def relation_rows(svc: Service, request: Request) -> Response:
    """GET /v1/relations/{rel}?limit=N&cursor=C: base facts, sorted, paged"""
    rel = request.path_params["rel"]
    params = dict(request.query_params)
    data: dict[str, Any] = {}
    if "limit" in params:
        if not params["limit"].isdigit():
            raise BadRequest(422, "bad-request", "`limit` must be a non-negative integer")
        data["limit"] = min(int(params["limit"]), 100_000)
    else:
        data["limit"] = 1000
    if "cursor" in params:
        data["cursor"] = params["cursor"]

    def run() -> tuple[list[Any], int]:
        rows = svc.reasoner.rows(rel)
        return sorted((list(r) for r in rows), key=ir.row_key), svc.reasoner.revision

    if rel not in svc.program.relations:
        raise GrantlogError([error("unknown-relation", f"relation `{rel}` does not exist",
                                   _here("<request>"))])
    rows, revision = await run_in_threadpool(run)
    page, cursor = _page([tuple(r) for r in rows], data)
    return JSON({"relation": rel, "rows": [list(r) for r in page], "next_cursor": cursor,
                 "revision": revision})


@endpoint("policy", "check")
async def get_policy(svc: Service, request: Request) -> Response:
    """GET /v1/policy?sources=true: the loaded rule files, their hash (and their texts)"""
    program = svc.program
    out = {"files": program.files, "hash": program.digest, "serial": svc.serial,
           "decision": program.decision, "revision": svc.reasoner.revision}
    if request.query_params.get("sources") in ("1", "true", "yes"):
        out["sources"] = program.sources
    if svc.policy_error is not None:
        out["error"] = {"serial": svc.policy_error[0], "message": svc.policy_error[1]}
    return JSON(out)


@endpoint("policy_put", "admin")
async def put_policy(svc: Service, request: Request) -> Response:
    """PUT /v1/policy {files: {NAME: TEXT}, roots?: [NAME], if_hash?}: compiled and checked,
    then served by every worker; on any error the old policy keeps serving (422 with the
    diagnostics, 409 when ``if_hash`` is not the current hash)"""
    data = await svc.body(request)
    if_hash = _str(data, "if_hash", False)

    def run() -> dict[str, Any]:
        return svc.replace_policy(policy.from_upload(data, svc.config.strict), if_hash)

    return JSON(await run_in_threadpool(run))


#: seconds between keep-alive comments on an idle watch stream
KEEPALIVE = 15.0


@endpoint("watch", "check")
async def watch(svc: Service, request: Request) -> Response:
    """GET /v1/watch?since=REV&relation=REL&format=sse|ndjson: each transaction's gained and
    lost rows of the watched relation, from after ``since`` (default: now) and then live"""
    params = request.query_params
    rel = params.get("relation", svc.decision)
    if rel not in svc.watched:
        raise BadRequest(422, "bad-request", f"`{rel}` is not watched by this server "
                         f"(watched: {', '.join(svc.watched) or 'none'}; see --watch)")
    since_text = params.get("since")
    if since_text is not None and not since_text.isdigit():
        raise BadRequest(422, "bad-request", "`since` must be a revision number")
    since = int(since_text) if since_text is not None else svc.reasoner.revision
    sse = params.get("format", "sse") == "sse"
    backlog, queue = svc.subscribe(since)

    def event(entry: dict[str, Any]) -> bytes:
        if "policy" in entry:  # the rules changed (live streams only; not a transaction)
            body = orjson.dumps(entry)
            if sse:
                return b"event: policy\ndata: " + body + b"\n\n"
            return body + b"\n"
        body = orjson.dumps({"revision": entry["revision"], "relation": rel,
                             **entry["changes"][rel]})
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
                elif entry["revision"] > last:
                    last = entry["revision"]
                    yield event(entry)
        finally:
            svc.unsubscribe(queue)

    return StreamingResponse(stream(), media_type="text/event-stream" if sse
                             else "application/x-ndjson",
                             headers={"Cache-Control": "no-store"})


async def healthz(request: Request) -> Response:
    return JSON({"status": "ok"})


async def readyz(request: Request) -> Response:
    """Ready when the policy is loaded, the store answers and this worker is caught up."""
    svc: Service = request.app.state.service
    out: dict[str, Any] = {"policy": svc.program.digest, "revision": svc.reasoner.revision}
    store = getattr(svc.reasoner, "store", None)
    if store is not None:
        try:
            head, _ = await run_in_threadpool(store.head)
        except GrantlogError as exc:
            svc.metrics.store_errors.inc()
            out.update(ready=False, reason=str(exc.diagnostics[0].message))
            return JSON(out, status_code=503)
        out["store_revision"] = head
        svc.metrics.lag.set(max(0, head - svc.reasoner.revision))
        if head > svc.reasoner.revision + 1:
            out.update(ready=False, reason="catching up with the store")
            return JSON(out, status_code=503)
    out["ready"] = True
    return JSON(out)


async def metrics_endpoint(request: Request) -> Response:
    svc: Service = request.app.state.service
    body, ctype = await run_in_threadpool(svc.metrics.render)
    return Response(body, media_type=ctype)


async def openapi(request: Request) -> Response:
    return JSON(document())


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
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            body = message.get("body", b"")
            chunks.append(body)
            size += len(body)
            if not message.get("more_body") or size > svc.config.max_body:
                break
        raw = b"".join(chunks)
        data: Any = None
        if size <= svc.config.max_body:
            auth_header = None
            for k, v in scope["headers"]:
                if k == b"authorization":
                    auth_header = v.decode("latin-1")
            if svc.tokens.allows(auth_header, "check") == 200:
                try:
                    data = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    data = None
        if (type(data) is dict and len(data) == 3 and type(data.get("subject")) is str
                and type(data.get("operation")) is str and type(data.get("resource")) is str):
            decided = _decide(svc, data["subject"], data["operation"], data["resource"], None)
            if svc.dlog is not None:
                rid = next((v.decode("latin-1") for k, v in scope["headers"]
                            if k == b"x-request-id"), None)
                svc.dlog.log("check", rid[:200] if rid else svc.dlog.request_id(None),
                             data, decided, t0, decided["revision"])
            out = orjson.dumps(decided)
            await send({"type": "http.response.start", "status": 200,
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


def create_app(config: Config) -> FastCheck:
    """The ASGI application for ``config`` (compiles the rules and opens the store now): the
    Starlette application behind the :class:`FastCheck` path."""
    service = Service(config)
    # move the loaded heap out of the collector's sight, as a long-running service should:
    # full collections would rescan millions of rows and pause every request
    gc.collect()
    gc.freeze()
    app = Starlette(routes=[
        Route("/v1/check", check, methods=["POST"]),
        Route("/v1/check/batch", check_batch, methods=["POST"]),
        Route("/v1/list", list_, methods=["POST"]),
        Route("/v1/who", who, methods=["POST"]),
        Route("/v1/filter", filter_, methods=["POST"]),
        Route("/v1/explain", explain, methods=["POST"]),
        Route("/v1/query", query, methods=["POST"]),
        Route("/v1/write", write, methods=["POST"]),
        Route("/v1/watch", watch, methods=["GET"]),
        Route("/v1/relations/{rel}", relation_rows, methods=["GET"]),
        Route("/v1/data/{path:path}", opa_data, methods=["POST"]),
        Route("/v1/policy", get_policy, methods=["GET"]),
        Route("/v1/policy", put_policy, methods=["PUT"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
    ])
    app.state.service = service
    return FastCheck(app, service)


def from_env() -> FastCheck:
    """The worker processes' factory (``uvicorn --factory``): the configuration comes in
    :data:`CONFIG_ENV`."""
    return create_app(Config.from_env())
