"""The benchmarks' one harness: timing, percentiles, results writing, the git and machine state,
and the plumbing of the HTTP benchmarks (a store loaded, ``grantlog serve`` started, wrk).

Every ``benchmarks/*.py`` script takes these from here instead of keeping its own copy:

* timing: :func:`timed` (best / median of N after a warm-up, ``time.perf_counter_ns``),
  :func:`each_timed` (calls timed one by one within a time budget), :func:`deadline` (a
  time budget for a block), :func:`peak_rss_kib`;
* percentiles: :func:`pct` (nearest rank, as the in-process scripts report them),
  :func:`pct_floor` (the index ``int(q * n)``, as the store and service scripts report them),
  :func:`dist_us`;
* results: :func:`replace_section` (a ``## `` section of RESULTS.md by its heading),
  :func:`replace_marked` (a section between two ``<!-- -->`` markers), :func:`run_info`;
* state: :func:`head`, :func:`git_state` (commit + a dirty flag over chosen folders),
  :func:`machine` (cores, Python, platform, load average), :func:`now`;
* HTTP: :func:`need_wrk`, :func:`world` (the workload and its checks), :func:`load_store`,
  :func:`start_server` (tests/httpserver.py's ``serve``, the one copy the service tests and the
  benchmarks share), :func:`stop`, :func:`wrk` and :func:`post_lua`;
* tests/ on ``sys.path``, for its ``pgserver`` (a throwaway PostgreSQL) and ``httpserver``.

Nothing here imports grantlog at module level, so a script may run under another revision's
venv (benchmarks/compare_revisions.py does).
"""

from __future__ import annotations

import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: benchmarks/RESULTS.md, the latest numbers, one section per benchmark
RESULTS = HERE / "RESULTS.md"
T = TypeVar("T")
# tests/ holds the helpers the tests and the benchmarks share (pgserver, httpserver): importable
# once this module is (appended: nothing of the benchmarks' is shadowed)
if str(ROOT / "tests") not in sys.path:
    sys.path.append(str(ROOT / "tests"))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- timing and percentiles ------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Seconds of each timed run (the warm-up runs left out) and the last run's result."""

    times: tuple[float, ...]
    result: Any = None

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def timed(fn: Callable[[], Any], repeat: int = 3, warmup: int = 0,
          setup: Callable[[], Any] | None = None) -> Timing:
    """``fn()`` run ``warmup`` times untimed, then ``repeat`` times, each timed with
    ``time.perf_counter_ns`` (``setup()`` before each run, untimed: e.g. ``gc.collect``)."""
    for _ in range(warmup):
        fn()
    times = []
    result = None
    for _ in range(repeat):
        if setup is not None:
            setup()
        result = None  # the last run's result is not kept alive through the next run
        t0 = time.perf_counter_ns()
        result = fn()
        times.append((time.perf_counter_ns() - t0) / 1e9)
    return Timing(tuple(times), result)


def each_timed(fn: Callable[..., T], calls: Iterable[tuple[Any, ...]], budget: float,
               ) -> Iterator[tuple[tuple[Any, ...], T, int]]:
    """``(args, fn(*args), ns)`` for each ``args`` of ``calls``, the call timed with
    ``time.perf_counter_ns``, until ``calls`` end or ``budget`` seconds have passed (the work
    done on each yield counts in the budget, not in ``ns``)."""
    pc = time.perf_counter_ns
    stop = time.perf_counter() + budget
    for q in calls:
        a = pc()
        d = fn(*q)
        ns = pc() - a
        yield q, d, ns
        if time.perf_counter() > stop:
            break


class Timeout(Exception):
    pass


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`Timeout` in the block after ``seconds`` (SIGALRM, main thread: Python code
    is interrupted at once, a call into C/Rust when it returns)."""
    def fire(signum: int, frame: Any) -> None:
        raise Timeout()

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def peak_rss_kib() -> int:
    """This process's peak resident set size so far, KiB (Linux's ``ru_maxrss``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def pct(xs: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) by nearest rank over ``n - 1``; NaN for no values."""
    s = sorted(xs)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def pct_floor(xs: Sequence[float], q: float) -> float:
    """The ``q`` quantile as the value at index ``int(q * n)`` of the sorted values."""
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def dist_us(ns: Sequence[int]) -> dict[str, float]:
    """Nanosecond durations as µs: count, p50, p99, mean, max."""
    us = [x / 1000 for x in ns]
    return {"n": len(us), "p50": pct(us, 0.5), "p99": pct(us, 0.99),
            "mean": statistics.fmean(us) if us else float("nan"),
            "max": max(us) if us else float("nan")}


# -- git and machine state -------------------------------------------------------------------


def now() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def head(root: Path = ROOT) -> str:
    """The short commit of ``root``'s checkout ('' outside git)."""
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, cwd=root).stdout.strip()


