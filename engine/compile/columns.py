"""Which values can stand in a column of a relation, computed once per program.

Every value of a derived relation comes from a constant of a rule (a head constant, or the
constant of an ``X = c`` that binds a head variable), from a fact of the rule files, or from a
base fact given at run time (Datalog's active domain). :func:`column_sources` follows the
variables of the rules back to those origins: for one column it answers the constants the rules
and the rule files can put there, and the base columns (relation, column) whose run-time facts
flow there. ``load_tabel`` in ``allowed(alice, load_tabel, t1)`` is then an unknown operation
when it is none of the constants and no base column named can hold it (:func:`reach`).

The same analysis, run the other way, tells ``grantlog lint`` (compile/lint.py) which constants
a column of a fact can ever match: ``grant(alice, foo, ns1)`` is dead when every rule reading
``grant``'s privilege column compares it with ``read``, ``write``, ``execute`` or ``admin``.

Both directions are sound over-approximations: a value said to be impossible is impossible; a
value said to be possible may still never occur. A variable bound by several body atoms is
bounded by the intersection of their constants when some of them hold constants only, else by
the union of their origins.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from ..core import ir
from ..core.suggest import Names

Column = tuple[str, int]
H = TypeVar("H", bound=Hashable)

#: ``accepts`` answers this for a column some rule matches with any value
ANY = None


@dataclass(frozen=True)
class ColumnSources:
    """The values that can stand in one column.

    ``constants``: the constants rules and the rule files' facts can put there.
    ``bases``: the base columns (relation, column index) whose run-time facts can flow there;
    empty when the column holds only ``constants``.
    """

    constants: frozenset[ir.Value]
    bases: frozenset[Column]

    @property
    def closed(self) -> bool:
        """The column can hold nothing but ``constants``."""
        return not self.bases


@dataclass(frozen=True)
class Reach:
    """Whether a value can stand in a column (:func:`reach`).

    ``static``: a rule or a fact of the rule files can put it there: it is known.
    ``bases``: otherwise, the base columns whose run-time facts would have to hold the value
    for it to be possible; empty: the value can never stand there.
    """

    static: bool
    bases: tuple[Column, ...] = ()

    @property
    def impossible(self) -> bool:
        """No rule, rule-file fact or run-time fact can ever put the value there."""
        return not self.static and not self.bases


class _Class:
    """One variable of a rule (variables joined by ``X = Y`` are one)."""

    __slots__ = ("consts", "heads", "occurrences")

    def __init__(self) -> None:
        self.occurrences: list[tuple[int, Column]] = []  # (literal index, column): positive
        self.consts: set[ir.Value] = set()  # X = c
        self.heads: list[int] = []  # head positions


class _Rule:
    """A rule's variables as the analysis reads them."""

    __slots__ = ("_find", "classes", "head", "reads", "rule")

    def __init__(self, rule: ir.Rule) -> None:
        self.rule = rule
        self.head = rule.head.rel
        parent: dict[str, str] = {}

        def find(v: str) -> str:
            while parent.setdefault(v, v) != v:
                parent[v] = parent[parent[v]]
                v = parent[v]
            return v

        for lit in rule.body:
            if isinstance(lit, ir.Cmp) and lit.op == "=" and isinstance(lit.left, ir.Var) \
                    and isinstance(lit.right, ir.Var):
                parent[find(lit.left.name)] = find(lit.right.name)
        classes: dict[str, _Class] = {}

        def cls(v: ir.Var) -> _Class:
            return classes.setdefault(find(v.name), _Class())

        for i, t in enumerate(rule.head.args):
            if isinstance(t, ir.Var):
                cls(t).heads.append(i)
        #: every body atom argument: (literal index, column, term), negated ones too
        self.reads: list[tuple[int, Column, ir.Term]] = []
        for n, lit in enumerate(rule.body):
            if isinstance(lit, ir.Atom | ir.Neg):
                atom = lit if isinstance(lit, ir.Atom) else lit.atom
                for j, t in enumerate(atom.args):
                    self.reads.append((n, (atom.rel, j), t))
                    if isinstance(lit, ir.Atom) and isinstance(t, ir.Var):
                        cls(t).occurrences.append((n, (atom.rel, j)))
            elif isinstance(lit, ir.Cmp) and lit.op == "=":
                for a, b in ((lit.left, lit.right), (lit.right, lit.left)):
                    if isinstance(a, ir.Var) and isinstance(b, ir.Const):
                        cls(a).consts.add(b.value)
        self.classes = classes
        self._find = find

    def of(self, v: ir.Var) -> _Class:
        return self.classes.setdefault(self._find(v.name), _Class())


