"""What the endpoints share: the configuration, the :class:`Service` (the reasoner, tokens,
limits, metrics, the policy and the watch feed) and the :func:`endpoint` wrapper (authorization,
error bodies, latency metrics)."""

from __future__ import annotations

import asyncio
import collections
import gc
import json
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from grantlog.engine.core import ir
from grantlog.engine.core.times import show
from grantlog.grammar.diagnostics import GrantlogError, error
from grantlog.reasoner import Reasoner
from grantlog.store import StoredPolicy
from grantlog.store.records import policy_conflict

from . import auth, http, metrics, policy
from .clock import Ticker
from .decisionlog import DecisionLog
from .http import BadRequest, Redactor, diag_dict, here, problem
from .snapshots import Snapshots

#: seconds readyz stays 503 after a write failed in the store
WRITE_RETRY = 30.0

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
    decision_log_required: bool = False
    #: OPA Data API mappings served under /v1/data/ (grantlog/service/opa/): shipped names
    #: (``trino``, ``polaris``) or mapping files
    opa: list[str] | None = None
    #: a read (list, who, query, explain, filter, rows) is cancelled after this many seconds
    read_deadline: float = 30.0
    #: what a read may allocate beyond the worker's memory it shares (bytes)
    read_memory: int = 2 * 2**30
    #: reads answered at once (each in its own snapshot process)
    readers: int = 2
    #: the share of a CPU a busy read may use (1: all it can get at the lowest priority)
    read_cpu: float = 0.25
    #: answers a read may stream without paging (more: ``too-large``; page with ``limit``)
    max_rows: int = 1_000_000
    #: install ``rules`` in the store as its policy when starting (the command line's process;
    #: the workers it starts read the store's newest policy instead)
    install: bool = True
    #: create the store when it does not exist (``--create``; else ``store-not-found``)
    create: bool = False
    #: mount the explorer at /ui (``--ui``: grantlog/service/ui.py), answering the Host names
    #: of the bound address ``ui_bind``, the loopback ones and ``ui_hosts``
    ui: bool = False
    ui_bind: str = "127.0.0.1"
    ui_hosts: list[str] | None = None

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_env() -> Config:
        return Config(**json.loads(os.environ[CONFIG_ENV]))


