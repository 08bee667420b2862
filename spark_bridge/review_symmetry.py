"""Interchangeable values in the whole-platform review (spark_bridge/review.py): one
representative per class of values whose rows, **with their intervals**, are the same; the
review runs over the representatives and its intervals are expanded to every member.

The review's input is a policy stretch's base facts, each with the revisions ``[lo, hi)`` it
was present in (engine/answer/periods.py). A value's **signature** here is the set of its
``(relation, row with the value blanked, lo, hi)``: a table created at the period's start
with only its type and its parent has ``{entity(_, table)@[s, e), contains(s1, _)@[s, e)}``,
as every bare sibling has; one created later, dropped, or granted on in the period has a
signature of its own (a class of one, left alone). Which classes may be collapsed is decided
exactly as spark_bridge/symmetry.py decides it (:func:`~spark_bridge.symmetry.analyse` on the
IR, per shape: the signature abstracted and its intervals dropped; the program's constants
never members; the same refusals).

**Why it is sound** (proof sketch, on top of symmetry.py's). The review's intervals are the
decision's rows at every revision ``t`` of the stretch: the model of ``D_t``, the facts whose
interval holds ``t``. Two members of one class have the same signature, intervals included,
so at each ``t`` their rows in ``D_t`` are the same with the value blanked: a swap of the two
maps ``D_t`` onto itself, for every ``t`` at once. The class's shape at ``t`` is a subset of
its shape over the stretch, and the abstract run is monotone in its seed (fewer seed facts
match fewer rule instances), so a shape the analysis keeps is kept at every ``t``: symmetry.py's
argument then holds at each ``t``, and the model of ``D_t`` is the expansion of the model of
``D'_t`` (the rows of ``D_t`` naming no member but representatives). ``D'_t`` is the collapsed
input at ``t``, so the review over the collapsed input gives, per representative row, exactly
the revisions at which each member's row holds: expanding a row's intervals to its members is
exact. Expansion keeps the rows coalesced (a member row comes from exactly one representative
row: the one with each member put back to its representative), so no merge is needed after.

The classes are found on the driver, where the review's facts already are (no Spark job): one
pass over the stretch's rows gives each value its signature; values are grouped by signature;
each distinct shape is analysed once (symmetry.py's limits: at most ``MAX_SHAPE_ROWS`` rows,
``MAX_SHAPES`` shapes, the most populous first). The collapsed facts drop every row naming a
member that is not its class's representative (all the cells of a member are in its shape, so
the columns it holds are among those the analysis reaches).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grantlog.engine.answer.periods import Stretch, Timed
from grantlog.engine.core import ir
from grantlog.grammar.diagnostics import plural

from . import encoding
from .symmetry import MAX_SHAPE_ROWS, MAX_SHAPES, TOP, Abstract, M, analyse, constants

#: a stretch with fewer base fact rows than this is reviewed as it is (``symmetry=None``)
MIN_ROWS = 10_000


class _Blank:
    """the value blanked in a signature's row (never equal to a value)"""

    def __repr__(self) -> str:
        return "_"


BLANK = _Blank()


@dataclass
class Classes:
    """The classes collapsed in one stretch: ``stretch`` over representatives, ``pairs``
    (encoded ``rep``, ``mem``: every member, representatives included), ``columns`` (relation
    -> the columns a member reaches), how many ``classes`` and ``members``, a ``summary``."""

    stretch: Stretch
    pairs: list[tuple[str, str]]
    columns: dict[str, set[int]]
    classes: int
    members: int
    summary: str


def _key(v: object) -> tuple[str, object]:
    return (type(v).__name__, v)  # 1 and "1" (and True) are different values


