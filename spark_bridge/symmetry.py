"""Interchangeable values: evaluate on one representative per class, expand the answers.

Two input values are *interchangeable* when they have the same **signature**: the set of input
rows they occur in, with the value blanked (``entity(_, table)``, ``contains(s1, _)``). Swapping
two such values maps the input facts onto themselves (a row holding both would be in one
signature and not in the other, so no row holds two members of a class). When the program is
blind to the swap too, the whole model is: a run over one representative per class gives every
answer, and the members' answers are the representative's with the value substituted (a
broadcast join). In rules/gravitino.gl, the tables with no facts of their own besides their
type and their parent are such classes, one per parent: every user × table becomes every user ×
parent, then a join (issue 26, item 6; benchmarks/RESULTS.md, "Spark bulk").

**What the class's values are.** Any input value that is not a constant of the program (its rules
and rule-file facts; with a goal, the rewritten program, so the goal's and ``where``'s constants
too): constants are never members. Classes of one are left alone. The analysis does not work per
column or per type: it works per **shape**, the signature abstracted (the member ``M``, the
program's constants kept, every other value ``⊤``: ``{entity(M, table), contains(⊤, M)}``). A
column-level analysis is too coarse here: a table id sits in ``entity``'s first column, as every
catalog does, and from there reaches ``schema_of(O, S)``'s two columns (and ``O != S``); only
``entity(S, schema)``'s constant says that a table is never ``S``. Shapes are few (the classes'
distinct signatures abstracted, collected to the driver) and each is analysed once.

**The analysis** (:func:`analyse`, on the IR: ``program.rules``, no data) is an abstract run of
the program over the values ``M``, ``⊤`` and the constants. It keeps every abstract fact that
holds ``M`` (seeded by the shape's rows); an atom matches one of them or any fact without ``M``
(``⊤`` refined to a constant where one is met); negations are assumed to hold; ``=`` unifies.
Its least fixpoint is every (relation, column) a member can reach, constants included. The
shape is **refused** when some rule instance has two distinct variables holding ``M`` in its
head or in a negated atom, relates two by a comparison other than ``=``, or compares one by
order (``<``, ``<=``, ``>``, ``>=``). Otherwise the classes of that shape are collapsed.

**Why that is sound** (proof sketch). Let ``h`` map each member to its class's representative
(identity elsewhere) and ``D'`` be the input rows whose members are all representatives. Every
swap ``π`` of two members of a class fixes the constants and maps the input onto itself, so it
maps the model onto itself (Datalog with stratified negation is generic). By the analysis every
derived fact holds at most one member per class, so each fact ``f`` of the model is ``π(h(f))``
for a product ``π`` of such swaps: the model is the expansion of its facts over
representatives only. Stratum by stratum, those facts are exactly the model of ``D'``:
``h`` maps a rule instance over ``D`` to one over ``D'`` (positive atoms: by induction;
``=``: any function keeps it; ``!=``: kept because no two of its variables hold members of one
class; order: never touches a member; a negated atom: it names at most one member per class, so
``q(h(x))`` in the model would give ``q(x) = π(q(h(x)))`` in it), and ``D' ⊆ D`` with a
negation over representatives meaning the same in both gives the converse. Several shapes, or
several classes of one shape, are collapsed one class after another: a class stays a class
after another is collapsed (its rows are removed together), and its shape only shrinks.

**Reasons** (``with_reasons``): a member's decision row gets its representative's reason with
the member put in (the same automorphism maps the derivation), and reasons.py then follows that
premise down to its grant on the expanded relations, as without the rewrite. So that the reason
is the one the run without the rewrite picks (the least of a row's premises by their text, of
the least height), the analysis also refuses a shape when the premise a reason reports (the
decision relation's rules, :func:`premises`) holds a member in a variable its head does not
have: every premise a row's derivations report then names only the row's own members, in the
same arguments, so renaming them keeps the premises' order. The premise row is text; it is
rebuilt one argument at a time (:func:`expand_reasons`: a head variable's argument from the
member's row, the others read by the fact syntax's grammar), never by replacing a substring.

**On Spark** (:func:`collapse`): each input cell ``(value, row with the value blanked, the row
abstracted)`` is grouped by value (one shuffle: the signature is a hash of the sorted blanked
rows, as JSON arrays), then by signature (a second: the classes, their least value the
representative, their shape); the shapes go to the driver, the members of sound classes are
checkpointed as ``(rep, mem)``. The inputs lose the rows naming a member that is not a
representative (anti joins on the columns the shapes reach), the program runs as before, and
every relation whose columns can hold a member is expanded by a join with ``(rep, mem)`` per
such column (:func:`expand`; lazily: only what is read costs).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from grantlog.engine.core import ir
from grantlog.grammar.diagnostics import plural

from . import encoding
from .reasons import reason_literal

#: inputs smaller than this (Spark's estimate, bytes) are run as they are with ``symmetry=None``
MIN_BYTES = 1 << 20
#: Spark's size estimate of a plan it cannot size (``spark.sql.defaultSizeInBytes``'s
#: default, Long.MaxValue) or more: no estimate
UNKNOWN_BYTES = 2**63 - 1
#: shapes of more rows than this are not analysed (their classes stay as they are)
MAX_SHAPE_ROWS = 64
#: at most this many shapes (the ones with the most members) are analysed
MAX_SHAPES = 64
ORDER = frozenset({"<", "<=", ">", ">="})


class _Token:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


M = _Token("M")
TOP = _Token("⊤")
Abstract = tuple[object, ...]


@dataclass
class Verdict:
    """What :func:`analyse` found: ``refused`` (why, naming the rule) or None, and the abstract
    facts holding ``M`` per relation (the columns a member reaches)."""
    refused: str | None
    facts: dict[str, set[Abstract]] = field(default_factory=dict)

    def columns(self) -> dict[str, set[int]]:
        return held_columns(self.facts, M)


def held_columns(facts: Mapping[str, set[Abstract]], mark: object) -> dict[str, set[int]]:
    """relation -> the columns ``mark`` holds in some of its abstract ``facts``"""
    out: dict[str, set[int]] = {}
    for rel, rows in facts.items():
        for row in rows:
            out.setdefault(rel, set()).update(i for i, x in enumerate(row) if x is mark)
    return out


def unify(a: object, b: object, marks: tuple[object, ...] = (M,)) -> object | None:
    """the abstract value both ``a`` and ``b`` may be (None: none); a mark (``M``) unifies
    only with itself"""
    if a in marks or b in marks:
        return a if a is b else None
    if a is TOP:
        return b
    if b is TOP:
        return a
    return a if a == b and type(a) is type(b) else None


def term_value(t: ir.Term, b: Mapping[str, object]) -> object:
    return t.value if isinstance(t, ir.Const) else b.get(t.name, TOP)


def _match(atoms: list[ir.Atom], facts: Mapping[str, set[Abstract]], b: dict[str, object],
           used: bool) -> Iterator[dict[str, object]]:
    """every binding of ``atoms`` (each one of its relation's ``M`` facts, or a fact without
    ``M``) extending ``b``; ``used``: some atom matched an ``M`` fact already"""
    if not atoms:
        if used:
            yield b
        return
    atom, rest = atoms[0], atoms[1:]
    # a fact without M: every variable of the atom is a non-member
    ok = all(not isinstance(t, ir.Var) or b.get(t.name) is not M for t in atom.args)
    if ok:
        nb = dict(b)
        for t in atom.args:
            if isinstance(t, ir.Var):
                nb.setdefault(t.name, TOP)
        yield from _match(rest, facts, nb, used)
    for row in facts.get(atom.rel, ()):
        nb = dict(b)
        for t, x in zip(atom.args, row, strict=True):
            if isinstance(t, ir.Const):
                if unify(t.value, x) is None:
                    break
            elif t.name in nb:
                u = unify(nb[t.name], x)
                if u is None:
                    break
                nb[t.name] = u
            else:
                nb[t.name] = x
        else:
            yield from _match(rest, facts, nb, True)


def held(terms: tuple[ir.Term, ...], b: Mapping[str, object],
         marks: tuple[object, ...] = (M,)) -> set[str]:
    """the variables of ``terms`` that ``b`` binds to a mark"""
    return {t.name for t in terms if isinstance(t, ir.Var) and b.get(t.name) in marks}


def refusal(rule: ir.Rule, b: dict[str, object], marks: tuple[object, ...] = (M,),
            one: str = "a member", two: str = "two members") -> tuple[str | None, bool]:
    """(why the rule instance ``b`` is refused, whether it can hold) after the rule's
    comparisons (``=`` binds or unifies, into ``b``) and negations: two marked variables in
    its head, a negated atom or a comparison other than ``=``, or an order comparison on one
    (``one``/``two``: what the marks stand for, in the message)"""
    cmps = [lit for lit in rule.body if isinstance(lit, ir.Cmp)]
    for lit in [c for c in cmps if c.op == "="] * 2:  # twice: a chain of assignments
        u = unify(term_value(lit.left, b), term_value(lit.right, b), marks)
        if u is None:
            return None, False  # cannot hold
        for t in (lit.left, lit.right):
            if isinstance(t, ir.Var):
                b[t.name] = u
    for lit in cmps:
        if lit.op == "=":
            continue
        got = held((lit.left, lit.right), b, marks)
        if lit.op in ORDER and got:
            return f"`{lit}` orders {one}", True
        if len(got) >= 2:
            return f"`{lit}` relates {two}", True
    for neg in rule.body:
        if isinstance(neg, ir.Neg) and len(held(neg.atom.args, b, marks)) >= 2:
            return f"`{neg}` names {two}", True
    if len(held(rule.head.args, b, marks)) >= 2:
        return f"the head `{rule.head}` names {two}", True
    return None, True


def _instance(rule: ir.Rule, b: dict[str, object], premise: int | None = None
              ) -> tuple[str | None, Abstract | None]:
    """(why the rule instance ``b`` is refused, the head's abstract row) after
    :func:`refusal`; ``premise``: the index of the body atom a reason reports (reasons.py),
    which may hold a member only in a head variable"""
    why_not, holds = refusal(rule, b)
    if why_not is not None or not holds:
        return why_not, None
    why = rule.body[premise] if premise is not None else None
    if isinstance(why, ir.Atom) and held(why.args, b) - {
            t.name for t in rule.head.args if isinstance(t, ir.Var)}:
        return f"its reason `{why}` names a member its head does not", None
    row = tuple(term_value(t, b) for t in rule.head.args)
    return None, row if any(x is M for x in row) else None


def analyse(program: ir.Program, shape: Mapping[str, set[Abstract]],
            premises: Mapping[str, int] | None = None) -> Verdict:
    """The abstract run of ``program`` from a class's ``shape`` (relation -> abstract rows:
    ``M``, ``TOP`` or a constant per column): refused or not, and the reach (module doc).
    ``premises``: with reasons, rule name -> the index of its reason's body atom (the
    decision relation's rules), checked by :func:`_instance`."""
    facts: dict[str, set[Abstract]] = {rel: set(rows) for rel, rows in shape.items()}
    changed = True
    while changed:
        changed = False
        for rule in program.rules:
            atoms = [lit for lit in rule.body if isinstance(lit, ir.Atom)]
            # atoms of relations with M facts first: the others only pass bindings on
            atoms.sort(key=lambda a: a.rel not in facts)
            for b in list(_match(atoms, facts, {}, False)):
                why, row = _instance(rule, b, (premises or {}).get(rule.name))
                if why is not None:
                    return Verdict(f"rule `{rule.name}`: {why}", facts)
                if row is not None and row not in facts.setdefault(rule.head.rel, set()):
                    facts[rule.head.rel].add(row)
                    changed = True
    return Verdict(None, facts)


