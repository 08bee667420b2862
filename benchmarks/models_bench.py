#!/usr/bin/env python3
"""Own models against the shipped one (issue 26): the three benchmark models of
benchmarks/models/ (``renamed``, ``unary``, ``twotrees``), ``bare`` (renamed.gl without its
``@materialize``/``@demand`` annotations: the materialization policy's split alone) and the
shipped Gravitino model (``shipped``: rules/gravitino.gl), each on its translation of the same
generated world
(benchmarks/models/worlds.py) of ``--sizes`` tables, in one process, one model after another.

For each model and size, after loading the facts and ``prepare()``:

* ``list(user, op)`` (``op`` the model's table-loading operation) for the probe users whose
  answers hold a few tables (``probe_small``), thousands (``probe_medium``) and every table
  (``probe_all``): the first call (cold: nothing of that user evaluated before) against the
  budget of 50 ms + 2 µs per listed table (PASS/MISS), and the median of ``--repeats`` calls
  after it (warm);
* ``list(probe_medium, op, type="table")`` and ``list(probe_medium, op, within=<catalog>)``;
* the data filter ``Reasoner.filter(user, op, "table")`` of each probe user (cold, and the
  warm median) and its SQL (``grantlog.filters.to_sql``) against the 10 ms target;
* ``--checks`` checks of the table-loading operation, sampled as the other benchmarks sample
  them (gravitino_workload.Sampler, seed 3; the same questions for every model), in
  ``--rounds`` rounds that alternate between the models (so that the machine's load falls on
  all alike; each round new questions, 100 untimed first): p50 and p99 of the allowed and of
  the denied ones (the median over the rounds), and their ratio to the shipped model's
  (target ≤ 1.5×); 30,000 by default, so that a round's p99 rests on dozens of checks above
  it, not on the few a scheduler tick (4 ms on this machine) lands on; and the p99 of the
  thread's CPU time per check (``time.thread_time_ns``), which a loaded machine's preemptions
  do not inflate;
* the fast paths taken: the relations kept in memory and why (engine/compile/materialize.py
  ``reasons``: an annotation or the policy's rule), the hierarchy roles found
  (engine/core/hierarchy_roles.py), whether
  ``list`` went through the filter walk (engine/answer/listing.py ``list_filtered``) and
  whether a filter could be built at all.

Every list answer is checked against the shipped model's (the four models decide alike on
these worlds) and a sample of it against ``check``. A question that raises, or runs longer
than ``--timeout`` seconds, is reported as such.

    .venv/bin/python benchmarks/models_bench.py [--sizes 100000 1000000] [--models ...]
        [--checks 2000] [--repeats 3] [--json] [--write]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import gravitino_workload as gw
from harness import (
    HERE,
    Timeout,
    deadline,
    git_state,
    log,
    machine,
    pct,
    replace_section,
    run_info,
    timed,
)

if str(HERE / "models") not in sys.path:
    sys.path.insert(0, str(HERE / "models"))
import worlds

import grantlog
from grantlog.filters import Layout, to_sql

HEADING = "## Own models against the shipped one (issue 26)"
#: the catalog layout the filters' SQL is rendered for
LAYOUT = Layout("objects", "id", "kind", parent="parent_id")
TYPE = "table"
LOAD = worlds.LOAD


def budget_ms(n: int) -> float:
    """The listing budget: 50 ms + 2 µs per listed table."""
    return 50.0 + 0.002 * n


def guarded(fn: Callable[[], Any], timeout: float) -> tuple[Any, float, str | None]:
    """``fn()`` with its time in ms, or the error (its code, or ``timeout``) instead."""
    t0 = time.perf_counter()
    try:
        with deadline(timeout):
            got = fn()
    except Timeout:
        return None, (time.perf_counter() - t0) * 1e3, f"timeout > {timeout:g} s"
    except grantlog.GrantlogError as err:
        return None, (time.perf_counter() - t0) * 1e3, ",".join(
            d.code for d in err.diagnostics) or "error"
    except Exception as err:  # reported in the table, the run goes on
        return None, (time.perf_counter() - t0) * 1e3, f"{type(err).__name__}: {err}"
    return got, (time.perf_counter() - t0) * 1e3, None


def warm(fn: Callable[[], Any], repeats: int, timeout: float) -> float | None:
    """The median ms of ``repeats`` more calls of ``fn`` (None when one fails or is slow)."""
    if repeats <= 0:
        return None
    try:
        with deadline(timeout * repeats):
            return timed(fn, repeat=repeats).median * 1e3
    except Exception:  # the cold call reported the failure
        return None


def load(world: worlds.World) -> tuple[grantlog.Reasoner, dict[str, Any]]:
    """``world``'s rules compiled and its facts inserted in one transaction, then
    ``prepare()``; the seconds of each step."""
    t0 = time.perf_counter()
    r = grantlog.Reasoner(world.program())
    t1 = time.perf_counter()
    with r.transaction() as tx:
        for rel, rows in world.facts.items():
            tx.insert(rel, rows)
    t2 = time.perf_counter()
    _, _, err = guarded(r.prepare, 600)
    t3 = time.perf_counter()
    gc.collect()
    gc.freeze()
    return r, {"compile_s": t1 - t0, "insert_s": t2 - t1, "prepare_s": t3 - t2,
               "prepare_error": err}


def fast_paths(r: grantlog.Reasoner, world: worlds.World) -> dict[str, Any]:
    """The hierarchy roles found, and whether listing the medium probe goes through the
    filter walk (untimed)."""
    from grantlog.engine.answer.listing import list_filtered
    from grantlog.engine.compile.materialize import reasons
    from grantlog.engine.core.hierarchy_roles import hierarchy_roles

    roles = hierarchy_roles(r.program)
    walk, _, err = guarded(lambda: list_filtered(r, "probe_medium", world.load, None), 120)
    found = {k: getattr(roles, k, None) for k in ("edge", "type", "closure", "strict",
                                                   "walkable", "source", "upward", "why")}
    found["kinds"] = list(getattr(roles, "kinds", ()))
    found["others"] = [o.closure or o.strict or o.edge for o in getattr(roles, "others", ())]
    kept = {rel: why for rel, why in reasons(r.program).items()
            if rel not in r.program.virtual}
    return {"roles": found, "kept": kept,
            "list_walk": None if err else walk is not None, "list_walk_error": err}


def measure(world: worlds.World, args: argparse.Namespace, reference: dict[str, Any] | None,
            ) -> tuple[grantlog.Reasoner, dict[str, Any]]:
    """One model's figures at one size but its checks (see the module's doc), and the
    loaded reasoner."""
    gc.unfreeze()
    gc.collect()
    r, res = load(world)
    res.update(model=world.model, facts=world.n_facts)
    log(f"[{world.model} {world.workload.n_tables:,}] {world.n_facts:,} facts: compile "
        f"{res['compile_s']:.2f} s, insert {res['insert_s']:.2f} s, prepare "
        f"{res['prepare_s']:.2f} s"
        + (f" ({res['prepare_error']})" if res["prepare_error"] else ""))
    op, w = world.load, world.workload
    rng = random.Random(5)
    answers: dict[str, list[str]] = {}
    lists: dict[str, Any] = {}
    medium_schema = next(o for rr, p, o, _ in w.facts["privilege"]
                         if rr == f"{gw.METALAKE}/role/probe_medium" and p == "use_schema")
    catalog = w.parent[medium_schema]
    questions: list[tuple[str, str, dict[str, str]]] = [
        (p, p, {}) for p in worlds.PROBES] + [
        ("type=", "probe_medium", {"type": TYPE}),
        ("within=", "probe_medium", {"within": catalog})]
    for key, user, kw in questions:
        gc.collect()
        ask = partial(r.list, user, op, **kw)
        got, ms, err = guarded(ask, args.timeout)
        row: dict[str, Any] = {"user": user, **kw, "ms": ms, "error": err}
        if err is None:
            ans = list(got)
            row["tables"] = len(ans)
            row["budget_ms"] = budget_ms(len(ans))
            row["pass"] = ms <= row["budget_ms"]
            row["warm_ms"] = warm(ask, args.repeats, args.timeout)
            if not kw:
                answers[user] = ans
            ref = (reference or {}).get("answers", {}).get(key)
            row["same_as_shipped"] = None if ref is None else ref == _digest(ans)
            probe = rng.sample(ans, min(10, len(ans))) + rng.sample(w.tables, 10)
            inside = set(ans)
            row["check_disagrees"] = sum(
                (r.check(user, op, t).allowed and _under(w, t, kw.get("within")))
                != (t in inside) for t in probe)
        lists[key] = row
        log(f"  list {key}: " + (f"{row['tables']:,} tables in {ms:,.1f} ms (budget "
                                 f"{row['budget_ms']:,.1f} ms)" if err is None else err))
    res["lists"] = lists
    digests = {k: _digest(v) for k, v in answers.items()}
    digests.update({k: _digest(list(r.list(v["user"], op, **{
        x: v[x] for x in ("type", "within") if x in v})))
        for k, v in lists.items() if k not in answers and v["error"] is None})
    res["answers"] = digests
    filters: dict[str, Any] = {}
    for user in worlds.PROBES:
        gc.collect()
        build = partial(r.filter, user, op, TYPE)
        got, ms, err = guarded(build, args.timeout)
        row = {"ms": ms, "error": err}
        if err is None:
            row["warm_ms"] = warm(build, args.repeats, args.timeout)
            _, sql_ms, sql_err = guarded(partial(to_sql, got, LAYOUT, "postgres"), args.timeout)
            row.update({"sql_ms": sql_ms, "sql_error": sql_err, "pass": ms <= 10})
        filters[user] = row
        log(f"  filter {user}: " + (f"{ms:,.1f} ms" if err is None else err))
    res["filters"] = filters
    res["fast_paths"] = fast_paths(r, world)
    return r, res


def _under(w: gw.Workload, x: str, top: str | None) -> bool:
    """``x`` is ``top`` or lies below it (always, without ``top``)."""
    while top is not None and x != top:
        if x not in w.parent:
            return False
        x = w.parent[x]
    return True


def _digest(values: list[Any]) -> tuple[int, int]:
    """An answer's size and hash (answers are compared across models without keeping them)."""
    return len(values), hash(tuple(sorted(values)))


