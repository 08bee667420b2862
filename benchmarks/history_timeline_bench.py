#!/usr/bin/env python3
"""Timelines at scale (issue 28): the timeline of one (subject, resource) over the whole
history of benchmarks/history_world.py's store (``--tables`` tables, ``--transactions``
transactions, SQLite, checkpoints every ``--every`` revisions), evaluated over revision
intervals (engine/answer/timed.py: every version of only the facts the goal's demand
reaches, read by the temporal table's indexes).

Pairs: the world's focus pair (its grant toggled by 1% of the transactions) and ``--pairs``
- 1 others with history: a user holding (at the head) a role that some transaction of the
log granted a table privilege to, asked for that privilege on that table. Each pair is asked
once (the first call: nothing of it kept; the plans were made by one warm-up timeline of
another pair). The timed figure is ``r.timeline(subject, operation, resource)`` without
proofs: the decision's intervals over the whole history with each edge's transaction
(revision, commit time, author, reason, ticket). Proofs (``proofs=True``: the why at each
start, the why-not at each end) are computed per interval on request and are not in it.

Checked on the way: for ``--verify`` pairs, the timeline agrees with as-of checks
(engine/answer/pointread.py) at ``--verify-revisions`` random revisions and at each of the
first ten edges and the revision before it. ``--replay N``: the first N pairs also by the
replay of the log (engine/answer/timelines.py ``keyed``: the path before; slow at 1M), with
the same intervals.

    .venv/bin/python benchmarks/history_timeline_bench.py --tables 100000 --transactions 100000
    .venv/bin/python benchmarks/history_timeline_bench.py --tables 1000000 \\
        --transactions 1000000 --path /tmp/w1m.db
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import history_world as hw
from grantlog.engine.answer import history, timed, timelines, validity

import grantlog


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] * 1000


def holders(r: grantlog.Reasoner) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Who holds each role (users and groups) and who is in each group, at the head."""
    roles: dict[str, set[str]] = {}
    for principal, role in r.rows("role_of"):
        roles.setdefault(str(role), set()).add(str(principal))
    groups: dict[str, set[str]] = {}
    for u, g in r.rows("member"):
        groups.setdefault(str(g), set()).add(str(u))
    return roles, groups


def pairs(r: grantlog.Reasoner, w: hw.World, k: int, rng: random.Random,
          ) -> list[tuple[str, str, str]]:
    """The focus pair and ``k - 1`` pairs whose privilege some transaction granted."""
    roles, groups = holders(r)
    out = [(w.focus_user, "select_table", w.focus_table)]
    con = sqlite3.connect(w.path)
    try:
        tries = 0
        while len(out) < k and tries < 50 * k:
            tries += 1
            at = rng.randint(2, w.head)
            got = con.execute("SELECT row FROM grantlog_log WHERE relation = 'privilege' AND "
                              "sign = 1 AND revision >= ? ORDER BY revision LIMIT 1",
                              (at,)).fetchone()
            if got is None:
                continue
            role, priv, obj, _ = json.loads(got[0])
            if priv not in ("select_table", "modify_table") or obj.count(".") != 3:
                continue
            users = sorted({u for p in roles.get(role, ()) for u in groups.get(p, {p})})
            if users:
                pair = (rng.choice(users), priv, obj)
                if pair not in out:
                    out.append(pair)
    finally:
        con.close()
    return out


def prove(r: grantlog.Reasoner, w: hw.World, asked: list[tuple[str, str, str]],
          found: dict[tuple[str, str, str], list[Any]], verify: int) -> dict[str, Any]:
    """``r.timeline(*q, proofs=True)`` of each pair (first call: the why at each interval's
    start and the why-not at its end by point reads, engine/answer/timed_proofs.py), p50/p95
    over the pairs and per explanation; ``verify`` edges' explanations compared with the
    rebuilt reasoner's, each in a child process (it holds a revision of the whole store)."""
    took, cpu, per = [], [], []
    shown: list[tuple[str, int, Any]] = []
    for q in asked:
        gc.collect()
        t, c = time.perf_counter(), time.process_time()
        got = r.timeline(*q, proofs=True)
        took.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        assert [i.interval for i in got] == found[q]
        n = sum(1 if i.end is None else 2 for i in got)
        if n:
            per.append(cpu[-1] / n)
        shown += [(i.why.goal, e.revision, e.committed_at, x) for i in got
                  for e, x in ((i.start, i.why), (i.end, i.why_not)) if e is not None]
        print(f"  with proofs {q}: {took[-1] * 1000:.1f} ms ({cpu[-1] * 1000:.1f} ms CPU), "
              f"{len(got)} intervals, {n} explanations")
    print(f"timeline with proofs ({len(took)} pairs, first call): p50 {pct(took, .5):.1f} ms, "
          f"p95 {pct(took, .95):.1f} ms, max {pct(took, 1):.1f} ms; CPU time p50 "
          f"{pct(cpu, .5):.1f} ms, p95 {pct(cpu, .95):.1f} ms; per explanation (CPU) p50 "
          f"{pct(per, .5):.1f} ms, p95 {pct(per, .95):.1f} ms")
    import multiprocessing

    picked = random.Random(7).sample(shown, min(verify, len(shown)))
    fork = multiprocessing.get_context("fork")
    for goal, rev, at, ex in picked:  # whys and why-nots, as they come
        t = time.perf_counter()
        took_it, give = fork.Pipe(duplex=False)
        child = fork.Process(target=_rebuilt, args=(give, r, goal, rev, at))  # forked: r shared
        child.start()
        want = took_it.recv()
        child.join()
        assert want == ex.to_dict(), (goal, rev)
        print(f"  {goal} at {rev} ({'why' if ex.holds else 'why-not'}): the rebuilt "
              f"reasoner's explanation, {time.perf_counter() - t:.1f} s to rebuild")
    return {"proofs_ms": [pct(took, .5), pct(took, .95)],
            "proofs_cpu_ms": [pct(cpu, .5), pct(cpu, .95)],
            "proof_cpu_ms_per_explanation": [pct(per, .5), pct(per, .95)] if per else None,
            "proofs_verified": len(picked)}