def constants(program: ir.Program) -> set[ir.Value]:
    """the program's constants: its rules' and its rule-file facts' values (never members)"""
    out: set[ir.Value] = {v for f in program.facts for v in f.row}
    for r in program.rules:
        for lit in (r.head, *r.body):
            terms = ((lit.left, lit.right) if isinstance(lit, ir.Cmp) else
                     lit.atom.args if isinstance(lit, ir.Neg) else lit.args)
            out.update(t.value for t in terms if isinstance(t, ir.Const))
    return out


# -- on Spark ---------------------------------------------------------------------------------

#: a blanked cell (the value itself) and any other value, in an abstracted row; no internal
#: value (encoding.py: "0..." integers, "1..." strings) is either
BLANK, OTHER = "\x00", "\x01"


def abstract(row: Sequence[str]) -> tuple[str, Abstract]:
    """A blanked input row (relation, then cells: :data:`BLANK`, :data:`OTHER` or an
    internal value) as its relation and abstract row (``M``, ``⊤``, constants)."""
    rel, *cols = row
    return rel, tuple(M if c == BLANK else TOP if c == OTHER else encoding.decode(c)
                      for c in cols)


def parse_shape(parts: Iterable[Sequence[str]]) -> dict[str, set[Abstract]]:
    """A class's blanked rows as a shape: relation -> its abstract rows."""
    out: dict[str, set[Abstract]] = {}
    for p in parts:
        rel, row = abstract(p)
        out.setdefault(rel, set()).add(row)
    return out


