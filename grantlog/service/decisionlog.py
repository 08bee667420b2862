"""Decision logs: every decision (or a sample), and every read's question, as one JSON line.

A decision: ``{"time", "request_id", "endpoint", "revision", "policy", "input": {subject,
operation, resource}, "result": {allowed, reasons[, error]}, "latency_us"}``. A read (``list``,
``who``, ``filter``, ``query``, ``explain``): the same with ``"input"`` what was asked and
``"answer": {"size", "unit"[, ...]}`` instead of ``"result"``. To a file rotated by size
(``--decision-log PATH``, ``--decision-log-max-bytes``, five old files kept) or to stdout
(``--decision-log -``). ``--decision-log-sample 0.1`` keeps one entry in ten;
``--decision-log-mask input.subject`` (repeatable) writes ``"***"`` instead of a field.
``grantlog logs replay`` (grantlog/service/replay.py) re-decides logged checks under other
rules.

Writing. Each entry is one ``write()`` of a whole line to a file opened with ``O_APPEND``.
Several worker processes share one file and rotate it together: every write holds an
exclusive ``flock`` on ``PATH.lock`` while it looks at ``PATH`` (reopening it when another
worker, or logrotate, has renamed it), rotates it when the line would not fit, and appends the
line, so a line always goes to the current file and no worker renames a file another is
about to write (two workers with their own rotation lost 39 entries in 1,000). A write that
fails part-way (a full disk, ``RLIMIT_FSIZE``) is cut back to the last whole line, so a later
line never follows a torn one; a torn tail left by a crash is cut off before the next write.

Failures are not silent: each entry that could not be written counts in ``failures`` (the
service's ``grantlog_decision_log_failures_total``), ``healthy`` turns False (``/readyz``
answers 503 through :meth:`DecisionLog.ready`) and one warning goes to stderr when it starts
failing and one when it recovers. The entries that failed are kept (up to ``pending_max``
bytes, the oldest dropped beyond: ``dropped``, ``grantlog_decision_log_dropped_total``) and
written first once the log takes writes again, in order. With ``required=True``
(``--decision-log-required``) nothing is kept: :meth:`DecisionLog.log` raises
``GrantlogError`` code ``decision-log-failed`` and the service fails the decision closed.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import orjson

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from . import MASK

#: the error code of a decision that failed because its log entry could not be written
FAILED = "decision-log-failed"
#: the endpoints whose answers are logged as reads (``"answer"``, not ``"result"``)
READS = ("list", "who", "filter", "query", "explain")

_warn = logging.getLogger("grantlog.decisionlog")


def _now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def _reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()


class DecisionLog:
    """The decision log of one worker process (see the module's doc)."""

    def __init__(self, target: str, sample: float = 1.0, mask: list[str] | None = None,
                 max_bytes: int = 100 * 2**20, policy: str = "", *, required: bool = False,
                 backups: int = 5, pending_max: int = 4 * 2**20, retry_after: float = 5.0,
                 on_failure: Callable[[], Any] | None = None,
                 on_drop: Callable[[], Any] | None = None) -> None:
        self.target = target
        self.sample = sample
        self.policy = policy
        self.mask = [tuple(m.split(".")) for m in mask or []]
        self.max_bytes = max_bytes
        self.backups = backups
        #: a failed write fails the decision (``log`` raises) instead of being kept for later
        self.required = required
        self.pending_max = pending_max
        #: with nothing kept to retry, ``ready()`` says True again this long after a failure
        self.retry_after = retry_after
        #: called once per entry that could not be written, and per kept entry dropped
        self.on_failure, self.on_drop = on_failure, on_drop
        #: entries that could not be written when logged (kept, dropped, or failed decisions)
        self.failures = 0
        #: kept entries dropped for good (more than ``pending_max`` bytes were waiting)
        self.dropped = 0
        #: False from a failed write until a write succeeds
        self.healthy = True
        #: the last failure's reason (``"no space left on device"``)
        self.last_error: str | None = None
        self._last_failure = 0.0
        self._pending: collections.deque[bytes] = collections.deque()
        self._pending_bytes = 0
        self._lock = threading.Lock()
        self._stdout = target == "-"
        self.path = os.path.abspath(target) if not self._stdout else target
        self._fd = self._lock_fd = -1
        self._ident: tuple[int, int] = (-1, -1)
        self._end = -1  # the file's size after this process's last write (-1: unknown)
        self._pid = -1
        if not self._stdout:
            try:
                self._open()
            except OSError as exc:
                raise GrantlogError([error(
                    "bad-option", f"cannot open the decision log `{target}`: {_reason(exc)}",
                    Span("<command line>", 0, 0, 0, 0))]) from None

    # -- entries ----------------------------------------------------------------------------

    @staticmethod
    def request_id(headers: Any) -> str:
        """The caller's ``X-Request-Id``, or a new one."""
        got = headers.get("x-request-id") if headers is not None else None
        return got[:200] if got else uuid.uuid4().hex

    def log(self, endpoint: str, request_id: str, inp: dict[str, Any],
            result: dict[str, Any], started: float, revision: int) -> None:
        """Log one decision. Raises ``GrantlogError`` (``decision-log-failed``) when the entry
        cannot be written and the log is ``required``."""
        if self.sample < 1.0 and random.random() >= self.sample:
            return
        self._entry(endpoint, request_id, revision, inp, "result",
                    {k: v for k, v in result.items() if k != "revision"}, started)

    def log_read(self, endpoint: str, request_id: str, asked: dict[str, Any], size: int,
                 revision: int, started: float, unit: str = "answers",
                 **answer: Any) -> None:
        """Log one read (``list``, ``who``, ``filter``, ``query``, ``explain``): what was
        asked, the answer's size (``unit``: ``answers`` or ``bytes``) and revision, and any
        ``answer`` fields (``holds=True``, ``next_cursor=True``). Sampled, masked and, when
        ``required``, failing as :meth:`log`."""
        if self.sample < 1.0 and random.random() >= self.sample:
            return
        self._entry(endpoint, request_id, revision, asked, "answer",
                    {"size": size, "unit": unit, **answer}, started)

    def _entry(self, endpoint: str, request_id: str, revision: int, inp: dict[str, Any],
               key: str, out: dict[str, Any], started: float) -> None:
        entry: dict[str, Any] = {
            "time": _now(), "request_id": request_id, "endpoint": endpoint,
            "revision": revision, "policy": self.policy, "input": dict(inp), key: out,
            "latency_us": round((time.perf_counter() - started) * 1e6, 1)}
        for path in self.mask:
            node: Any = entry
            for k in path[:-1]:
                node = node.get(k) if isinstance(node, dict) else None
            if isinstance(node, dict) and path[-1] in node:
                node[path[-1]] = MASK
        self._emit(orjson.dumps(entry) + b"\n")

    # -- health -----------------------------------------------------------------------------

    def ready(self) -> bool:
        """For ``/readyz``: True when the log takes writes. After a failure, the kept entries
        are written now if they can be (then True); with none kept (``required``), True again
        ``retry_after`` seconds after the last failure, for the next decisions to try."""
        if self.healthy:
            return True
        with self._lock:
            if self._pending:
                try:
                    self._flush()
                except OSError as exc:
                    self.last_error = _reason(exc)
                    return False
                self._recovered()
                return True
            return time.monotonic() - self._last_failure >= self.retry_after

    def _emit(self, line: bytes) -> None:
        with self._lock:
            try:
                self._flush()
                self._write(line)
            except OSError as exc:
                self._failed(exc, line)
                return
            if not self.healthy:
                self._recovered()

    def _flush(self) -> None:
        while self._pending:
            self._write(self._pending[0])
            self._pending_bytes -= len(self._pending.popleft())

    def _failed(self, exc: OSError, line: bytes) -> None:
        self.failures += 1
        self._last_failure = time.monotonic()
        self.last_error = _reason(exc)
        if self.on_failure is not None:
            self.on_failure()
        if self.healthy:
            self.healthy = False
            _warn.warning("grantlog: writing the decision log %s failed: %s; %s", self.target,
                          self.last_error, "decisions fail until it recovers" if self.required
                          else "entries are kept in memory and readiness is 503 until it "
                          "recovers")
        if self.required:
            raise GrantlogError([error(
                FAILED, f"the decision log could not be written ({self.last_error}); with "
                "--decision-log-required the request is refused", Span("<request>", 0, 0, 0, 0))])
        self._pending.append(line)
        self._pending_bytes += len(line)
        while self._pending_bytes > self.pending_max and self._pending:
            self._pending_bytes -= len(self._pending.popleft())
            self.dropped += 1
            if self.on_drop is not None:
                self.on_drop()

    def _recovered(self) -> None:
        self.healthy = True
        _warn.warning("grantlog: the decision log %s takes writes again (%d entries failed, "
                      "%d of them dropped, so far)", self.target, self.failures, self.dropped)

    # -- the file ---------------------------------------------------------------------------

    def _open(self) -> None:
        """Open the lock file and the log (again in a forked child: descriptors it inherited
        share the parent's lock, so they would not exclude the parent)."""
        for fd in (self._fd, self._lock_fd):
            if fd >= 0:
                os.close(fd)
        self._fd = self._lock_fd = -1
        self._lock_fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                                0o640)
        self._pid = os.getpid()
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            self._reopen()
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _reopen(self) -> os.stat_result:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                           0o640)
        st = os.fstat(self._fd)
        self._ident, self._end = (st.st_dev, st.st_ino), -1
        return st

    def _write(self, data: bytes) -> None:
        if self._stdout:
            _write_all(1, data)
            return
        if self._pid != os.getpid() or self._fd < 0:
            self._open()
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            try:
                st: os.stat_result | None = os.stat(self.path)
            except FileNotFoundError:
                st = None
            if st is None or (st.st_dev, st.st_ino) != self._ident:
                st = self._reopen()  # rotated by another worker (or logrotate), or removed
            size = st.st_size
            if size and size != self._end:  # another writer's, or a file this one opened
                size = self._mend(size)
            if size and size + len(data) > self.max_bytes:
                self._rotate()
                size = 0
            try:
                _write_all(self._fd, data)
            except OSError:
                with contextlib.suppress(OSError):  # no torn line for later lines to follow
                    os.ftruncate(self._fd, size)
                self._end = -1
                raise
            self._end = size + len(data)
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _mend(self, size: int) -> int:
        """Cut a torn last line (no newline at the end: a crash mid-write) off the file."""
        if os.pread(self._fd, 1, size - 1) == b"\n":
            return size
        keep, chunk = size, 1 << 16
        while keep > 0:
            start = max(0, keep - chunk)
            at = os.pread(self._fd, keep - start, start).rfind(b"\n")
            if at >= 0:
                keep = start + at + 1
                break
            keep = start
        os.ftruncate(self._fd, keep)
        _warn.warning("grantlog: cut a torn last line (%d bytes) off the decision log %s",
                      size - keep, self.target)
        return keep

    def _rotate(self) -> None:
        """PATH.4 -> PATH.5, ..., PATH -> PATH.1 (under the lock), and a new PATH."""
        if self.backups <= 0:
            os.ftruncate(self._fd, 0)
            return
        for i in range(self.backups - 1, 0, -1):
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{self.path}.{i}", f"{self.path}.{i + 1}")
        os.replace(self.path, f"{self.path}.1")
        self._reopen()

    def close(self) -> None:
        with self._lock:
            for fd in (self._fd, self._lock_fd):
                if fd >= 0:
                    os.close(fd)
            self._fd = self._lock_fd = -1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(0, "the write made no progress")
        view = view[n:]