def _rebuilt(give: Any, r: grantlog.Reasoner, goal: str, rev: int, at: float | None) -> None:
    """The explanation of the rebuilt reasoner of ``rev`` at the edge's moment ``at`` (the
    facts' validity intervals read then: engine/answer/validity.py)."""
    p = history.past(r, rev, None)
    give.send((p if at is None else validity.at(p, validity.instant(at, "now"))).explain(
        goal).to_dict())


def timed_pairs(r: grantlog.Reasoner, w: hw.World, asked: list[tuple[str, str, str]],
                rng: random.Random) -> list[tuple[str, str, str]]:
    """``asked`` with every other pair after the focus pair replaced by one whose grant
    was written with a validity interval (a ``@valid`` row: history_world.py ``expiring``)
    still kept at the head, one of whose bounds time has passed (so that its timeline has
    an edge at a validity bound, unless another grant covers it then): a user holding that
    role at the head, asked for that privilege."""
    from datetime import UTC, datetime

    roles, groups = holders(r)
    con = sqlite3.connect(w.path)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    try:  # (ISO texts of one format: compared as strings)
        timed_grants = sorted(
            fact for fact, lo, hi in con.execute(
                'SELECT fact, valid_from, valid_until FROM "rel_@valid" WHERE relation = '
                "'privilege'") if (lo and lo <= now) or (hi and hi <= now))
    finally:
        con.close()
    rng.shuffle(timed_grants)
    out = list(asked)
    for n in range(1, len(out), 2):
        while timed_grants:
            role, priv, obj, _ = json.loads(timed_grants.pop())
            if priv not in ("select_table", "modify_table") or obj.count(".") != 3:
                continue
            users = sorted({u for p in roles.get(role, ()) for u in groups.get(p, {p})})
            if users and (pair := (rng.choice(users), priv, obj)) not in out:
                out[n] = pair
                break
    return out


