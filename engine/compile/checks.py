"""Compile-time checks over parsed modules, run as an ordered table of named passes.

Each pass reads the :class:`Unit` (everything the loader parsed) and appends diagnostics.
Codes are stable and documented in docs/diagnostics.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter

from grantlog.grammar import ast
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error, warning
from grantlog.grammar.facts import FactTable
from grantlog.grammar.parser import ANNOTATION_ARGS, ANNOTATIONS, split_annotation

from ..core.analyses import graph_nodes, sccs
from ..core.ir import derived_relation
from ..core.suggest import Names, did_you_mean
from ..core.terms import compare
from ..core.times import Interval, instant, interval, validity_derived

TYPES = ("string", "int", "any")


@dataclass
class Unit:
    """The parsed program as the checks see it."""

    modules: list[ast.Module]
    strict: bool = False
    #: per module, its plain fact lines read into rows (engine/compile/loader.py ``rows``):
    #: facts that are not among its statements; checked a relation at a time
    tables: list[FactTable | None] = field(default_factory=list)
    decls: dict[str, ast.Decl] = field(default_factory=dict)
    arity: dict[str, int] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def statements(self) -> Iterator[ast.Statement]:
        for m in self.modules:
            yield from m.statements

    def clauses(self) -> Iterator[ast.Clause]:
        for st in self.statements():
            if isinstance(st, ast.Clause):
                yield st

    def tests(self) -> Iterator[ast.TestBlock]:
        for st in self.statements():
            if isinstance(st, ast.TestBlock):
                yield st

    def test_clauses(self) -> Iterator[ast.Clause]:
        for t in self.tests():
            for it in t.items:
                if isinstance(it, ast.Clause):
                    yield it

    def expects(self) -> Iterator[ast.Expect]:
        for t in self.tests():
            for it in t.items:
                if isinstance(it, ast.Expect):
                    yield it

    def add(self, d: Diagnostic) -> None:
        self.diagnostics.append(d)

    def fact_tables(self) -> Iterator[tuple[int, FactTable]]:
        """(module index, table) of the modules whose fact lines were read into rows."""
        for i, t in enumerate(self.tables):
            if t is not None and t.rows:
                yield i, t


def body_atoms(body: tuple[ast.Literal, ...]) -> Iterator[tuple[ast.Atom, bool]]:
    for lit in body:
        if isinstance(lit, ast.Atom):
            yield lit, True
        elif isinstance(lit, ast.Negation):
            yield lit.atom, False


def all_atoms(u: Unit) -> Iterator[ast.Atom]:
    for c in [*u.clauses(), *u.test_clauses()]:
        yield c.head
        for a, _ in body_atoms(c.body):
            yield a
    for e in u.expects():
        for a, _ in body_atoms(e.body):
            yield a


def term_vars(t: ast.Term) -> list[ast.Var]:
    return [t] if isinstance(t, ast.Var) else []


def lit_vars(lit: ast.Literal) -> list[ast.Var]:
    if isinstance(lit, ast.Atom):
        return [a for a in lit.args if isinstance(a, ast.Var)]
    if isinstance(lit, ast.Negation):
        return lit_vars(lit.atom)
    return term_vars(lit.left) + term_vars(lit.right)


# ---------------------------------------------------------------------------------------------
# passes


def check_declarations(u: Unit) -> None:
    """duplicate-declaration, unknown-type, unknown-annotation, bad-annotation (an
    annotation's argument), hierarchy-role (a role declared twice, on a relation not binary)"""
    roles: dict[str, ast.Decl] = {}
    for st in u.statements():
        if not isinstance(st, ast.Decl):
            continue
        for note in st.annotations:
            name, arg = split_annotation(note)
            if name not in ANNOTATIONS:
                known = ", ".join(f"`@{a}`" for a in ANNOTATIONS)
                u.add(error("unknown-annotation", f"unknown annotation `@{name}`", st.span,
                            f"annotations are {known}"))
            elif _annotation_arg(u, st, name, arg) and arg is not None:
                _hierarchy_role(u, st, arg, roles)
        first = u.decls.get(st.name)
        if first is not None:
            u.add(error("duplicate-declaration", f"relation `{st.name}` is declared twice",
                        st.span, f"first declared at {first.span}"))
            continue
        u.decls[st.name] = st
        seen: dict[str, ast.Column] = {}
        for c in st.columns:
            if c.name in seen:
                u.add(error("duplicate-declaration",
                            f"column `{c.name}` of `{st.name}` is declared twice", c.span))
            seen[c.name] = c
            if c.type is not None and c.type not in TYPES:
                u.add(error("unknown-type", f"unknown type `{c.type}`", c.span,
                            "types are " + ", ".join(f"`{t}`" for t in TYPES)))


def _annotation_arg(u: Unit, st: ast.Decl, name: str, arg: str | None) -> bool:
    """bad-annotation: an annotation given an argument it does not take (or none where it
    takes one); whether the argument is right."""
    args = ANNOTATION_ARGS.get(name, ())
    if (arg is None) == (not args) and (arg is None or arg in args):
        return True
    if not args:
        u.add(error("bad-annotation", f"`@{name}` takes no argument", st.span,
                    f"write `@{name} rel {st.name}(...)`"))
    else:
        took = f"`@{name}({arg})`" if arg is not None else f"`@{name}`"
        u.add(error("bad-annotation", f"{took}: `@{name}` takes one of "
                    + ", ".join(f"`{a}`" for a in args), st.span,
                    f"e.g. `@{name}({args[0]}) rel {st.name}(...)` (docs/evaluation.md)"))
    return False


def _hierarchy_role(u: Unit, st: ast.Decl, role: str, roles: dict[str, ast.Decl]) -> None:
    """hierarchy-role: ``@hierarchy(role)`` on a second relation (but ``type`` on unary
    relations, one per type), ``edge`` and ``parent`` both, or on a relation that is not
    binary (unary for a type) (engine/core/hierarchy_roles.py checks what rules derive
    them)."""
    other = next((r for r, d in roles.items() if d is st and r.split("#")[0] != role), None)
    if other is not None:
        u.add(error("hierarchy-role", f"`{st.name}` is declared `@hierarchy("
                    f"{other.split('#')[0]})` and `@hierarchy({role})`; each role is a "
                    "relation of its own", st.span))
        return
    unary = role == "type" and len(st.columns) == 1
    first = roles.get(role) or roles.get({"edge": "parent", "parent": "edge"}.get(role, ""))
    if first is not None and first is not st and not (
            unary and len(first.columns) == 1):
        twice = (f"`@hierarchy({role})` is declared twice" if first is roles.get(role) else
                 "`@hierarchy(edge)` and `@hierarchy(parent)` are both declared")
        u.add(error("hierarchy-role", f"{twice}: on `{first.name}` and on `{st.name}`",
                    st.span, f"first declared at {first.span}"
                    + ("; types are a binary relation or unary ones, not both"
                       if role == "type" else "")))
        return
    roles[role if first is None else f"{role}#{st.name}"] = st
    if len(st.columns) != 2 and not unary:
        u.add(error("hierarchy-role", f"`@hierarchy({role})` relation `{st.name}` has "
                    f"{len(st.columns)} column{_s(len(st.columns))}; a hierarchy role is "
                    "binary" + (" (a type: unary or binary)" if role == "type" else ""),
                    st.span))


def _keyed_atoms(u: Unit) -> Iterator[tuple[tuple[int, ...], ast.Atom]]:
    """:func:`all_atoms`, each with where its statement is: (0, module, line, col) for a
    clause, (1,) for a test block's, (2,) for an `expect`'s (the order they are met in)."""
    for i, m in enumerate(u.modules):
        for st in m.statements:
            if isinstance(st, ast.Clause):
                key = (0, i, st.span.line, st.span.col)
                yield key, st.head
                for a, _ in body_atoms(st.body):
                    yield key, a
    for c in u.test_clauses():
        yield (1,), c.head
        for a, _ in body_atoms(c.body):
            yield (1,), a
    for e in u.expects():
        for a, _ in body_atoms(e.body):
            yield (2,), a


def check_arity(u: Unit) -> None:
    """arity-mismatch: every use of a relation has the same number of arguments (the
    declaration's, else the first use's; the rows of a fact table a relation at a time)"""
    where: dict[str, Span] = {}
    for name, d in u.decls.items():
        u.arity[name] = len(d.columns)
        where[name] = d.span
    # a relation's first fact in the tables, in the order of the statements
    first: dict[str, tuple[tuple[int, ...], FactTable]] = {}
    for i, t in u.fact_tables():
        for rel, nos in t.lines.items():
            if rel not in first and rel not in u.arity:
                first[rel] = ((0, i, nos[0], 0), t)

    def by_table(rel: str) -> None:
        t = first.pop(rel)[1]
        u.arity[rel] = len(t.rows[rel][0])
        where[rel] = t.atom_span(rel, 0)

    for key, a in _keyed_atoms(u):
        n = len(a.args)
        if a.rel not in u.arity and a.rel in first and first[a.rel][0] < key:
            by_table(a.rel)
        if a.rel not in u.arity:
            u.arity[a.rel] = n
            where[a.rel] = a.span
        elif u.arity[a.rel] != n:
            _arity_mismatch(u, a.rel, n, a.span, where)
    for rel in list(first):
        if rel not in u.arity:
            by_table(rel)
    for _, t in u.fact_tables():
        for rel, rows in t.rows.items():
            n = u.arity[rel]
            if set(map(len, rows)) != {n}:
                for i, row in enumerate(rows):
                    if len(row) != n:
                        _arity_mismatch(u, rel, len(row), t.atom_span(rel, i), where)


def _arity_mismatch(u: Unit, rel: str, n: int, span: Span, where: dict[str, Span]) -> None:
    how = "its declaration" if rel in u.decls else "its first use"
    u.add(error("arity-mismatch",
                f"`{rel}` takes {u.arity[rel]} argument{_s(u.arity[rel])} "
                f"but is given {n} here", span, f"see {how} at {where[rel]}"))


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def defined_relations(u: Unit) -> set[str]:
    out = set(u.decls)
    for c in [*u.clauses(), *u.test_clauses()]:
        out.add(c.head.rel)
    for _, t in u.fact_tables():
        out.update(t.rows)
    return out


def check_unknown_relations(u: Unit) -> None:
    """unknown-relation: used in a body but never declared, defined or given facts"""
    defined = defined_relations(u)
    names = Names(defined)  # sorted (and indexed) once for all the misspellings
    bodies = [c.body for c in u.clauses()] + [e.body for e in u.expects()]
    for body in bodies:
        for a, _ in body_atoms(body):
            if a.rel in defined:
                continue
            hint = did_you_mean(a.rel, names) or (
                f"declare it with `rel {a.rel}(...)` if its facts arrive at run time")
            make = error if u.strict else warning
            u.add(make("unknown-relation",
                       f"relation `{a.rel}` is never declared, defined or given facts",
                       a.span, hint))


def bind_vars(body: tuple[ast.Literal, ...]) -> set[str]:
    """Variables bound by the body: positive atoms, then `=` with one bound side, to fixpoint."""
    bound = {v.name for lit in body if isinstance(lit, ast.Atom)
             for v in lit_vars(lit) if not v.anonymous}
    changed = True
    while changed:
        changed = False
        for lit in body:
            if isinstance(lit, ast.Comparison) and lit.op == "=":
                sides = [lit.left, lit.right]
                for this, other in (sides, sides[::-1]):
                    if (isinstance(this, ast.Var) and not this.anonymous
                            and this.name not in bound
                            and (isinstance(other, ast.Const) or other.name in bound)):
                        bound.add(this.name)
                        changed = True
    return bound


def check_body(u: Unit, body: tuple[ast.Literal, ...], bound: set[str]) -> None:
    for lit in body:
        if isinstance(lit, ast.Negation):
            for v in lit_vars(lit):
                if not v.anonymous and v.name not in bound:
                    u.add(error("unsafe-variable",
                                f"variable `{v.name}` in a negated literal is not bound by a "
                                f"positive literal", v.span,
                                f"add a positive literal that binds `{v.name}`, or use `_`"))
        elif isinstance(lit, ast.Comparison):
            for v in lit_vars(lit):
                if v.anonymous:
                    u.add(error("unsafe-variable", "anonymous variable `_` in a comparison",
                                v.span, "comparisons need named, bound variables"))
                elif v.name not in bound:
                    u.add(error("unsafe-variable",
                                f"variable `{v.name}` in a comparison is not bound by a "
                                f"positive literal", v.span,
                                f"add a positive literal that binds `{v.name}`"))


def check_safety(u: Unit) -> None:
    """unsafe-variable: head, negation and comparison variables must be bound positively"""
    for c in [*u.clauses(), *u.test_clauses()]:
        if c.is_fact:
            for v in lit_vars(c.head):
                u.add(error("unsafe-variable", f"fact has variable `{v.name}`", v.span,
                            "facts must be ground: use constants, or write a rule with a body"))
            continue
        bound = bind_vars(c.body)
        for v in lit_vars(c.head):
            if v.anonymous:
                u.add(error("unsafe-variable", "anonymous variable `_` in the head", v.span,
                            "every head argument needs a value: name the variable and bind it"))
            elif v.name not in bound:
                u.add(error("unsafe-variable",
                            f"variable `{v.name}` in the head is not bound by a positive "
                            f"literal of the body", v.span,
                            f"add a positive literal that binds `{v.name}`"))
        check_body(u, c.body, bound)
    for e in u.expects():
        check_body(u, e.body, bind_vars(e.body))


def _const_type(c: ast.Const) -> str:
    return "int" if isinstance(c.value, int) else "string"


def check_types(u: Unit) -> None:
    """type-mismatch against declared column types, within each rule"""
    bodies: list[tuple[ast.Atom | None, tuple[ast.Literal, ...]]] = [
        (c.head, c.body) for c in [*u.clauses(), *u.test_clauses()]
    ]
    bodies += [(None, e.body) for e in u.expects()]
    for head, body in bodies:
        var_types: dict[str, tuple[str, str, Span]] = {}
        atoms = ([head] if head else []) + [a for a, _ in body_atoms(body)]
        for a in atoms:
            d = u.decls.get(a.rel)
            if d is None or len(d.columns) != len(a.args):
                continue
            for col, arg in zip(d.columns, a.args, strict=True):
                if col.type in (None, "any"):
                    continue
                assert col.type is not None
                if isinstance(arg, ast.Const):
                    if _const_type(arg) != col.type:
                        _value_mismatch(u, a.rel, col, arg)
                elif not arg.anonymous:
                    prev = var_types.get(arg.name)
                    where = f"`{a.rel}`.`{col.name}`"
                    if prev is None:
                        var_types[arg.name] = (col.type, where, arg.span)
                    elif prev[0] != col.type:
                        u.add(error("type-mismatch",
                                    f"variable `{arg.name}` is {_a(prev[0])} in {prev[1]} "
                                    f"but {_a(col.type)} in {where}", arg.span,
                                    f"see {prev[2]}"))
        for lit in body:
            if not isinstance(lit, ast.Comparison):
                continue
            lt = _term_type(lit.left, var_types)
            rt = _term_type(lit.right, var_types)
            if lt and rt and lt != rt:
                sample = {"int": 0, "string": ""}
                always = compare(lit.op, sample[lt], sample[rt])
                u.add(error("type-mismatch",
                            f"comparison of {_a(lt)} with {_a(rt)} is always "
                            f"{'true' if always else 'false'}", lit.span,
                            "every int sorts before every string; compare values of one type"))
    _check_table_types(u)


def _check_table_types(u: Unit) -> None:
    """type-mismatch in the fact tables: a declared column at a time, fact by fact only
    where a column holds a value of the other type"""
    for _, t in u.fact_tables():
        for rel, rows in t.rows.items():
            d = u.decls.get(rel)
            if d is None:
                continue
            n = len(d.columns)
            wide = rows if set(map(len, rows)) == {n} else [r for r in rows if len(r) == n]
            for j, col in enumerate(d.columns):
                want = {"int": int, "string": str}.get(col.type or "")
                if want is None:
                    continue
                kinds = set(map(type, map(itemgetter(j), wide)))
                if kinds <= {want}:
                    continue
                for i, r in enumerate(rows):
                    if len(r) == n and type(r[j]) is not want:
                        arg = t.clause(rel, i).head.args[j]
                        assert isinstance(arg, ast.Const)
                        _value_mismatch(u, rel, col, arg)


def _value_mismatch(u: Unit, rel: str, col: ast.Column, arg: ast.Const) -> None:
    assert col.type is not None
    u.add(error("type-mismatch", f"column `{col.name}` of `{rel}` is {_a(col.type)}, "
                f"but this value is {_a(_const_type(arg))}", arg.span))


def _a(t: str) -> str:
    return "an int" if t == "int" else "a string"


def _term_type(t: ast.Term, var_types: dict[str, tuple[str, str, Span]]) -> str | None:
    if isinstance(t, ast.Const):
        return _const_type(t)
    got = var_types.get(t.name)
    return got[0] if got else None


def dependency_graph(u: Unit) -> dict[str, list[tuple[str, bool, ast.Atom]]]:
    """head relation -> [(body relation, positive?, body atom)]"""
    g: dict[str, list[tuple[str, bool, ast.Atom]]] = {}
    for c in u.clauses():
        edges = g.setdefault(c.head.rel, [])
        for a, pos in body_atoms(c.body):
            edges.append((a.rel, pos, a))
    return g


def _path(succ: dict[str, list[str]], start: str, goal: str, within: set[str]) -> list[str]:
    """Shortest dependency path start -> ... -> goal inside one component (BFS)."""
    prev: dict[str, str | None] = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        if v == goal:
            break
        for w in succ.get(v, []):
            if w in within and w not in prev:
                prev[w] = v
                queue.append(w)
    path = [goal]
    cur = prev.get(goal)
    while cur is not None:
        path.append(cur)
        cur = prev[cur]
    return path[::-1]


def check_stratification(u: Unit) -> None:
    """negation-cycle: negation through recursion, naming the cycle"""
    g = dependency_graph(u)
    succ = {h: [b for b, _, _ in es] for h, es in g.items()}
    comp_of: dict[str, int] = {}
    for i, comp in enumerate(sccs(graph_nodes(succ), succ)):
        for r in comp:
            comp_of[r] = i
    for head, edges in g.items():
        for body_rel, pos, atom in edges:
            if pos or comp_of.get(body_rel) != comp_of.get(head):
                continue
            within = {r for r, c in comp_of.items() if c == comp_of[head]}
            back = _path(succ, body_rel, head, within)
            cycle = " -> ".join([head, f"not {body_rel}", *back[1:]])
            u.add(error("negation-cycle",
                        f"negation through recursion: {cycle}", atom.span,
                        "a relation cannot depend on its own negation; split the recursion "
                        "or move the negated part to a separate relation"))


def check_names(u: Unit) -> None:
    """duplicate-rule-name, duplicate-test, rule-in-test"""
    labels: dict[str, ast.Clause] = {}
    for c in u.clauses():
        if c.label is None:
            continue
        if c.label in labels:
            u.add(error("duplicate-rule-name", f"rule name `{c.label}` is used twice", c.span,
                        f"first used at {labels[c.label].span}"))
        else:
            labels[c.label] = c
    for m in u.modules:
        names: dict[str, ast.TestBlock] = {}
        for st in m.statements:
            if not isinstance(st, ast.TestBlock):
                continue
            if st.name in names:
                u.add(error("duplicate-test", f"test `{st.name}` is defined twice", st.span,
                            f"first defined at {names[st.name].span}"))
            names[st.name] = st
            for it in st.items:
                if isinstance(it, ast.Clause) and not it.is_fact:
                    u.add(error("rule-in-test", "test blocks hold facts and expectations, "
                                "not rules", it.span,
                                "move the rule out of the test block"))


def check_derived_facts(u: Unit) -> None:
    """derived-relation: a fact (of the rule files or of a test block) of a relation that rules
    derive, unless its declaration is ``@writable``. A fact there overrides every rule of the
    relation (a fact of the decision relation is an allow no deny takes back), and writes at
    run time are refused alike (engine/core/ir.py ``Program.write_refusal``)."""
    rules: dict[str, list[tuple[str, Span]]] = {}
    for c in u.clauses():
        if not c.is_fact:
            mine = rules.setdefault(c.head.rel, [])
            mine.append((c.label or f"{c.head.rel}#{len(mine) + 1}", c.span))
    for c in [*u.clauses(), *u.test_clauses()]:
        rel = c.head.rel
        if c.is_fact and rel in rules and "writable" not in getattr(
                u.decls.get(rel), "annotations", ()):
            u.add(derived_relation(rel, rules[rel], c.head.span, "a fact of"))
    for _, t in u.fact_tables():
        for rel, rows in t.rows.items():
            if rel in rules and "writable" not in getattr(u.decls.get(rel), "annotations", ()):
                for i in range(len(rows)):
                    u.add(derived_relation(rel, rules[rel], t.atom_span(rel, i), "a fact of"))


def fact_interval(c: ast.Clause) -> Interval | None:
    """A fact's validity interval (``from TIME until TIME``; None: it has none): ``bad-time``
    for a bound that is no time, ``empty-validity`` when it holds at no moment."""
    if c.valid_from is None and c.valid_until is None:
        return None
    bounds: list[float | None] = []
    for t in (c.valid_from, c.valid_until):
        try:
            bounds.append(None if t is None else instant(t.value, "time"))
        except GrantlogError:
            assert t is not None
            raise GrantlogError([error(
                "bad-time", f"`{t.value}` is not a time", t.span,
                "write an ISO 8601 time in quotes, e.g. `\"2026-03-03T12:00:00Z\"` or "
                "`\"2026-03-03\"` (UTC when no offset is given), or seconds since the "
                "epoch")]) from None
    return interval(bounds[0], bounds[1], c.span)


def check_validity(u: Unit) -> None:
    """validity-derived, bad-time, empty-validity: a fact's validity interval
    (engine/answer/validity.py) is given to a base relation, in times, holding at some
    moment; unsupported-feature: not in a test block (a test's facts hold throughout)."""
    derived = {c.head.rel for c in u.clauses() if not c.is_fact}
    for c in u.clauses():
        if c.valid_from is None and c.valid_until is None:
            continue
        if c.head.rel in derived:
            u.add(validity_derived(c.head.rel, c.span))
        try:
            fact_interval(c)
        except GrantlogError as exc:
            for d in exc.diagnostics:
                u.add(d)
    for c in u.test_clauses():
        if c.valid_from is not None or c.valid_until is not None:
            u.add(error("unsupported-feature", "a fact of a test block cannot carry a "
                        "validity interval", c.span, "a test's facts hold throughout: give "
                        "the facts valid at the moment the test is about, without `from` "
                        "and `until`"))


PASSES: list[tuple[str, Callable[[Unit], None]]] = [
    ("declarations", check_declarations),
    ("arity", check_arity),
    ("unknown-relations", check_unknown_relations),
    ("safety", check_safety),
    ("types", check_types),
    ("stratification", check_stratification),
    ("names", check_names),
    ("derived-facts", check_derived_facts),
    ("validity", check_validity),
]


def run_checks(u: Unit) -> None:
    for _name, fn in PASSES:
        fn(u)