@dataclass
class Collapse:
    """The classes collapsed in a run: ``pairs`` (``rep``, ``mem``: every member, the
    representatives too), ``columns`` (relation -> the columns a member reaches)."""
    pairs: Any
    columns: dict[str, set[int]]
    classes: int
    members: int
    summary: str


def input_bytes(inputs: Mapping[str, Any]) -> int:
    """Spark's estimate of the inputs' size (no job): a file's size for a file read; 0 where
    it has none (Spark Connect; rows made in Python, which Spark sizes at
    ``spark.sql.defaultSizeInBytes``, "unknown")"""
    total = 0
    for df in inputs.values():
        with contextlib.suppress(Exception):  # an estimate only (Spark Connect has none)
            size = df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
            # py4j gives a Scala BigInt as a Python int (its ``toString`` failed here, so
            # every estimate was 0 and ``symmetry=None`` never turned the rewrite on)
            size = size if isinstance(size, int) else int(size.toString())
            if size < UNKNOWN_BYTES:
                total += size
    return total


def _sound(program: ir.Program, shapes: list[Any], progress: Callable[[str], None],
           premises: Mapping[str, int] | None = None) -> tuple[list[str], dict[str, set[int]]]:
    """the shapes (ids) the analysis keeps, and the columns their members reach"""
    sound: list[str] = []
    columns: dict[str, set[int]] = {}
    refused = []
    for s in shapes:
        verdict = analyse(program, parse_shape(s["shape"]), premises)
        if verdict.refused:
            what = (f"{plural(s['classes'], 'class', 'classes')} of {s['members']:,} values "
                    f"shaped {', '.join(sorted('|'.join(r) for r in s['shape']))}"
                    .replace(BLANK, "M").replace(OTHER, "⊤"))
            refused.append(f"symmetry: refused {what}: {verdict.refused}")
            continue
        sound.append(s["sh"])
        for rel, reach in verdict.columns().items():
            columns.setdefault(rel, set()).update(reach)
    for line in refused[:5]:
        progress(line)
    if not shapes:
        progress("symmetry: no interchangeable values")
    return sound, columns


