#!/usr/bin/env python3
"""Reading fact files (issue 26, item 2): facts/s and peak memory through
``grantlog.compile(paths=[...])``, ``grantlog eval`` and ``grantlog store load``, and a
LUBM-like conformance case through ``grantlog eval``.

The fact file: ``--sizes`` plain fact lines over ten relations (declared in a small rule file
with typed columns, one int column), identifiers, quoted strings and integers mixed, and two
rules; ``eval -r big`` evaluates the one with a small answer (a comparison and a join), so
the figure is reading, checking and loading the facts, not printing a large relation. Every
measurement runs in a fresh process (``ru_maxrss`` is per process), its CPU time (user +
system) beside its wall time (on a shared machine the CPU time is the comparable figure);
compile and its memory are measured in the child:
``peak`` is the process's maximum RSS less its RSS before the compile, ``rows`` the size of
the rows themselves (tuples and their distinct values, ``sys.getsizeof``), so the ratio is
what reading costs over what it yields.

The LUBM-like case: a university world (``--lubm`` facts, ~15 relations: takesCourse,
memberOf, subOrganizationOf, advisor, teacherOf, worksFor, ...) with transitive rules over
subOrganizationOf and a few joins, like the held-out conformance suite's LUBM case (whose
budget is 5 s a case); ``grantlog eval --json`` timed end to end. The hmmer-like case
(``--hmmer`` facts): a points-to analysis of a generated program (new, assign, load,
store, call/actual/formal/returns/result) with Andersen-style ``pointsTo``,
``heapPointsTo`` and ``alias`` rules, recursive through loads and stores, like the suite's
hmmer case (Doop / Souffle points-to benchmarks); ``grantlog eval --json`` end to end.

    .venv/bin/python benchmarks/fact_bench.py [--sizes 200000,1000000] [--repeat 3]
        [--lubm 200000] [--hmmer 300000] [--skip compile,eval,store,lubm,hmmer]
        [--label before]

An older tree is measured by putting a copy of it, laid out as installed (``grantlog/`` with
``engine``, ``grammar``, ``spark_bridge`` and ``rules`` inside), first on ``PYTHONPATH``.

Prints one line per measurement and a table (median of ``--repeat`` runs) at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness import log

ROOT = Path(__file__).resolve().parent.parent
PY = str(ROOT / ".venv" / "bin" / "python")
GRANTLOG = str(ROOT / ".venv" / "bin" / "grantlog")

RULES = """\
rel user(name: string).
rel group(name: string).
rel member(user: string, group: string).
rel nested(child: string, parent: string).
rel owner(user: string, table: string).
rel grant(group: string, privilege: string, table: string).
rel table(name: string, schema: string).
rel size(table: string, rows: int).
rel tag(table: string, tag: string).
rel note(table: string, text: string).