def verify_moments(r: grantlog.Reasoner, q: tuple[str, str, str], ivs: list[Any]) -> int:
    """The first 3 intervals' edges against as-of checks at their moment and just before
    (a revision and a time: the rebuilt reasoner, engine/answer/validity.py)."""
    n = 0
    for i in ivs[:3]:
        for e, holds in ((i.start, True), (i.end, False)):
            if e is None or e.committed_at is None or (holds and i.held_before):
                continue
            before = (e.revision, e.committed_at - 1e-6) if e.passed else \
                (e.revision - 1, e.committed_at)
            for (rev, t), want in (((e.revision, e.committed_at), holds), (before, not holds)):
                assert r.check(*q, at_revision=rev, now=t).allowed == want, (q, rev, t)
                n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", type=int, default=100_000)
    ap.add_argument("--transactions", type=int, default=100_000)
    ap.add_argument("--every", type=int, default=1000)
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--verify", type=int, default=3)
    ap.add_argument("--verify-revisions", type=int, default=20)
    ap.add_argument("--replay", type=int, default=0)
    ap.add_argument("--proofs", type=int, default=0,
                    help="the first N pairs also asked with proofs (timed_proofs.py)")
    ap.add_argument("--proofs-verify", type=int, default=0,
                    help="edges whose proofs are compared with the rebuilt reasoner's "
                    "(each in a child process: ~1.5 GB at 1M)")
    ap.add_argument("--path", default=None, help="the store (default: under /tmp)")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--json", default=None, help="write the figures here too")
    ap.add_argument("--expiring", type=float, default=0.0,
                    help="the share of the history's grants written with a validity interval "
                    "(history_world.py: expiring and scheduled; a store of its own)")
    a = ap.parse_args()
    path = a.path or f"/tmp/grantlog-history-{a.tables}x{a.transactions}" \
        f"{f'-exp{a.expiring}' if a.expiring else ''}.db"
    w = hw.build(path, a.tables, a.transactions, every=a.every, log=print,
                 expiring=a.expiring)
    print(f"store {w.url}: head {w.head:,}")
    t0 = time.perf_counter()
    r = grantlog.Reasoner(w.program, store=w.url, follow=False)
    r.check(w.focus_user, "select_table", w.focus_table)
    print(f"reasoner over the store, first check now: {time.perf_counter() - t0:.1f}s")
    rng = random.Random(a.seed)
    asked = pairs(r, w, a.pairs + 1, rng)
    if a.expiring:  # half of them (not the focus pair) granted with a validity interval
        asked = timed_pairs(r, w, asked, rng)
    warm, asked = asked[-1], asked[:-1]
    timed.decided(r, (0, 1, 2), warm)  # the plans, made once per program
    gc.collect()
    took, cpu, n_iv, lookups, read = [], [], [], [], []
    found = {}
    for q in asked:
        t, c = time.perf_counter(), time.process_time()
        d = timed.decided(r, (0, 1, 2), q)
        assert d is not None, "not evaluated over intervals (no checkpoint?)"
        ivs = d.intervals(q)  # what r.timeline(*q) returns
        took.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        found[q] = ivs
        n_iv.append(len(ivs))
        lookups.append(d.lookups)
        read.append(d.rows_read)
        moments = sum(1 for i in ivs for e in (i.start, i.end) if e is not None and e.passed)
        print(f"  {q}: {took[-1] * 1000:.1f} ms ({cpu[-1] * 1000:.1f} ms CPU), {len(ivs)} "
              f"intervals ({moments} edges at validity bounds), {d.lookups} lookups, "
              f"{d.rows_read} rows read")
    print(f"timeline of one (subject, resource) over revisions 0..{w.head:,} "
          f"({len(took)} pairs, first call): p50 {pct(took, .5):.1f} ms, "
          f"p95 {pct(took, .95):.1f} ms, max {pct(took, 1):.1f} ms; CPU time p50 "
          f"{pct(cpu, .5):.1f} ms, p95 {pct(cpu, .95):.1f} ms")
    print(f"  per timeline (medians): {statistics.median(n_iv):.0f} intervals "
          f"(max {max(n_iv)}), {statistics.median(lookups):.0f} lookups, "
          f"{statistics.median(read):.0f} rows read (max {max(read)})")
    assert r.timeline(*asked[0]) == found[asked[0]]
    checked = 0
    for q in asked[:a.verify]:
        ivs = found[q]
        if a.expiring:  # at moments: as-of checks at a revision and a time (rebuilt)
            checked += verify_moments(r, q, ivs)
            continue
        revs = {rng.randint(0, w.head) for _ in range(a.verify_revisions)}
        for i in ivs[:10]:
            revs |= {i.start.revision, i.start.revision - 1}
            if i.end is not None:
                revs |= {i.end.revision, i.end.revision - 1}
        for rev in sorted(x for x in revs if 0 <= x <= w.head):
            want = r.check(*q, at_revision=rev).allowed
            assert any(rev in i for i in ivs) == want, (q, rev)
            checked += 1
    print(f"  agrees with {checked} as-of checks (point reads) of {min(a.verify, len(asked))} "
          "pairs")
    replayed = []
    for q in asked[:a.replay]:
        u, o, x = q
        t = time.perf_counter()
        got = timelines.keyed(r, {}, (), None, None,
                              lambda live, u=u, o=o, x=x: {()} if live.check(u, o, x)
                              else set(),
                              lambda row, q=q: () if tuple(row) == q else None)
        replayed.append(time.perf_counter() - t)
        assert list(got.intervals.get((), [])) == found[q], q
        print(f"  replay of the log (before), {q}: {replayed[-1]:.1f} s, same intervals")
        gc.collect()
    proofs = prove(r, w, asked[:a.proofs], found, a.proofs_verify) if a.proofs else {}
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"max RSS {rss:,.0f} MiB; load average {os.getloadavg()[0]:.1f}")
    if a.json:
        Path(a.json).write_text(json.dumps({
            "tables": a.tables, "transactions": a.transactions, "head": w.head,
            "timeline_ms": [pct(took, .5), pct(took, .95)],
            "timeline_cpu_ms": [pct(cpu, .5), pct(cpu, .95)], "intervals": n_iv,
            "lookups": lookups, "rows_read": read, "replay_s": replayed, **proofs,
            "max_rss_mib": rss}, indent=1))
    r.close()


if __name__ == "__main__":
    main()