def collapse(run: Any, progress: Callable[[str], None], extend: Callable[..., Any] | None = None
             ) -> Collapse | None:
    """Find the classes of ``run``'s inputs (evaluator.py ``_Run``), analyse their shapes
    against ``run.program``, and give the run its inputs over representatives only
    (``run.internal``). None when no class of two or more is sound to collapse. ``extend``:
    rewrite 2's hook (singles.py ``Rewrite.extend``), which adds members to the pairs."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    program = run.program
    consts = sorted(encoding.encode(v) for v in constants(program))
    internal = {rel: run._internal_input(rel, df) for rel, df in run.inputs.items()
                if program.relations[rel].arity}
    cells = []
    for rel, df in internal.items():  # one scan of each input: its cells exploded
        cols = [F.col(c) for c in df.columns]
        per = []
        for v in cols:
            blank = [F.when(c == v, F.lit(BLANK)).otherwise(c) for c in cols]
            abst = [F.when(c == v, F.lit(BLANK)).when(c.isin(consts), c).otherwise(F.lit(OTHER))
                    for c in cols]
            # rows as arrays, hashed as JSON: no separator a value could hold
            per.append(F.struct(v.alias("v"), F.array(F.lit(rel), *blank).alias("b"),
                                F.array(F.lit(rel), *abst).alias("a")))
        cells.append(df.select(F.explode(F.array(*per)).alias("x")).select("x.v", "x.b", "x.a"))
    if not cells:
        return None
    u = cells[0]
    for c in cells[1:]:
        u = u.unionByName(c)
    values = (u.filter(~F.col("v").isin(consts)).groupBy("v")
              .agg(F.array_sort(F.collect_set("b")).alias("bs"),
                   F.array_sort(F.collect_set("a")).alias("shape"))
              .withColumn("sig", F.sha2(F.to_json("bs"), 256)))
    if extend is None:  # rewrite 2 reads its candidates' blanked rows (`bs`) from here
        values = values.drop("bs")
    # kept in memory until the pairs are checkpointed: three jobs in all, not seven
    values = values.persist(StorageLevel.MEMORY_AND_DISK)
    classes = (values.groupBy("sig").agg(F.min("v").alias("rep"), F.count(F.lit(1)).alias("n"),
                                         F.first("shape").alias("shape"))
               .filter(F.col("n") >= 2)
               .withColumn("sh", F.sha2(F.to_json("shape"), 256))
               .persist(StorageLevel.MEMORY_AND_DISK))
    try:
        shapes = (classes.filter(F.size("shape") <= MAX_SHAPE_ROWS).groupBy("sh")
                  .agg(F.first("shape").alias("shape"), F.count(F.lit(1)).alias("classes"),
                       F.sum("n").alias("members"))
                  .orderBy(F.desc("members")).limit(MAX_SHAPES).collect())
        sound, columns = _sound(program, shapes, progress, premises(run))
        if not sound:
            return None
        kept = classes.filter(F.col("sh").isin(sound))
        pairs = (values.join(F.broadcast(kept.select("sig", "rep")), on="sig")
                 .select("rep", F.col("v").alias("mem")))
        pairs, members = run.materialize(pairs)
        if extend is not None:
            pairs, members = extend(run, u, internal, values, classes, kept, pairs, members,
                                    columns)
    finally:
        classes.unpersist()
        values.unpersist()
    n = sum(s["classes"] for s in shapes if s["sh"] in sound)
    others = pairs.filter(F.col("rep") != F.col("mem")).select(F.col("mem").alias("v"))
    for rel, df in internal.items():
        names = df.columns  # a join on a name puts that column first: kept in order
        for i in sorted(columns.get(rel, ())):
            df = df.join(others.withColumnRenamed("v", f"c{i}"), on=f"c{i}", how="left_anti")
        run.internal[rel] = df.select(*names)
    summary = (f"symmetry: {plural(n, 'class', 'classes')} of {members:,} values "
               f"({len(sound)} of {plural(len(shapes), 'shape')} sound): "
               f"{n:,} representatives run for {members:,} values")
    progress(summary)
    return Collapse(pairs, columns, n, members, summary)


def expand(c: Collapse, df: Any, cols: set[int]) -> Any:
    """the rows of ``df`` (internal columns ``c0, c1, ...``) with each representative in
    ``cols`` replaced by every member of its class; a value in two columns is one member"""
    from pyspark.sql import functions as F

    names = list(df.columns)
    done: list[int] = []
    for i in sorted(cols):
        col = f"c{i}"
        same = list(done)
        m = c.pairs.select(F.col("rep").alias("_rep"), F.col("mem").alias("_m"))
        cond = F.col(col) == F.col("_rep")
        for j in same:
            cond = cond & (F.col(col) != F.col(f"_o{j}"))
        df = df.withColumn(f"_o{i}", F.col(col)).join(m, on=cond, how="left")
        new = F.coalesce(F.col("_m"), F.col(col))
        for j in same:
            new = F.when(F.col(f"_o{i}") == F.col(f"_o{j}"), F.col(f"c{j}")).otherwise(new)
        df = df.withColumn(col, new).drop("_rep", "_m")
        done.append(i)
    return df.select(*names)


def premises_of(program: ir.Program, decision: str | None = None,
                seeds: frozenset[str] = frozenset(), display: Mapping[str, str] | None = None
                ) -> dict[str, int]:
    """each rule of the decision relation (by name) -> the index of its reason's body atom"""
    out = {}
    for rule in program.rules_for(program.decision if decision is None else decision):
        i = reason_literal(program, rule, seeds, display)
        if i is not None:
            out[rule.name] = i
    return out