def check_round(r: grantlog.Reasoner, op: str, checks: list[tuple[str, str, str]],
                budget: float) -> dict[Any, list[float]]:
    """The µs of each of ``checks`` (``op`` put in), by decision (``True``, ``False``), after
    100 untimed ones, until they end or ``budget`` seconds have passed; and the thread's CPU
    µs of each (``("cpu", True)``, ``("cpu", False)``: what a preemption by another process
    does not count in, with a ~2 µs system call more per check)."""
    checks = [(u, op, t) for u, _, t in checks]
    for c in checks[:100]:
        r.check(*c)
    gc.collect()
    times: dict[Any, list[float]] = {True: [], False: [], ("cpu", True): [],
                                     ("cpu", False): []}
    pc, cpu = time.perf_counter_ns, time.thread_time_ns
    stop = time.perf_counter() + budget
    for c in checks[100:]:
        c0, t0 = cpu(), pc()
        d = r.check(*c)
        t1, c1 = pc(), cpu()
        times[d.allowed].append((t1 - t0) / 1e3)
        times["cpu", d.allowed].append((c1 - c0) / 1e3)
        if time.perf_counter() > stop:
            break
    return times


def check_figures(rounds: list[dict[Any, list[float]]]) -> dict[str, Any]:
    """p50 and p99 (µs) of the allowed and of the denied checks, wall clock and the thread's
    CPU time (``cpu_p50``, ``cpu_p99``): the median over the rounds of each round's."""
    out: dict[str, Any] = {}
    for allowed, name in ((True, "allowed"), (False, "denied")):
        got = [x[allowed] for x in rounds if x[allowed]]
        out[name] = {"n": sum(map(len, got))}
        for key, series in (("", got), ("cpu_", [x["cpu", allowed] for x in rounds
                                                 if x.get(("cpu", allowed))])):
            for q in (50, 99):
                out[name][f"{key}p{q}_us"] = (statistics.median(pct(x, q / 100) for x in series)
                                              if series else None)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {**run_info(), "git": git_state("engine", "grammar", "grantlog",
                                                          "rules", "benchmarks/models",
                                                          label="code"),
                           "machine": machine(), "rounds": args.rounds, "sizes": {}}
    for size in args.sizes:
        t0 = time.perf_counter()
        w, probes = worlds.workload(size, 1, **args.world)
        sampler = gw.Sampler(w, seed=3)
        per_round = args.checks // args.rounds + 100
        checks = [sampler.many(per_round, "load_table") for _ in range(args.rounds)]
        log(f"[{size:,}] {gw.summary(w)}; probes {probes}; generated in "
            f"{time.perf_counter() - t0:.1f} s")
        per: dict[str, Any] = {}
        kept: dict[str, grantlog.Reasoner] = {}
        timings: dict[str, list[dict[bool, list[float]]]] = {m: [] for m in args.models}
        budget = args.check_budget / args.rounds
        for model in args.models:
            r, per[model] = measure(worlds.translate(model, w, probes), args, per.get("shipped"))
            if args.rounds == 1:  # measured now, the reasoner dropped
                timings[model].append(check_round(r, LOAD[model], checks[0], budget))
            else:  # kept: the rounds alternate between the models
                kept[model] = r
            del r
        for i in range(args.rounds if kept else 0):
            for model, r in kept.items():
                timings[model].append(check_round(r, LOAD[model], checks[i], budget))
        kept.clear()
        ref = check_figures(timings["shipped"]) if "shipped" in timings else None
        for model, res in per.items():
            res["checks"] = got = check_figures(timings[model])
            log(f"[{model} {size:,}] checks: {got}")
            for name in ("allowed", "denied") if ref is not None else ():
                for q in ("p50", "p99", "cpu_p50", "cpu_p99"):
                    a, b = got[name][f"{q}_us"], ref[name][f"{q}_us"]  # type: ignore[index]
                    got[name][f"{q}_ratio"] = a / b if a is not None and b else None
        out["sizes"][size] = per
        gc.unfreeze()
        gc.collect()
    out["load_after"] = machine()["load"]
    return out


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v:,.1f}"


