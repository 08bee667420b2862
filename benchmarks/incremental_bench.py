#!/usr/bin/env python
"""The incremental engine on a Gravitino-shaped workload (issue 3, "What must be shown").

Usage (from the repository root)::

    .venv/bin/python benchmarks/incremental_bench.py                      # 10k, 100k, 1M tables
    .venv/bin/python benchmarks/incremental_bench.py --sizes 10000,100000
    .venv/bin/python benchmarks/incremental_bench.py --quick              # 10k tables, short
    .venv/bin/python benchmarks/incremental_bench.py --profile 100000     # cProfile check/update

Each size runs in a fresh subprocess (this script with ``--worker``) so that its memory figures
are its own. The workload (benchmarks/gravitino_workload.py, fixed seed) is base facts for
rules/gravitino.gl. Per size the worker measures, warm:

* **load**: one transaction inserting every base fact + the first check (first evaluation);
* **check**: ``check(user, op, resource)`` over random checks (55% load_table, the rest other
  table, schema and catalog operations), ``time.perf_counter_ns`` around each call, after
  ``gc.freeze()`` of the loaded heap as a long-running service would (``--no-gc-freeze`` to
  measure without: CPython's full collections then rescan the loaded rows and pause checks);
* **updates**: a grant, a revoke, a new table, a new group membership, each applied with
  ``insert``/``retract``/a transaction and followed by one check that observes it; median of the
  update alone and of update + check ("reflected");
* **list**: ``list(user, "load_table", type="table")`` (the whole metalake), the listing of
  one 10,000-table schema through the API (``list(..., within=schema)``), as a query
  (``allowed(U, load_table, T), contains(S, T)``) and as the model's own list_table answer
  (``listed(U, list_table, S, T)``); each listing starts without kept answers (the reasoner's
  answers kept across reads are dropped first; plans and indexes stay warm);
* **memory**: bytes per base fact — RSS growth over the load, and the deep size of what the
  reasoner holds (base facts, materialized relations, indexes, with the row tuples and strings,
  each object counted once);
* **rebuild**: ``rebuild()`` (from scratch), and the ratio rebuild / update.

Correctness is checked before any timing: 200 sampled checks must agree with an independent
reading of the model (``gravitino_workload.Oracle``, plain Python) and with the answers after a
from-scratch ``rebuild()``; every observing check after an update must agree with the oracle;
after all updates, 200 checks plus the updates' checks must give the same answers before and
after a from-scratch rebuild. Any disagreement aborts (exit status 1).
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as _dt
import gc
import json
import os
import platform
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "RESULTS.md"
RULES = ROOT / "rules" / "gravitino.gl"
BEGIN, END = "<!-- incremental_bench -->", "<!-- /incremental_bench -->"
HEADING = "## Incremental engine: Gravitino-shaped workload"

sys.path.insert(0, str(HERE))

from harness import (  # noqa: E402
    Timeout,
    deadline,
    dist_us,
    each_timed,
    git_state,
    peak_rss_kib,
    replace_marked,
)

#: the folders whose uncommitted changes the results mention
CODE = ("engine", "rules", "grantlog")

TARGETS = {  # at 1M tables
    "check_p50_us": 25.0,
    "check_p99_us": 250.0,
    "update_ms": 1.0,
    "rebuild_ratio": 1000.0,
    "list_ms": 50.0,
    "bytes_per_fact": 200.0,
}


# -- measuring helpers -----------------------------------------------------------------------------


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    return peak_rss_kib() * 1024


def deep_size(roots: Sequence[Any]) -> tuple[int, Counter[str]]:
    """Bytes of every dict/list/set/tuple/str/int reachable from ``roots``, each object once."""
    seen: set[int] = set()
    total = 0
    by_type: Counter[str] = Counter()
    stack = list(roots)
    getsize = sys.getsizeof
    while stack:
        o = stack.pop()
        i = id(o)
        if i in seen:
            continue
        seen.add(i)
        n = getsize(o)
        total += n
        t = type(o)
        by_type[t.__name__] += n
        if t is dict or isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(v for v in o.values() if not isinstance(v, int | type(None)))
        elif t is tuple or t is list or t is set or t is frozenset:
            stack.extend(x for x in o if not isinstance(x, int | type(None)))
    return total, by_type


def code_digest() -> str:
    """SHA-256 (12 hex) of engine/*.py and rules/*.gl: tells whether two runs used the same
    engine and rules (the working tree may change between the sizes of one run)."""
    import hashlib

    h = hashlib.sha256()
    for f in sorted([*ROOT.glob("engine/*.py"), *ROOT.glob("rules/*.gl")]):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


# -- the worker ------------------------------------------------------------------------------------


class Abort(Exception):
    pass


def worker(args: argparse.Namespace) -> dict[str, Any]:
    import gravitino_workload as gw

    import grantlog

    res: dict[str, Any] = {"size": args.size, "phases": {}}
    ph = res["phases"]

    def log(msg: str) -> None:
        print(f"[{args.size:,}] {msg}", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    program = grantlog.compile(paths=[str(args.rules)])
    res["compile_s"] = time.perf_counter() - t0
    res["virtual"] = sorted(program.virtual)
    res["materialized"] = sorted(program.derived - program.virtual)
    res["git"] = git_state(*CODE, label="engine/rules")
    res["code"] = code_digest()
    gc.collect()
    rss0 = rss_bytes()

    t0 = time.perf_counter()
    w = gw.generate(args.size, seed=args.seed)
    res["generate_s"] = time.perf_counter() - t0
    res["workload"] = gw.summary(w)
    res["counts"] = w.counts()
    n_facts = w.n_base_facts
    res["base_facts"] = n_facts
    gc.collect()
    rss_gen = rss_bytes()
    log(res["workload"])

    # -- load --------------------------------------------------------------------------------------
    sampler = gw.Sampler(w, seed=args.seed + 1)
    first = sampler.one("load_table")
    r = grantlog.Reasoner(program)
    t0 = time.perf_counter()
    with r.transaction() as tx:
        for rel, rows in w.facts.items():
            tx.insert(rel, rows)
    t1 = time.perf_counter()
    r.check(*first)
    t2 = time.perf_counter()
    ph["load"] = {"insert_s": t1 - t0, "first_check_s": t2 - t1, "total_s": t2 - t0}
    gc.collect()
    rss_load = rss_bytes()
    db = r.database()
    res["materialized_rows"] = {k: len(v) for k, v in db.full.items()
                                if k in program.derived and v}
    res["stored_rows"] = db.size()
    log(f"loaded in {t2 - t0:.2f} s (insert {t1 - t0:.2f}, first check {t2 - t1:.3f}); "
        f"materialized {res['materialized_rows']}")

    # -- memory ------------------------------------------------------------------------------------
    mem: dict[str, Any] = {
        "rss_before_generate_mb": rss0 / 2**20,
        "rss_after_generate_mb": rss_gen / 2**20,
        "rss_after_load_mb": rss_load / 2**20,
        "rss_load_delta_per_fact": (rss_load - rss_gen) / n_facts,
        "rss_total_delta_per_fact": (rss_load - rss0) / n_facts,
    }
    if not args.no_deep_size:
        t0 = time.perf_counter()
        eng, eng_types = deep_size([r._base, r._spans, db.full, db.indexes])
        base_only, _ = deep_size([r._base])
        full_only, _ = deep_size([db.full])
        mem["deep_bytes"] = eng
        mem["deep_per_fact"] = eng / n_facts
        mem["deep_by_type_mb"] = {k: v / 2**20 for k, v in eng_types.most_common()}
        mem["deep_base_dict_mb"] = base_only / 2**20
        mem["deep_full_mb"] = full_only / 2**20
        mem["index_keys"] = {f"{k[0]}{list(k[1])}": len(v) for k, v in db.indexes.items()}
        mem["deep_size_s"] = time.perf_counter() - t0
    ph["memory"] = mem
    log(f"memory: {mem.get('deep_per_fact', float('nan')):.0f} B/fact deep, "
        f"{mem['rss_load_delta_per_fact']:.0f} B/fact RSS delta of the load")

    oracle = gw.Oracle(w.facts)

    def verify(checks: Sequence[tuple[str, str, str]], what: str) -> list[bool]:
        got = []
        for q in checks:
            d = r.check(*q).allowed
            exp, why = oracle.decide(*q)
            if d != exp:
                raise Abort(f"{what}: check{q} = {d}, the oracle says {exp} ({why})")
            got.append(d)
        return got

    # -- correctness before timing -----------------------------------------------------------------
    t0 = time.perf_counter()
    vchecks = sampler.many(args.verify)
    before = verify(vchecks, "after load")
    reasons = Counter(oracle.decide(*q)[1] for q in vchecks)
    t1 = time.perf_counter()
    r.rebuild()
    t2 = time.perf_counter()
    after = [r.check(*q).allowed for q in vchecks]
    if after != before:
        bad = [q for q, a, b in zip(vchecks, before, after, strict=True) if a != b]
        raise Abort(f"incremental load and rebuild() disagree on {len(bad)} checks, e.g. {bad[0]}")
    rebuilds = [t2 - t1]
    res["verify"] = {"checks": len(vchecks), "allowed": sum(before), "reasons": dict(reasons),
                     "seconds": time.perf_counter() - t0}
    log(f"verified {len(vchecks)} checks against the oracle and rebuild() "
        f"({sum(before)} allowed; {dict(reasons.most_common())}); rebuild {t2 - t1:.2f} s")

    # -- check latency -----------------------------------------------------------------------------
    gc.collect()
    if not args.no_gc_freeze:
        # what a long-running service does after loading a big model: move the loaded heap out
        # of the collector's view, so CPython's full collections (which otherwise rescan the
        # millions of loaded rows) do not pause checks for tens of milliseconds
        gc.freeze()
    ph["gc_freeze"] = not args.no_gc_freeze
    checks = sampler.many(args.checks)
    lat: dict[str, list[int]] = {}
    allowed_n = 0
    for q, d, ns in each_timed(r.check, checks, args.budget):
        lat.setdefault(q[1], []).append(ns)
        allowed_n += d.allowed
    all_ns = [x for v in lat.values() for x in v]
    ph["check"] = {"all": dist_us(all_ns), "allowed": allowed_n,
                   "by_op": {op: dist_us(v) for op, v in sorted(lat.items())},
                   "budget_hit": len(all_ns) < len(checks)}
    # the same checks again, the decision alone: answers kept across reads (engine/eval/demand.py)
    pc = time.perf_counter_ns
    ctx_ns: list[int] = []
    dec_ns: list[int] = []
    rel = program.decision
    for q in checks[: min(len(all_ns), 500)]:
        a = pc()
        ctx = r.view()
        b = pc()
        _ = q in ctx.F[rel]
        c = pc()
        ctx_ns.append(b - a)
        dec_ns.append(c - a)
    ph["check"]["decision_only"] = dist_us(dec_ns)
    ref_ns: list[int] = []
    for q in checks[: len(all_ns)]:
        a = pc()
        oracle.decide(*q)
        ref_ns.append(pc() - a)
    ph["check"]["oracle"] = dist_us(ref_ns)
    ph["check"]["context_creation"] = dist_us(ctx_ns)
    log(f"check: {dist_us(all_ns)} ({allowed_n} allowed); decision only {dist_us(dec_ns)}")

    # -- list --------------------------------------------------------------------------------------
    big = w.big_schema
    big_tables = set(w.schema_tables[big])
    listers = [u for u in w.users if oracle.decide(u, "load_schema", big)[0]
               and any(oracle.decide(u, "load_table", t)[0]
                       for t in w.schema_tables[big][:50])]
    rng = random.Random(args.seed + 2)
    rng.shuffle(listers)
    listers = listers[: args.lists] or w.users[: args.lists]
    lists: dict[str, Any] = {"schema_tables": len(big_tables), "users": len(listers)}
    variants: list[tuple[str, Callable[[str], set[Any]]]] = [
        ("query", lambda u: {b["T"] for b in r.query(
            f'allowed("{u}", load_table, T), contains("{big}", T)')}),
        ("listed", lambda u: {b["T"] for b in r.query(
            f'listed("{u}", list_table, "{big}", T)')}),
        ("within", lambda u: set(r.list(u, "load_table", type="table", within=big))),
        ("api", lambda u: set(r.list(u, "load_table", type="table"))),
    ]
    for name, fn in variants:
        times: list[float] = []
        sizes: list[int] = []
        note = ""
        for u in listers:
            # every listing starts without kept answers (plans and indexes stay warm): the
            # variants run one after the other on the same users, and an answer kept from
            # an earlier variant would make a later one look faster than a first listing is
            r._forget()
            try:
                with deadline(args.list_timeout):
                    a = time.perf_counter()
                    got = fn(u)
                    times.append(time.perf_counter() - a)
            except Timeout:
                note = f"a call took > {args.list_timeout:.0f} s; stopped"
                break
            in_big = got & big_tables if name == "api" else got
            exp = {t for t in w.schema_tables[big] if oracle.decide(u, "load_table", t)[0]}
            if name == "listed" and oracle.decide(u, "list_table", big)[0] is False:
                exp = set()
            if in_big != exp:
                raise Abort(f"list {name} for {u}: {len(in_big)} tables of {big}, "
                            f"the oracle says {len(exp)}")
            sizes.append(len(got))
            if sum(times) > args.budget / 2:
                break
        lists[name] = {"n": len(times), "median_ms": statistics.median(times) * 1000
                       if times else None, "max_ms": max(times) * 1000 if times else None,
                       "mean_results": statistics.fmean(sizes) if sizes else None,
                       "note": note, "timed_out_s": args.list_timeout if note else None}
        log(f"list {name}: {lists[name]}")
    ph["list"] = lists

    # -- updates -----------------------------------------------------------------------------------
    upd_checks: list[tuple[str, str, str]] = []
    facts_now = {rel: set(rows) for rel, rows in w.facts.items()}
    role_sets: dict[str, set[str]] = {}
    for p, ro in facts_now["role_of"]:
        role_sets.setdefault(p, set()).add(ro)
    members: dict[str, set[str]] = {}
    for u, g in facts_now["member"]:
        members.setdefault(u, set()).add(g)
    table_grants = [row for row in w.facts["privilege"] if row[3] == "allow"
                    and row[1] == "select_table" and (row[2] in big_tables or
                                                     oracle.type.get(row[2]) == "table")]
    schema_grants = [row for row in w.facts["privilege"] if row[3] == "allow"
                     and row[1] == "select_table" and row[2] in w.schema_tables]

    def roles(u: str) -> set[str]:
        rs = set(role_sets.get(u, ()))
        for g in members.get(u, ()):
            rs |= role_sets.get(g, set())
        return rs

    def apply(kind: str, ins: dict[str, list[tuple[str, ...]]],
              dels: dict[str, list[tuple[str, ...]]], q: tuple[str, str, str],
              expect: bool | None) -> dict[str, int]:
        gc_was = gc.isenabled()
        a = pc()
        if len(ins) + len(dels) == 1 and sum(map(len, ins.values())) + sum(
                map(len, dels.values())) == 1:
            if ins:
                (rel_, rows_), = ins.items()
                r.insert(rel_, rows_)
            else:
                (rel_, rows_), = dels.items()
                r.retract(rel_, rows_)
        else:
            with r.transaction() as tx:
                for rel_, rows_ in ins.items():
                    tx.insert(rel_, rows_)
                for rel_, rows_ in dels.items():
                    tx.retract(rel_, rows_)
        b = pc()
        d = r.check(*q).allowed
        c = pc()
        assert gc_was == gc.isenabled()
        for rel_, rows_ in ins.items():
            for row in rows_:
                facts_now[rel_].add(row)
                oracle.apply(rel_, row, True)
        for rel_, rows_ in dels.items():
            for row in rows_:
                facts_now[rel_].discard(row)
                oracle.apply(rel_, row, False)
        exp, why = oracle.decide(*q)
        if d != exp:
            raise Abort(f"after {kind} {ins or dels}: check{q} = {d}, the oracle says {exp} "
                        f"({why})")
        if expect is not None and d != expect:
            raise Abort(f"{kind} was not reflected: check{q} = {d}")
        upd_checks.append(q)
        return {"update": b - a, "check": c - b, "total": c - a}

    def find(pred: Callable[[], Any], tries: int = 5000) -> Any:
        for _ in range(tries):
            got = pred()
            if got is not None:
                return got
        return None

    upd: dict[str, list[dict[str, int]]] = {"grant": [], "revoke": [], "new_table": [],
                                             "membership": []}
    stop = time.perf_counter() + args.budget

    def grant_case() -> Any:
        u, _, t = sampler.one("load_table")
        rs = sorted(roles(u))
        if not rs or oracle.decide(u, "load_table", t)[0]:
            return None
        if not oracle.decide(u, "load_schema", w.parent[t])[0]:
            return None
        row = (rng.choice(rs), "select_table", t, "allow")
        if row in facts_now["privilege"]:
            return None
        return u, t, row

    def revoke_case() -> Any:
        row = rng.choice(schema_grants + table_grants)
        if row not in facts_now["privilege"]:
            return None
        role, _, obj, _ = row
        t = rng.choice(w.schema_tables[obj]) if obj in w.schema_tables else obj
        holders = [u for u in rng.sample(w.users, 200) if role in roles(u)]
        for u in holders:
            if oracle.decide(u, "load_table", t)[0]:
                return u, t, row
        return None

    def table_case() -> Any:
        row = rng.choice(schema_grants)
        role, _, s, _ = row
        holders = [u for u in rng.sample(w.users, 200) if role in roles(u)
                   and oracle.decide(u, "load_schema", s)[0]]
        if not holders:
            return None
        return holders[0], s

    def membership_case() -> Any:
        u, _, t = sampler.one("load_table")
        if oracle.decide(u, "load_table", t)[0] or u not in oracle.registered:
            return None
        for g in rng.sample(w.groups, len(w.groups)):
            if g in members.get(u, set()):
                continue
            oracle.apply("member", (u, g), True)
            ok = oracle.decide(u, "load_table", t)[0]
            oracle.apply("member", (u, g), False)
            if ok:
                return u, t, g
        return None

    new_id = 0
    for _ in range(args.updates):
        if time.perf_counter() > stop:
            break
        got = find(grant_case)
        if got:
            u, t, row = got
            upd["grant"].append(apply("grant", {"privilege": [row]}, {}, (u, "load_table", t),
                                      None))
        got = find(revoke_case)
        if got:
            u, t, row = got
            upd["revoke"].append(apply("revoke", {}, {"privilege": [row]},
                                       (u, "load_table", t), None))
        got = find(table_case)
        if got:
            u, s = got
            new_id += 1
            t = f"{s}.new{new_id:04d}"
            upd["new_table"].append(apply(
                "new table", {"entity": [(t, "table")], "contains": [(s, t)]}, {},
                (u, "load_table", t), None))
            w.schema_tables[s].append(t)
            w.parent[t] = s
        got = find(membership_case)
        if got:
            u, t, g = got
            members.setdefault(u, set()).add(g)
            upd["membership"].append(apply("membership", {"member": [(u, g)]}, {},
                                           (u, "load_table", t), True))
    ph["updates"] = {
        k: {"n": len(v),
            "update_us": statistics.median(x["update"] for x in v) / 1000 if v else None,
            "check_us": statistics.median(x["check"] for x in v) / 1000 if v else None,
            "reflected_us": statistics.median(x["total"] for x in v) / 1000 if v else None,
            "reflected_max_us": max(x["total"] for x in v) / 1000 if v else None}
        for k, v in upd.items()}
    log(f"updates: {ph['updates']}")

    # -- after the updates: incremental == from scratch --------------------------------------------
    post = sampler.many(args.verify) + upd_checks
    inc = verify(post, "after the updates")
    t1 = time.perf_counter()
    r.rebuild()
    t2 = time.perf_counter()
    rebuilds.append(t2 - t1)
    scratch = [r.check(*q).allowed for q in post]
    if scratch != inc:
        bad = [q for q, a, b in zip(post, inc, scratch, strict=True) if a != b]
        raise Abort(f"after the updates, incremental and rebuild() disagree on {len(bad)} "
                    f"checks, e.g. {bad[0]}")
    res["verify"]["after_updates"] = len(post)
    rb = statistics.median(rebuilds)
    ups = [v for v in ph["updates"].values() if v["reflected_us"] is not None]
    worst = max(ups, key=lambda v: v["reflected_us"]) if ups else None
    worst_alone = max((v["update_us"] for v in ups), default=None)
    # reflected incrementally (update + check) vs from scratch (rebuild + the same check)
    ph["rebuild"] = {
        "seconds": rebuilds, "median_s": rb,
        "ratio_to_worst_update": (rb * 1e6 + worst["check_us"]) / worst["reflected_us"]
        if worst else None,
        "ratio_to_worst_update_alone": rb * 1e6 / worst_alone if worst_alone else None}
    log(f"rebuild {rebuilds}; after updates {len(post)} checks agree")
    res["peak_rss_mb"] = peak_rss_bytes() / 2**20
    return res


# -- profiling -------------------------------------------------------------------------------------


def profile(args: argparse.Namespace) -> None:
    """cProfile of the check path and the update path at one size, plus demand-call counts."""
    import gravitino_workload as gw
    from grantlog.engine.eval import demand as dm

    import grantlog

    program = grantlog.compile(paths=[str(args.rules)])
    print("materialized:", sorted(program.derived - program.virtual))
    print("virtual:", sorted(program.virtual))
    w = gw.generate(args.size, seed=args.seed)
    print(gw.summary(w))
    r = grantlog.Reasoner(program)
    t0 = time.perf_counter()
    with r.transaction() as tx:
        for rel, rows in w.facts.items():
            tx.insert(rel, rows)
    r.check(*gw.Sampler(w).one("load_table"))
    print(f"load {time.perf_counter() - t0:.2f} s")
    sampler = gw.Sampler(w, seed=args.seed + 5)
    checks = sampler.many(args.profile_checks, "load_table")

    # goal-directed evaluations per check (lookups without a kept answer), by (relation,
    # bound columns); kept answers are read by the lookups directly (not counted)
    calls: Counter[tuple[str, tuple[int, ...]]] = Counter()
    orig_answer = dm.Lookup.answer

    def counting(self: Any, key: Any) -> Any:
        calls[(self.rel, self.cols)] += 1
        return orig_answer(self, key)

    dm.Lookup.answer = counting  # type: ignore[method-assign]
    n = min(50, len(checks))
    rel = program.decision
    try:
        for q in checks[:n]:
            _ = q in r.view().F[rel]
    finally:
        dm.Lookup.answer = orig_answer  # type: ignore[method-assign]
    print(f"\n== goal-directed evaluations per load_table decision (mean over {n} checks; the "
          "proof check() builds for Decision.reasons not included)")
    for (rel_, cols), c in calls.most_common(30):
        print(f"  {c / n:9.1f}  {rel_}{list(cols)}")
    print(f"  total {sum(calls.values()) / n:.1f} evaluations per decision")

    try:  # the join orders demand evaluation used (engine internals: best effort)
        from grantlog.engine.core import ir
        from grantlog.engine.plan.join import plan_bound
        print("\n== plans of the lookups demand evaluation ran (rule [bound vars]: steps, "
              "views unfolded, in statistics' order)")
        plans = r._plans
        for rid, key in sorted(plans.keyed, key=lambda k: (program.rules[k[0]].name, str(k[1]))):
            bound = {t.name for t in key if isinstance(t, ir.Var)}
            flat = plans.unfold(program.rules[rid])
            plan = plan_bound(flat, bound, program.virtual, plans.order(flat, frozenset(bound)))
            print(f"  {flat.name} {sorted(bound)}: {plan.describe()}")
    except Exception as e:
        print(f"(plans not shown: {e!r})")

    pc = time.perf_counter_ns
    ctx_ns = []
    for _ in range(2000):
        a = pc()
        r.view()
        ctx_ns.append(pc() - a)
    print(f"\nDemandContext creation (r.view()): {dist_us(ctx_ns)}")
    dec_ns, full_ns = [], []
    for q in checks[:n]:
        a = pc()
        ctx = r.view()
        _ = q in ctx.F[rel]
        b = pc()
        r.check(*q)
        c = pc()
        dec_ns.append(b - a)
        full_ns.append(c - b)
    print(f"decision only (view + membership): {dist_us(dec_ns)}")
    print(f"check() (decision + proof for reasons): {dist_us(full_ns)}")

    for title, fn in (("the decision only (r.view(), row in F[allowed])",
                       lambda q: q in r.view().F[rel]),
                      ("check() (decision + Decision.reasons proof)", lambda q: r.check(*q))):
        prof = cProfile.Profile()
        prof.enable()
        for q in checks:
            fn(q)
        prof.disable()
        print(f"\n== cProfile: {len(checks)} x {title}, load_table")
        st = pstats.Stats(prof, stream=sys.stdout)
        st.sort_stats("cumulative").print_stats(30)
        st.sort_stats("tottime").print_stats(20)

    rng = random.Random(3)
    grants = [row for row in w.facts["privilege"] if row[3] == "allow"]
    updates = []
    for i in range(args.profile_updates):
        role = rng.choice(w.roles[4:])
        t = rng.choice(w.tables)
        updates.append(("privilege", (role, "select_table", t, "allow")))
        updates.append(("member", (rng.choice(w.users), rng.choice(w.groups))))
        s = rng.choice(w.schemas)
        updates.append(("table", (s, f"{s}.prof{i:04d}")))
        updates.append(("revoke", rng.choice(grants)))
    prof = cProfile.Profile()
    prof.enable()
    for kind, row in updates:
        if kind == "table":
            with r.transaction() as tx:
                tx.insert("entity", [(row[1], "table")])
                tx.insert("contains", [row])
        elif kind == "revoke":
            r.retract("privilege", [row])
        else:
            r.insert(kind, [row])
    prof.disable()
    print(f"\n== cProfile: {len(updates)} updates (grant, membership, new table, revoke)")
    st = pstats.Stats(prof, stream=sys.stdout)
    st.sort_stats("cumulative").print_stats(35)
    st.sort_stats("tottime").print_stats(20)


# -- the parent: one worker per size, the table, RESULTS.md ----------------------------------------


def fmt(x: Any, digits: int = 1, unit: str = "") -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "—"
    if isinstance(x, float):
        if abs(x) >= 100:
            return f"{x:,.0f}{unit}"
        return f"{x:,.{digits}f}{unit}"
    return f"{x:,}{unit}"


def ratio(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}×" if x >= 10 else f"{x:.2f}×"


def ms(us: float | None) -> str:
    return "—" if us is None else (f"{us / 1000:,.2f} ms" if us < 1e6 else f"{us / 1e6:,.1f} s")


def table(results: list[dict[str, Any]]) -> list[str]:
    rows = [
        ("tables", lambda r: f"{r['size']:,}"),
        ("base facts", lambda r: f"{r['base_facts']:,}"),
        ("stored rows (base + materialized)", lambda r: f"{r['stored_rows']:,}"),
        ("load: insert all + first check", lambda r: f"{r['phases']['load']['total_s']:.2f} s"),
        ("check p50 / p99 / mean (µs)", lambda r: "{} / {} / {}".format(
            *(fmt(r['phases']['check']['all'][k]) for k in ("p50", "p99", "mean")))),
        ("checks timed (allowed)", lambda r: f"{r['phases']['check']['all']['n']:,} "
                                             f"({r['phases']['check']['allowed']:,})"),
        ("load_table p50 / p99 (µs)", lambda r: "{} / {}".format(
            *(fmt(r['phases']['check']['by_op'].get('load_table', {}).get(k))
              for k in ("p50", "p99")))),
        ("the same checks again (answers kept across reads): p50 / p99 (µs)",
         lambda r: "{} / {}".format(
            *(fmt(r['phases']['check']['decision_only'][k]) for k in ("p50", "p99")))),
        ("reference: hand-written Python decision (oracle) p50 / p99 (µs)",
         lambda r: "{} / {}".format(*(fmt(r['phases']['check']['oracle'][k])
                                      for k in ("p50", "p99")))),
    ]
    for k, label in (("grant", "grant"), ("revoke", "revoke"), ("new_table", "new table"),
                     ("membership", "new group membership")):
        rows.append((f"{label}: update / reflected (median)", lambda r, k=k: "{} / {}".format(
            ms(r['phases']['updates'][k]['update_us']),
            ms(r['phases']['updates'][k]['reflected_us']))))
    rows += [
        ("rebuild() from scratch (median)",
         lambda r: f"{r['phases']['rebuild']['median_s']:.2f} s"),
        ("(rebuild + check) / slowest reflected update", lambda r: ratio(
            r['phases']['rebuild']['ratio_to_worst_update'])),
        ("rebuild / slowest update alone", lambda r: ratio(
            r['phases']['rebuild'].get('ratio_to_worst_update_alone'))),
        ("tables in the big schema", lambda r: f"{r['phases']['list']['schema_tables']:,}"),
        ("list, big schema, `list(..., within=schema)` (median)",
         lambda r: list_cell(r, "within")),
        ("list, big schema, query (median)", lambda r: list_cell(r, "query")),
        ("list, big schema, `listed` (median)", lambda r: list_cell(r, "listed")),
        ("`list(u, load_table, type=table)` (median)", lambda r: list_cell(r, "api")),
        ("bytes / base fact: deep size of the reasoner", lambda r: fmt(
            r['phases']['memory'].get('deep_per_fact'), 0)),
        ("bytes / base fact: RSS growth over the load", lambda r: fmt(
            r['phases']['memory']['rss_load_delta_per_fact'], 0)),
        ("bytes / base fact: RSS growth incl. generating the facts", lambda r: fmt(
            r['phases']['memory']['rss_total_delta_per_fact'], 0)),
        ("peak RSS (end of run: includes the indexes built lazily by checks and lists)",
         lambda r: f"{r['peak_rss_mb']:,.0f} MiB = "
                   f"{r['peak_rss_mb'] * 2**20 / r['base_facts']:,.0f} B/base fact"),
    ]
    out = ["| | " + " | ".join(f"{r['size']:,} tables" for r in results) + " |",
           "|---|" + "--:|" * len(results)]
    for label, f in rows[1:]:
        cells = []
        for r in results:
            try:
                cells.append(f(r) if "error" not in r else "—")
            except (KeyError, TypeError):
                cells.append("—")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out


def list_cell(r: dict[str, Any], name: str) -> str:
    li = r["phases"]["list"].get(name)
    if not li:
        return "—"
    if li["median_ms"] is None:
        return li["note"] or "—"
    s = f"{li['median_ms']:,.1f} ms ({li['mean_results']:,.0f} rows, n={li['n']})"
    return s + (" — " + li["note"] if li["note"] else "")


def targets(res: dict[str, Any]) -> list[str]:
    """Met / missed lines for one size."""
    p = res["phases"]
    c = p["check"]["all"]
    ups = [v["reflected_us"] for v in p["updates"].values() if v["reflected_us"] is not None]
    worst = max(ups) if ups else None
    rr = p["rebuild"]["ratio_to_worst_update"]
    lq = p["list"].get("within") or p["list"].get("query", {})
    lm = lq.get("median_ms")
    if lm is None and lq.get("timed_out_s"):  # the first call did not finish: a lower bound
        lm = lq["timed_out_s"] * 1000
    deep = "deep_per_fact" in p["memory"]
    bpf = p["memory"].get("deep_per_fact", p["memory"]["rss_load_delta_per_fact"])

    def line(name: str, value: float | None, target: float, unit: str, higher: bool = False,
             show: Callable[[float], str] = lambda v: f"{v:,.1f}") -> str:
        if value is None:
            return f"- {name}: not measured"
        ok = value >= target if higher else value <= target
        if ok:
            return f"- {name}: {show(value)} {unit} — **met** (target {show(target)} {unit})"
        factor = target / value if higher else value / target
        return (f"- {name}: {show(value)} {unit} — **missed** by {factor:,.1f}× "
                f"(target {'≥' if higher else '≤'} {show(target)} {unit})")

    return [
        line("check p50", c["p50"], TARGETS["check_p50_us"], "µs"),
        line("check p99", c["p99"], TARGETS["check_p99_us"], "µs"),
        line("update reflected, median (slowest kind)", worst / 1000 if worst else None,
             TARGETS["update_ms"], "ms", show=lambda v: f"{v:,.3f}"),
        line("(rebuild + check) / reflected update", rr, TARGETS["rebuild_ratio"], "×",
             higher=True, show=lambda v: f"{v:,.0f}" if v >= 10 else f"{v:.2f}"),
        line(f"list over the {p['list']['schema_tables']:,}-table schema "
             + ("(`list(..., within=schema)`)" if p["list"].get("within") else "(query)")
             + (" — did not finish; lower bound" if lq.get("median_ms") is None else ""),
             lm, TARGETS["list_ms"], "ms"),
        line("bytes per base fact " + ("(deep size)" if deep else "(RSS growth of the load)"),
             bpf, TARGETS["bytes_per_fact"], "B", show=lambda v: f"{v:,.0f}"),
    ]


def write_results(path: Path, lines: list[str]) -> None:
    """Replace (or append) our section only; re-read the file right before writing."""
    replace_marked(path, BEGIN, END, "\n".join([BEGIN, HEADING, "", *lines, END]))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000", help="table counts")
    ap.add_argument("--quick", action="store_true",
                    help="10,000 tables, fewer checks and updates (a smoke run)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rules", type=Path, default=RULES)
    ap.add_argument("--checks", type=int, default=3000, help="timed checks per size")
    ap.add_argument("--verify", type=int, default=200, help="checks verified per round")
    ap.add_argument("--updates", type=int, default=50, help="updates of each kind")
    ap.add_argument("--lists", type=int, default=5, help="users listed per variant")
    ap.add_argument("--budget", type=float, default=300,
                    help="seconds per timed phase (checks, updates; lists get half)")
    ap.add_argument("--list-timeout", type=float, default=120, help="seconds per list call")
    ap.add_argument("--timeout", type=float, default=7200, help="seconds per worker")
    ap.add_argument("--no-deep-size", action="store_true", help="skip the deep-size walk")
    ap.add_argument("--no-gc-freeze", action="store_true",
                    help="do not gc.freeze() the loaded heap before timing checks")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    ap.add_argument("--from-json", type=Path,
                    help="do not run: render (and write) the results saved by --json")
    ap.add_argument("--profile", type=int, metavar="TABLES",
                    help="cProfile the check and update paths at this size, print, exit")
    ap.add_argument("--profile-checks", type=int, default=200)
    ap.add_argument("--profile-updates", type=int, default=25)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        try:
            res = worker(args)
        except Abort as e:
            print(f"DISAGREEMENT: {e}", file=sys.stderr)
            args.out.write_text(json.dumps({"size": args.size, "error": f"disagreement: {e}",
                                            "abort": True}))
            return 1
        args.out.write_text(json.dumps(res))
        return 0
    if args.profile:
        args.size = args.profile
        profile(args)
        return 0

    if args.quick:
        args.sizes = "10000"
        args.checks = min(args.checks, 1000)
        args.updates = min(args.updates, 20)
        args.lists = min(args.lists, 3)
        args.budget = min(args.budget, 60)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    started = _dt.datetime.now(_dt.UTC)
    load = os.getloadavg()
    results: list[dict[str, Any]] = []
    failed = False
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        results, started, load = saved["results"], _dt.datetime.fromisoformat(
            saved["started"]), tuple(saved["load"])
        command = saved["command"]
    else:
        command = " ".join(argv if argv is not None else sys.argv[1:])
        for n in sizes:
            with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
                out = Path(f.name)
            cmd = [sys.executable, __file__, "--worker", "--size", str(n), "--out", str(out),
                   "--seed", str(args.seed), "--rules", str(args.rules), "--checks",
                   str(args.checks), "--verify", str(args.verify), "--updates", str(args.updates),
                   "--lists", str(args.lists), "--budget", str(args.budget), "--list-timeout",
                   str(args.list_timeout)] + (["--no-deep-size"] if args.no_deep_size else []) + (
                   ["--no-gc-freeze"] if args.no_gc_freeze else [])
            print(f"== {n:,} tables", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            try:
                p = subprocess.run(cmd, timeout=args.timeout)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                rc = None
            wall = time.perf_counter() - t0
            try:
                res = json.loads(out.read_text())
            except (OSError, ValueError):
                res = {"size": n}
            out.unlink(missing_ok=True)
            if rc != 0 and "error" not in res:
                res["error"] = (f"timed out after {args.timeout:.0f} s" if rc is None else
                                f"worker exited with status {rc}"
                                + (" (killed: out of memory?)" if rc in (-9, 137) else ""))
            res["wall_s"] = wall
            results.append(res)
            if res.get("abort"):
                failed = True
                print(f"ABORT at {n:,} tables: {res['error']}", file=sys.stderr)
                break
    if args.json and not args.from_json:
        args.json.write_text(json.dumps({"results": results, "started": started.isoformat(),
                                         "load": load, "command": command}, indent=1))

    ok = [r for r in results if "error" not in r]
    lines = [f"Run {started:%Y-%m-%d %H:%M} UTC. Command: `.venv/bin/python "
             f"benchmarks/incremental_bench.py{' ' if command else ''}{command}`", ""]
    lines += [
        f"- machine: {os.cpu_count()} cores, shared and noisy (load average at start "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}); {platform.system()} "
        f"{platform.release()} {platform.machine()}; Python {platform.python_version()}",
        f"- grantlog {ok[0]['git'] if ok else git_state(*CODE, label='engine/rules')}; rules "
        f"`{os.path.relpath(args.rules, ROOT)}`",
        "- workload: `benchmarks/gravitino_workload.py`, seed "
        f"{args.seed}; each size in a fresh subprocess; warm (after the load)",
    ]
    codes = {r.get("code") for r in ok}
    if len(codes) > 1:
        lines.append("- **the engine or rules changed between sizes** (the working tree was "
                     "being edited during the run): compare sizes with care")
    if ok:
        lines.append(f"- materialized derived relations: {', '.join(ok[0]['materialized'])}; "
                     f"virtual (on demand): {len(ok[0]['virtual'])} relations")
    for r in results:
        if "error" in r:
            lines.append(f"- {r['size']:,} tables: **{r['error']}** (after {r['wall_s']:.0f} s)")
        else:
            v = r["verify"]
            lines.append(f"- {r['workload']} (engine+rules digest {r.get('code', '?')}, "
                         f"{r['git']})")
            lines.append(f"  - verified: {v['checks']} checks = oracle = after rebuild() "
                         f"({v['allowed']} allowed; {v['reasons']}); after the updates "
                         f"{v.get('after_updates')} checks incremental = rebuild()")
    lines += ["", *table(ok)] if ok else []
    if ok:
        big = max(ok, key=lambda r: r["size"])
        lines += ["", f"Targets (issue 3, at 1M tables; measured here at the largest size that "
                      f"ran, {big['size']:,} tables):", *targets(big)]
        if big["size"] < 1_000_000:
            lines.append("- 1,000,000 tables: not measured (see above)")
    print("\n".join(lines))
    if not args.no_write and not failed:
        write_results(args.results, lines)
        print(f"\nwrote {args.results}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
