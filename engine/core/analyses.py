"""Analyses of the IR, each computed once per program and cached on it by name.

Soufflé keeps its analyses as named objects on the translation unit
(``getAnalysis<PrecedenceGraphAnalysis>()``); here :func:`analysis` caches the result of a
named function of a :class:`ir.Program` in ``program.compiled``. Every layer asks for the same
one: the dependency graph, its strongly connected components and the strata (lowering,
stratification checks, the demand rewrite), and the transitive-closure shapes (the in-memory
graph walk, the statistics, Spark's path doubling).

The analyses are *structural*: they read the rules only, never ``program.virtual`` (which the
materialization choice sets later, in place); a caller applies its own policy to the result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from . import ir
from .terms import distinct_vars, is_anon, lit_atom

T = TypeVar("T")


def analysis(program: ir.Program, name: str, compute: Callable[[ir.Program], T]) -> T:
    """``compute(program)``, computed once and kept in ``program.compiled`` under
    ``analysis:<name>``."""
    key = f"analysis:{name}"
    if key not in program.compiled:
        program.compiled[key] = compute(program)
    got: Any = program.compiled[key]
    return got  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------
# dependency graph, components, strata


def dependency_graph(rules: Iterable[ir.Rule]) -> dict[str, list[str]]:
    """head relation -> the relations its rules' bodies read (positively or negated), each
    once, sorted."""
    succ: dict[str, set[str]] = {}
    for r in rules:
        edges = succ.setdefault(r.head.rel, set())
        for lit in r.body:
            a = lit_atom(lit)
            if a is not None:
                edges.add(a.rel)
    return {h: sorted(es) for h, es in succ.items()}


def sccs(nodes: list[str], succ: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components come out dependencies first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            children = succ.get(v, [])
            recurse = False
            while i < len(children):
                w = children[i]
                i += 1
                if w not in index:
                    work.append((v, i))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp: list[str] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def graph_nodes(succ: dict[str, list[str]]) -> list[str]:
    """Every relation of a dependency graph (heads and bodies), sorted."""
    return sorted(set(succ) | {b for es in succ.values() for b in es})


def components(rules: Sequence[ir.Rule]) -> list[list[str]]:
    """The strongly connected components of the rules' dependency graph, dependencies
    first."""
    succ = dependency_graph(rules)
    return sccs(graph_nodes(succ), succ)


def stratify(rules: Sequence[ir.Rule]) -> list[ir.Stratum]:
    """The strata of a rule list (``rules[i].index == i``), dependencies first: one per
    component that has rules, recursive when a rule of it reads the component."""
    strata: list[ir.Stratum] = []
    by_head: dict[str, list[int]] = {}
    for r in rules:
        by_head.setdefault(r.head.rel, []).append(r.index)
    for comp in components(rules):
        members = set(comp)
        ids = tuple(sorted(i for rel in members for i in by_head.get(rel, ())))
        if not ids:
            continue
        recursive = any(a is not None and a.rel in members
                        for i in ids for a in map(lit_atom, rules[i].body))
        strata.append(ir.Stratum(len(strata), tuple(comp), ids, recursive))
    return strata


def program_dependencies(program: ir.Program) -> dict[str, list[str]]:
    """The program's dependency graph (:func:`dependency_graph`, cached)."""
    return analysis(program, "dependency_graph", lambda p: dependency_graph(p.rules))


def recursive_components(program: ir.Program) -> dict[str, frozenset[str]]:
    """Each relation of a recursive stratum -> the relations of its strongly connected
    component (cached)."""
    return analysis(program, "recursive_components", lambda p: {
        r: frozenset(st.relations) for st in p.strata if st.recursive for r in st.relations})


# ---------------------------------------------------------------------------------------------
# transitive closures


@dataclass(frozen=True)
class Closure:
    """``rel`` is the transitive closure of the binary relation ``edge``: its rules are
    exactly ``rel(X, Y) :- edge(X, Y).`` (rule ``exit``) and one ``step`` rule (variables
    distinct, body order free)::

        rel(X, Z) :- rel(X, Y), edge(Y, Z).    % kind "left-linear"
        rel(X, Z) :- edge(X, Y), rel(Y, Z).    % "right-linear"
        rel(X, Z) :- rel(X, Y), rel(Y, Z).     % "non-linear"

    or, ``flipped``, the closure of the reversed edge: every ``edge`` atom above written
    ``edge(Y, X)`` (``anc(A, X) :- parent(X, A).`` and ``anc(A, X) :- anc(A, P),
    parent(X, P).`` over ``parent(child, parent)`` rows): ``rel(X, Y)`` then holds when a
    path of ``edge`` rows leads from ``Y`` to ``X``.

    With ``seeds``, the reflexive-transitive closure over them: beside the two rules, rules
    ``rel(X, X) :- s(X).`` or ``rel(X, X) :- s(X, _).`` with ``s`` stored (each seed: the
    rule's index and ``s``); ``rel(X, X)`` holds for every ``X`` a seed holds, and the step
    adds nothing to it (a path from a seeded node is a path of edges).
    """

    rel: str
    edge: str
    exit: int
    step: int
    kind: str
    flipped: bool = False
    seeds: tuple[tuple[int, str], ...] = ()

    @property
    def linear(self) -> bool:
        return self.kind != "non-linear"

    def edge_column(self, column: int) -> int:
        """The column of ``edge`` whose index a walk from ``rel``'s ``column`` reads: the
        same column, or the other when ``flipped``."""
        return column ^ 1 if self.flipped else column