def find(stretch: Stretch, program: ir.Program) -> Classes | None:
    """The sound classes of ``stretch``'s facts under ``program`` (the review's restricted
    one), and the stretch over representatives; None when there is none to collapse."""
    consts = {_key(v) for v in constants(program)}
    sig: dict[tuple[str, object], list[tuple[Any, ...]]] = {}
    for rel, rows in stretch.facts.items():
        for row, lo, hi in rows:
            for v in set(row):
                k = _key(v)
                if k in consts:
                    continue
                sig.setdefault(k, []).append(
                    (rel, tuple(BLANK if c == v and type(c) is type(v) else c for c in row),
                     lo, hi))
    groups: dict[frozenset[tuple[Any, ...]], list[tuple[str, object]]] = {}
    for k, items in sig.items():
        groups.setdefault(frozenset(items), []).append(k)
    del sig
    by_shape: dict[frozenset[tuple[str, Abstract]],
                   list[tuple[frozenset[tuple[Any, ...]], list[Any]]]] = {}
    for s, ks in groups.items():
        if len(ks) < 2:
            continue
        shape = frozenset((rel, tuple(M if c is BLANK else c if _key(c) in consts else TOP
                                      for c in row)) for rel, row, _, _ in s)
        if len(shape) <= MAX_SHAPE_ROWS:
            by_shape.setdefault(shape, []).append((s, ks))
    del groups
    shapes = sorted(by_shape.items(), key=lambda x: -sum(len(ks) for _, ks in x[1]))
    columns: dict[str, set[int]] = {}
    drop: set[tuple[str, object]] = set()
    pairs: list[tuple[str, str]] = []
    n = sound = 0
    refused: list[str] = []
    for shape, classes in shapes[:MAX_SHAPES]:
        seed: dict[str, set[Abstract]] = {}
        for rel, arow in shape:
            seed.setdefault(rel, set()).add(arow)
        verdict = analyse(program, seed)
        if verdict.refused:
            refused.append(f"refused {len(classes)} of shape "
                           f"{sorted(f'{r}{x}' for r, x in shape)}: {verdict.refused}")
            continue
        sound += 1
        for rel, cols in verdict.columns().items():
            columns.setdefault(rel, set()).update(cols)
        for _, ks in classes:
            ks = sorted(ks, key=lambda k: encoding.encode(k[1]))  # type: ignore[arg-type]
            rep = encoding.encode(ks[0][1])  # type: ignore[arg-type]
            pairs += [(rep, encoding.encode(k[1])) for k in ks]  # type: ignore[arg-type]
            drop.update(ks[1:])
            n += 1
    if not n:
        return None
    facts: dict[str, list[Timed]] = {
        rel: [t for t in rows if not any(_key(c) in drop for c in t[0])]
        for rel, rows in stretch.facts.items()}
    summary = (f"symmetry: {plural(n, 'class', 'classes')} of {len(pairs):,} values "
               f"({sound} of {plural(min(len(shapes), MAX_SHAPES), 'shape')} sound): "
               f"{sum(map(len, facts.values())):,} of "
               f"{sum(map(len, stretch.facts.values())):,} fact rows kept"
               + "".join(f"; {line}" for line in refused[:3]))
    return Classes(Stretch(stretch.program, stretch.start, stretch.end, facts), pairs,
                   columns, n, len(pairs), summary)


def use(stretch: Stretch, symmetry: bool | None) -> bool:
    """whether to look for classes: ``symmetry`` (None: when the stretch holds at least
    :data:`MIN_ROWS` fact rows)"""
    if symmetry is None:
        return sum(map(len, stretch.facts.values())) >= MIN_ROWS
    return symmetry


def pairs_frame(spark: Any, c: Classes) -> Any:
    """``c.pairs`` as a Spark frame (``rep``, ``mem``)"""
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("rep", T.StringType(), False),
                           T.StructField("mem", T.StringType(), False)])
    return spark.createDataFrame(c.pairs, schema)


def expand(spark: Any, c: Classes, df: Any, decision: str, pairs: Any = None) -> Any:
    """the decision rows ``df`` (``c0, c1, c2, lo, hi`` over representatives) with each
    representative in a column a member reaches replaced by every member of its class, the
    intervals kept (symmetry.py's :func:`~spark_bridge.symmetry.expand`)"""
    from .symmetry import Collapse
    from .symmetry import expand as by_columns

    cols = c.columns.get(decision)
    if not cols:
        return df
    pairs = pairs_frame(spark, c) if pairs is None else pairs
    return by_columns(Collapse(pairs, c.columns, c.classes, c.members, c.summary), df, cols)


__all__ = ["MIN_ROWS", "Classes", "expand", "find", "pairs_frame", "use"]
