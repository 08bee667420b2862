"""What a Spark reason reports: the deciding rule and the grant it bottoms out in.

``run(..., with_reasons=True)`` gives each decision row ``rule``, ``reason_rel`` and
``reason_row``: the name of the rule that derived it and the *grant* that decided, a stored
fact in fact syntax (``privilege(analyst, select_table, "m1.lakehouse.sales", allow)``, the
DENY that won, the ``owner`` fact), never ``entity(T, table)`` nor an intermediate relation.
Both are read from the model's structure; no relation is known by name.

**The premise of a rule** (:func:`reason_literal`): the body atom that carries the subject's
access. Ranked, the first difference deciding:

1. never a magic atom of a demand rewrite (the bindings asked for), nor, while another atom is
   left, an atom over a relation playing a hierarchy role (engine/core/hierarchy_roles.py:
   the type relation ``entity(T, table)``, the edge or its closures: where the object sits,
   not who may act on it);
2. an atom linked to the subject (the head's first variable, by the decision relation's
   convention ``allowed(subject, operation, resource)``): it holds the subject's variable or
   one an atom holding it binds (``grant(R, P, A, allow)`` beside ``holds(U, R)``), not a
   static table such as ``supports(P, _)``;
3. the atom binding most of what the head is about beyond the subject: the head's other
   variables and constants (``authorized(U, modify, T)``, the privilege and the resource,
   over ``usable(U, T)``, a prerequisite);
4. a stored relation over a derived one (``owner(O, U)`` over ``registered(U, O)``);
5. the last in source order (authors write prerequisites first, the grant last).

**The grant** (:func:`grant_reasons`): a derived premise is followed down, through each of its
relation's rules' premises, to a stored fact: for every relation on that chain, the least
grant of each row among its derivations, in dependency order (a recursive component round by
round, so a row's grant comes from a derivation of least height first found). A premise that
has no derivation to follow (a fact of a derived relation) is its own grant.

>>> from grantlog.engine import compile_program
>>> p = compile_program('''
...   rel entity(o: string, t: string). rel usable(u: string, o: string).
...   rel authorized(u: string, p: string, o: string).
...   allowed(U, alter, T) :- entity(T, table), usable(U, T), authorized(U, modify, T).''')
>>> str(p.rules[0].body[reason_literal(p, p.rules[0])])
'authorized(U, modify, T)'
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Protocol

from grantlog.engine.core import ir
from grantlog.engine.core.analyses import analysis
from grantlog.engine.core.hierarchy_roles import hierarchy_roles
from grantlog.engine.core.terms import is_anon
from grantlog.engine.plan.join import RulePlan

from . import encoding, planner
from .encoding import REASON_COLUMNS


def _role_relations(program: ir.Program) -> frozenset[str]:
    roles = hierarchy_roles(program)
    return frozenset(r for r in (roles.edge, roles.type, roles.closure, roles.strict,
                                 *roles.kinds) if r)


def _names(lit: ir.Atom) -> set[str]:
    return {t.name for t in lit.args if isinstance(t, ir.Var) and not is_anon(t)}


def reason_literal(program: ir.Program, rule: ir.Rule, seeds: Collection[str] = (),
                   display: Mapping[str, str] | None = None) -> int | None:
    """The index in ``rule.body`` of the premise a reason follows (see the module doc), or
    None when the body has no positive atom but magic ones. ``display`` maps a rewritten
    relation's name to the original's (a demand rewrite's adorned names)."""
    roles = analysis(program, "spark_reason_roles", _role_relations)
    derived = analysis(program, "spark_reason_derived", lambda p: frozenset(p.derived))
    shown = display or {}
    args = rule.head.args
    first = args[0] if args else None
    subject = first.name if isinstance(first, ir.Var) and not is_anon(first) else None
    heads = {t.name for t in args if isinstance(t, ir.Var) and not is_anon(t)}
    # the operation: the head's middle columns; the resource: its last
    middle = {t.name for t in args[1:-1] if isinstance(t, ir.Var) and not is_anon(t)}
    last = args[-1].name if len(args) > 1 and isinstance(args[-1], ir.Var) else None
    atoms = [(i, lit) for i, lit in enumerate(rule.body)
             if isinstance(lit, ir.Atom) and lit.rel not in seeds]
    role = {i: lit.rel in roles or shown.get(lit.rel, lit.rel) in roles for i, lit in atoms}
    # the subject's side: its variable, and the body's own variables an atom holding it binds
    near = {subject}
    for i, lit in atoms:
        if not role[i] and subject in _names(lit):
            near |= _names(lit) - heads
    best: tuple[tuple[int, ...], int] | None = None
    for i, lit in atoms:
        names = _names(lit)
        key = (int(not role[i]), int(subject is None or bool(names & near)),
               len(names & middle) + sum(isinstance(t, ir.Const) for t in lit.args),
               int(subject in names), int(last in names), int(lit.rel not in derived), i)
        if best is None or key > best[0]:
            best = (key, i)
    return None if best is None else best[1]


class Evaluation(Protocol):
    """What :func:`grant_reasons` reads of a finished run (spark_bridge/evaluator.py)."""

    @property
    def program(self) -> ir.Program: ...
    @property
    def full(self) -> Mapping[str, Any]: ...
    @property
    def reasons(self) -> Any: ...
    @property
    def seeds(self) -> frozenset[str]: ...
    @property
    def display(self) -> Mapping[str, str]: ...
    @property
    def decision(self) -> str: ...
    @property
    def low(self) -> Mapping[str, frozenset[int]]: ...
    @property
    def F(self) -> Any: ...  # pyspark.sql.functions

    def rule_df(self, plan: RulePlan, sources: Mapping[str, Any], deltas: Mapping[str, Any],
                delta_sizes: Mapping[str, int], reasons: bool = False) -> Any | None: ...

    def materialize(self, df: Any) -> tuple[Any, int]: ...


def fact_col(F: Any, rel: str, cols: list[str]) -> Any:
    """``rel(v1, v2)`` in fact syntax from internal columns (a rule's reason rows' format)."""
    shown = [encoding.shown_col(F.col(c)) for c in cols]
    return (F.concat(F.lit(rel + "("), F.concat_ws(", ", *shown), F.lit(")"))
            if shown else F.lit(rel))


def premise_chain(program: ir.Program, decision: str, seeds: Collection[str] = (),
                  display: Mapping[str, str] | None = None) -> set[str]:
    """The derived relations a decision's premises go through down to stored facts: every
    relation rules derive that is the chosen premise of a rule of the decision relation or,
    in turn, of a rule of such a relation (the decision relation itself when it is one)."""
    derived = program.derived
    chain: set[str] = set()
    todo = [decision]
    while todo:
        for rule in program.rules_for(todo.pop()):
            i = reason_literal(program, rule, seeds, display)
            lit = rule.body[i] if i is not None else None
            if isinstance(lit, ir.Atom) and lit.rel in derived and lit.rel not in chain:
                chain.add(lit.rel)
                todo.append(lit.rel)
    return chain


def grant_reasons(ev: Evaluation) -> Any:
    """``ev.reasons`` (the decision rows with ``rule``, ``reason_rel``, ``reason_row``: the
    deciding rule's premise) with each premise replaced by the stored fact its derivation
    bottoms out in (the module doc); a row without a rule (a fact) keeps null reasons."""
    F = ev.F
    program = ev.program
    chain = premise_chain(program, ev.decision, ev.seeds, ev.display)
    if ev.reasons is None or not chain:
        return ev.reasons  # every premise is a stored fact already
    show = ev.display.get
    chain.add(ev.decision)
    grant = ["key", "grant_rel", "grant_row"]
    known: Any = None  # key -> the grant of every chain row resolved so far
    for st in program.strata:
        rels = [r for r in st.relations if r in chain]
        if not rels:
            continue
        edges = _edges(ev, rels)
        out = edges.filter(~F.col("via").isin(*rels))
        if known is not None:  # a premise of a lower stratum: its grant, else itself
            k = known.select(F.col("key").alias("reason_row"), "grant_rel", "grant_row")
            out = out.join(k, on="reason_row", how="left").select(
                "key", "rank", F.coalesce("grant_rel", "reason_rel").alias("grant_rel"),
                F.coalesce("grant_row", "reason_row").alias("grant_row"))
        else:
            out = out.select("key", "rank", F.col("reason_rel").alias("grant_rel"),
                             F.col("reason_row").alias("grant_row"))
        # materialized: each later level reads `known`, and a lazy one would hold every
        # lower level's plan again (twice per level: exponential in the chain's length)
        level, _ = ev.materialize(_least(F, out))
        if st.recursive:  # a premise in this component: round by round, least height first
            within = edges.filter(F.col("via").isin(*rels)).select(
                "key", "rank", "reason_row")
            while True:
                k = level.select(F.col("key").alias("reason_row"), "grant_rel", "grant_row")
                new, n = ev.materialize(
                    _least(F, within.join(k, on="reason_row").select("rank", *grant))
                    .join(level.select("key"), on="key", how="left_anti"))
                if not n:
                    break
                level = level.unionByName(new)
        known = level if known is None else known.unionByName(level)
    cols = [c for c in ev.reasons.columns if c not in ("rule", "reason_rel", "reason_row")]
    rows = ev.reasons.withColumn("key", fact_col(F, show(ev.decision, ev.decision), cols))
    # a fact may sit in several strata (a demand rewrite's adorned copies of a relation)
    rows = rows.join(_least(F, known.withColumn("rank", F.lit(""))), on="key", how="left")
    has = F.col("rule").isNotNull()
    return rows.select(*cols, "rule",
                       F.when(has, F.coalesce("grant_rel", "reason_rel")).alias("reason_rel"),
                       F.when(has, F.coalesce("grant_row", "reason_row")).alias("reason_row"))


def _edges(ev: Evaluation, rels: list[str]) -> Any:
    """(key, rank, via, reason_rel, reason_row): each row of ``rels`` (a derived fact, as
    ``key``) with the premise of each of its derivations (``via``: the premise's relation,
    by its name in the program run, which a demand rewrite's adorned copies of one relation
    do not share with each other; ``reason_rel``: as shown); the decision relation's rows with
    their one reason (the run's, of least height); a fact of the program with itself.
    ``rank`` orders a row's derivations as the in-memory prover breaks ties (engine/answer/
    explain/prover.py): a fact first, then the first rule in source order, then the least
    premise by its values (shown without quotes)."""
    F = ev.F
    program = ev.program
    show = ev.display.get
    edge = ["key", "rank", "via", "reason_rel", "reason_row"]
    parts = []
    facts: list[tuple[str, str, str, str, str]] = []
    for rel in rels:
        name = show(rel, rel)
        cols = [f"c{i}" for i in range(program.relations[rel].arity)]
        if rel == ev.decision:
            via = F.lit(None).cast("string")
            for rule in program.rules_for(rel):
                i = reason_literal(program, rule, ev.seeds, ev.display)
                lit = rule.body[i] if i is not None else None
                if isinstance(lit, ir.Atom):
                    via = F.when(F.col("rule") == rule.name, F.lit(lit.rel)).otherwise(via)
            d = ev.reasons.filter(F.col("rule").isNotNull())
            parts.append(d.select(fact_col(F, name, cols).alias("key"), F.lit("").alias("rank"),
                                  via.alias("via"), *edge[3:]))
            continue
        for pos, rule in enumerate(program.rules_for(rel)):
            i = reason_literal(program, rule, ev.seeds, ev.display)
            lit = rule.body[i] if i is not None else None
            if not isinstance(lit, ir.Atom):
                continue
            rank = F.concat(F.lit(f"{pos:06d}"), F.regexp_replace("reason_row", '"', ""))
            for plan in planner.plans(rule, seeds=ev.seeds, low=ev.low):
                d = ev.rule_df(plan, ev.full, {}, {}, reasons=True)
                if d is not None:
                    parts.append(d.select(fact_col(F, name, cols).alias("key"), rank.alias("rank"),
                                          F.lit(lit.rel).alias("via"), *edge[3:]))
        facts += sorted({(s, "", "", name, s) for f in program.facts if f.rel == rel
                         for s in (ir.show_atom(name, f.row),)})
    spark = ev.full[ev.decision].sparkSession
    if facts or not parts:
        parts.append(spark.createDataFrame(facts, ", ".join(f"{c} string" for c in edge)))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def _least(F: Any, df: Any) -> Any:
    """one grant per key: of the least (rank, grant_rel, grant_row)"""
    return (df.groupBy("key")
            .agg(F.min(F.struct("rank", "grant_rel", "grant_row")).alias("g"))
            .select("key", "g.grant_rel", "g.grant_row"))


# -- one reason per row ---------------------------------------------------------------------

def least(F: Any, cols: list[str], df: Any) -> Any:
    """One row per data row of ``df``: the least (rule, reason_rel, reason_row), a null one
    last."""
    return (df.groupBy(*cols)
            .agg(F.min_by(F.struct(*REASON_COLUMNS),
                          F.when(F.col("rule").isNull(), F.lit("\uffff"))
                          .otherwise(F.concat_ws("\u0000", *REASON_COLUMNS))).alias("r"))
            .select(*cols, "r.*"))


def pick(F: Any, cols: list[str], df: Any, reasons: Any | None) -> Any:
    """One reason per row of ``df`` and of ``reasons`` (rows with their reason columns, or
    None): the least one (:func:`least`); rows that are only facts or inputs get none."""
    none = F.lit(None).cast("string")
    base = df.select(*cols, *[none.alias(c) for c in REASON_COLUMNS])
    return least(F, cols, base if reasons is None else base.unionByName(reasons))


def schema(T: Any, cols: list[str]) -> Any:
    """The Spark schema of a relation's rows (internal columns ``cols``) with their reasons."""
    return T.StructType([T.StructField(c, T.StringType(), False) for c in cols]
                        + [T.StructField(c, T.StringType(), True) for c in REASON_COLUMNS])
