#!/usr/bin/env python3
"""Planning a long rule body, and "did you mean" over many misspelled relations (issue 26,
item 3).

Planning: generated bodies of 100 to 1,600 literals in three shapes — a chain
``p(X0, Xn) :- e(X0, X1), e(X1, X2), ...``, a star ``p(X) :- e(X, Y1), e(X, Y2), ...`` and a
random one (binary and ternary atoms over n/2 variables, every tenth literal a comparison,
every tenth a negation). For each: one plan of the body (``order_body``, the in-memory join
order), compile + ``Reasoner`` + the first ``rows("p")`` (what a user waits for: the delta
variants are planned when a change first reads them), a first load of the rule's facts, an
insert after it (every delta variant reads the new row), the body made recursive (``e``
renamed to ``r``, ``r(X, Y) :- e(X, Y).``: semi-naive evaluation runs every delta variant of
it), and every delta variant of the body (one per atom or negation) planned in full, together
(engine/plan/join.py ``Variants``; variants binding the same shared variables, the star's,
copy one template): n plans of n steps each, quadratic by its output, timed up to
``--variants-up-to``. CPU seconds (the machine is shared), the median of ``--repeat`` runs.

Suggestions: a file of n rules ``perm_<8 letters>_<i>(X) :- base(X).`` and n rules using each
with two adjacent letters swapped; the suggestion part (the unknown-relation check's
``Names`` over the defined relations and one suggestion per misspelling) timed alone, and
with ``--compile`` the whole compile of the file with and without the typos.

    .venv/bin/python benchmarks/plan_bench.py [--sizes 100,200,400,800,1600]
        [--typos 1000,2000,4000,8000] [--variants-up-to 800] [--repeat 1] [--compile]
        [--write]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from harness import log, replace_section, run_info, timed

HEADING = "## Planning long bodies and suggestions at scale (issue 26)"

#: the figures before the change (commit ecb0965), kept with every rewrite of the section
BEFORE = """Before (ecb0965). The issue: planning a body of 100/200/400/800 literals took
0.6/3.2/22/173 s and 1,600 did not finish in 5 minutes (every delta variant planned when the
Reasoner was made, each by a full pass over the atoms left per step: n³); "did you mean" over
1k/2k/4k misspelled relations took 12.5/48.7/198 s with difflib, 8k did not finish in 5
minutes. Measured here on ecb0965 (2 cores shared with other work, load 4-5), the chain: one
plan 0.003/0.014/0.052 s at 100/200/400; every delta variant 0.34/2.64/28.2 s; compile +
Reasoner 0.55 s at 100, 5.2 s at 200. Suggestions on rapidfuzz but sorting every name per
misspelling: 1.8/12.6/54.9 s for 1k/2k/4k; the 8k file compiled in 107 s without typos and
231 s with them (`Program.rules_for` and `stratify` scanned every rule per relation).

After: the greedy choice keeps a heap of scores and rescores only the atoms that read a
variable just bound (engine/plan/join.py ``greedy``, ``Waiting``); the delta variants are
planned when a change first reads them (engine/eval/incremental.py); ``Names`` sorts the
relation names once and looks among those sharing uncommon trigrams (engine/core/suggest.py).
Planning every delta variant stays quadratic: n plans of n steps each.