def _list_cell(row: dict[str, Any]) -> str:
    if row["error"] is not None:
        return f"**{row['error']}** ({row['ms']:,.0f} ms)"
    verdict = "PASS" if row["pass"] else "**MISS**"
    same = "" if row.get("same_as_shipped") in (None, True) else " ≠shipped"
    bad = f" {row['check_disagrees']}≠check" if row.get("check_disagrees") else ""
    return (f"{row['tables']:,}: {row['ms']:,.1f} / {row['budget_ms']:,.1f} ms {verdict} "
            f"(warm {_ms(row.get('warm_ms'))}){same}{bad}")


def _filter_cell(rows: dict[str, Any]) -> str:
    bad = [f"{u}: {x['error']}" for u, x in rows.items() if x["error"] is not None]
    if bad:
        return "**" + "; ".join(bad) + "**"
    worst = max(x["ms"] for x in rows.values())
    sql = [u for u, x in rows.items() if x.get("sql_error")]
    return (f"{worst:,.1f} ms {'PASS' if worst <= 10 else '**MISS**'} (warm "
            f"{_ms(max((x.get('warm_ms') or 0) for x in rows.values()))})"
            + (f"; SQL refused for {', '.join(sql)}" if sql else ""))


def _why(reason: str) -> str:
    """A kept relation's reason, short: the annotation, or the policy's rule."""
    from grantlog.engine.compile import materialize as m

    return {m.ANNOTATED: "annotated", m.RECURSIVE: "recursive", m.SMALL: "holdings",
            m.FILTER: "filter", m.NEEDED: "read by a kept one"}.get(reason, reason)