class Service:
    """What the endpoints share: the reasoner, tokens, limits, metrics."""

    def __init__(self, config: Config) -> None:
        self.config = config
        #: the tokens file, read again when it changes (a token revoked at once)
        self.token_source = auth.Source(config.tokens, config.allow_unauthenticated_writes,
                                        warn=lambda m: print(m, file=sys.stderr, flush=True))
        self.redact = Redactor(config.store)
        #: forked snapshots answer the reads (grantlog/service/snapshots.py)
        self.snapshots = Snapshots(config.read_deadline, config.read_memory, config.readers,
                                   config.read_cpu)
        #: bumped on every policy swap: snapshots of an older generation hold an old reasoner
        self.generation = 0
        #: the last write's store failure (code, message, when: time.monotonic()), None once
        #: a write succeeds: readyz is 503 for :data:`WRITE_RETRY` seconds after it (then
        #: ready again, so that traffic can try: a write that fails again renews it)
        self.write_error: tuple[str, str, float] | None = None
        self.program, self.serial = policy.initial(config.rules, config.store, config.install,
                                                   config.strict, config.create)
        self.decision = self.program.decision
        self.watched = list(config.watch or [])
        check_watched(self.program, self.watched, "<command line>")
        self.reasoner = self._reasoner(self.program)
        self.metrics = metrics.Metrics()
        #: OPA Data API paths (no leading slash) -> (mapping, what is answered there)
        self.opa: dict[str, tuple[Any, str]] = {}
        if config.opa:
            from grantlog.service.opa import Mapping
        for name in config.opa or []:
            m = Mapping.load(name)
            for path, kind in m.endpoints.items():
                if path in self.opa:
                    raise GrantlogError([error(
                        "bad-mapping", f"the Data API path `{path}` of `{m.name}` is already "
                        f"served by `{self.opa[path][0].name}`", here("<command line>"))])
                self.opa[path] = (m, kind)
        self.started = time.time()
        self.dlog: DecisionLog | None = None
        if config.decision_log:
            self.dlog = DecisionLog(config.decision_log, config.decision_log_sample,
                                    config.decision_log_mask, config.decision_log_max_bytes,
                                    self.program.digest,
                                    required=config.decision_log_required,
                                    on_failure=self.metrics.decision_log_failures.inc,
                                    on_drop=self.metrics.decision_log_dropped.inc)
        # the watch feed: recent transactions' changes of the watched relations, and the
        # queues of the open /v1/watch streams (filled from whichever thread applied them)
        self._feed_lock = threading.Lock()
        self.feed: collections.deque[dict[str, Any]] = collections.deque(maxlen=config.feed)
        #: the oldest revision the feed can replay from
        self.feed_floor = self.reasoner.revision
        self.watchers: set[tuple[asyncio.AbstractEventLoop, asyncio.Queue[dict[str, Any]]]] \
            = set()
        #: moves the clock to each validity edge (grantlog/service/clock.py)
        self._ticker = Ticker(lambda: self.reasoner)
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
                assert new.store is not None
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
                "warnings": [diag_dict(d) for d in program.warnings]}

    def _swap(self, old: Reasoner, new: Reasoner, program: ir.Program, serial: int) -> None:
        for fn in self._listeners:
            old.listeners.remove(fn)
            new.listeners.append(fn)
        self.metrics.revision.set(new.revision)
        self.reasoner, self.program, self.decision, self.serial = \
            new, program, program.decision, serial
        self.generation += 1
        self.snapshots.retire()
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
        self._ticker.close()
        self.snapshots.close()
        self.reasoner.close()
        if self.dlog is not None:
            self.dlog.close()

    def _applied(self, changes: Any) -> None:
        self.metrics.revision.set(changes.revision)
        self._ticker.wake.set()  # the transaction may have brought an edge nearer

    def _on_change(self, changes: Any) -> None:
        entry = {"revision": changes.revision,
                 "changes": {rel: {"gained": sorted((list(r) for r in changes.gained(rel)),
                                                    key=ir.row_key),
                                   "lost": sorted((list(r) for r in changes.lost(rel)),
                                                  key=ir.row_key)}
                             for rel in self.watched}}
        if getattr(changes, "moment", None) is not None:  # an interval's edge, not a write
            entry["at"] = show(changes.moment)
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

    @property
    def tokens(self) -> auth.Tokens:
        """The tokens in force now (:class:`auth.Source`)."""
        return self.token_source.current()

    async def body(self, request: Request) -> dict[str, Any]:
        return http.parse_object(await http.read_body(request, self.config.max_body))

    def authorize(self, request: Request, scope: str) -> None:
        header = request.headers.get("authorization")
        status = self.tokens.allows(header, scope)
        if status == 401:  # missing, or not valid: the message says which
            raise BadRequest(401, "unauthorized", self.tokens.unauthorized(header))
        if status == 403:
            why = (f"the token lacks the `{scope}` scope" if self.tokens.enabled else
                   "admin operations need an admin token (start the server with --tokens "
                   "FILE)" if scope == "admin" else
                   "writes need tokens (start the server with --tokens FILE) or "
                   "--allow-unauthenticated-writes")
            raise BadRequest(403, "forbidden", why)


def check_watched(program: ir.Program, watched: list[str], where: str) -> None:
    """Every watched relation must exist in ``program``."""
    missing = [rel for rel in watched if rel not in program.relations]
    if missing:
        raise GrantlogError([error("unknown-relation", f"relation `{rel}` does not exist "
                                   "(it is watched: --watch)", here(where)) for rel in missing])


Handler = Callable[["Service", Request], Awaitable[Response]]


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
                response = problem(exc.status, exc.code, exc.message, exc.diagnostics,
                                   **exc.extra)
            except GrantlogError as exc:
                code, message, diags, rendered = svc.redact.error(exc)
                status = http.status_of(code)
                if status == 503 and code.startswith("store-"):
                    svc.metrics.store_errors.inc()
                    if scope in ("write", "admin"):
                        svc.write_error = (code, message, time.monotonic())
                response = problem(status, code, message, diags, rendered,
                                   revision=svc.reasoner.revision)
            else:
                if scope == "write" and response.status_code < 300:
                    svc.write_error = None
            svc.metrics.latency_of(name).observe(time.perf_counter() - t0)
            return response

        handle.__name__ = fn.__name__
        handle.__doc__ = fn.__doc__
        return handle

    return wrap
