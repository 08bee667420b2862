"""The served reasoner's clock: a thread that moves it to each validity interval's edge as
the edge comes, so that ``/v1/watch`` streams the gains and losses of expiring and scheduled
grants without waiting for a read (reads move the clock themselves: engine/answer/validity.py).
It sleeps until the next edge (at most :data:`MAX_WAIT`), moves the clock to that edge (one
edge at a time: each is an event of its own, at its own time), and is woken by every applied
transaction, which may have scheduled a sooner one."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

#: the longest sleep between two looks at the next edge (seconds)
MAX_WAIT = 5.0
log = logging.getLogger("grantlog.service")


class Ticker:
    """Moves ``reasoner()``'s clock to each edge in a daemon thread until :meth:`close`."""

    def __init__(self, reasoner: Any) -> None:
        self._reasoner = reasoner
        self.wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="grantlog-clock", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            r = self._reasoner()
            due = r.next_edge()
            now = time.time()
            if due is not None and due <= now:
                try:
                    r.tick(due)  # to the edge itself: the watch streams say when it was
                except Exception:  # the next read moves the clock, and reports it
                    log.exception("moving the clock to a validity edge failed")
                    self._stop.wait(1.0)
                continue
            self.wake.wait(MAX_WAIT if due is None else min(due - now, MAX_WAIT))
            self.wake.clear()

    def close(self) -> None:
        self._stop.set()
        self.wake.set()
        self._thread.join(timeout=2.0)
