#!/usr/bin/env python
"""grantlog against other policy engines on the Gravitino-shaped workload (issue 6, part 4).

Usage (from the repository root; the engines come with ``pip install -e '.[dev,bench]'``)::

    .venv/bin/python benchmarks/peers_bench.py --sizes 10000,100000
    .venv/bin/python benchmarks/peers_bench.py --sizes 10000 --engines grantlog,clingo,cedar
    .venv/bin/python benchmarks/peers_bench.py --from-json peers.json   # re-render a saved run

Every engine gets the same base facts (benchmarks/gravitino_workload.py, fixed seed) in its own
idiom (benchmarks/peers/<engine>_peer.py) and runs in a fresh subprocess per size, one at a
time, so its memory figures are its own and one engine's state never leaks into another's.

**Agreement first.** Each worker answers the same stratified sample of checks (several hundred
``(user, operation, object)`` triples mixing ALLOW through a directly held role and through a
group, owners, DENY winning, DENY of a prerequisite, missing prerequisites, no privilege,
unregistered users; every operation of ``CHECK_OPS``). The workload's ``Oracle`` and grantlog
are two of the voters. A worker whose answers differ from the oracle's stops before timing
anything; the parent then compares every engine's answers with every other's, and if any
differ it prints the disagreements and reports no timing at all (exit status 1).

Then, per engine and size (warm, after the agreement sample):

* **load**: the engine's own loading of the base facts (conversion to its input format
  included: JSON entities, policy lines, Python objects, program text) + the first check;
* **check**: the same list of sampled checks for every engine (55% load_table, ...), each
  timed with ``perf_counter_ns``, until the list or the time budget ends; p50 / p99;
* **update-to-visible**: a sequence of grants (ALLOW SELECT_TABLE to a role of a user who
  could not load a table) and revokes (of the ALLOW that let a user load a table), the same for
  every engine; time from applying the change until a check returns the new decision (which
  must be the oracle's);
* **bulk**: every load_table decision (all users x every table) of one schema of ~100 tables,
  where the engine has a bulk evaluation of its own; checked against the oracle.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import importlib
import json
import os
import pickle
import platform
import random
import resource
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "RESULTS.md"
CHART = HERE / "peers_latency.png"
BEGIN, END = "<!-- peers_bench -->", "<!-- /peers_bench -->"
HEADING = "## Peers"

sys.path.insert(0, str(HERE))

import gravitino_workload as gw  # noqa: E402
from harness import Timeout, deadline, each_timed, pct, replace_marked  # noqa: E402
from peers import ENGINES  # noqa: E402

ORDER = list(ENGINES)
MEM_LIMIT = 16 * 2**30  # per worker (address space)
BULK_MEM_LIMIT = 8 * 2**30  # the forked bulk run


# -- what every worker computes the same way -------------------------------------------------------


class _Restricted(gw.Oracle):
    """The oracle with the roles reaching a user restricted to direct or to group grants."""

    only = ""

    def roles(self, u: str) -> set[str]:
        if self.only == "direct":
            return set(self.role_of.get(u, ()))
        if self.only == "group":
            out: set[str] = set()
            for g in self.member.get(u, ()):
                out |= self.role_of.get(g, set())
            return out
        return super().roles(u)


def op_class(op: str) -> str:
    if op in ("load_table", "select_table"):
        return "read table"
    if op in ("alter_table", "modify_table", "drop_table", "create_table"):
        return "modify"
    return "load/list schema or catalog"


def category(o: _Restricted, q: tuple[str, str, str]) -> str:
    """What decided the check: an allow through a direct role / a group / ownership, or the
    reason for a denial (the oracle's reason)."""
    ok, why = o.decide(*q)
    if not ok:
        return "deny: " + why
    if why == "owner":
        return "allow: owner"
    got = []
    for only in ("direct", "group"):
        o.only = only
        if o.decide(*q)[0]:
            got.append(only)
        o.only = ""
    if got == ["direct"]:
        return "allow: role held directly"
    if got == ["group"]:
        return "allow: role held through a group"
    return "allow: roles held directly and through a group" if got else "allow: combined"


def agreement_sample(w: gw.Workload, n: int, seed: int,
                     pool: int = 40_000) -> list[tuple[tuple[str, str, str], str]]:
    """``n`` checks stratified over (operation class, category): round robin over the strata
    of ``pool`` sampled checks, so that rare outcomes (owners, DENY winning) are represented."""
    o = _Restricted(w.facts)
    sampler = gw.Sampler(w, seed=seed)
    strata: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    seen: set[tuple[str, str, str]] = set()
    for q in sampler.many(pool):
        if q in seen:
            continue
        seen.add(q)
        strata.setdefault((op_class(q[1]), category(o, q)), []).append(q)
    keys = sorted(strata)
    out: list[tuple[tuple[str, str, str], str]] = []
    i = 0
    while len(out) < n and any(strata.values()):
        k = keys[i % len(keys)]
        i += 1
        if strata[k]:
            out.append((strata[k].pop(0), f"{k[0]} / {k[1]}"))
    return out


Update = tuple[str, tuple[str, ...], tuple[str, str, str], bool]


def update_plan(w: gw.Workload, n: int, seed: int) -> list[Update]:
    """``n`` grants and ``n`` revokes, alternating, each flipping one load_table decision:
    ``(kind, privilege row, observing check, decision expected after the update)``."""
    sim = gw.Oracle(w.facts)
    rng = random.Random(seed)
    sampler = gw.Sampler(w, seed=seed)
    existing = set(w.facts["privilege"])
    revocable = sorted(r for r in existing if r[3] == "allow" and r[1] == "select_table")
    touched: set[tuple[str, ...]] = set()
    plan: list[Update] = []

    def find_grant() -> Update | None:
        for _ in range(20_000):
            u, _, t = sampler.one("load_table")
            rs = sorted(sim.roles(u))
            if not rs or sim.decide(u, "load_table", t)[0]:
                continue
            if not sim.decide(u, "load_schema", w.parent[t])[0]:
                continue
            row = (rng.choice(rs), "select_table", t, "allow")
            if row in existing or row in touched:
                continue
            sim.apply("privilege", row, True)
            if sim.decide(u, "load_table", t)[0]:
                return ("grant", row, (u, "load_table", t), True)
            sim.apply("privilege", row, False)
        return None

    holders: dict[str, list[str]] = {}
    for u in w.users:
        for r in sim.roles(u):
            holders.setdefault(r, []).append(u)

    def find_revoke() -> Update | None:
        for _ in range(20_000):
            row = rng.choice(revocable)
            if row in touched:
                continue
            role, _, obj, _ = row
            tables = w.schema_tables.get(obj) or [obj]
            t = rng.choice(tables)
            if sim.type.get(t) != "table":
                continue
            for u in rng.sample(holders.get(role, []), min(20, len(holders.get(role, [])))):
                if not sim.decide(u, "load_table", t)[0]:
                    continue
                sim.apply("privilege", row, False)
                if not sim.decide(u, "load_table", t)[0]:
                    return ("revoke", row, (u, "load_table", t), False)
                sim.apply("privilege", row, True)
        return None

    for _ in range(n):
        for find in (find_grant, find_revoke):
            got = find()
            if got is not None:
                touched.add(got[1])
                plan.append(got)
    return plan


def bulk_schema(w: gw.Workload) -> str:
    """The ordinary schema whose table count is closest to 100 (not the big one)."""
    return min((s for s in w.schemas if s != w.big_schema),
               key=lambda s: (abs(len(w.schema_tables[s]) - 100), s))


def bulk_in_child(engine: Any, schema: str, users: list[str],
                  budget: float) -> tuple[float | None, set[tuple[str, str]] | None, str | None]:
    """``engine.bulk`` in a forked child (copy-on-write: the loaded engine, untouched by what
    the bulk run grounds or tables), killed after ``budget`` seconds: neither a call into C/Rust
    nor an engine that swallows exceptions can overrun it. Returns (seconds, result, error)."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(rfd)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (BULK_MEM_LIMIT, BULK_MEM_LIMIT))
            t0 = time.perf_counter()
            got = engine.bulk(schema, users)
            payload = pickle.dumps((time.perf_counter() - t0, got, None))
        except BaseException as e:
            payload = pickle.dumps((None, None, f"failed: {type(e).__name__}: {e}"[:300]))
        with os.fdopen(wfd, "wb") as f:
            f.write(payload)
        os._exit(0)
    os.close(wfd)
    data = bytearray()
    stop = time.perf_counter() + budget
    timed_out = False
    with os.fdopen(rfd, "rb", buffering=0) as f:
        while True:
            left = stop - time.perf_counter()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([f], [], [], left)
            if not ready:
                continue
            chunk = f.read(1 << 20)
            if not chunk:
                break
            data += chunk
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return None, None, f"did not finish in {budget:.0f} s"
    if not data:
        return None, None, f"the bulk run died (status {status}; out of memory?)"
    secs, got, err = pickle.loads(bytes(data))
    return secs, got, err


# -- the worker ------------------------------------------------------------------------------------


def worker(args: argparse.Namespace) -> dict[str, Any]:
    res: dict[str, Any] = {"engine": args.engine, "size": args.size}
    out: Path = args.out

    def save() -> None:
        out.write_text(json.dumps(res))

    def log(msg: str) -> None:
        print(f"[{args.engine} {args.size:,}] {msg}", file=sys.stderr, flush=True)

    with suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))
    mod, _, cls = ENGINES[args.engine].partition(":")
    try:
        engine = getattr(importlib.import_module(mod), cls)()
    except ImportError as e:
        res["error"] = f"not installed ({e.name or e})"
        save()
        return res
    res["version"] = engine.version()
    res["describe"] = {k: getattr(engine, k) for k in
                       ("encoding", "check_path", "update_path", "bulk_path")}

    w = gw.generate(args.size, seed=args.seed)
    res["workload"] = gw.summary(w)
    res["base_facts"] = w.n_base_facts
    oracle = gw.Oracle(w.facts)
    sample = agreement_sample(w, args.agree, args.seed + 10)
    timed = gw.Sampler(w, seed=args.seed + 20).many(args.checks)
    plan = update_plan(w, args.updates, args.seed + 30)
    schema = bulk_schema(w)
    gc.collect()
    res["rss_before_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    save()

    # -- load --------------------------------------------------------------------------------------
    first = timed[0]
    try:
        with deadline(args.load_budget):
            t0 = time.perf_counter()
            engine.load(w.facts)
            t1 = time.perf_counter()
            engine.check(*first)
            t2 = time.perf_counter()
    except Timeout:
        res["error"] = f"load did not finish in {args.load_budget:.0f} s"
        save()
        return res
    res["load"] = {"load_s": t1 - t0, "first_check_s": t2 - t1, "total_s": t2 - t0}
    log(f"loaded in {t2 - t0:.2f} s")
    save()

    # -- agreement ---------------------------------------------------------------------------------
    t0 = time.perf_counter()
    got = [engine.check(*q) for q, _ in sample]
    exp = [oracle.decide(*q)[0] for q, _ in sample]
    res["agree"] = {"checks": [list(q) for q, _ in sample], "categories": [c for _, c in sample],
                    "decisions": got, "seconds": time.perf_counter() - t0}
    bad = [(list(q), g, c) for (q, c), g, e in zip(sample, got, exp, strict=True) if g != e]
    log(f"agreement: {len(sample) - len(bad)}/{len(sample)} checks as the oracle "
        f"({time.perf_counter() - t0:.1f} s)")
    if bad:
        res["disagreements"] = bad
        res["error"] = f"{len(bad)} of {len(sample)} checks differ from the oracle"
        save()
        return res
    save()

    # -- check latency -----------------------------------------------------------------------------
    gc.collect()
    ns: list[int] = []
    wrong = 0
    for q, d, t in each_timed(engine.check, timed, args.check_budget):
        ns.append(t)
        wrong += d != oracle.decide(*q)[0]
    us = [x / 1000 for x in ns]
    res["check"] = {"n": len(us), "of": len(timed), "p50_us": pct(us, 0.5),
                    "p99_us": pct(us, 0.99), "mean_us": statistics.fmean(us),
                    "max_us": max(us), "wrong": wrong}
    if wrong:
        res["error"] = f"{wrong} timed checks differ from the oracle"
        save()
        return res
    log(f"check p50 {res['check']['p50_us']:.1f} µs, p99 {res['check']['p99_us']:.1f} µs "
        f"(n={len(us)})")
    save()

    # -- bulk (before the updates: the oracle's reference is the loaded state) ---------------------
    users = sorted(w.users)
    bulk: dict[str, Any] = {"schema": schema, "tables": len(w.schema_tables[schema]),
                            "pairs": len(users) * len(w.schema_tables[schema])}
    secs, got_bulk, err = bulk_in_child(engine, schema, users, args.bulk_budget)
    if err is not None:
        bulk["error"] = err
    elif got_bulk is None:
        bulk["error"] = "no bulk evaluation"
    else:
        want = {(u, t) for u in users for t in w.schema_tables[schema]
                if oracle.decide(u, "load_table", t)[0]}
        if got_bulk != want:
            res["error"] = (f"bulk: {len(got_bulk)} allowed pairs, the oracle says "
                            f"{len(want)} ({len(got_bulk ^ want)} differ)")
            save()
            return res
        bulk.update(seconds=secs, allowed=len(got_bulk))
    res["bulk"] = bulk
    log(f"bulk: {bulk}")
    save()

    # -- updates -----------------------------------------------------------------------------------
    ups: dict[str, list[dict[str, float]]] = {"grant": [], "revoke": []}
    pc = time.perf_counter_ns
    stop = time.perf_counter() + args.update_budget
    for kind, row, q, expect in plan:
        if time.perf_counter() > stop:
            break
        a = pc()
        (engine.grant if kind == "grant" else engine.revoke)(row)
        b = pc()
        d = engine.check(*q)
        c = pc()
        oracle.apply("privilege", row, kind == "grant")
        if d != expect or d != oracle.decide(*q)[0]:
            res["error"] = f"after {kind} {row}: check{q} = {d}, expected {expect}"
            save()
            return res
        ups[kind].append({"apply_us": (b - a) / 1000, "visible_us": (c - a) / 1000})
    res["updates"] = {k: {"n": len(v),
                          "apply_us": statistics.median(x["apply_us"] for x in v) if v else None,
                          "visible_us": statistics.median(x["visible_us"] for x in v)
                          if v else None} for k, v in ups.items()}
    log(f"updates: {res['updates']}")
    res["notes"] = engine.notes()
    res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    save()
    return res


# -- the parent ------------------------------------------------------------------------------------


def run_one(args: argparse.Namespace, engine: str, size: int) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = Path(f.name)
    cmd = [sys.executable, __file__, "--worker", "--engine", engine, "--size", str(size),
           "--out", str(out), "--seed", str(args.seed), "--agree", str(args.agree),
           "--checks", str(args.checks), "--updates", str(args.updates),
           "--check-budget", str(args.check_budget), "--update-budget",
           str(args.update_budget), "--bulk-budget", str(args.bulk_budget),
           "--load-budget", str(args.load_budget)]
    t0 = time.perf_counter()
    try:
        rc: int | None = subprocess.run(cmd, timeout=args.timeout).returncode
    except subprocess.TimeoutExpired:
        rc = None
    wall = time.perf_counter() - t0
    try:
        res: dict[str, Any] = json.loads(out.read_text())
    except (OSError, ValueError):
        res = {"engine": engine, "size": size}
    out.unlink(missing_ok=True)
    if rc != 0 and "error" not in res:
        stage = next((s for s in ("updates", "bulk", "check", "agree", "load") if s in res),
                     "start")
        res["error"] = (f"did not finish in {args.timeout:.0f} s (done: {stage})" if rc is None
                        else f"worker exited with status {rc} after {stage}"
                        + (" (killed: out of memory?)" if rc in (-9, 137) else ""))
    res["wall_s"] = wall
    return res


def compare(results: list[dict[str, Any]]) -> list[str]:
    """Every engine's agreement answers against every other's, per size: the problems found."""
    problems: list[str] = []
    for size in sorted({r["size"] for r in results}):
        voters = [r for r in results if r["size"] == size and "agree" in r]
        for r in results:
            if r["size"] == size and r.get("disagreements"):
                for q, g, c in r["disagreements"][:20]:
                    problems.append(f"{size:,} tables, {r['engine']}: check{tuple(q)} = {g}, "
                                    f"the oracle says {not g} ({c})")
        if len(voters) < 2:
            continue
        ref = voters[0]
        for r in voters[1:]:
            if r["agree"]["checks"] != ref["agree"]["checks"]:
                problems.append(f"{size:,} tables: {r['engine']} answered a different sample")
                continue
            for q, a, b in zip(ref["agree"]["checks"], ref["agree"]["decisions"],
                               r["agree"]["decisions"], strict=True):
                if a != b:
                    problems.append(f"{size:,} tables: check{tuple(q)}: {ref['engine']} {a}, "
                                    f"{r['engine']} {b}")
    return problems


def fmt_us(us: float | None) -> str:
    if us is None or us != us:
        return "—"
    if us >= 1e6:
        return f"{us / 1e6:,.2f} s"
    if us >= 1000:
        return f"{us / 1000:,.1f} ms"
    return f"{us:,.0f} µs" if us >= 100 else f"{us:,.1f} µs"


def fmt_s(s: float | None) -> str:
    if s is None:
        return "—"
    return f"{s:,.0f} s" if s >= 100 else (f"{s:,.1f} s" if s >= 1 else f"{s * 1000:,.0f} ms")


def ratio(x: float | None, ref: float | None) -> str:
    if x is None or ref is None or ref == 0 or x != x or ref != ref:
        return ""
    r = x / ref
    return f" ({r:,.0f}×)" if r >= 10 else f" ({r:.2g}×)"


def table(results: list[dict[str, Any]], size: int) -> list[str]:
    rows = [r for r in results if r["size"] == size]
    rows.sort(key=lambda r: ORDER.index(r["engine"]) if r["engine"] in ORDER else 99)
    ref = next((r for r in rows if r["engine"] == "grantlog" and "error" not in r), None)

    def get(r: dict[str, Any] | None, *path: str) -> Any:
        for p in path:
            if r is None or not isinstance(r, dict):
                return None
            r = r.get(p)
        return r

    out = ["| engine | load + first check | check p50 | check p99 | checks timed | "
           "grant → visible | revoke → visible | bulk: one schema, all users | peak RSS |",
           "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in rows:
        name = r["engine"]
        if "load" not in r:
            out.append(f"| {name} | {r.get('error', '—')} | | | | | | | |")
            continue
        if r.get("error") and "check" not in r:
            out.append(f"| {name} | {fmt_s(r['load']['total_s'])} | {r['error']} | | | | | | |")
            continue
        c = r.get("check", {})
        b = r.get("bulk", {})
        if "seconds" in b:
            bulk = (f"{fmt_s(b['seconds'])}{ratio(b['seconds'], get(ref, 'bulk', 'seconds'))} "
                    f"({b['allowed']:,} of {b['pairs']:,} allowed)")
        else:
            bulk = b.get("error", "—")
        ups = r.get("updates", {})
        cells = [
            fmt_s(r["load"]["total_s"]) + ratio(r["load"]["total_s"],
                                                get(ref, "load", "total_s")),
            fmt_us(c.get("p50_us")) + ratio(c.get("p50_us"), get(ref, "check", "p50_us")),
            fmt_us(c.get("p99_us")) + ratio(c.get("p99_us"), get(ref, "check", "p99_us")),
            f"{c.get('n', 0):,}",
            fmt_us(get(ups, "grant", "visible_us")) + ratio(
                get(ups, "grant", "visible_us"), get(ref, "updates", "grant", "visible_us")),
            fmt_us(get(ups, "revoke", "visible_us")) + ratio(
                get(ups, "revoke", "visible_us"), get(ref, "updates", "revoke", "visible_us")),
            bulk,
            f"{r['peak_rss_mb']:,.0f} MiB" if "peak_rss_mb" in r else "—",
        ]
        if r.get("error"):
            cells[-1] += f" — {r['error']}"
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out


def chart(results: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no chart", file=sys.stderr)
        return False
    fig, ax = plt.subplots(figsize=(9.5, 5))
    for name in ORDER:
        pts = sorted((r["size"], r["check"]["p50_us"], r["check"]["p99_us"]) for r in results
                     if r["engine"] == name and "check" in r and not r.get("error"))
        if not pts:
            continue
        xs = [p[0] for p in pts]
        label = "oracle (hand-written Python)" if name == "oracle" else name
        line = ax.plot(xs, [p[1] for p in pts], marker="o", label=label,
                       linewidth=2.5 if name == "grantlog" else 1.5)[0]
        ax.plot(xs, [p[2] for p in pts], marker="x", linestyle=":", color=line.get_color(),
                linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    sizes = sorted({r["size"] for r in results})
    ax.set_xticks(sizes, [f"{x:,}" for x in sizes])
    ax.minorticks_off()
    ax.set_xlabel("tables")
    ax.set_ylabel("check latency, µs (solid: p50, dotted: p99)")
    ax.set_title("Gravitino-shaped workload: warm check latency by engine and scale")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def describe(results: list[dict[str, Any]]) -> list[str]:
    seen: dict[str, dict[str, Any]] = {}
    for r in results:
        if "describe" in r and r["engine"] not in seen:
            seen[r["engine"]] = r
    out = ["| engine | version | encoding | a check is | an update is | bulk is |",
           "|---|---|---|---|---|---|"]
    for name in ORDER:
        r = seen.get(name)
        if r is None:
            continue
        d = r["describe"]
        out.append(f"| {name} | {r['version']} | {d['encoding']} | {d['check_path']} | "
                   f"{d['update_path']} | {d['bulk_path']} |")
    return out


def write_results(path: Path, lines: list[str]) -> None:
    """Replace (or append) the Peers section only; re-read the file right before writing."""
    replace_marked(path, BEGIN, END, "\n".join([BEGIN, HEADING, "", *lines, END]))


OUTCOME = {
    "allow: owner": "ALLOW: an owner (of the object or an ancestor)",
    "allow: role held directly": "ALLOW: privileges through roles held directly",
    "allow: role held through a group": "ALLOW: privileges through a group's roles",
    "allow: roles held directly and through a group": "ALLOW: either way (direct or group roles)",
    "allow: combined": "ALLOW: needs direct and group roles together",
    "deny: DENY wins": "DENY wins over an ALLOW of the same privilege",
    "deny: DENY use_schema": "denied: DENY of USE_SCHEMA (a prerequisite)",
    "deny: DENY use_catalog": "denied: DENY of USE_CATALOG (a prerequisite)",
    "deny: missing use_schema": "denied: no USE_SCHEMA",
    "deny: missing use_catalog": "denied: no USE_CATALOG",
    "deny: no privilege": "denied: no SELECT/MODIFY_TABLE",
    "deny: none create_table": "denied: no CREATE_TABLE",
    "deny: not an owner": "denied: drop_table by a non-owner",
    "deny: not added to the metalake": "denied: user not added to the metalake",
}

LIMITS = """\
What each engine could not express, and the closest faithful encoding used instead:

- **Cedar**: a request is one principal, one action, one resource, and a policy cannot ask
  whether another request is permitted. The API conditions need several privileges on
  different resources (USE_CATALOG on the catalog, USE_SCHEMA on the schema, SELECT_TABLE or
  MODIFY_TABLE on the table), each with its own DENY; so each check sends the privilege requests
  it needs in one `is_authorized_batch` call (7 for load_table) and composes them per the API
  table. `forbid` always overrides `permit`, so owners, whom no DENY blocks (reading 8), are a
  separate action `own` rather than a permit on every privilege. Grants of a privilege on a
  type that does not support it are not linked (Gravitino refuses them; the model ignores
  them). Cedar evaluates every policy for every request (no index): with one linked policy
  per grant (~20,000-26,000 here) a request costs tens of ms, independent of the table count.
  It cannot enumerate resources (no bulk answer; partial evaluation is experimental), and its
  handles are immutable: each grant or revoke clones the whole policy set.
- **casbin**: the same one-privilege-per-request limit and the same composition; ownership is
  the action `own`, which no DENY line matches. The metalake of the registration check is a
  constant in the matcher (the workload has one metalake). pycasbin evaluates the matcher, a
  Python expression, for every candidate policy line; `FastEnforcer` can index lines by exact
  values only, so by privilege (the object of a matching line is an ancestor, found through
  `g2`, not equal to the request's). No bulk answer.
- **clingo**: the whole model is expressible (Datalog with stratified negation). Grounded facts
  cannot be retracted: a revoke adds a `revoked` tombstone that the query rules respect, and
  re-granting a revoked row would need a new control (the benchmark never re-grants).
  Every check adds a small ground program (its atoms carry the query id), so memory grows
  with the number of checks asked.
- **pyDatalog**: the whole model is expressible; rules are written for bound queries
  (ancestry walks up from the object). Every assert or retract clears its tables, so a check
  after an update recomputes what it needs. The bulk query (user and table free) did not finish
  within its budget.
- **oso**: the whole model is expressible in Polar (recursion over `obj.parent`, `not`, `cut`);
  resource blocks have no DENY and no prerequisites on other resources, so plain rules are used.
  No bulk answer without a data-filtering adapter. oso 0.27 is the last release of the
  open-source library and has no wheel for Python 3.13+.
- **grantlog** runs the whole seed model (every API row); the peers encode only the operations
  checked here (`gravitino_workload.CHECK_OPS`).
"""


def render(results: list[dict[str, Any]], meta: dict[str, Any]) -> list[str]:
    runs = meta.get("runs") or [meta]
    lines = []
    for run in runs:
        load, end = run["load"], run["load_end"]
        sizes = ", ".join(f"{x:,}" for x in run["sizes"])
        lines.append(
            f"- run {run['started'][:16].replace('T', ' ')} UTC, {run['wall_s'] / 60:,.0f} min, "
            f"{sizes} tables: `{run['command']}`; 1/5/15-min load average at start "
            f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}, at the end "
            f"{end[0]:.2f} / {end[1]:.2f} / {end[2]:.2f}")
    if len(runs) > 1:
        lines.append("- the runs' saved results (`--json`) rendered together with `--from-json`")
    lines += [
        f"- machine: {os.cpu_count()} cores, shared with other jobs (the load averages above); "
        f"{meta['platform']}; Python {meta['python']}",
        "- workload: `benchmarks/gravitino_workload.py`, seed "
        f"{meta['seed']}; each engine and size in a fresh subprocess, one at a time; all figures "
        "are medians or percentiles of one run, warm (after the agreement sample)",
    ]
    for size in meta["sizes"]:
        r0 = next((r for r in results if r["size"] == size and "workload" in r), None)
        if r0:
            lines.append(f"- {size:,} tables: {r0['workload']}")
    gl = {r["size"]: r["version"] for r in results if r["engine"] == "grantlog" and "version" in r}
    if gl:
        lines.append("- grantlog as run (called live; the engine is being optimized, so its "
                     "figures move between commits): "
                     + "; ".join(f"{v} at {k:,} tables" for k, v in sorted(gl.items())))
    lines += ["", "**Agreement** (checked before any timing):", ""]
    mix: dict[int, Counter[tuple[str, str]]] = {}
    for size in meta["sizes"]:
        voters = [r for r in results if r["size"] == size and "agree" in r]
        if not voters:
            continue
        mix[size] = Counter(tuple(c.split(" / ", 1)) for c in voters[0]["agree"]["categories"])
        allowed = sum(voters[0]["agree"]["decisions"])
        lines.append(f"- {size:,} tables: {len(voters[0]['agree']['checks'])} checks "
                     f"({allowed} allowed), identical answers from "
                     f"{', '.join(r['engine'] for r in voters)}")
    if mix:
        classes = ["read table", "modify", "load/list schema or catalog"]
        lines += ["", "The sample: checks per outcome (what decided it, per the oracle) and "
                  "operation class (read table = load/select_table; modify = alter/modify/drop/"
                  "create_table; load_schema, list_table, load_catalog), "
                  + " | ".join(f"{s:,} tables" for s in mix) + ":", "",
                  "| outcome | " + " | ".join(f"{s:,}: " + " / ".join(classes) for s in mix)
                  + " |", "|---|" + "--:|" * len(mix)]
        for cat in sorted({c for m in mix.values() for _, c in m}):
            cells = [" / ".join(str(m.get((k, cat), 0)) for k in classes) for m in mix.values()]
            lines.append(f"| {OUTCOME.get(cat, cat)} | " + " | ".join(cells) + " |")
    for size in meta["sizes"]:
        lines += ["", f"### {size:,} tables", "", *table(results, size)]
    extra = [f"{r['engine']} at {r['size']:,}: "
             + ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}"
                         for k, v in r["notes"].items())
             for r in sorted(results, key=lambda r: (r["size"], ORDER.index(r["engine"])
                                                     if r["engine"] in ORDER else 99))
             if r.get("notes")]
    if extra:
        lines += ["", "Sizes inside the engines: " + "; ".join(extra) + "."]
    lines += [
        "",
        "Ratios in parentheses are to grantlog at the same size (above 1: slower than grantlog). "
        "*load* = the engine's own loading of the base facts, including the conversion into its "
        "input (JSON entities and policies, policy lines, Python objects, program text), plus "
        "the first check. *check* = the same sampled checks for every engine, in the same order, "
        "until the list or the time budget ends (*checks timed*); all must equal the oracle's. "
        "*grant / revoke → visible* = median time from applying the change until the next check "
        "returns the new decision (the check included). *bulk* = every load_table decision "
        "(all users × every table) of one ~100-table schema, compared with the oracle's.",
        "",
        "![check latency by engine and scale](peers_latency.png)",
        "",
        "How each engine expresses the model and what is timed:",
        "",
        *describe(results),
        "",
        *LIMITS.splitlines(),
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000", help="table counts")
    ap.add_argument("--engines", default=",".join(ORDER),
                    help=f"comma-separated, from {', '.join(ORDER)}")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--agree", type=int, default=300, help="checks in the agreement sample")
    ap.add_argument("--checks", type=int, default=2000, help="timed checks (at most)")
    ap.add_argument("--updates", type=int, default=10, help="grants and revokes (each)")
    ap.add_argument("--check-budget", type=float, default=60, help="seconds of timed checks")
    ap.add_argument("--update-budget", type=float, default=60, help="seconds of updates")
    ap.add_argument("--bulk-budget", type=float, default=120, help="seconds for the bulk run")
    ap.add_argument("--load-budget", type=float, default=600, help="seconds for the load")
    ap.add_argument("--timeout", type=float, default=1500,
                    help="seconds per engine and size, everything included")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--chart", type=Path, default=CHART)
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--json", type=Path, help="also save the raw results here")
    ap.add_argument("--from-json", type=Path, help="render a saved run instead of running")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--engine", help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        res = worker(args)
        return 1 if res.get("disagreements") else 0

    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        results, meta = saved["results"], saved["meta"]
    else:
        engines = [e.strip() for e in args.engines.split(",") if e.strip()]
        unknown = [e for e in engines if e not in ENGINES]
        if unknown:
            ap.error(f"unknown engine(s) {unknown}; known: {ORDER}")
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        t_start = time.perf_counter()
        meta = {"started": _dt.datetime.now(_dt.UTC).isoformat(), "load": os.getloadavg(),
                "command": ".venv/bin/python benchmarks/peers_bench.py " + " ".join(
                    argv if argv is not None else sys.argv[1:]),
                "sizes": sizes, "seed": args.seed, "python": platform.python_version(),
                "platform": f"{platform.system()} {platform.release()} {platform.machine()}"}
        results = []
        for size in sizes:
            for e in engines:
                print(f"== {e}, {size:,} tables", file=sys.stderr, flush=True)
                r = run_one(args, e, size)
                if r.get("error"):
                    print(f"   {r['error']}", file=sys.stderr, flush=True)
                results.append(r)
        meta["wall_s"] = time.perf_counter() - t_start
        meta["load_end"] = os.getloadavg()
        if args.json:
            args.json.write_text(json.dumps({"results": results, "meta": meta}, indent=1))

    problems = compare(results)
    if problems:
        print("DISAGREEMENT — no timing is reported:", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    lines = render(results, meta)
    print("\n".join(lines))
    if not args.no_write:
        write_results(args.results, lines)
        if chart(results, args.chart):
            print(f"\nwrote {args.results} and {args.chart}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
