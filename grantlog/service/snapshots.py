"""Reads that cannot hold the server: answered in forked copies of the worker.

A read (``list``, ``who``, ``query``, ``explain``, ``filter``, a relation's rows) can cost far
more than a check: ``allowed(U, load_table, R)`` at 100k tables evaluates every subject's every
table. In the worker it would hold the reasoner's lock (and the interpreter's) for all that
time, and every check would wait. So the worker answers reads in a *snapshot*: a child process
forked while the reasoner is held still (no update half applied), which therefore sees exactly
the worker's facts at that revision, shares their memory copy-on-write, and runs only on CPU
time the worker does not want (SCHED_IDLE). The child computes the answer *and renders its
JSON*; the worker only forwards the bytes, so nothing heavy ever runs in the worker.

Bounds, per read:

* **time**: a read that has not answered within the deadline is cancelled — its child is
  killed — and answered ``504 deadline-exceeded``;
* **memory**: a child may allocate at most ``memory`` bytes beyond what it inherited
  (``RLIMIT_AS``); past that the read is answered ``422 too-large`` and the child exits;
* **rows**: the renderers refuse an answer of more than ``max_rows`` rows unless it is paged
  (``limit``/``cursor``), with ``422 too-large`` (grantlog/service/reads.py);
* **concurrency**: at most ``readers`` snapshots answer at once; a read that finds none free
  within its deadline is answered ``503 reads-busy``.

A snapshot serves read after read while the worker's revision (and policy) stays the same, so
a stream of reads between writes forks once; after a write, the next read forks a new one
(forking stops the worker for about 18 ms per GB it holds: measured in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import pickle
import resource
import signal
import socket
import struct
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error

from .http import problem_body, status_of

#: seconds of one stop-and-go cycle of a throttled snapshot
SLICE = 0.02

#: frame kinds, child -> worker: the head (status, media type), a chunk of the body, the end
#: (QUIT: the end, and the child exits: its heap may be in any state after a MemoryError)
HEAD, CHUNK, END, QUIT = b"H", b"C", b"E", b"Q"
_FRAME = struct.Struct("!cI")

#: what a child renders: called in the child with the reasoner and the request's arguments;
#: returns the status, the media type, the body's chunks and what the decision log keeps of
#: the answer (``size``, ``unit``, ``revision``, ...)
Renderer = Callable[..., tuple[int, str, Iterable[bytes], dict[str, Any]]]


@dataclass
class Reply:
    status: int
    media_type: str
    chunks: AsyncIterator[bytes]
    #: the renderer's account of the answer (empty for an error)
    meta: dict[str, Any]


class Child:
    """One forked snapshot: its pid, the worker's end of its socket, what it holds."""

    def __init__(self, pid: int, sock: socket.socket, key: tuple[int, int]) -> None:
        self.pid, self.sock, self.key = pid, sock, key
        self.alive = True

    def kill(self) -> None:
        if self.alive:
            self.alive = False
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self.sock.close()
            _reap(self.pid)


def _reap(pid: int) -> None:
    """Wait for a killed or finished child without blocking the caller for long."""
    def wait() -> None:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)

    threading.Thread(target=wait, name="grantlog-reap", daemon=True).start()


