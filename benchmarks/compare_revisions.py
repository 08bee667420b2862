#!/usr/bin/env python3
"""Check, list, filter and service figures of two revisions on this machine, alternating.

Issue 25 asks the restructure to keep the check, list, filter and service benchmarks within 10 %
of their figures before it. This runs a short, representative subset of them (the Gravitino-shaped
workload at ``--size`` tables, default 100,000) under two interpreters: ``--before``, a venv with
the old revision installed, and ``--after`` (default: this checkout's .venv). The runs alternate,
before / after / before / after ... (``--rounds`` pairs), so both share the machine's noise; each
run is a fresh process (``--worker``) that measures, through the public API only:

* **check**: ``Reasoner.check`` on a memory reasoner after ``prepare()`` (as list_bench and
  incremental_bench load it): 200 warm-up checks, then ``--checks`` (3,000) sampled checks, each
  asked once; p50 / p99 in µs (incremental_bench.py's check phase, make bench);
* **filter**: ``r.filter(u, "load_table", "table")`` for ``--users`` users (u0001...), each once,
  on that fresh reasoner: the total in ms (list_bench.py's filters, make bench-list);
* **list**: then ``r.list(u, "load_table", type="table")`` for the same users, each once: the
  total in ms (list_bench.py's listings);
* **service**: the workload in a SQLite store, ``grantlog serve`` (one worker) started from
  that interpreter, 200 warm-up checks over httpx, then wrk on /v1/check with 16 keep-alive
  connections: 3 s of warm-up, ``--seconds`` (5) measured: p50 / p99 ms and requests/s
  (service_bench.py's check round, make bench-service; needs wrk).

Each side's rules are its own (``grantlog.rules.model_path("gravitino")``), and the workers run
from a temporary folder, so that ``python -m grantlog.cli`` imports the installed revision, not
this checkout. Printed: per figure, each side's median over the rounds, every run's value, and
the ratio after/before (for requests/s before/after), marked when worse than ``--tolerance``.

``--renamed`` compares instead, under one interpreter (``--after``), the Gravitino model as
shipped ("before") with the same model and workload with every prelude relation renamed
("after": ``contains`` -> ``inside``, ``entity`` -> ``kind_of``, ``ancestor_or_self`` ->
``at_or_below``, ...): the hierarchy is declared, not named, so both take the same paths and
the figures must agree within noise (issue 25's held-out check).

Setup of the old revision (once; pip reaches the package registry):

    git worktree add /tmp/wt-before f1eeea5
    python3 -m venv /tmp/venv-before && /tmp/venv-before/bin/pip install -q -e '/tmp/wt-before[dev]'

    .venv/bin/python benchmarks/compare_revisions.py [--before /tmp/venv-before/bin/python]
        [--after .venv/bin/python] [--rounds 3] [--size 100000] [--seconds 5] [--json out.json]
    .venv/bin/python benchmarks/compare_revisions.py --renamed [--no-service]
    make bench-compare BEFORE=/tmp/venv-before/bin/python
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import harness
from harness import ROOT, each_timed, log, pct

#: (key, label, unit, higher is better)
FIGURES = [
    ("check_p50_us", "check p50", "µs", False),
    ("check_p99_us", "check p99", "µs", False),
    ("filter_ms", "filter, total over the users", "ms", False),
    ("list_ms", "list, total over the users", "ms", False),
    ("service_p50_ms", "service /v1/check p50", "ms", False),
    ("service_p99_ms", "service /v1/check p99", "ms", False),
    ("service_rps", "service /v1/check requests/s", "req/s", True),
]


#: the prelude's relations and their names in the renamed model (``--renamed``)
RENAMES = {"contains": "inside", "entity": "kind_of", "ancestor_or_self": "at_or_below",
           "ancestor": "above", "member": "in_group", "role_of": "granted_role",
           "holds": "has_role"}


def renamed_model(rules: Path, out: Path) -> Path:
    """The model at ``rules`` and its prelude, copied to ``out`` with every prelude relation
    renamed where it is used (the name, whole, before ``(``)."""
    for name in (rules.name, "prelude.gl"):
        text = (rules.parent / name).read_text(encoding="utf-8")
        for old, new in RENAMES.items():
            text = re.sub(rf"\b{old}(?=\s*\()", new, text)
        (out / name).write_text(text, encoding="utf-8")
    return out / rules.name


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """One side's figures, in this interpreter (its grantlog)."""
    from grantlog.rules import model_path

    import grantlog

    rules = Path(model_path("gravitino"))
    tree = Path(grantlog.__file__).resolve().parent.parent
    res: dict[str, Any] = {"grantlog": str(tree), "git": harness.git_state(
        "engine", "grammar", "grantlog", "rules", "spark_bridge", label="code", root=tree)}
    if args.rename:
        rules = renamed_model(rules, Path(tempfile.mkdtemp()))
        res["git"] += " (relations renamed)"
    program, w, sampler = harness.world(rules, args.size)
    if args.rename:
        w.facts = {RENAMES.get(rel, rel): rows for rel, rows in w.facts.items()}
    checks = [sampler.one("load_table") for _ in range(args.checks + 200)]
    res.update(in_process(args, grantlog.Reasoner(program), w, checks))
    gc.unfreeze()
    gc.collect()
    if not args.no_service:
        res.update(service(args, rules, program, w, checks))
    return res


def in_process(args: argparse.Namespace, r: Any, w: Any, checks: list[tuple[str, str, str]],
               ) -> dict[str, Any]:
    """check, filter and list on ``r``, loaded with the workload and prepared."""
    with r.transaction() as tx:
        for rel, rows in w.facts.items():
            tx.insert(rel, rows)
    r.prepare()
    gc.collect()
    gc.freeze()
    for c in checks[:200]:
        r.check(*c)
    ns = [t for _, _, t in each_timed(r.check, checks[200:], budget=120)]
    res = {"check_p50_us": pct(ns, 0.5) / 1e3, "check_p99_us": pct(ns, 0.99) / 1e3}
    users = [f"u{i:04d}" for i in range(1, args.users + 1)]
    for key, ask in (("filter_ms", lambda u: r.filter(u, "load_table", "table")),
                     ("list_ms", lambda u: r.list(u, "load_table", type="table"))):
        total = 0.0
        for u in users:
            gc.collect()
            total += harness.timed(functools.partial(ask, u), 1).best
        res[key] = total * 1e3
    return res


def service(args: argparse.Namespace, rules: Path, program: Any, w: Any,
            checks: list[tuple[str, str, str]]) -> dict[str, Any]:
    import httpx

    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        store = f"sqlite:///{tmp / 'facts.db'}"
        harness.load_store(store, program, w)
        server, url = harness.start_server(rules, store, tmp)
        try:
            with httpx.Client(base_url=url, timeout=60) as c:
                for s, o, x in checks[:200]:
                    c.post("/v1/check", json={"subject": s, "operation": o, "resource": x})
            (tmp / "checks.jsonl").write_text("".join(
                json.dumps({"subject": s, "operation": o, "resource": x}) + "\n"
                for s, o, x in checks[200:1200]))
            script = tmp / "check.lua"
            script.write_text(harness.post_lua(tmp / "checks.jsonl"))
            harness.wrk(url, script, 16, 3)  # warm
            got = harness.wrk(url, script, 16, args.seconds)
        finally:
            harness.stop(server)
    return {"service_p50_ms": got.get("p50_ms"), "service_p99_ms": got.get("p99_ms"),
            "service_rps": got.get("rps"), "service_non2xx": got["non2xx"]}


def run_side(python: str, args: argparse.Namespace, tag: str) -> dict[str, Any]:
    """One worker under ``python``, from a temporary folder (not this checkout: ``-m`` puts the
    working folder first on the path)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cmd = [python, str(Path(__file__).resolve()), "--worker", str(out), "--size",
               str(args.size), "--users", str(args.users), "--checks", str(args.checks),
               "--seconds", str(args.seconds)] + (["--no-service"] if args.no_service else []) \
            + (["--rename"] if args.renamed and tag == "after" else [])
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"the {tag} worker failed ({python}):\n{p.stderr[-4000:]}")
        res: dict[str, Any] = json.loads(out.read_text())
    res["wall_s"] = time.perf_counter() - t0
    log(f"  {tag}: " + ", ".join(f"{k} {res[k]:,.1f}" for k, *_ in FIGURES if k in res)
        + f" ({res['wall_s']:.0f} s, {res['git']})")
    return res


def report(runs: dict[str, list[dict[str, Any]]], args: argparse.Namespace,
           load: tuple[float, ...]) -> str:
    b, a = runs["before"], runs["after"]
    lines = [f"before: {b[0]['grantlog']} at {b[0]['git']}",
             f"after:  {a[0]['grantlog']} at {a[0]['git']}",
             f"{args.size:,} tables, {args.users} users, {args.checks} checks, wrk "
             f"{args.seconds} s; {len(b)} round(s) before/after alternating; load average "
             f"{' / '.join(f'{x:.2f}' for x in load)} at start, "
             f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())} at the end "
             f"({os.cpu_count()} cores)", "",
             "| figure | before (median) | after (median) | ratio | runs before | runs after |",
             "|---|--:|--:|--:|---|---|"]
    for key, label, unit, higher in FIGURES:
        xb = [x[key] for x in b if x.get(key) is not None]
        xa = [x[key] for x in a if x.get(key) is not None]
        if not xb or not xa:
            continue
        mb, ma = statistics.median(xb), statistics.median(xa)
        worse = mb / ma if higher else ma / mb
        mark = " **worse**" if worse > 1 + args.tolerance else ""
        lines.append(f"| {label} ({unit}) | {mb:,.2f} | {ma:,.2f} | {worse:.3f}{mark} | "
                     f"{', '.join(f'{x:,.1f}' for x in xb)} | "
                     f"{', '.join(f'{x:,.1f}' for x in xa)} |")
    lines += ["", "ratio: after/before (requests/s: before/after), so above 1 is slower; "
              f"**worse**: more than {args.tolerance:.0%} slower."]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", default="/tmp/venv-before/bin/python",
                   help="the old revision's interpreter (a venv with it installed)")
    p.add_argument("--after", default=str(ROOT / ".venv" / "bin" / "python"),
                   help="the new revision's interpreter (default: this checkout's .venv)")
    p.add_argument("--rounds", type=int, default=3, help="before/after pairs (3)")
    p.add_argument("--size", type=int, default=100_000, help="tables (100000)")
    p.add_argument("--users", type=int, default=8, help="users listed and filtered (8)")
    p.add_argument("--checks", type=int, default=3000, help="timed checks (3000)")
    p.add_argument("--seconds", type=int, default=5, help="measured wrk seconds (5)")
    p.add_argument("--tolerance", type=float, default=0.10, help="worse above (0.10)")
    p.add_argument("--no-service", action="store_true", help="skip the HTTP figures")
    p.add_argument("--json", type=Path, help="write every run's figures here")
    p.add_argument("--renamed", action="store_true",
                   help="compare the shipped model with itself renamed, under --after")
    p.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--rename", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.renamed:
        args.before = args.after
    if args.worker:
        args.worker.write_text(json.dumps(worker(args)))
        return
    if not args.no_service:
        harness.need_wrk("bench-service")
    load = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    t0 = time.perf_counter()
    for i in range(args.rounds):
        log(f"round {i + 1} of {args.rounds}")
        for tag, python in (("before", args.before), ("after", args.after)):
            runs[tag].append(run_side(python, args, tag))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2))
    print(report(runs, args, load))
    print(f"\n({time.perf_counter() - t0:.0f} s in all)")


if __name__ == "__main__":
    main()
