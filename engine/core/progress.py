"""Progress of long work (reading large fact files, planning, evaluation, Spark strata).

Library code reports what it does through :func:`task`; nothing is shown unless a front end
turned reporting on with :func:`reporting` (the CLI: on a terminal, or with ``--progress``;
never with ``--quiet``). Bars are tqdm's, on stderr, and appear only for work that lasts (a
task shorter than ``delay`` seconds prints nothing), so a quick command stays quiet.

    with progress.task("reading facts.gl", total=size, unit="B") as advance:
        for chunk in chunks:
            ...
            advance(len(chunk))

``advance(n, postfix="1,204 rows")`` also sets the text after the bar; :func:`each` loops over
a sequence with a bar (and is the sequence itself when nothing is shown: loops on fast paths,
such as a transaction's strata); :func:`note` prints a line above the bars.

Not shown, a task is one context-variable lookup and a shared null context, and ``advance`` a
no-op: cheap, but still calls, so advance per batch, stratum or round, never per row
(benchmarks/progress_bench.py). A shown bar is redrawn every second even when its work does not
advance (one long stratum shows its clock running). Off a terminal (``--progress`` into a log)
bars are not stacked and each one's last state stays as a line. ``GRANTLOG_PROGRESS_DELAY``
(seconds) overrides every task's ``delay``: ``0`` shows every bar at once (tests).
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol, TextIO, TypeVar

#: whether tasks are shown, and where (None: not shown)
_SHOWN: contextvars.ContextVar[TextIO | None] = contextvars.ContextVar("progress", default=None)
#: how often a shown bar is redrawn when its work does not advance (seconds)
TICK = 1.0
DELAY_VARIABLE = "GRANTLOG_PROGRESS_DELAY"
T = TypeVar("T")


class Advance(Protocol):
    """What :func:`task` yields: ``advance(n)`` adds ``n`` to the work done; ``postfix``, when
    given, replaces the text after the bar (e.g. ``"1,204 rows"``)."""

    def __call__(self, n: int = 1, /, postfix: str | None = None) -> None: ...


def nothing(_n: int = 1, /, postfix: str | None = None) -> None:
    """The ``advance`` of a task not shown (a default for functions taking one)."""
    return None


def enabled() -> bool:
    """Whether a front end asked for progress (so a caller may skip computing a total)."""
    return _SHOWN.get() is not None


@contextmanager
def reporting(shown: bool | None = None, stream: TextIO | None = None) -> Iterator[bool]:
    """Show the tasks started inside this block on ``stream`` (stderr): ``shown`` True
    always, False never, None when ``stream`` is a terminal. Yields whether they are shown."""
    out = stream if stream is not None else sys.stderr
    on = _isatty(out) if shown is None else shown
    token = _SHOWN.set(out if on else None)
    try:
        yield on
    finally:
        _SHOWN.reset(token)


def note(line: str) -> None:
    """Print ``line`` where progress goes (above any bar), when progress is shown: a step
    worth a line of its own (a Spark stratum's rows and seconds)."""
    out = _SHOWN.get()
    if out is None:
        return
    from tqdm import tqdm

    tqdm.write(line, file=out)
    out.flush()


def task(description: str, total: int | None = None, unit: str = "it",
         delay: float = 0.5) -> AbstractContextManager[Advance]:
    """A unit of long work; yields ``advance(n)`` to call as it goes (a no-op when progress is
    not shown). ``total``: the amount of work, when known (then the bar shows a percentage
    and an estimate of the time left)."""
    out = _SHOWN.get()
    if out is None:
        return _QUIET  # one shared context: a task not shown costs a lookup and two calls
    return _shown(out, description, total, unit, delay)


_QUIET: AbstractContextManager[Advance] = nullcontext(nothing)


def each(description: str, items: Sequence[T], unit: str = "it",
         postfix: Callable[[], str] | None = None, delay: float = 0.5) -> Iterable[T]:
    """``items``, advancing a task by one after each (``postfix()``: the text after the bar,
    asked then). Not shown, this is ``items`` itself: a loop pays nothing per item (for loops
    on fast paths, such as a transaction's strata)."""
    if _SHOWN.get() is None:
        return items
    return _each(description, items, unit, postfix, delay)


def _each(description: str, items: Sequence[T], unit: str,
          postfix: Callable[[], str] | None, delay: float) -> Iterator[T]:
    with task(description, len(items), unit, delay) as advance:
        for x in items:
            yield x
            advance(1, postfix=postfix() if postfix is not None else None)


@contextmanager
def _shown(out: TextIO, description: str, total: int | None, unit: str,
           delay: float) -> Iterator[Advance]:
    shown = _Task(out, description, total, unit, _delay(delay))
    _TICKER.add(shown)
    try:
        yield shown.advance
    finally:
        _TICKER.remove(shown)
        if shown.bar is not None:
            shown.bar.close()


class _Task:
    """A task shown: its tqdm bar is made only once the task has lasted ``delay`` seconds
    (by the first ``advance`` after that, or by the ticker), so quick work neither draws nor
    imports tqdm; until then ``advance`` only counts."""

    def __init__(self, out: TextIO, description: str, total: int | None, unit: str,
                 delay: float) -> None:
        self.out, self.description, self.total, self.unit = out, description, total, unit
        self.start = time.time()  # tqdm's clock
        self.due = self.start + delay
        self.n = 0
        self.postfix: str | None = None
        self.bar: Any = None
        self.terminal = _isatty(out)
        #: how often the ticker redraws the bar when its work does not advance; when it did
        self.every = TICK if self.terminal else 10.0
        self.drawn = 0.0
        if delay <= 0:
            self.draw()

    def advance(self, n: int = 1, /, postfix: str | None = None) -> None:
        bar = self.bar
        if bar is None:
            with _TICKER.lock:  # the ticker may be drawing it right now
                if self.bar is None:
                    self.n += n
                    if postfix is not None:
                        self.postfix = postfix
                    if time.time() >= self.due:
                        self.draw()
                    return
            bar = self.bar
        if postfix is not None:
            bar.set_postfix_str(postfix, refresh=False)
        bar.update(n)

    def draw(self) -> None:
        """Make the bar and draw it (its clock started with the task)."""
        from tqdm import tqdm  # only when a bar is drawn: `import grantlog` stays light

        out, terminal = self.out, self.terminal
        # off a terminal (a log, CI) bars are not stacked (no cursor movements) and each one's
        # last state stays as a line; a terminal that reports no size (a bare pty) gets 80 x 20
        # (tqdm would draw nothing)
        sized = terminal and _width(out) > 0
        bar = tqdm(total=self.total, desc=self.description, unit=self.unit, file=out,
                   initial=self.n, delay=1e-9,  # not drawn by tqdm before its clock is set
                   leave=not terminal, unit_scale=self.unit == "B", dynamic_ncols=sized,
                   ncols=None if sized or not terminal else 80,
                   nrows=None if sized or not terminal else 20,
                   mininterval=0.2 if terminal else 2.0, position=None if terminal else 0)
        bar.initial, bar.start_t = 0, self.start  # the rate and the time over the whole task
        if self.postfix is not None:
            bar.set_postfix_str(self.postfix, refresh=False)
        bar.refresh()
        # tqdm clears (or leaves) at close only a bar its updates drew: this one was drawn
        bar.last_print_t = self.drawn = time.time()
        self.bar = bar


class _Ticker:
    """One thread, started with the first task shown, that draws each bar once its task has
    lasted its delay, and redraws each bar not drawn for a while: the elapsed time runs on
    while one step lasts (tqdm draws only when its work advances)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.tasks: set[_Task] = set()
        self.thread: threading.Thread | None = None

    def add(self, shown: _Task) -> None:
        with self.lock:
            self.tasks.add(shown)
            if self.thread is None:
                self.thread = threading.Thread(target=self.run, name="grantlog-progress",
                                               daemon=True)
                self.thread.start()

    def remove(self, shown: _Task) -> None:
        with self.lock:  # never drawn once removed (it is closed next)
            self.tasks.discard(shown)

    def run(self) -> None:
        while True:
            time.sleep(TICK / 4)
            with self.lock:
                now = time.time()
                for shown in self.tasks:
                    bar = shown.bar
                    if bar is None:
                        if now >= shown.due:
                            shown.draw()
                    elif now - max(shown.drawn, bar.last_print_t) >= shown.every:
                        bar.refresh()
                        shown.drawn = now


_TICKER = _Ticker()


def _delay(default: float) -> float:
    text = os.environ.get(DELAY_VARIABLE)
    if text is None:
        return default
    try:
        return max(0.0, float(text))
    except ValueError:
        return default


def _width(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 0


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: not a terminal
        return False