def markdown(res: dict[str, Any], cmd: str) -> str:
    m = res["machine"]
    lines = [HEADING, "",
             f"Run {res['when']} at `{res['git']}` (`{cmd}`); {m['cores']} cores, load "
             f"average {m['load'][0]:.2f} before and {res['load_after'][0]:.2f} after. The "
             "same generated world for every model (benchmarks/models/worlds.py), facts "
             "inserted in one transaction, then `prepare()`. List cells: tables listed: "
             "first call / budget (50 ms + 2 µs per table), PASS or MISS, and the warm "
             "median of repeats. Filters: the slowest probe user's `Reasoner.filter(u, op, "
             "\"table\")`, first call, against 10 ms. Checks: µs, the median over "
             f"{res['rounds']} rounds alternating between the models, and the ratio to the "
             "shipped model's (target ≤ 1.5×); CPU: the same checks' p99 in the thread's CPU "
             "time (a preemption by another process left out).", ""]
    for size, per in res["sizes"].items():
        lines += [f"### {int(size):,} tables", "",
                  "| model | load (insert + prepare) | list small | list medium | list all "
                  "| list type= | list within= | filters |",
                  "|---|---|---|---|---|---|---|---|"]
        for model, x in per.items():
            ls = x["lists"]
            lines.append(
                f"| {model} | {x['insert_s']:.1f} + {x['prepare_s']:.1f} s"
                + (f" (prepare: **{x['prepare_error']}**)" if x["prepare_error"] else "")
                + " | "
                + " | ".join(_list_cell(ls[k]) for k in (*worlds.PROBES, "type=", "within="))
                + f" | {_filter_cell(x['filters'])} |")
        lines += ["", "| model | check p50 allowed | p50 denied | p99 allowed | p99 denied "
                  "| CPU p99 allowed | CPU p99 denied | fast paths |",
                  "|---|---|---|---|---|---|---|---|"]
        for model, x in per.items():
            c = x["checks"]

            def cell(name: str, q: str, c: dict[str, Any] = c) -> str:
                v = c[name].get(f"{q}_us")
                if v is None:
                    return "–"
                ratio = c[name].get(f"{q}_ratio")
                flag = "" if ratio is None or ratio <= 1.5 else " **>1.5×**"
                return f"{v:,.0f} µs" + ("" if ratio is None else f" ({ratio:.2f}×{flag})")

            fp = x["fast_paths"]
            ro = fp["roles"]
            walk = fp["list_walk_error"] or ("filter walk" if fp["list_walk"] else
                                             "no filter walk")
            types = (f"type `{ro['type']}`" if ro["type"] else "types " + (
                ", ".join(f"`{k}`" for k in ro.get("kinds") or ()) or "none"))
            roles = (f"roles {ro['source'] or 'none'}" + (
                f" (edge `{ro['edge']}`{' upward' if ro.get('upward') else ''}, {types}, "
                f"closure `{ro['closure']}`" + "".join(
                    f"; other closure `{o}`" for o in ro.get("others") or ()) + ")"
                if ro["source"] else "") + ("" if ro["walkable"] else
                                            f", not walkable: {ro.get('why') or '?'}"))
            kept = ", ".join(f"`{rel}` ({_why(why)})"
                             for rel, why in sorted(fp.get("kept", {}).items()))
            lines.append(f"| {model} | {cell('allowed', 'p50')} | {cell('denied', 'p50')} | "
                         f"{cell('allowed', 'p99')} | {cell('denied', 'p99')} | "
                         f"{cell('allowed', 'cpu_p99')} | {cell('denied', 'cpu_p99')} | "
                         f"kept: {kept or 'none'}; {roles}; list: {walk} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    p.add_argument("--models", nargs="+", choices=worlds.MODELS, default=list(worlds.MODELS))
    p.add_argument("--checks", type=int, default=30_000, help="timed checks per model")
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds of checks, alternating between the models (more than one "
                   "keeps every model's reasoner in memory at once)")
    p.add_argument("--check-budget", type=float, default=60.0,
                   help="seconds of timed checks per model at most")
    p.add_argument("--repeats", type=int, default=3, help="warm repeats of each list/filter")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per question")
    p.add_argument("--json", nargs="?", const="-", metavar="PATH",
                   help="the figures as JSON: printed instead of the table, or written to PATH")
    p.add_argument("--write", action="store_true",
                   help=f"replace the section `{HEADING[3:]}` of benchmarks/RESULTS.md")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # the test's world
    args = p.parse_args(argv)
    if "shipped" in args.models:  # the reference first
        args.models = ["shipped", *[m for m in args.models if m != "shipped"]]
    args.world = ({"n_users": 20, "n_groups": 5, "n_roles": 12, "n_grants": 120}
                  if args.tiny else {})
    res = run(args)
    if args.json is not None:
        text = json.dumps(res, indent=2, default=str)
        if args.json == "-":
            print(text)
            return res
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    cmd = "benchmarks/models_bench.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = markdown(res, cmd.strip())
    print(text)
    if args.write:
        replace_section(HEADING, text)
    return res


if __name__ == "__main__":
    main()