def closure_shape(rules: Sequence[ir.Rule]) -> Closure | None:
    """The closure two rules of one relation define (see :class:`Closure`), or None. Whether
    the relation is alone in its component, virtual, or given facts too is the caller's
    policy."""
    if len(rules) != 2:
        return None
    p = rules[0].head.rel
    exits = [(r, e) for r in rules if (e := _exit_edge(r)) is not None]
    if len(exits) != 1 or rules[1].head.rel != p:
        return None
    ex, (edge, flipped) = exits[0]
    step = rules[1] if rules[0] is ex else rules[0]
    head = distinct_vars(step.head.args)
    if head is None or len(step.body) != 2 or not all(isinstance(b, ir.Atom)
                                                       for b in step.body):
        return None
    x, z = head
    atoms = [b for b in step.body if isinstance(b, ir.Atom)]

    def args(atom: ir.Atom) -> tuple[str, ...] | None:  # an edge atom read downwards
        got = distinct_vars(atom.args)
        return got[::-1] if got is not None and flipped and atom.rel == edge else got

    for first, second in (atoms, atoms[::-1]):
        a, b = args(first), args(second)
        if a is None or b is None or a[0] != x or b[1] != z or a[1] != b[0] or a[1] in (x, z):
            continue
        kinds = {(p, edge): "left-linear", (edge, p): "right-linear", (p, p): "non-linear"}
        kind = kinds.get((first.rel, second.rel))
        if kind:
            return Closure(p, edge, ex.index, step.index, kind, flipped)
    return None


def _exit_edge(rule: ir.Rule) -> tuple[str, bool] | None:
    """The edge relation when ``rule`` is ``rel(X, Y) :- edge(X, Y).``, and whether it is
    read reversed (``rel(X, Y) :- edge(Y, X).``)."""
    head = distinct_vars(rule.head.args)
    if head is None or len(head) != 2 or len(rule.body) != 1:
        return None
    lit = rule.body[0]
    if not isinstance(lit, ir.Atom) or lit.rel == rule.head.rel:
        return None
    got = distinct_vars(lit.args)
    if got == head:
        return lit.rel, False
    if got is not None and got == head[::-1]:
        return lit.rel, True
    return None


def closures(program: ir.Program) -> dict[str, Closure]:
    """relation -> its closure shape, for every relation whose rules have one, seeded or
    not (cached)."""
    def compute(p: ir.Program) -> dict[str, Closure]:
        by: dict[str, list[ir.Rule]] = {}
        for r in p.rules:
            by.setdefault(r.head.rel, []).append(r)
        derived = set(by)
        out: dict[str, Closure] = {}
        for rel, rs in by.items():
            seeds = tuple((r.index, s) for r in rs if (s := _seed(r)) is not None
                          and s not in derived)
            rest = [r for r in rs if all(r.index != i for i, _ in seeds)]
            c = closure_shape(rest)
            if c is not None:
                out[rel] = replace(c, seeds=seeds) if seeds else c
        return out
    return analysis(program, "closures", compute)


def _seed(rule: ir.Rule) -> str | None:
    """``s`` when ``rule`` is ``rel(X, X) :- s(X).`` or ``rel(X, X) :- s(X, _).``"""
    args = rule.head.args
    if len(args) != 2 or len(rule.body) != 1 or not isinstance(args[0], ir.Var) or \
            args[0] != args[1] or is_anon(args[0]):
        return None
    lit = rule.body[0]
    if not isinstance(lit, ir.Atom) or not lit.args or lit.args[0] != args[0] or \
            lit.rel == rule.head.rel or len(lit.args) > 2:
        return None
    if len(lit.args) == 2 and not (isinstance(lit.args[1], ir.Var) and lit.args[1] != args[0]):
        return None
    return lit.rel


def edge_closure(program: ir.Program, rel: str) -> Closure | None:
    """``rel``'s closure when a walk over its edge's stored index answers it: a linear step,
    the edge not virtual (the in-memory evaluator's graph walk, engine/eval/closure.py, and
    its estimate, engine/plan/stats.py). Not cached: it reads ``program.virtual``."""
    c = closures(program).get(rel)
    return c if c is not None and c.linear and c.edge not in program.virtual and all(
        s not in program.virtual for _, s in c.seeds) else None


# ---------------------------------------------------------------------------------------------
# views


def views(program: ir.Program) -> dict[str, ir.Rule]:
    """relation -> its one rule, for the relations a call of which can be replaced by the
    rule's body (unfolded, engine/plan/unfold.py): defined by exactly one rule, outside
    recursion, the head's arguments distinct named variables (cached). Whether a view is
    unfolded (virtual, restricted, without facts or stored rows) is the caller's policy."""
    def compute(p: ir.Program) -> dict[str, ir.Rule]:
        out: dict[str, ir.Rule] = {}
        for st in p.strata:
            if st.recursive or len(st.relations) != 1 or len(st.rules) != 1:
                continue
            rule = p.rules[st.rules[0]]
            if distinct_vars(rule.head.args) is not None:
                out[st.relations[0]] = rule
        return out
    return analysis(program, "views", compute)
