"""Exceptions (rewrite 2, the analysis): a value with facts of its own decided as its base class.

Rewrite 1 (symmetry.py) runs one representative per class of interchangeable values. What it
leaves at 100k tables (benchmarks/RESULTS.md, "Spark bulk") are *classes of one*: 9,041 of the
9,961 tables it still evaluates have a row of their own (an owner, a grant). Such a value ``v``
has a **base**: a collapsed class ``C`` (representative ``r``) whose signature is a subset of
``v``'s; the rest of ``v``'s signature are its **extras**, e.g. ``{owner(v, u7)}``. On the
benchmark's inputs (a pure-Python count over its CSVs) every one of the 9,041 tables has a
base by subset (the largest class whose signature it contains), with 9,700 extra rows in all,
of 19 abstract shapes (``owner(M, ⊤)`` 4,368 tables, ``privilege(⊤, select_table, M,
allow)`` 2,972, ...). Splitting by abstract position instead
(the rows at (relation, column) positions that some collapsed shape has) does not work there:
the collapsed shapes already hold ``owner(M, ⊤)`` and ``privilege(⊤, select_table, M,
allow)`` (classes of tables owned by one user, or granted by one role), so 8,640 tables would
have no extra at all.

**Status.** The analysis here is used by singles.py (rewrite 2 in ``run()``, session 26) as a
guard: it keeps values whose extras have global or sibling effects with rewrite 1. What the
extras change is found there on the data (Reach' over ``M(W)`` and ``M(W0)`` in memory), not by
the Reach program below, which stays tested in memory only.

**The idea.** Let ``F`` be every extra row of the values handled and ``W0 = W − F``. In ``W0``,
``v`` has ``C``'s signature, so it is a member of ``C`` (rewrite 1's argument): its answers in
``W0`` are ``r``'s. Adding ``F`` back changes only facts in **Reach(F)**: the least set holding
``F`` and closed under "a rule instance one of whose literals (positive or negated: the
*trigger*) is in Reach, and whose other positive literals hold in ``M(W0) ∪ Reach``" (the other
negations are ignored: an over-approximation). So a decision fact not in Reach is the same in
``W`` and ``W0``: the answers are rewrite 1's over ``W0`` (``v`` expanded as a member of ``C``),
except the decision facts in Reach, which are decided exactly.

*Reach holds every changed fact* (proof sketch): by induction on the strata, and within a
stratum on the rank of a derivation. A fact in ``M(W) − M(W0)`` has a derivation in ``W``
whose instance does not hold in ``W0``: one of its positive literals is in ``M(W) − M(W0)``
(Reach, by induction), or one of its negated atoms is in ``M(W0) − M(W)`` (a lower stratum:
Reach), and its other positive literals are in ``M(W) ⊆ M(W0) ∪ Reach``. A fact in
``M(W0) − M(W)``: take a derivation of least rank in ``W0``; it fails in ``W``, so a positive
literal of it is in ``M(W0) − M(W)`` (a lower rank: Reach), or a negated atom in ``M(W) −
M(W0)`` (a lower stratum: Reach); its other positive literals are in ``M(W0)``. Base facts:
``F``. ∎

**What this module decides** (:func:`reach`, on the IR, no data): whether the extras of a shape
have only *local* effects: every fact of Reach names ``v`` itself. It is an abstract run with
two marks, ``V`` (the value ``v``) and ``M`` (any member of ``C``, ``r`` included), the
program's constants and ``⊤``:

* class' ``= C ∪ {v}`` must meet rewrite 1's conditions, checked by symmetry.py's
  :func:`~.symmetry.analyse` on the union of the base's and the extras' shapes (it
  over-approximates every member's facts): then every fact of the program's model over ``W``
  and of Reach names at most one value of class', no ``!=`` relates two of them, no order
  comparison touches one;
* ``M(W0)``'s abstract facts: the base's analysis (:func:`~.symmetry.analyse` of the base shape:
  the facts holding ``M``), each also with ``M`` read as ``V`` (``v`` is a member in ``W0``), and
  any fact holding no member;
* Reach's abstract facts: the extras with ``V``, closed under the rule instances above (the
  trigger matches a Reach fact, every other positive atom a ``M(W0)`` or Reach fact).

It **refuses** when a rule instance of Reach relates two values of class' (in its head, a
negated atom or a comparison other than ``=``) or orders one, and when a Reach fact holds no
``V``: a *global effect* (no member: ``admin(U) :- owner(T, U)`` makes ``admin(u)`` depend on a
table's owner row, so every table's decisions for ``u`` may change) or a *sibling effect*
(``M``: ``warm(X) :- c(P, T), hot(T), c(P, X)`` changes the siblings' facts). Otherwise each
concrete fact of Reach names ``v`` (the abstract run over-approximates it) and no other value
of class'. Its verdict lists the Reach relations and the columns ``V`` reaches: the candidate
decisions of ``v`` are the decision facts with ``v`` in those columns, found on the data.

**Which program, which values.** :func:`reach` is called once per base shape, with the
extras' shapes of *every* value handled with that base united: ``V`` then stands for any of
them, and two variables holding ``V`` are two values (refused where they meet, as above), so
``pair(X, Y) :- hot(X), tag(Y, secret)`` is refused for a class with one hot and one tagged
value although each alone is local. It is called on the *original* program, not on the goal's
demand rewrite: there a magic relation pairs values that the original never does
(``magic__ancestor_or_self__bb(A, O)`` asks whether a granted table is an ancestor of the
table asked about; ``magic__ancestor__fb(P)``, a demand on the parent, comes from a table's
owner row: a global effect), and the answers of the rewrite are the original's anyway. The
analysis of the union of the base's and the extras' shapes (``whole``) is conservative: the
Reach check alone covers the instances that name an extra value.

On the benchmark's 100k inputs, per base shape (the same count, then :func:`reach`): the
9,003 tables based on the bare tables' class (5 extras' shapes united) and 37 + 1 based on
classes of tables granted by one role or owned by one user are local, the decision's ``V``
column being the table; the 2 roles with one more holder are refused (``allow_applies(U, P,
O)``: a role's holder reaches every object the role is granted on, a global effect), and stay
with rewrite 1.

**The Reach program** (:func:`reach_program`): Reach's definition written out as Datalog, for
an evaluator to run (in memory in the tests; on Spark, not wired yet): per rule and trigger,
``x__reach__<head>(Tag, ...)`` from ``x__reach__<trigger>(Tag, ...)`` and the other positive
atoms as ``x__holds__<rel>`` (``M(W0)``'s rows or Reach's, of any tag: an over-approximation),
the comparisons kept. No negation: one stratum per recursive component. It is compiled with
:func:`program_source` (the program printed without its annotations). Tried on Spark once
(session 25, a script, not in the tree): asked as the goal ``x__reach__allowed(Tag, U,
load_table, T)`` at 10k tables it gives 101,626 candidate pairs for 3,893 tables, but costs
more than the run it would save (402 s of JVM CPU), as the demand for the ``x__holds__``
relations reaches millions of rows and rewrite 1 refuses the combined program
(``x__holds__ancestor_or_self(V0, V1)`` reads ``ancestor_or_self(M, M)`` as two members).

**On the data** (not built yet; benchmarks/RESULTS.md, session 25, helper X, "what is left"):
the base of each class of one by subset (its blanked rows joined with the collapsed classes'
rows, counted per (value, class): the largest class whose rows all match); the extras' shapes
analysed here; then Reach evaluated with ``v`` renamed to ``r`` and a tag column carrying
``v`` (a Reach fact holds ``v`` exactly where it holds ``r``, as it names no other value of
class'), its ``M(W0)`` side being the original relations over representatives; the
candidate (user, value) pairs decided exactly (a second goal run with the pairs as demand, on
the world where the handled values keep their extras); the answers are rewrite 1's, expanded
with the handled values as members of their base classes, minus the candidates, plus their
exact decisions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from grantlog.engine.core import ir

from .symmetry import TOP, Abstract, M, analyse, held_columns, refusal, term_value, unify


class _Mark:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: the value with extras (``M`` is any member of its base class)
V = _Mark("V")
MARKS = (M, V)
Shape = Mapping[str, set[Abstract]]


@dataclass
class Reach:
    """What :func:`reach` found: ``refused`` (why, naming the rule) or None, and Reach's
    abstract facts per relation (each holds ``V``)."""
    refused: str | None
    facts: dict[str, set[Abstract]] = field(default_factory=dict)

    def columns(self) -> dict[str, set[int]]:
        """relation -> the columns ``V`` holds in some Reach fact"""
        return held_columns(self.facts, V)


def _unify(a: object, b: object) -> object | None:
    return unify(a, b, MARKS)


def _bind(atom: ir.Atom, row: Abstract, b: dict[str, object]) -> dict[str, object] | None:
    nb = dict(b)
    for t, x in zip(atom.args, row, strict=True):
        if isinstance(t, ir.Const):
            if _unify(t.value, x) is None:
                return None
        elif t.name in nb:
            u = _unify(nb[t.name], x)
            if u is None:
                return None
            nb[t.name] = u
        else:
            nb[t.name] = x
    return nb


def _match(atoms: list[ir.Atom], pools: list[Shape], b: dict[str, object]
           ) -> Iterator[dict[str, object]]:
    """every binding of ``atoms``, each matching a fact of one of ``pools`` or a fact naming no
    member (every variable of the atom then holds none)"""
    if not atoms:
        yield b
        return
    atom, rest = atoms[0], atoms[1:]
    if all(not isinstance(t, ir.Var) or b.get(t.name) not in MARKS for t in atom.args):
        nb = dict(b)
        for t in atom.args:
            if isinstance(t, ir.Var):
                nb.setdefault(t.name, TOP)
        yield from _match(rest, pools, nb)
    seen: set[Abstract] = set()
    for pool in pools:
        for row in pool.get(atom.rel, ()):
            if row not in seen:
                seen.add(row)
                got = _bind(atom, row, b)
                if got is not None:
                    yield from _match(rest, pools, got)


def _instance(rule: ir.Rule, b: dict[str, object]) -> tuple[str | None, Abstract | None]:
    """(why the Reach instance ``b`` of ``rule`` is refused, its head's abstract row)"""
    why, holds = refusal(rule, b, MARKS, "a value of the class", "two values of the class")
    if why is not None or not holds:
        return why, None
    row = tuple(term_value(t, b) for t in rule.head.args)
    if not any(x is V for x in row):
        effect = "a sibling" if any(x is M for x in row) else "a global"
        return f"{effect} effect: `{rule.head}` does not name the value", None
    return None, row


def _as_v(facts: Shape) -> dict[str, set[Abstract]]:
    return {rel: {tuple(V if x is M else x for x in row) for row in rows}
            for rel, rows in facts.items()}


def reach(program: ir.Program, base: Shape, extras: Shape) -> Reach:
    """The abstract Reach of a value whose signature is its base class's (``base``: the
    class's shape, symmetry.py's abstract rows with ``M``) plus ``extras`` (rows with ``M`` for
    the value): refused or not, and Reach's facts (module doc)."""
    both = {rel: set(base.get(rel, ())) | set(extras.get(rel, ()))
            for rel in set(base) | set(extras)}
    whole = analyse(program, both)
    if whole.refused:
        return Reach(f"the class with the value: {whole.refused}")
    core = analyse(program, base)
    if core.refused:
        return Reach(f"the base class: {core.refused}")
    w0 = {rel: set(rows) for rel, rows in core.facts.items()}
    for rel, rows in _as_v(core.facts).items():
        w0.setdefault(rel, set()).update(rows)
    facts = _as_v(extras)
    changed = True
    while changed:
        changed = False
        for rule in program.rules:
            for i, lit in enumerate(rule.body):
                trigger = lit.atom if isinstance(lit, ir.Neg) else lit
                if not isinstance(trigger, ir.Atom) or trigger.rel not in facts:
                    continue
                others = [a for j, a in enumerate(rule.body)
                          if j != i and isinstance(a, ir.Atom)]
                for row in list(facts[trigger.rel]):
                    b0 = _bind(trigger, row, {})
                    if b0 is None:
                        continue
                    for b in list(_match(others, [w0, facts], b0)):
                        why, head = _instance(rule, b)
                        if why is not None:
                            return Reach(f"rule `{rule.name}`: {why}", facts)
                        if head is not None and head not in facts.setdefault(
                                rule.head.rel, set()):
                            facts[rule.head.rel].add(head)
                            changed = True
    return Reach(None, facts)


# -- the Reach program --------------------------------------------------------------------------

#: prefixes of the Reach program's relations: ``REACH + rel`` (a tag column, then ``rel``'s
#: columns) and ``HOLDS + rel`` (``rel``'s rows in ``M(W0)`` or in Reach)
REACH, HOLDS = "x__reach__", "x__holds__"
TAG = "Tag__x"


def _term(t: ir.Term) -> str:
    if isinstance(t, ir.Const):
        return ir.show_value(t.value)
    return "_" if t.name.startswith("_") else t.name


def _atom(rel: str, args: tuple[ir.Term, ...] | list[str]) -> str:
    shown = [a if isinstance(a, str) else _term(a) for a in args]
    return f"{rel}({', '.join(shown)})"


def reach_program(program: ir.Program) -> str:
    """Source text of the Reach program of ``program`` (module doc), to be compiled with
    ``program``'s own source: for every rule and every literal of it (positive or negated, the
    trigger), ``x__reach__<head>(Tag, ...)`` from ``x__reach__<trigger>(Tag, ...)`` and the
    rule's other positive atoms as ``x__holds__<rel>`` (the relation's rows, or Reach's rows of
    any tag), its comparisons kept, its other negations dropped. Reach's seeds are the base
    relations' ``x__reach__<rel>`` rows: the extras, tagged with their value (declared here)."""
    lines: list[str] = []
    used: set[str] = set()
    for rel in sorted(program.relations):
        if rel in program.derived:
            continue
        r = program.relations[rel]
        types = r.types if r.types else (None,) * r.arity
        cols = [f"{c}: {t or 'any'}" for c, t in zip(r.columns, types, strict=True)]
        tag = "tag" + "_" * (1 + max((len(c) for c in r.columns), default=0))
        lines.append(f"rel {REACH}{rel}({tag}: any{''.join(', ' + c for c in cols)}).")
    for rule in program.rules:
        names = {t.name for lit in (rule.head, *rule.body)
                 for t in ((lit.left, lit.right) if isinstance(lit, ir.Cmp) else
                           lit.atom.args if isinstance(lit, ir.Neg) else lit.args)
                 if isinstance(t, ir.Var)}
        assert TAG not in names
        for i, lit in enumerate(rule.body):
            trigger = lit.atom if isinstance(lit, ir.Neg) else lit
            if not isinstance(trigger, ir.Atom):
                continue
            body = [_atom(REACH + trigger.rel, [TAG, *map(_term, trigger.args)])]
            for j, other in enumerate(rule.body):
                if j == i or isinstance(other, ir.Neg):
                    continue
                if isinstance(other, ir.Atom):
                    used.add(other.rel)
                    body.append(_atom(HOLDS + other.rel, other.args))
                else:
                    body.append(f"{_term(other.left)} {other.op} {_term(other.right)}")
            head = _atom(REACH + rule.head.rel, [TAG, *map(_term, rule.head.args)])
            lines.append(f"{head} :- {', '.join(body)}.")
    for rel in sorted(used):
        xs = [f"V{k}" for k in range(program.relations[rel].arity)]
        lines.append(f"{_atom(HOLDS + rel, xs)} :- {_atom(rel, xs)}.")
        lines.append(f"{_atom(HOLDS + rel, xs)} :- {_atom(REACH + rel, ['_', *xs])}.")
    return "\n".join(lines) + "\n"


def _lit(lit: ir.Lit) -> str:
    if isinstance(lit, ir.Neg):
        return "not " + _atom(lit.atom.rel, lit.atom.args)
    if isinstance(lit, ir.Cmp):
        return f"{_term(lit.left)} {lit.op} {_term(lit.right)}"
    return _atom(lit.rel, lit.args)


def program_source(program: ir.Program) -> str:
    """``program`` as source text without its annotations (its declared relations, rule-file
    facts and rules), for :func:`reach_program` to be compiled with: a relation annotated
    ``@demand`` would not let a materialized ``x__holds__`` relation read it."""
    lines = []
    for rel in program.relations.values():
        if rel.declared:
            types = rel.types if rel.types else (None,) * rel.arity
            cols = ", ".join(f"{c}: {t or 'any'}" for c, t in zip(rel.columns, types,
                                                                  strict=True))
            lines.append(f"rel {rel.name}({cols}).")
    lines += [f"{_atom(f.rel, [ir.show_value(v) for v in f.row])}." for f in program.facts]
    lines += [f"{_atom(r.head.rel, r.head.args)}"
              + (f" :- {', '.join(map(_lit, r.body))}." if r.body else ".")
              for r in program.rules]
    return "\n".join(lines) + "\n"