def git_state(*paths: str, label: str = "engine", root: Path = ROOT) -> str:
    """The short commit, with `` + uncommitted <label> changes`` when ``git status`` shows
    changes under ``paths``; ``unknown`` outside git."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *paths], cwd=root,
                               capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + (f" + uncommitted {label} changes" if dirty else "")


def machine() -> dict[str, Any]:
    """Cores, Python, the platform and the 1/5/15-minute load average now."""
    return {"cores": os.cpu_count(), "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
            "load": os.getloadavg()}


def run_info() -> dict[str, str]:
    """``when`` (UTC, to the minute) and ``git`` (the short commit) of a run."""
    return {"when": now(), "git": head()}


# -- results ---------------------------------------------------------------------------------


def replace_section(heading: str, text: str, path: Path = RESULTS) -> None:
    """Replace one section of ``path`` (from its ``## `` heading to the next) with ``text``, or
    append it."""
    old = path.read_text(encoding="utf-8")
    if heading in old:
        start = old.index(heading)
        nxt = old.find("\n## ", start + len(heading))
        old = old[:start] + (old[nxt + 1:] if nxt >= 0 else "")
    path.write_text(old.rstrip("\n") + "\n\n" + text, encoding="utf-8")


def replace_marked(path: Path, begin: str, end: str, block: str,
                   header: str = "# Benchmark results\n") -> None:
    """Replace what stands from ``begin`` to ``end`` (both markers included) in ``path`` with
    ``block`` (which holds them), or append ``block``; a missing file starts as ``header``.
    The file is read right before it is written."""
    text = path.read_text(encoding="utf-8") if path.exists() else header
    if begin in text and end in text:
        pre, rest = text.split(begin, 1)
        _, post = rest.split(end, 1)
        text = pre + block + post
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


# -- HTTP: a store, the server, wrk ----------------------------------------------------------

#: the start of a wrk script: ``bodies``, the lines of the file ``%(checks)s`` (one JSON request
#: body each), and ``i``, the request counter
LUA_BODIES = """
local bodies = {}
local n = 0
for line in io.lines("%(checks)s") do n = n + 1; bodies[n] = line end
local i = 0
"""


def post_lua(bodies: Path, path: str = "/v1/check", token: str | None = None) -> str:
    """A wrk script POSTing the lines of ``bodies`` to ``path`` in turn (with the bearer
    ``token``)."""
    auth = f', ["Authorization"] = "Bearer {token}"' if token else ""
    return LUA_BODIES % {"checks": bodies} + f"""request = function()
  i = i % n + 1
  return wrk.format("POST", "{path}", {{["Content-Type"] = "application/json"{auth}}},
                    bodies[i])
end
"""


def need_wrk(target: str) -> None:
    """Exit with how to install wrk when it is missing (``make target`` installs it)."""
    if shutil.which("wrk") is None:
        sys.exit(f"wrk is not installed: `apt-get install wrk` (or `make {target}`)")


def world(rules: Path, size: int) -> tuple[Any, Any, Any]:
    """``rules`` compiled, the Gravitino-shaped workload of ``size`` tables (seed 1) and a
    sampler of its checks (seed 3)."""
    import gravitino_workload as gw

    import grantlog

    w = gw.generate(size, seed=1)
    return grantlog.compile(paths=[str(rules)]), w, gw.Sampler(w, seed=3)


def load_store(store: str, program: Any, w: Any) -> None:
    """A workload's facts (``w.facts``: relation -> rows) into a new store."""
    from grantlog.store import open_store

    st = open_store(store, program, create=True)
    with st.writing() as wr:
        for rel, rows in w.facts.items():
            wr.load(rel, rows)
    st.close()


def _httpserver() -> Any:
    """tests/httpserver.py, the one copy of starting and stopping ``grantlog serve``."""
    import httpserver

    return httpserver


def start_server(rules: Path, store: str, tmp: Path, *extra: str,
                 ) -> tuple[subprocess.Popen[bytes], str]:
    """``grantlog serve RULES --store STORE *extra`` on a free port, once /readyz answers (the
    store loaded: up to 300 s); its stderr in a file in ``tmp``, raised if it dies first."""
    got: tuple[subprocess.Popen[bytes], str] = _httpserver().serve(
        tmp, str(rules), "--store", store, *extra, env={"PYTHONHASHSEED": "0"}, ready="/readyz",
        timeout=300)
    return got


def stop(server: subprocess.Popen[bytes]) -> None:
    """Terminate the server; killed if it has not ended within 30 s."""
    _httpserver().stop(server)


def _ms(v: str) -> float:
    for unit, f in (("us", 1e-3), ("ms", 1.0), ("s", 1e3), ("m", 6e4)):
        if v.endswith(unit):
            return float(v[: -len(unit)]) * f
    return float(v)


def wrk(url: str, script: Path, connections: int, seconds: int,
        timeout: float | None = None) -> dict[str, Any]:
    """One wrk round (2 threads, ``--latency``): p50/p75/p90/p99 and max (ms), requests and
    requests/s, non-2xx, socket errors by kind, ``GRANTLOG k=v`` lines of the script's
    ``done``, and wrk's output as ``raw``. ``timeout``: wrk's request timeout in seconds
    (default wrk's 2 s)."""
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency"]
    if timeout is not None:
        cmd += ["--timeout", f"{timeout:g}s"]
    out = subprocess.run([*cmd, "-s", str(script), url], capture_output=True, text=True,
                         check=True)
    res: dict[str, Any] = {"raw": out.stdout, "non2xx": 0, "socket_errors": {}}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("50%", "75%", "90%", "99%"):
            res[f"p{parts[0][:-1]}_ms"] = round(_ms(parts[1]), 3)
        elif line.startswith("Requests/sec:"):
            res["rps"] = float(parts[1])
        elif "requests in" in line:
            res["requests"] = int(parts[0])
        elif line.startswith("GRANTLOG"):
            for kv in parts[1:]:
                k, v = kv.split("=")
                res[k] = int(v)
        elif "Non-2xx" in line:
            res["non2xx"] = int(parts[-1])
        elif line.strip().startswith("Socket errors"):  # connect 0, read 0, write 0, timeout 0
            for kv in line.split(":", 1)[1].split(","):
                k, v = kv.split()
                res["socket_errors"][k] = int(v)
        elif len(parts) > 3 and parts[0] == "Latency" and "max_ms" not in res:
            res["max_ms"] = round(_ms(parts[3]), 3)
    return res