def premises(run: Any) -> dict[str, int] | None:
    """with reasons, :func:`premises_of` ``run``'s decision relation (evaluator.py ``_Run``)"""
    if not run.with_reasons:
        return None
    return premises_of(run.program, run.decision, run.seeds, run.display)


#: one argument of a reason row (encoding.shown_col: an integer, a lowercase identifier, or a
#: double-quoted string whose backslashes all start an escape), possessive: no backtracking
ARG = r'(?:-?[0-9]++|[a-z][A-Za-z0-9_]*+|"[^"\\]*+(?:\\.[^"\\]*+)*+")'


def expand_reasons(c: Collapse, r: Any, df: Any, cols: set[int]) -> Any:
    """The decision rows with their reasons (``df``: internal columns and REASON_COLUMNS, over
    representatives) expanded like the rows (:func:`expand`); a member's ``reason_row`` is its
    representative's with each argument that is a head variable of the rule (the only ones
    that may hold a member: :func:`_instance`) rebuilt from the member's row, the others
    kept as they are, read one argument at a time (:data:`ARG`), never by substring."""
    F = r.F
    out = expand(c, df, cols)
    row = F.col("reason_row")
    for rule in r.program.rules_for(r.decision):
        i = r.reason_literal(rule)
        lit = rule.body[i] if i is not None else None
        if not isinstance(lit, ir.Atom):
            continue
        heads = {t.name: j for j, t in enumerate(rule.head.args)
                 if isinstance(t, ir.Var) and j in cols}
        if not any(isinstance(t, ir.Var) and t.name in heads for t in lit.args):
            continue
        name = r.display.get(lit.rel, lit.rel)
        args = [encoding.shown_col(F.col(f"c{heads[t.name]}"))
                if isinstance(t, ir.Var) and t.name in heads else
                F.regexp_extract(F.col("reason_row"), rf"^[^(]*\((?:{ARG}, ){{{k}}}({ARG})", 1)
                for k, t in enumerate(lit.args)]
        rebuilt = F.concat(F.lit(name + "("), F.concat_ws(", ", *args), F.lit(")"))
        row = F.when(F.col("rule") == rule.name, rebuilt).otherwise(row)
    return out.withColumn("reason_row", row)


def run(r: Any, use: bool | None, extend: Callable[..., Any] | None = None
        ) -> Collapse | None:
    """``r.run()`` (evaluator.py ``_Run``), over one representative per sound class when
    ``use`` (None: when the inputs are large, :data:`MIN_BYTES`); every relation a member
    reaches is then expanded (lazily), and with reasons the decision relation's reasons
    (:func:`expand_reasons`), before reasons.py follows their premises on the expanded
    relations."""
    c = None
    if use is not False and r.inputs and (use or input_bytes(r.inputs) >= MIN_BYTES):
        c = collapse(r, r.progress, extend)
    r.run()
    if c is not None:
        r.plans.append(c.summary)
        for rel, cols in c.columns.items():
            if rel in r.full and rel in r.program.relations:
                # made when read (local.Frames): a relation held on the driver stays rows
                r.full.then(rel, lambda df, cols=cols: expand(c, df, cols))
                r.sizes.pop(rel, None)  # larger now: never broadcast by its old count
        decided = c.columns.get(r.decision)
        if r.reasons is not None and decided:
            r.reasons = expand_reasons(c, r, r.reasons, decided)
    return c