class ColumnAnalysis:
    """The value origins (and, for lint, the accepted values) of every column of a program.

    ``data_files``: files whose facts are data (``grantlog lint --facts``): they are checked
    and they add rows to the rules' tables, but they make no relation a table.
    """

    def __init__(self, program: ir.Program, data_files: Collection[str] = ()) -> None:
        self.program = program
        derived = program.derived
        writable = {n for n, r in program.relations.items() if "writable" in r.annotations}
        self.base = {n for n in program.relations if n not in derived} | writable
        data = set(data_files)
        static: dict[Column, set[ir.Value]] = {}
        tables: set[str] = set()
        for f in program.facts:
            for i, v in enumerate(f.row):
                static.setdefault((f.rel, i), set()).add(v)
            if f.span is None or f.span.file in data:
                continue
            decl = program.relations[f.rel].span
            if decl is not None and decl.file == f.span.file:
                tables.add(f.rel)
        self._static = static
        #: lint's closed tables: base relations declared together with their facts (the
        #: seed's tables a model transcribes: privilege names, operation lists), as opposed to
        #: relations whose facts arrive at run time (a fixture's facts elsewhere count too)
        self.tables = (tables & self.base) - writable
        self._rules = [_Rule(r) for r in program.rules]
        self._by_stratum = self._strata()
        self.arity = {n: r.arity for n, r in program.relations.items()}
        # the run-time view (every base column is fed at run time) and lint's view (only base
        # relations without facts in the rule files are)
        self._feeds = self._feeds_fixpoint(self.base)
        self._consts = self._consts_fixpoint(self._feeds)
        self._lint_feeds: dict[Column, frozenset[Column]] | None = None
        self._lint_consts: dict[Column, frozenset[ir.Value]] | None = None
        self._accepts: dict[Column, frozenset[ir.Value] | None] | None = None
        self._suggesters: dict[Hashable, Suggester] = {}

    # -- producers ------------------------------------------------------------------------------

    def _strata(self) -> list[list[_Rule]]:
        by_head: dict[str, list[_Rule]] = {}
        for r in self._rules:
            by_head.setdefault(r.head, []).append(r)
        out: list[list[_Rule]] = []
        seen: set[str] = set()
        for st in self.program.strata:
            out.append([r for rel in st.relations for r in by_head.get(rel, [])])
            seen.update(st.relations)
        rest = [r for rel, rs in by_head.items() if rel not in seen for r in rs]
        if rest:
            out.append(rest)
        return out

    def _feeds_fixpoint(self, open_bases: set[str]) -> dict[Column, frozenset[Column]]:
        """Which open base columns feed each column (empty: constants only)."""
        feeds: dict[Column, frozenset[Column]] = {}
        for rel in open_bases:
            for i in range(self.program.relations[rel].arity):
                feeds[(rel, i)] = frozenset({(rel, i)})
        return self._fixpoint(feeds, lambda r, t: None if not isinstance(t, ir.Var)
                              else self._class_feeds(r.of(t), feeds))

    def _fixpoint(self, out: dict[Column, frozenset[H]],
                  value: Callable[[_Rule, ir.Term], frozenset[H] | None],
                  ) -> dict[Column, frozenset[H]]:
        """Stratum by stratum, until nothing changes: add to ``out`` at each head column
        what ``value`` gives for the head's term there (None: nothing)."""
        for stratum in self._by_stratum:
            changed = True
            while changed:
                changed = False
                for r in stratum:
                    for i, t in enumerate(r.rule.head.args):
                        got = value(r, t)
                        if got is None:
                            continue
                        col = (r.head, i)
                        old = out.get(col, frozenset())
                        if not got <= old:
                            out[col] = old | got
                            changed = True
        return out

    @staticmethod
    def _class_feeds(c: _Class, feeds: Mapping[Column, frozenset[Column]]) -> frozenset[Column]:
        if c.consts:
            return frozenset()
        out: set[Column] = set()
        for _, col in c.occurrences:
            f = feeds.get(col, frozenset())
            if not f:
                return frozenset()  # bounded by a column of constants
            out |= f
        return frozenset(out)

    def _consts_fixpoint(self, feeds: Mapping[Column, frozenset[Column]]
                         ) -> dict[Column, frozenset[ir.Value]]:
        consts: dict[Column, frozenset[ir.Value]] = {
            col: frozenset(vs) for col, vs in self._static.items()}
        return self._fixpoint(consts, lambda r, t: frozenset((t.value,))
                              if isinstance(t, ir.Const)
                              else self._class_consts(r.of(t), feeds, consts))

    @staticmethod
    def _class_consts(c: _Class, feeds: Mapping[Column, frozenset[Column]],
                      consts: Mapping[Column, frozenset[ir.Value]]) -> frozenset[ir.Value]:
        bounds: list[frozenset[ir.Value]] = []
        if c.consts:
            bounds.append(frozenset(c.consts))
        closed = [col for _, col in c.occurrences if not feeds.get(col)]
        if c.consts or closed:
            bounds += [consts.get(col, frozenset()) for col in closed]
            out = bounds[0]
            for b in bounds[1:]:
                out &= b
            return out
        found: set[ir.Value] = set()
        for _, col in c.occurrences:
            found |= consts.get(col, frozenset())
        return frozenset(found)

    def _check(self, relation: str, column: int) -> None:
        if relation not in self.arity:
            raise KeyError(f"no relation `{relation}`")
        if not 0 <= column < self.arity[relation]:
            raise IndexError(f"`{relation}` has {self.arity[relation]} columns, not {column + 1}")

    def sources(self, relation: str, column: int) -> ColumnSources:
        """The constants and the base columns that can put values in ``relation``'s column."""
        self._check(relation, column)
        col = (relation, column)
        return ColumnSources(self._consts.get(col, frozenset()),
                             self._feeds.get(col, frozenset()))

    def reach(self, relation: str, column: int, value: ir.Value) -> Reach:
        """Can ``value`` stand in the column? O(1) (the analysis is computed once)."""
        self._check(relation, column)
        col = (relation, column)
        if value in self._consts.get(col, frozenset()):
            return Reach(True)
        return Reach(False, tuple(sorted(self._feeds.get(col, frozenset()))))

    # -- lint's view ------------------------------------------------------------------------------

    def _lint(self) -> tuple[dict[Column, frozenset[Column]], dict[Column, frozenset[ir.Value]]]:
        if self._lint_feeds is None or self._lint_consts is None:
            self._lint_feeds = self._feeds_fixpoint(self.base - self.tables)
            self._lint_consts = self._consts_fixpoint(self._lint_feeds)
        return self._lint_feeds, self._lint_consts

    def produces(self, relation: str, column: int) -> frozenset[ir.Value] | None:
        """The values the rules and the rule files' tables can put in the column, or
        :data:`ANY` when run-time facts can (a base relation without facts in the rule files
        feeds it)."""
        feeds, consts = self._lint()
        col = (relation, column)
        if feeds.get(col):
            return ANY
        return consts.get(col, frozenset())

    def accepts(self, relation: str, column: int) -> frozenset[ir.Value] | None:
        """The values some rule can match in the column (a fact holding another value there
        is never used by a rule), or :data:`ANY`.

        The decision relation and the relations no rule reads (but their own recursive rules)
        are answers: they accept anything.
        """
        if self._accepts is None:
            self._accepts = self._accepts_fixpoint()
        return self._accepts.get((relation, column), ANY)

    def _accepts_fixpoint(self) -> dict[Column, frozenset[ir.Value] | None]:
        # a relation is an answer (accepts anything) unless a rule outside its recursive
        # component reads its component: `path` read only by `path`'s own rules is an answer
        component = {rel: n for n, st in enumerate(self.program.strata) for rel in st.relations}
        read: set[str] = set()
        for r in self._rules:
            for _, (rel, _), _ in r.reads:
                if rel not in component or component[rel] != component.get(r.head):
                    read.add(rel)
        read |= {rel for rel, n in component.items()
                 if any(component.get(o) == n for o in read)}
        acc: dict[Column, frozenset[ir.Value] | None] = {}
        for rel in read:
            if rel == self.program.decision:
                continue
            for i in range(self.arity[rel]):
                acc[(rel, i)] = frozenset()
        order = [r for stratum in reversed(self._by_stratum) for r in stratum]
        changed = True
        while changed:
            changed = False
            for r in order:
                for n, col, t in r.reads:
                    old = acc.get(col, ANY)
                    if old is ANY:
                        continue
                    got = self._accepted_by(r, n, col, t, acc)
                    new = ANY if got is ANY else old | got
                    if new != old:
                        acc[col] = new
                        changed = True
        return acc

    def _accepted_by(self, r: _Rule, n: int, col: Column, t: ir.Term,
                     acc: Mapping[Column, frozenset[ir.Value] | None]
                     ) -> frozenset[ir.Value] | None:
        """What one argument of a body literal matches: its constant, or what the other uses
        of its variable allow."""
        if isinstance(t, ir.Const):
            return frozenset((t.value,))
        c = r.of(t)
        bounds: list[frozenset[ir.Value]] = []
        if c.consts:
            bounds.append(frozenset(c.consts))
        for m, other in c.occurrences:
            if (m, other) == (n, col):
                continue
            got = self.produces(*other)
            if got is not ANY:
                bounds.append(got)
        for i in c.heads:
            got = acc.get((r.head, i), ANY)
            if got is not ANY:
                bounds.append(got)
        if not bounds:
            return ANY
        out = bounds[0]
        for b in bounds[1:]:
            out &= b
        return out

    def suggest(self, value: ir.Value, candidates: Iterable[ir.Value],
                key: Hashable = None) -> str | None:
        """The candidate closest to ``value`` (similarity ≥ 0.6: engine/core/suggest.py), if
        any. With ``key`` the candidates, sorted, are kept for the next call with that key."""
        if not isinstance(value, str):
            return None
        if key is None:
            return Suggester(candidates).best(value)
        s = self._suggesters.get(key)
        if s is None:
            s = self._suggesters[key] = Suggester(candidates)
        return s.best(value)