Then (d54463b, load 8-13): the star of 1,600 failed with `evaluation-too-deep` at evaluation
(the interpreter that runs plans too deep for generated code recursed once per step); a first
load (the rule's facts inserted into empty relations) planned and ran every delta variant:
the star took 23 s at 400 and 87 s at 800. Now the interpreter searches with an explicit
stack (engine/plan/codegen.py ``solve``) and a first load runs one variant per rule
(engine/eval/incremental.py ``_loaded``): the "first load" column.
"""

SHAPES = ("chain", "star", "random")


def body_text(shape: str, n: int) -> str:
    """A program with one rule of ``n`` body literals of ``shape`` (and a fact per relation)."""
    facts = 'e("a", "b").\nt("a", "b", "c").\nq("z").\n'
    if shape == "chain":
        return facts + f"p(X0, X{n}) :- " + ", ".join(
            f"e(X{i}, X{i + 1})" for i in range(n)) + ".\n"
    if shape == "star":
        return facts + "p(X) :- " + ", ".join(f"e(X, Y{i})" for i in range(n)) + ".\n"
    rnd = random.Random(n)
    nvars = max(2, n // 2)
    lits: list[str] = []
    seen: list[int] = [0]
    for i in range(n):
        if i % 10 == 5 and len(seen) > 1:
            a, b = rnd.sample(seen, 2)
            lits.append(f"X{a} != X{b}")
        elif i % 10 == 9:
            lits.append(f"not q(X{rnd.choice(seen)})")
        elif rnd.random() < 0.5:
            a, b = rnd.choice(seen), rnd.randrange(nvars)
            seen.append(b)
            lits.append(f"e(X{a}, X{b})")
        else:
            a, b, c = rnd.choice(seen), rnd.randrange(nvars), rnd.randrange(nvars)
            seen += [b, c]
            lits.append(f"t(X{a}, X{b}, X{c})")
    return facts + "p(X0) :- " + ", ".join(lits) + ".\n"


def typo_text(n: int, typos: bool = True) -> tuple[str, list[str], list[str]]:
    """The suggestion workload: the file, its defined relations and the misspellings."""
    rnd = random.Random(n)
    lines = ['base("a").']
    defined, wrong = ["base"], []
    for i in range(n):
        name = f"perm_{''.join(rnd.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(8))}_{i}"
        use = name
        if typos:
            k = rnd.randrange(5, 12)  # inside the letters: never the name itself
            use = name[:k] + name[k + 1] + name[k] + name[k + 2:]
            wrong.append(use)
        defined += [name, f"use_{i}"]
        lines += [f"{name}(X) :- base(X).", f"use_{i}(X) :- {use}(X)."]
    return "\n".join(lines) + "\n", defined, wrong


#: how many runs each figure is the median of (``--repeat``)
REPEAT = [1]


def seconds(fn: Callable[[], object], repeat: int = 1) -> float:
    """CPU seconds of ``fn`` (the process's, not the wall's: the machine is shared), the
    median of ``--repeat`` runs (at least ``repeat``)."""
    runs = []
    for _ in range(max(repeat, REPEAT[0])):
        t0 = time.process_time()
        fn()
        runs.append(time.process_time() - t0)
    return statistics.median(runs)


def plan_row(shape: str, n: int, variants_up_to: int) -> dict[str, object]:
    from grantlog.engine.core import ir
    from grantlog.engine.plan.join import Variants, order_body

    import grantlog

    text = body_text(shape, n)
    program = grantlog.compile(text)
    rule = next(r for r in program.rules if r.head.rel == "p")
    row: dict[str, object] = {
        "shape": shape, "n": n,
        "order_body": seconds(lambda: order_body(rule.body)),
    }
    try:
        row["reasoner"] = seconds(lambda: grantlog.Reasoner(grantlog.compile(text)).rows("p"))
    except grantlog.GrantlogError as e:  # planned, but evaluation can fail (a stack too deep)
        row["reasoner_error"] = e.diagnostics[0].code
    row["first_load"] = seconds(lambda: first_load(shape, text))
    row["insert"] = insert_after_load(shape, text)
    rec = recursive_text(shape, n)
    row["recursive"] = seconds(lambda: grantlog.Reasoner(grantlog.compile(rec)).rows("r"))
    if n <= variants_up_to:
        reads = [i for i, lit in enumerate(rule.body) if not isinstance(lit, ir.Cmp)]

        def every_variant() -> None:
            variants = Variants(rule)
            for i in reads:
                tuple(variants.plan(i).steps)
        row["variants"] = seconds(every_variant)
    log(f"{shape:6} {n:5}: " + ", ".join(
        f"{k} {v:.3f} s" for k, v in row.items() if isinstance(v, float)))
    return row


def recursive_text(shape: str, n: int) -> str:
    """The body of ``shape`` over a recursive ``r`` (``e`` renamed): semi-naive evaluation
    runs a delta variant per ``r`` atom."""
    rule = body_text(shape, n).splitlines()[-1]
    body = rule.split(":-", 1)[1].replace("e(", "r(")
    head = {"chain": f"r(X0, X{n})", "star": "r(X, Y0)"}.get(shape, "r(X0, X0)")
    return ('e("a", "b").\ne("b", "c").\nt("a", "b", "c").\nq("z").\n'
            f"r(X, Y) :- e(X, Y).\n{head} :-{body}\n")


def insert_after_load(shape: str, text: str) -> float:
    """Seconds of one insert into ``e`` after the first load: every delta variant of an
    ``e`` atom reads the new row (planned as far as it reads)."""

    def once() -> float:
        r = first_load(shape, text)
        t0 = time.process_time()
        r.insert("e", [("b", "c")])
        return time.process_time() - t0
    return statistics.median(once() for _ in range(REPEAT[0]))


def first_load(shape: str, text: str) -> Any:
    """The rule with ``p`` materialized and no facts, then its facts inserted in one
    transaction: the path that planned and ran a delta variant per body atom."""
    import grantlog

    rules = [line for line in text.splitlines() if ":-" in line]
    cols = "a: string, b: string" if shape == "chain" else "a: string"
    decls = ("rel e(a: string, b: string). rel t(a: string, b: string, c: string). "
             f"rel q(a: string).\n@materialize rel p({cols}).\n")
    r = grantlog.Reasoner(grantlog.compile(decls + "\n".join(rules)))
    with r.transaction() as tx:
        tx.insert("e", [("a", "b")])
        tx.insert("t", [("a", "b", "c")])
        tx.insert("q", [("z",)])
    r.rows("p")
    return r


def typo_row(n: int, compile_too: bool) -> dict[str, object]:
    from grantlog.engine.core.suggest import Names, did_you_mean

    import grantlog

    text, defined, wrong = typo_text(n)

    def suggest() -> int:
        names = Names(defined)
        return sum(1 for w in wrong if did_you_mean(w, names))

    t = timed(suggest, repeat=1)
    row: dict[str, object] = {"n": n, "suggest": t.best, "found": t.result}
    if compile_too:
        row["compile"] = seconds(lambda: grantlog.compile(text))
        clean = typo_text(n, typos=False)[0]
        row["compile_clean"] = seconds(lambda: grantlog.compile(clean))
    log(f"typos {n:5}: " + ", ".join(f"{k} {v}" for k, v in row.items()))
    return row


def report(plans: list[dict[str, object]], sugg: list[dict[str, object]]) -> str:
    info = run_info()
    out = [HEADING, "", f"`benchmarks/plan_bench.py`, {info['when']}, commit {info['git']}. "
           f"CPU seconds, median of {REPEAT[0]}.", "",
           "| shape | literals | one plan (`order_body`) | compile + Reasoner + first rows "
           "| first load (insert) | insert after it | recursive: compile + Reasoner + rows "
           "| every delta variant, in full |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in plans:
        var = f"{r['variants']:.2f}" if "variants" in r else "—"
        first = (f"{r['reasoner']:.2f}" if "reasoner" in r
                 else f"`{r.get('reasoner_error')}` at evaluation")
        out.append(f"| {r['shape']} | {r['n']} | {r['order_body']:.3f} | {first} "
                   f"| {r['first_load']:.2f} | {r['insert']:.2f} | {r['recursive']:.2f} "
                   f"| {var} |")
    out += ["", "| misspelled relations | suggestions | found | compile | compile, no typos |",
            "|---:|---:|---:|---:|---:|"]
    for r in sugg:
        comp = f"{r['compile']:.1f}" if "compile" in r else "—"
        clean = f"{r['compile_clean']:.1f}" if "compile_clean" in r else "—"
        out.append(f"| {r['n']} | {r['suggest']:.2f} | {r['found']} | {comp} | {clean} |")
    return "\n".join([*out, "", BEFORE.rstrip()]) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,200,400,800,1600")
    ap.add_argument("--typos", default="1000,2000,4000,8000")
    ap.add_argument("--variants-up-to", type=int, default=800)
    ap.add_argument("--compile", action="store_true",
                    help="also time the whole compile of the typo files (slow)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per figure (the median)")
    ap.add_argument("--write", action="store_true", help="write the section of RESULTS.md")
    a = ap.parse_args()
    REPEAT[0] = a.repeat
    t0 = time.perf_counter()
    plans = [plan_row(shape, int(n), a.variants_up_to)
             for shape in SHAPES for n in a.sizes.split(",") if n]
    sugg = [typo_row(int(n), a.compile) for n in a.typos.split(",") if n]
    text = report(plans, sugg)
    print(text)
    log(f"done in {time.perf_counter() - t0:.0f} s")
    if a.write:
        replace_section(HEADING, text)


if __name__ == "__main__":
    main()
