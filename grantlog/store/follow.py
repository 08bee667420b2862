"""Following a store: a thread that wakes on the store's signal (SQLite: ``PRAGMA
data_version``; PostgreSQL: LISTEN/NOTIFY), and once a second regardless, and has a reasoner
apply what other processes committed (its public ``sync()``). A lost store is retried with
backoff; the last error is kept in :attr:`Follower.error` meanwhile."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

from grantlog.grammar.diagnostics import GrantlogError

from .base import Store
from .records import Listener

#: a follower reads the log at least this often without a signal (seconds)
FOLLOW_INTERVAL = 1.0
#: the longest pause between retries of a lost store (seconds)
MAX_BACKOFF = 2.0


class Follower:
    """Calls ``sync`` whenever ``store`` may have a new transaction, in a daemon thread, until
    :meth:`close`."""

    def __init__(self, store: Store, sync: Callable[[], object]) -> None:
        self.store = store
        self._sync = sync
        #: the last error (None while the store answers)
        self.error: GrantlogError | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="grantlog-follower", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        backoff = 0.05
        listener: Listener | None = None
        last = time.monotonic()
        while not self._stop.is_set():
            try:
                if listener is None:
                    listener = self.store.listener()
                    self._sync()
                woke = listener.wait(0.2)
                if woke or time.monotonic() - last >= FOLLOW_INTERVAL:
                    self._sync()
                    last = time.monotonic()
                self.error = None
                backoff = 0.05
            except GrantlogError as exc:
                self.error = exc
                if listener is not None:
                    with contextlib.suppress(Exception):  # a broken connection may fail
                        listener.close()
                    listener = None
                self._stop.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
        if listener is not None:
            listener.close()

    def close(self) -> None:
        """Stop following (waits for the thread, up to 5 s)."""
        self._stop.set()
        self._thread.join(timeout=5)
