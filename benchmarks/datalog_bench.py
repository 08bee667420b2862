#!/usr/bin/env python
"""grantlog vs pyDatalog on the same Datalog programs and the same facts, in the same run.

Usage (from the repository root)::

    .venv/bin/python benchmarks/datalog_bench.py                 # full sizes, writes RESULTS.md
    .venv/bin/python benchmarks/datalog_bench.py --quick         # small sizes, ~1 minute
    .venv/bin/python benchmarks/datalog_bench.py --repeat 5 --pyd-repeat 3 --cases tree,sg
    .venv/bin/python benchmarks/datalog_bench.py --profile tree  # cProfile of the grantlog side

Cases (see benchmarks/README.md for the shapes and why they were chosen):

* ``tree``  — transitive closure of a random recursive tree (100,000 nodes);
* ``graph`` — transitive closure of a random directed graph (2,000 nodes, 3,000 edges);
* ``sg``    — same-generation on a layered random tree (10,000 nodes, 40 per generation).

Every measurement runs in a fresh subprocess (this script with ``--worker``): pyDatalog keeps
global state, and a fresh process gives each engine its own peak RSS. The facts are built once,
in the parent, and handed to the workers as a pickle file; loading them is not timed.

Before any timing is reported, the number of result facts and a SHA-256 digest of the sorted
result set from every grantlog run and every pyDatalog run must agree with each other and with a
count computed directly (without Datalog) by this script; otherwise the script exits with an
error.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as _dt
import hashlib
import importlib.metadata
import json
import os
import pickle
import platform
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import HERE, ROOT, git_state, peak_rss_kib, replace_marked

#: the folders whose uncommitted changes the results mention
CODE = ("engine", "grammar", "grantlog")
RESULTS = HERE / "RESULTS.md"

Row = tuple[Any, ...]
Run = tuple[dict[str, float], set[Row], dict[str, Any]]  # phase seconds, result rows, extras

# -- the programs (identical rules, in each engine's syntax) ---------------------------------------

TC_GRANTLOG = """\
path(X, Y) :- edge(X, Y).
path(X, Z) :- path(X, Y), edge(Y, Z).
"""
TC_PYDATALOG = """
path(X,Y) <= edge(X,Y)
path(X,Z) <= path(X,Y) & edge(Y,Z)
"""
SG_GRANTLOG = """\
sg(X, Y) :- parent(X, P), parent(Y, P), X != Y.
sg(X, Y) :- parent(X, A), sg(A, B), parent(Y, B).
"""
SG_PYDATALOG = """
sg(X,Y) <= parent(X,P) & parent(Y,P) & (X != Y)
sg(X,Y) <= parent(X,A) & sg(A,B) & parent(Y,B)
"""

# -- fact generators (deterministic: fixed seeds, no hash-order dependence) -----------------------


def random_recursive_tree(n: int, seed: int) -> list[tuple[int, int]]:
    """``edge(P, C)``: node ``C`` in 1..n-1 hangs below a uniformly random earlier node ``P``.

    Expected depth ~ ln(n), so the closure (= sum of depths) is about n·ln(n) pairs.
    """
    rnd = random.Random(seed)
    return [(rnd.randrange(c), c) for c in range(1, n)]


def random_digraph(n: int, m: int, seed: int) -> list[tuple[int, int]]:
    """``edge(A, B)``: ``m`` distinct edges drawn uniformly among the n·(n-1) non-loop pairs."""
    rnd = random.Random(seed)
    edges: set[tuple[int, int]] = set()
    out: list[tuple[int, int]] = []
    while len(out) < m:
        a, b = rnd.randrange(n), rnd.randrange(n)
        if a != b and (a, b) not in edges:
            edges.add((a, b))
            out.append((a, b))
    return out


def layered_tree(n: int, width: int, containers: int, seed: int) -> list[tuple[int, int]]:
    """``parent(C, P)``: a deep, narrow hierarchy built generation by generation.

    Node 0 is the root (generation 0). Nodes 1, 2, ... fill generations of ``width`` nodes each
    (the last one possibly partial). Every node hangs below a uniformly random *container* of
    the previous generation; each generation's containers are ``containers`` of its nodes drawn
    at random (the root is generation 0's only container). Like a folder tree whose levels hold
    ``width`` entries, ``containers`` of them sub-folders.
    """
    rnd = random.Random(seed)
    out = []
    prev = [0]
    gen: list[int] = []
    for c in range(1, n):
        gen.append(c)
        out.append((c, rnd.choice(prev)))
        if len(gen) == width:
            prev = rnd.sample(gen, containers)
            gen = []
    return out


# -- direct (non-Datalog) answers, a third opinion on the result size -----------------------------


def closure_size(edges: Iterable[tuple[Any, Any]]) -> int:
    """|transitive closure| by one DFS per source node."""
    adj: dict[Any, list[Any]] = defaultdict(list)
    nodes: set[Any] = set()
    for a, b in edges:
        adj[a].append(b)
        nodes.add(a)
        nodes.add(b)
    total = 0
    for s in nodes:
        seen: set[Any] = set()
        stack = list(adj.get(s, ()))
        while stack:
            x = stack.pop()
            if x not in seen:
                seen.add(x)
                stack.extend(adj.get(x, ()))
        total += len(seen)
    return total


def same_generation_size(parent: Iterable[tuple[Any, Any]]) -> int:
    """In a tree, sg(X, Y) holds exactly for X != Y at the same depth: sum over depths of c·(c-1).

    (Their ancestors one level below the lowest common ancestor are siblings; the pairs of
    ancestors below that are sg by the recursive rule.)"""
    up = dict(parent)
    depth: dict[Any, int] = {}
    for node in [*up, *up.values()]:
        chain = []
        while node not in depth:
            if node not in up:  # a root
                depth[node] = 0
                break
            chain.append(node)
            node = up[node]
        d = depth[node]
        for y in reversed(chain):
            d += 1
            depth[y] = d
    return sum(c * (c - 1) for c in Counter(depth.values()).values())


# -- cases ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    key: str
    title: str
    shape: str
    base: str
    result: str
    grantlog: str
    pydatalog: str
    build: Callable[[], list[tuple[int, int]]]
    expected: Callable[[list[Row]], int]


def cases(quick: bool) -> dict[str, Case]:
    tree_n = 10_000 if quick else 100_000
    g_n, g_m = (400, 600) if quick else (2_000, 3_000)
    sg_n, sg_w, sg_k = (1_000, 10, 3) if quick else (10_000, 40, 4)
    return {
        "tree": Case(
            "tree", f"TC, {tree_n:,}-node tree",
            f"random recursive tree, {tree_n:,} nodes, seed 1", "edge", "path",
            TC_GRANTLOG, TC_PYDATALOG,
            lambda: random_recursive_tree(tree_n, 1), closure_size),
        "graph": Case(
            "graph", f"TC, {g_n:,}-node random digraph",
            f"uniform random digraph, {g_n:,} nodes, {g_m:,} distinct edges, no loops, seed 42",
            "edge", "path", TC_GRANTLOG, TC_PYDATALOG,
            lambda: random_digraph(g_n, g_m, 42), closure_size),
        "sg": Case(
            "sg", f"same-generation, {sg_n:,}-node tree",
            f"layered random tree, {sg_n:,} nodes, {sg_w} per generation of which {sg_k} "
            "have children, seed 7",
            "parent", "sg", SG_GRANTLOG, SG_PYDATALOG,
            lambda: layered_tree(sg_n, sg_w, sg_k, 7), same_generation_size),
    }


def to_ids(rows: list[tuple[int, int]], ids: str) -> list[Row]:
    if ids == "int":
        return list(rows)
    return [tuple(f"n{v}" for v in row) for row in rows]


def digest(rows: Iterable[Row]) -> str:
    h = hashlib.sha256()
    for row in sorted(rows):
        h.update(repr(row).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


# -- workers (one measurement per process) --------------------------------------------------------


def run_grantlog(case: Case, facts: list[Row]) -> Run:
    """The public API path: compile, a fresh Reasoner, one bulk insert, the first full read.

    Whether the evaluation happens in ``insert`` (a transaction maintained incrementally) or
    lazily in the first ``rows`` depends on the engine version; both are inside the timing."""
    import grantlog

    t0 = time.perf_counter()
    program = grantlog.compile(case.grantlog)
    t1 = time.perf_counter()
    r = grantlog.Reasoner(program)
    r.insert(case.base, facts)
    t2 = time.perf_counter()
    rows = r.rows(case.result)
    t3 = time.perf_counter()
    return {"compile": t1 - t0, "insert": t2 - t1, "read": t3 - t2}, rows, {"reasoner": r}


def rerun_from_scratch(case: Case, r: Any) -> dict[str, Any]:
    """``rebuild()`` (throw the materialization away, stratified semi-naive from scratch) and
    the same full read, timed; with the evaluator's statistics of that run."""
    t0 = time.perf_counter()
    r.rebuild()
    rows = r.rows(case.result)
    dt = time.perf_counter() - t0
    stats = r.stats
    return {
        "scratch": dt,
        "scratch_count": len(rows),
        "scratch_digest": digest(rows),
        "iterations": sum(s.iterations for s in stats.strata) if stats else None,
        "derived": stats.derived if stats else None,
    }


def run_pydatalog(case: Case, facts: list[Row]) -> Run:
    from pyDatalog import pyDatalog

    pyDatalog.clear()  # a fresh process anyway; pyDatalog keeps global state
    t0 = time.perf_counter()
    for row in facts:
        pyDatalog.assert_fact(case.base, *row)
    t1 = time.perf_counter()
    pyDatalog.load(case.pydatalog)
    t2 = time.perf_counter()
    answer = pyDatalog.ask(f"{case.result}(X,Y)")  # all answers, materialized as a list
    answers = answer.answers if answer else []
    t3 = time.perf_counter()
    rows = set(map(tuple, answers))
    extra = {"answers": len(answers)}
    return {"assert": t1 - t0, "load": t2 - t1, "query": t3 - t2}, rows, extra


def worker(engine: str, case_key: str, quick: bool, facts_file: str) -> int:
    case = cases(quick)[case_key]
    with open(facts_file, "rb") as fh:
        facts: list[Row] = pickle.load(fh)
    if engine == "grantlog":
        import grantlog  # noqa: F401  (import cost is not part of the measurement)
        fn = run_grantlog
    else:
        from pyDatalog import pyDatalog  # noqa: F401
        fn = run_pydatalog
    rss0 = peak_rss_kib()
    cpu0 = time.process_time()
    phases, rows, extra = fn(case, facts)
    cpu = time.process_time() - cpu0
    rss1 = peak_rss_kib()  # before digesting, which allocates a sorted copy
    out = {
        "engine": engine,
        "case": case_key,
        "phases": phases,
        "total": sum(phases.values()),
        "cpu": cpu,
        "count": len(rows),
        "digest": digest(rows),
        "rss_before_kb": rss0,
        "rss_peak_kb": rss1,
        **extra,
    }
    if engine == "grantlog" and hasattr(extra["reasoner"], "rebuild"):
        out.update(rerun_from_scratch(case, extra["reasoner"]))
    out.pop("reasoner", None)
    print(json.dumps(out))
    return 0


# -- the driver -----------------------------------------------------------------------------------


@dataclass
class Measured:
    case: Case
    base_facts: int
    expected: int
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


class BenchError(RuntimeError):
    pass


def spawn(engine: str, case: Case, quick: bool, facts_file: str, timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", engine, "--cases", case.key,
           "--facts-file", facts_file] + (["--quick"] if quick else [])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        raise BenchError(f"{engine} on {case.key} did not finish within {timeout:.0f} s "
                         "(raise --timeout)") from e
    if p.returncode != 0:
        raise BenchError(f"{engine} on {case.key} failed (exit {p.returncode}):\n{p.stderr}")
    result: dict[str, Any] = json.loads(p.stdout.strip().splitlines()[-1])
    return result


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def measure(case: Case, args: argparse.Namespace, tmp: str) -> Measured:
    facts = to_ids(case.build(), args.ids)
    expected = case.expected(facts)
    m = Measured(case, len(facts), expected)
    facts_file = os.path.join(tmp, f"{case.key}.pickle")
    with open(facts_file, "wb") as fh:
        pickle.dump(facts, fh, protocol=pickle.HIGHEST_PROTOCOL)
    log(f"[{case.key}] {case.shape}: {len(facts):,} {case.base} facts, "
        f"expect {expected:,} {case.result} facts")
    plan = [("grantlog", args.repeat), ("pyDatalog", args.pyd_repeat)]
    for engine, n in plan:
        m.runs[engine] = []
        for i in range(n):
            r = spawn(engine, case, args.quick, facts_file, args.timeout)
            m.runs[engine].append(r)
            log(f"[{case.key}] {engine} run {i + 1}/{n}: {r['total']:.3f} s, "
                f"{r['count']:,} facts, peak RSS {r['rss_peak_kb'] / 1024:.0f} MiB")
    verify(m)
    return m


def verify(m: Measured) -> None:
    """Every run of both engines (and grantlog's from-scratch re-evaluation): the size computed
    directly, the same digest of the set; the evaluator's own count agrees."""
    problems = []
    digests = set()
    res = m.case.result

    def size(what: str, n: int) -> None:
        if n != m.expected:
            problems.append(f"{what}: {n:,} {res} facts, direct count is {m.expected:,}")

    for engine, runs in m.runs.items():
        for i, r in enumerate(runs, 1):
            digests.add(r["digest"])
            size(f"{engine} run {i}", r["count"])
            if "scratch_count" in r:
                digests.add(r["scratch_digest"])
                size(f"grantlog run {i} (rebuild)", r["scratch_count"])
            if r.get("derived") is not None and r["derived"] != r["count"]:
                problems.append(f"grantlog run {i}: stats.derived={r['derived']:,} but "
                                f"|{res}|={r['count']:,}")
            if engine == "pyDatalog" and r["answers"] != r["count"]:
                problems.append(f"pyDatalog run {i}: {r['answers']:,} answers but "
                                f"{r['count']:,} distinct")
    if len(digests) != 1:
        problems.append(f"the result sets differ between runs/engines (digests {sorted(digests)})")
    if problems:
        raise BenchError(f"[{m.case.key}] engines disagree; no timings reported:\n  "
                         + "\n  ".join(problems))


def med(runs: Sequence[dict[str, Any]], key: str = "total") -> float:
    return statistics.median(r[key] for r in runs)


def med_phase(runs: Sequence[dict[str, Any]], phase: str) -> float:
    return statistics.median(r["phases"][phase] for r in runs)


def mib(kb: float) -> str:
    return f"{kb / 1024:,.0f}"


def tables(ms: Sequence[Measured], args: argparse.Namespace) -> str:
    g_n, p_n = args.repeat, args.pyd_repeat
    scratch = all("scratch" in r for m in ms for r in m.runs["grantlog"])
    lines = [
        f"| case | base facts | derived facts | grantlog s (median of {g_n}) | derived facts/s "
        + ("| grantlog from-scratch eval s | from-scratch facts/s " if scratch else "")
        + f"| pyDatalog s (median of {p_n}) | ratio pyDatalog/grantlog | peak RSS grantlog MiB "
        "| peak RSS pyDatalog MiB |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|" + ("--:|--:|" if scratch else ""),
    ]
    for m in ms:
        g, p = m.runs["grantlog"], m.runs["pyDatalog"]
        gt, pt = med(g), med(p)
        g_rss, p_rss = (max(r["rss_peak_kb"] for r in x) for x in (g, p))
        sc = ""
        if scratch:
            st = med(g, "scratch")
            sc = f"| {st:.3f} | {m.expected / st:,.0f} "
        lines.append(
            f"| {m.case.title} | {m.base_facts:,} | {m.expected:,} | {gt:.3f} "
            f"| {m.expected / gt:,.0f} {sc}| {pt:.2f} | {pt / gt:.1f}x "
            f"| {mib(g_rss)} | {mib(p_rss)} |")
    lines += [
        "",
        "Phase breakdown: medians in seconds, min/max of the wall totals, median CPU time of the "
        "worker over the timed part (less sensitive to a busy machine), semi-naive rounds of the "
        "from-scratch evaluation, RSS of a worker before the engine ran (interpreter + imports + "
        "fact list):",
        "",
        "| case | grantlog compile | insert | first read | grantlog min / max | grantlog CPU "
        "| facts per CPU-s | rounds | pyDatalog assert | load | query | pyDatalog min / max "
        "| pyDatalog CPU | RSS before (g / p) MiB |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for m in ms:
        g, p = m.runs["grantlog"], m.runs["pyDatalog"]
        gt = [r["total"] for r in g]
        pt = [r["total"] for r in p]
        lines.append(
            f"| {m.case.key} | {med_phase(g, 'compile'):.3f} | {med_phase(g, 'insert'):.3f} "
            f"| {med_phase(g, 'read'):.3f} | {min(gt):.3f} / {max(gt):.3f} "
            f"| {med(g, 'cpu'):.3f} | {m.expected / med(g, 'cpu'):,.0f} "
            f"| {g[0].get('iterations')} | {med_phase(p, 'assert'):.2f} "
            f"| {med_phase(p, 'load'):.3f} | {med_phase(p, 'query'):.2f} "
            f"| {min(pt):.2f} / {max(pt):.2f} | {med(p, 'cpu'):.2f} "
            f"| {mib(g[0]['rss_before_kb'])} / {mib(p[0]['rss_before_kb'])} |")
    return "\n".join(lines)


def report(ms: Sequence[Measured], args: argparse.Namespace, argv: Sequence[str],
           started: float, load: tuple[float, float, float]) -> str:
    cmd = " ".join([".venv/bin/python", "benchmarks/datalog_bench.py", *argv])
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    mode = "quick" if args.quick else "full"
    mode += "" if [m.case.key for m in ms] == list(cases(args.quick)) else " (some cases)"
    uname = platform.uname()
    end = os.getloadavg()
    busy = ("; **other jobs competed for the CPUs: wall times are inflated, compare the CPU "
            "column**" if max(load[1], end[1]) > (os.cpu_count() or 1) else "")
    tree = next((m for m in ms if m.case.key == "tree"), None)
    verdicts = []
    if tree is not None and not args.quick:
        rate = tree.expected / med(tree.runs["grantlog"])
        cpu_rate = tree.expected / med(tree.runs["grantlog"], "cpu")
        verdicts.append(f"- ≥ 300,000 derived facts/s on the 100k-node tree closure: "
                        f"**{'met' if rate >= 300_000 else 'NOT met'}** ({rate:,.0f}/s, "
                        "compile + insert + first read, the API path, wall clock; per CPU "
                        f"second {cpu_rate:,.0f}/s)")
        if all("scratch" in r for r in tree.runs["grantlog"]):
            rate = tree.expected / med(tree.runs["grantlog"], "scratch")
            verdicts.append(f"  - from-scratch evaluation alone (`rebuild()` + read): "
                            f"{'met' if rate >= 300_000 else 'not met'} ({rate:,.0f}/s)")
    slower = [m.case.key for m in ms if med(m.runs["pyDatalog"]) <= med(m.runs["grantlog"])]
    verdicts.append("- faster than pyDatalog on every case run: "
                    + ("**met**" if not slower else f"**NOT met** ({', '.join(slower)})"))
    shapes = "\n".join(f"- `{m.case.key}`: {m.case.shape}; {m.base_facts:,} `{m.case.base}` "
                       f"facts → {m.expected:,} `{m.case.result}` facts" for m in ms)
    return f"""\
### {mode} run — {now}

Command: `{cmd}`

- machine: {os.cpu_count()} cores, shared and noisy (1/5/15-min load average at start
  {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}, at the end {end[0]:.2f} / {end[1]:.2f} /
  {end[2]:.2f}){busy}; {uname.system} {uname.release} {uname.machine}
- Python {platform.python_version()} ({platform.python_implementation()}), pyDatalog
  {importlib.metadata.version("pyDatalog")}, grantlog {git_state(*CODE)}
- node ids: {args.ids}; every measurement in a fresh subprocess; grantlog {args.repeat}
  run(s), pyDatalog {args.pyd_repeat} run(s) per case; wall time of the whole benchmark
  {time.time() - started:,.0f} s
- checked before reporting: every run of both engines returned the same set (SHA-256 of the
  sorted rows) of the size computed directly by the script
- grantlog s = `compile` + `Reasoner` + `insert` + first `rows`, the public API path (whichever
  of `insert` and the first read evaluates); from-scratch = `rebuild()` + `rows` in the same
  worker, afterwards

{shapes}

{tables(ms, args)}

Targets:
{chr(10).join(verdicts)}
"""


def update_results(section: str, mode: str, path: Path) -> None:
    begin, end = f"<!-- datalog_bench:{mode} -->", f"<!-- /datalog_bench:{mode} -->"
    header = ("# Benchmark results\n\nWritten by `benchmarks/datalog_bench.py` (see "
              "`benchmarks/README.md`); one section per mode and case selection, each "
              "replaced by its latest run; other benchmark scripts keep their own marked "
              "sections.\n")
    replace_marked(path, begin, end, f"{begin}\n{section}{end}", header)


def profile(case: Case, args: argparse.Namespace) -> None:
    """cProfile of the grantlog side: the API path, then ``rebuild()`` (from scratch)."""
    facts = to_ids(case.build(), args.ids)
    import grantlog  # noqa: F401

    prof = cProfile.Profile()
    prof.enable()
    phases, rows, extra = run_grantlog(case, facts)
    prof.disable()
    print(f"== {case.title}, API path: {len(rows):,} facts, phases {phases}")
    st = pstats.Stats(prof, stream=sys.stdout)
    st.sort_stats("cumulative").print_stats(30)
    st.sort_stats("tottime").print_stats(20)
    r = extra["reasoner"]
    if hasattr(r, "rebuild"):
        prof = cProfile.Profile()
        prof.enable()
        t0 = time.perf_counter()
        r.rebuild()
        n = len(r.rows(case.result))
        dt = time.perf_counter() - t0
        prof.disable()
        print(f"== {case.title}, rebuild() + rows: {n:,} facts in {dt:.3f} s, stats {r.stats}")
        st = pstats.Stats(prof, stream=sys.stdout)
        st.sort_stats("cumulative").print_stats(20)
        st.sort_stats("tottime").print_stats(15)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--repeat", type=int, default=3, help="grantlog runs per case (default 3)")
    ap.add_argument("--pyd-repeat", type=int, default=None,
                    help="pyDatalog runs per case (default: 1 at full size, --repeat with "
                         "--quick; a full-size pyDatalog run takes minutes)")
    ap.add_argument("--cases", default="tree,graph,sg", help="comma-separated: tree,graph,sg")
    ap.add_argument("--ids", choices=("int", "str"), default="int",
                    help="node ids as integers (default) or strings 'n123'")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per measurement")
    ap.add_argument("--results", type=Path, default=RESULTS, help="Markdown file to update")
    ap.add_argument("--no-write", action="store_true", help="do not update the results file")
    ap.add_argument("--profile", metavar="CASE",
                    help="run the grantlog side of one case under cProfile and print it")
    ap.add_argument("--worker", choices=("grantlog", "pyDatalog"), help=argparse.SUPPRESS)
    ap.add_argument("--facts-file", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.pyd_repeat is None:
        args.pyd_repeat = args.repeat if args.quick else 1
    all_cases = cases(args.quick)
    keys = [k.strip() for k in args.cases.split(",") if k.strip()]
    unknown = [k for k in keys if k not in all_cases]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; choose from {sorted(all_cases)}")
    if args.worker:
        return worker(args.worker, keys[0], args.quick, args.facts_file)
    if args.profile:
        if args.profile not in all_cases:
            ap.error(f"unknown case {args.profile!r}")
        profile(all_cases[args.profile], args)
        return 0
    if args.repeat < 1 or args.pyd_repeat < 1:
        ap.error("--repeat and --pyd-repeat must be at least 1")

    started = time.time()
    load = os.getloadavg()
    measured = []
    try:
        with tempfile.TemporaryDirectory(prefix="grantlog-bench-") as tmp:
            for k in keys:
                measured.append(measure(all_cases[k], args, tmp))
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    section = report(measured, args, argv, started, load)
    print(section)
    if not args.no_write:
        mode = "quick" if args.quick else "full"
        if keys != list(all_cases):
            mode += ":" + ",".join(keys)
        if args.ids != "int":
            mode += ":" + args.ids
        update_results(section, mode, args.results)
        log(f"updated {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