can(U, P, T) :- member(U, G), grant(G, P, T).
big(T) :- size(T, N), N > 999000000, owner(_, T).
"""


def write_facts(path: Path, n: int, seed: int = 7) -> None:
    """``n`` plain fact lines over the rule file's ten relations."""
    rnd = random.Random(seed)
    users, groups, tables = max(10, n // 20), max(5, n // 200), max(10, n // 10)
    privs = ["select", "modify", "create_table", "use_schema"]
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            k = i % 10
            u, g, t = rnd.randrange(users), rnd.randrange(groups), rnd.randrange(tables)
            if k == 0:
                f.write(f"user(u{u}).\n")
            elif k == 1:
                f.write(f'group("g{g}").\n')
            elif k == 2:
                f.write(f"member(u{u}, \"g{g}\").\n")
            elif k == 3:
                f.write(f'nested("g{g}", "g{rnd.randrange(groups)}").\n')
            elif k == 4:
                f.write(f'owner(u{u}, "c1.s{t % 97}.t{t}").\n')
            elif k == 5:
                f.write(f'grant("g{g}", {rnd.choice(privs)}, "c1.s{t % 97}.t{t}").\n')
            elif k == 6:
                f.write(f'table("c1.s{t % 97}.t{t}", "c1.s{t % 97}").\n')
            elif k == 7:
                f.write(f'size("c1.s{t % 97}.t{t}", {rnd.randrange(10**9)}).\n')
            elif k == 8:
                f.write(f'tag("c1.s{t % 97}.t{t}", pii).\n')
            else:
                f.write(f'note("c1.s{t % 97}.t{t}", "a table of row {i}, kept").\n')


LUBM_RULES = """\
// a LUBM-like ontology: the conformance suite's shape (types as unary relations, a
// transitive sub-organization relation, joins through advisors and courses)
suborg(X, Y) :- subOrganizationOf(X, Y).
suborg(X, Z) :- subOrganizationOf(X, Y), suborg(Y, Z).
person(X) :- student(X).
person(X) :- faculty(X).
faculty(X) :- professor(X).
faculty(X) :- lecturer(X).
memberOrg(X, Z) :- memberOf(X, Y), suborg(Y, Z).
memberOrg(X, Y) :- memberOf(X, Y).
q1(X) :- student(X), takesCourse(X, "c0").
q2(X, Y, Z) :- student(X), university(Y), department(Z), memberOf(X, Z),
               subOrganizationOf(Z, Y), undergraduateDegreeFrom(X, Y).
q9(X, Y, Z) :- student(X), faculty(Y), course(Z), advisor(X, Y), teacherOf(Y, Z),
               takesCourse(X, Z).
"""


def write_lubm(path: Path, n: int, seed: int = 11) -> int:
    """About ``n`` facts of a LUBM-like world; returns how many were written."""
    rnd = random.Random(seed)
    lines: list[str] = []
    unis = max(2, n // 40000)
    depts_per = 15
    for u in range(unis):
        lines.append(f'university("u{u}").')
        for d in range(depts_per):
            dep = f"u{u}.d{d}"
            lines.append(f'department("{dep}").')
            lines.append(f'subOrganizationOf("{dep}", "u{u}").')
            for gr in range(4):
                grp = f"{dep}.g{gr}"
                lines.append(f'researchGroup("{grp}").')
                lines.append(f'subOrganizationOf("{grp}", "{dep}").')
    # per department: faculty, courses, students, until about n facts
    i = 0
    while len(lines) < n:
        u, d = rnd.randrange(unis), rnd.randrange(depts_per)
        dep = f"u{u}.d{d}"
        prof = f"{dep}.p{i}"
        kind = "professor" if i % 3 else "lecturer"
        lines.append(f'{kind}("{prof}").')
        lines.append(f'worksFor("{prof}", "{dep}").')
        lines.append(f'name("{prof}", "Faculty {i}").')
        course = f"c{i}"
        lines.append(f'course("{course}").')
        lines.append(f'teacherOf("{prof}", "{course}").')
        for s in range(8):
            st = f"{dep}.s{i}.{s}"
            lines.append(f'student("{st}").')
            lines.append(f'memberOf("{st}", "{dep}").')
            lines.append(f'takesCourse("{st}", "{course}").')
            lines.append(f'takesCourse("{st}", "c{rnd.randrange(i + 1)}").')
            lines.append(f'advisor("{st}", "{prof}").')
            lines.append(f'undergraduateDegreeFrom("{st}", "u{rnd.randrange(unis)}").')
            lines.append(f'emailAddress("{st}", "s{i}.{s}@u{u}.edu").')
        i += 1
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


HMMER_RULES = """\
// an hmmer-like points-to analysis (the shape of the Doop / Souffle benchmarks on SPEC's
// hmmer): Andersen-style, context-insensitive, recursive through loads, stores, parameters
// and returns
rel new(var: string, heap: string).
rel assign(to: string, from: string).
rel load(to: string, base: string, field: string).
rel store(base: string, field: string, from: string).
rel call(invocation: string, method: string).
rel actual(invocation: string, index: int, var: string).
rel formal(method: string, index: int, var: string).
rel returns(method: string, var: string).
rel result(invocation: string, var: string).

pointsTo(V, H) :- new(V, H).
pointsTo(V, H) :- assign(V, W), pointsTo(W, H).
pointsTo(V, H) :- load(V, B, F), pointsTo(B, G), heapPointsTo(G, F, H).
heapPointsTo(G, F, H) :- store(B, F, W), pointsTo(B, G), pointsTo(W, H).
param(P, A) :- call(I, M), actual(I, K, A), formal(M, K, P).
pointsTo(P, H) :- param(P, A), pointsTo(A, H).
pointsTo(T, H) :- call(I, M), result(I, T), returns(M, R), pointsTo(R, H).
// may-alias of a load's base and a store's base on the same field
alias(X, Y) :- load(_, X, F), store(Y, F, _), pointsTo(X, H), pointsTo(Y, H), X != Y.
"""

#: the share of loads and stores on a module's fields (the rest: a method's own struct's);
#: it sets how far objects spread through the heap: at 0.3 the analysis derives about two
#: rows per fact (pointsTo ~1.0×, heapPointsTo ~0.95× the facts)
HMMER_SHARED = 0.3


def write_hmmer(path: Path, n: int, seed: int = 13) -> int:
    """About ``n`` facts of an hmmer-like program: methods of eleven variables (two formals,
    eight locals, a return), three allocations, eight assignments forward in the method (no
    cycle inside one), three stores and three loads, and calls along a call tree (method m
    calls 3m+1..3m+3: arguments flow down it, results up), fields mostly a method's own and
    some its module's (ten methods); returns how many were written."""
    rnd = random.Random(seed)
    lines: list[str] = []
    methods = max(4, n // 24)  # about 24 facts a method

    def field(m: int) -> str:
        if rnd.random() < HMMER_SHARED:
            return f"f{m // 10}.{rnd.randrange(3)}"
        return f"g{m}.{rnd.randrange(3)}"

    m = 0
    while len(lines) < n:
        v = [f"m{m}.{x}" for x in ("p0", "p1", *(f"l{i}" for i in range(8)), "r")]
        lines += [f'formal("m{m}", {k}, "{v[k]}").' for k in range(2)]
        lines.append(f'returns("m{m}", "{v[-1]}").')
        lines += [f'new("{v[i]}", "m{m}.h{i}").' for i in range(2, 5)]
        for _ in range(8):
            a, b = sorted(rnd.sample(range(len(v)), 2))
            lines.append(f'assign("{v[b]}", "{v[a]}").')
        for _ in range(3):
            f = field(m)
            lines.append(f'store("{v[rnd.randrange(10)]}", "{f}", "{v[rnd.randrange(10)]}").')
            f = field(m)
            lines.append(f'load("{v[rnd.randrange(2, 10)]}", "{v[rnd.randrange(10)]}", '
                         f'"{f}").')
        for c in range(3 * m + 1, min(3 * m + 4, methods)):
            inv = f"m{m}.i{c}"
            lines.append(f'call("{inv}", "m{c}").')
            lines += [f'actual("{inv}", {k}, "{v[rnd.randrange(6)]}").' for k in range(2)]
            lines.append(f'result("{inv}", "{v[rnd.randrange(5, 10)]}").')
        m += 1
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


CHILD = r"""
import gc, json, resource, sys, time
def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
import grantlog
before = rss_kib()
t0 = time.perf_counter()
c0 = time.process_time()
program = grantlog.compile(paths=sys.argv[1:])
t = time.perf_counter() - t0
cpu = time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
rows = {}
for f in program.facts:
    rows.setdefault(f.rel, []).append(f.row)
seen = set()
size = 0
for rs in rows.values():
    size += sys.getsizeof(rs)
    for r in rs:
        size += sys.getsizeof(r)
        for v in r:
            if id(v) not in seen:
                seen.add(id(v))
                size += sys.getsizeof(v)
print(json.dumps({"seconds": t, "cpu": cpu, "peak_kib": peak, "rows_kib": size // 1024,
                  "facts": sum(map(len, rows.values()))}))
"""


def compile_once(rules: Path, facts: Path) -> dict[str, float]:
    out = subprocess.run([PY, "-c", CHILD, str(rules), str(facts)], check=True,
                         capture_output=True, text=True)
    got: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def timed_cmd(cmd: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and the child's maximum RSS (KiB); exits
    when the command fails."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(proc.pid, 0)
        t = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed:\n{err.read().decode()[-2000:]}")
    return t, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def measure(what: str, n: int, cmd: list[str], repeat: int,
            table: list[tuple[str, int, float, float, float, str]],
            after: Callable[[], None] | None = None) -> None:
    """``cmd`` ``repeat`` times: a table row of medians (wall, CPU, maximum RSS)."""
    runs = []
    for _ in range(repeat):
        t, cpu, rss = timed_cmd(cmd)
        if after is not None:
            after()
        log(f"  {what} {t:.2f} s, cpu {cpu:.2f} s ({n / cpu:,.0f} facts/cpu-s), maxrss "
            f"{rss / 1024:.0f} MiB")
        runs.append((t, cpu, rss))
    table.append((what, n, statistics.median(r[0] for r in runs),
                  statistics.median(r[1] for r in runs),
                  statistics.median(r[2] for r in runs) / 1024, "maxrss"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="200000,1000000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lubm", type=int, default=200000)
    ap.add_argument("--hmmer", type=int, default=300000)
    ap.add_argument("--skip", default="")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    skip = set(filter(None, a.skip.split(",")))
    table: list[tuple[str, int, float, float, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="fact_bench") as tmp:
        d = Path(tmp)
        os.chdir(d)  # `python -c` puts the working directory first on sys.path
        rules = d / "rules.gl"
        rules.write_text(RULES, encoding="utf-8")
        for n in [int(s) for s in a.sizes.split(",") if s]:
            facts = d / f"facts{n}.gl"
            write_facts(facts, n)
            mib = facts.stat().st_size / 2**20
            log(f"{n} facts, {mib:.1f} MiB, load {os.getloadavg()[0]:.2f}")
            if "compile" not in skip:
                runs = [compile_once(rules, facts) for _ in range(a.repeat)]
                for r in runs:
                    log(f"  compile {r['seconds']:.2f} s, cpu {r['cpu']:.2f} s "
                        f"({n / r['cpu']:,.0f} facts/cpu-s), peak +{r['peak_kib'] / 1024:.0f} "
                        f"MiB, rows {r['rows_kib'] / 1024:.0f} MiB")
                peak = statistics.median(r["peak_kib"] for r in runs)
                rows_kib = runs[0]["rows_kib"]
                table.append(("compile", n, statistics.median(r["seconds"] for r in runs),
                              statistics.median(r["cpu"] for r in runs), peak / 1024,
                              f"peak {peak / max(rows_kib, 1):.2f}× the rows "
                              f"({rows_kib / 1024:.0f} MiB)"))
            if "eval" not in skip:
                measure("eval", n, [GRANTLOG, "eval", str(rules), str(facts), "--json",
                                    "-r", "big"], a.repeat, table)
            if "store" not in skip:
                db = d / f"s{n}.db"
                measure("store load", n, [GRANTLOG, "store", "load", f"sqlite:///{db}",
                                          str(facts), "--rules", str(rules), "--create"],
                        a.repeat, table, after=db.unlink)
            facts.unlink()
        if "lubm" not in skip and a.lubm:
            lr = d / "lubm.gl"
            lr.write_text(LUBM_RULES, encoding="utf-8")
            lf = d / "lubm_facts.gl"
            n = write_lubm(lf, a.lubm)
            log(f"LUBM-like: {n} facts, load {os.getloadavg()[0]:.2f}")
            measure("lubm eval", n, [GRANTLOG, "eval", str(lr), str(lf), "--json"], a.repeat,
                    table)
        if "hmmer" not in skip and a.hmmer:
            hr = d / "hmmer.gl"
            hr.write_text(HMMER_RULES, encoding="utf-8")
            hf = d / "hmmer_facts.gl"
            n = write_hmmer(hf, a.hmmer)
            log(f"hmmer-like: {n} facts, load {os.getloadavg()[0]:.2f}")
            measure("hmmer eval", n, [GRANTLOG, "eval", str(hr), str(hf), "--json"],
                    a.repeat, table)
    print(f"\n{a.label} (load {os.getloadavg()[0]:.2f}; medians of {a.repeat})")
    print("| what | facts | wall s | facts/s | CPU s | facts/CPU-s | memory MiB | |\n"
          "|---|---:|---:|---:|---:|---:|---:|---|")
    for what, n, s, cpu, mem, note in table:
        print(f"| {what} | {n:,} | {s:.2f} | {n / s:,.0f} | {cpu:.2f} | {n / cpu:,.0f} | "
              f"{mem:.0f} | {note} |")


if __name__ == "__main__":
    sys.exit(main())