class Suggester:
    """"Did you mean" over a fixed set of names (engine/core/suggest.py's :class:`Names`:
    rapidfuzz's ratio, difflib's measure, ≥ 0.6), the names sorted once for the calls that
    share them."""

    def __init__(self, names: Iterable[ir.Value], cutoff: float = 0.6) -> None:
        self.cutoff = cutoff * 100
        self.names = Names(names)  # sorted (and indexed) once, not per word

    def best(self, word: str) -> str | None:
        return self.names.closest(word, self.cutoff)


def column_analysis(program: ir.Program) -> ColumnAnalysis:
    """The program's analysis, computed on first use and kept with the program."""
    got = program.compiled.get("column_analysis")
    if not isinstance(got, ColumnAnalysis):
        got = program.compiled["column_analysis"] = ColumnAnalysis(program)
    return got


def column_sources(program: ir.Program, relation: str, column: int) -> ColumnSources:
    """What can put values in ``relation``'s column ``column`` (0-based): the constants of the
    rules and rule files, and the base columns fed at run time. Raises ``KeyError`` for an
    unknown relation, ``IndexError`` for a column out of range."""
    return column_analysis(program).sources(relation, column)


def reach(program: ir.Program, relation: str, column: int, value: ir.Value) -> Reach:
    """Can ``value`` ever stand in ``relation``'s column ``column``? ``Reach.static``: yes, a
    rule or a rule-file fact puts it there; else look for it in the run-time facts of
    ``Reach.bases`` (none: never). O(1) after the first call on the program."""
    return column_analysis(program).reach(relation, column, value)


def can_hold(program: ir.Program, relation: str, column: int, value: ir.Value,
             base_holds: Callable[[str, int, ir.Value], bool]) -> bool:
    """:func:`reach` with the run-time facts looked at: ``base_holds(rel, col, value)`` says
    whether a base fact of ``rel`` has ``value`` in column ``col``."""
    got = reach(program, relation, column, value)
    return got.static or any(base_holds(rel, col, value) for rel, col in got.bases)


def suggestion(program: ir.Program, relation: str, column: int, value: ir.Value) -> str | None:
    """The known constant of the column closest to ``value`` ("did you mean"), if any."""
    a = column_analysis(program)
    return a.suggest(value, a.sources(relation, column).constants, (relation, column))