def _send(sock: socket.socket, kind: bytes, payload: bytes) -> None:
    sock.sendall(_FRAME.pack(kind, len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        got = sock.recv(n - len(buf))
        if not got:
            raise EOFError
        buf += got
    return bytes(buf)


def _vm_size() -> int:
    """This process's virtual memory size in bytes (Linux's /proc), 0 when unknown."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _die_with(worker: int) -> None:
    """Linux: the kernel kills this process when its parent dies (``PR_SET_PDEATHSIG``),
    even while it is stopped (the CPU throttle's SIGSTOP), when no thread of it can run;
    then, if the worker died before that was set, exit now."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != worker:
        os._exit(5)


def _child_main(sock: socket.socket, reasoner: Any, memory: int, worker: int) -> None:
    """The snapshot's loop: read a request, render it, send the frames; until the worker
    closes the socket. Never returns (``os._exit``): nothing of the worker's is finalized."""
    code = 0
    try:
        _die_with(worker)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        with contextlib.suppress(ValueError, OSError):
            signal.set_wakeup_fd(-1)
        # the worker's checks come first: the snapshot runs only on CPU time nothing else
        # wants (Linux's SCHED_IDLE; elsewhere the lowest nice level)
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except (AttributeError, OSError):
            with contextlib.suppress(OSError):
                os.nice(19)
        def orphaned() -> None:  # the worker died (SIGKILL, say): stop, even mid-read
            while True:  # (where PR_SET_PDEATHSIG is not there to do it)
                time.sleep(1.0)
                if os.getppid() != worker:
                    os._exit(5)

        threading.Thread(target=orphaned, name="grantlog-orphaned", daemon=True).start()
        vm = _vm_size()
        if vm and memory:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_AS, (vm + memory, vm + memory))
        while True:
            try:
                _, n = _FRAME.unpack(_recv_exact(sock, _FRAME.size))
                fn, args = pickle.loads(_recv_exact(sock, n))
            except EOFError:
                break
            try:
                meta: dict[str, Any] = {}
                try:
                    status, media, chunks, meta = fn(reasoner, **args)
                    body = list(chunks)  # rendered in full before the head is sent
                except GrantlogError as exc:
                    d = exc.diagnostics[0] if exc.diagnostics else None
                    status, media = status_of(d.code if d else "error"), "application/json"
                    body = [_json(problem_body(status, d.code if d else "error",
                                               d.message if d else str(exc),
                                               exc.diagnostics,
                                               str(exc) if exc.sources else None))]
            except MemoryError:
                body = []  # free what the read built before answering
                status, media = 422, "application/json"
                body = [_json(problem_body(422, "too-large", "the answer needs more memory "
                                           f"than a read may use ({memory >> 20} MiB)", (),
                                           None, hint="narrow the read or page it "
                                           "(`limit`, `cursor`)"))]
                code = 3
            _send(sock, HEAD, pickle.dumps((status, media, meta)))
            for chunk in body:
                _send(sock, CHUNK, chunk)
            _send(sock, QUIT if code else END, b"")
            if code:
                break  # the heap may be in any state: a fresh snapshot for the next read
    except BaseException:
        code = 4
    finally:
        os._exit(code)


def _json(obj: Any) -> bytes:
    import orjson

    return orjson.dumps(obj)


class Snapshots:
    """The worker's snapshots: forked on demand, reused while the revision holds."""

    def __init__(self, deadline: float, memory: int, readers: int, cpu: float = 1.0) -> None:
        self.deadline, self.memory, self.readers = deadline, memory, readers
        #: the share of a CPU a busy snapshot may run (below 1: stopped and continued in turn,
        #: :data:`SLICE` seconds a cycle), so that a read leaves the checks their CPU even
        #: where the machine has no core to spare
        self.cpu = min(1.0, max(0.05, cpu))
        self._lock = threading.Lock()
        self._idle: list[Child] = []
        self._busy: set[Child] = set()
        self._slots = threading.BoundedSemaphore(readers)
        self.forks = 0
        self._throttling = False

    def _throttle(self) -> None:
        """While snapshots are busy: stop them for (1 - cpu) of each slice, then let them go
        on (SIGSTOP/SIGCONT: the kernel's own job control, nothing of theirs runs)."""
        on, off = SLICE * self.cpu, SLICE * (1 - self.cpu)
        while True:
            with self._lock:
                busy = [c for c in self._busy if c.alive]
                if not busy:
                    self._throttling = False
                    return
            for c in busy:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(c.pid, signal.SIGSTOP)
            time.sleep(off)
            for c in busy:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(c.pid, signal.SIGCONT)
            time.sleep(on)

    def _busy_add(self, child: Child) -> None:
        """Call with ``self._lock`` held."""
        self._busy.add(child)
        if self.cpu < 1.0 and not self._throttling:
            self._throttling = True
            threading.Thread(target=self._throttle, name="grantlog-throttle",
                             daemon=True).start()

    def retire(self) -> None:
        """Let the idle snapshots go (the policy changed: they hold the old reasoner)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for c in idle:
            c.kill()

    def close(self) -> None:
        with self._lock:
            children = [*self._idle, *self._busy]
            self._idle.clear()
            self._busy.clear()
        for c in children:
            c.kill()

    # -- taking a snapshot ---------------------------------------------------------------------

    def _take(self, reasoner: Any, generation: int, until: float) -> Child:
        """An idle snapshot of ``reasoner`` at its current revision, or a new one (blocking:
        call from a thread)."""
        if not self._slots.acquire(timeout=max(0.0, until - time.monotonic())):
            raise GrantlogError([_error(
                "reads-busy", f"{self.readers} reads are being answered; none finished within "
                f"its deadline", "retry later, or page the reads "
                "(`limit`, `cursor`)")])
        try:
            with reasoner.frozen() as revision:
                key = (generation, revision)
                with self._lock:
                    stale = [c for c in self._idle if c.key != key]
                    self._idle = [c for c in self._idle if c.key == key]
                    child = self._idle.pop() if self._idle else None
                if child is None:
                    child = self._fork(reasoner, key)
                with self._lock:
                    self._busy_add(child)
            for c in stale:
                c.kill()
            return child
        except BaseException:
            self._slots.release()
            raise

    def _fork(self, reasoner: Any, key: tuple[int, int]) -> Child:
        parent, child_sock = socket.socketpair()
        worker = os.getpid()
        pid = os.fork()
        if pid == 0:  # the snapshot
            parent.close()
            _child_main(child_sock, reasoner, self.memory, worker)
        child_sock.close()
        self.forks += 1
        return Child(pid, parent, key)

    def _give_back(self, child: Child, reuse: bool) -> None:
        with self._lock:
            self._busy.discard(child)
            if reuse and child.alive:
                self._idle.append(child)
        if not reuse:
            child.kill()
        self._slots.release()

    # -- a read --------------------------------------------------------------------------------

    async def run(self, reasoner: Any, generation: int, fn: Renderer,
                  deadline: float | None = None, **args: Any) -> Reply:
        """Answer ``fn(reasoner, **args)`` in a snapshot: the head within the deadline (the
        server's, or ``deadline`` seconds when shorter; else ``deadline-exceeded``), then the
        body's chunks as they come."""
        seconds = self.deadline if deadline is None else min(deadline, self.deadline)
        until = time.monotonic() + seconds
        child = await asyncio.to_thread(self._take, reasoner, generation, until)
        loop = asyncio.get_running_loop()
        try:
            child.sock.setblocking(False)
            payload = pickle.dumps((fn, args))
            await loop.sock_sendall(child.sock, _FRAME.pack(CHUNK, len(payload)) + payload)
            kind, data = await asyncio.wait_for(self._frame(child),
                                                max(0.0, until - time.monotonic()))
        except TimeoutError:
            self._give_back(child, False)
            raise GrantlogError([_error(
                "deadline-exceeded", f"the read did not finish within {seconds:g} s "
                "and was cancelled", "narrow it (bind more of the goal, `type`, `within`) or "
                "page it (`limit`, `cursor`)")]) from None
        except (EOFError, OSError):
            self._give_back(child, False)
            raise GrantlogError([_error(
                "read-failed", "the read's snapshot process ended before answering",
                "retry; if it fails again, the server's memory may be short")]) from None
        except BaseException:
            self._give_back(child, False)
            raise
        if kind != HEAD:
            self._give_back(child, False)
            raise GrantlogError([_error("read-failed", "the read's snapshot answered out "
                                        "of order", None)])
        status, media, meta = pickle.loads(data)
        return Reply(status, media, self._body(child), meta)

    async def _frame(self, child: Child) -> tuple[bytes, bytes]:
        loop = asyncio.get_running_loop()
        head = await self._exact(loop, child.sock, _FRAME.size)
        kind, n = _FRAME.unpack(head)
        return kind, await self._exact(loop, child.sock, n)

    @staticmethod
    async def _exact(loop: asyncio.AbstractEventLoop, sock: socket.socket, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            got = await loop.sock_recv(sock, min(n - len(buf), 1 << 20))
            if not got:
                raise EOFError
            buf += got
        return bytes(buf)

    async def _body(self, child: Child) -> AsyncIterator[bytes]:
        reuse = False
        try:
            while True:
                kind, data = await self._frame(child)
                if kind in (END, QUIT):
                    reuse = kind == END
                    return
                yield data
        finally:  # a client gone mid-body leaves the child mid-answer: not reusable
            self._give_back(child, reuse)


def _error(code: str, message: str, help: str | None) -> Diagnostic:
    return error(code, message, Span("<request>", 0, 0, 0, 0), help)

