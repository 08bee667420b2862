"""Which relations are the resource hierarchy: an analysis on the IR, cached on the program.

The engine knows no relation by name. Listing (``type=``, ``within=``, the walk down from what
a filter admits), data filters, levels and ``prepare()`` read *roles* instead:

* ``edge``: ``edge(parent, child)``, a stored binary relation: one step down the hierarchy;
  or, ``upward``, ``parent(child, parent)``: one step up (``@hierarchy(parent)``);
* ``type``: ``type(object, type)``, a stored binary relation: an object exists and has a type;
  or ``kinds``: stored unary relations, one per type, named by it (``table(X)``, ``schema(X)``:
  an object of ``table`` has the type ``"table"``);
* ``strict``: ``strict(anc, obj)``, the transitive closure of the edge (None: the closure
  relation is written as one, see below);
* ``closure``: ``closure(anc, obj)``, ``strict`` and every typed object itself (the
  reflexive-transitive closure of the edge over the types).

A model declares them (rules/prelude.gl: ``@hierarchy(edge) rel contains(...)``, ...), or,
declaring none, has them recognised from its rules' shape: a derived binary relation defined
by reflexive rules seeding it from the types and a transitive part, either

    closure(X, X) :- type(X, _).               or   closure(X, X) :- table(X).
                                                    closure(X, X) :- schema(X). ...
    closure(A, X) :- strict(A, X).             with ``strict`` the transitive closure of
                                                    the edge (engine/core/analyses.py's
                                                    closure shapes, either orientation)

or the closure written in place of ``strict`` (``closure(A, X) :- parent(X, A).`` and
``closure(A, X) :- closure(A, P), parent(X, P).``, any linear or non-linear step). Either way
``walkable`` says that the rules have that shape, which is what lets the hierarchy's walks
(engine/answer/hierarchy.py) answer for them; ``why`` says what is missing when they do not.
A model with several such closures (resources nested in resources, groups in groups) has as
its hierarchy the one whose closure reaches the decision relation's resource column; the
others are ``others`` (their edges' indexes are built by ``prepare()``). A model whose closure
relation has other rules still has ``closure`` and ``type`` recognised from the reflexive rule
(listing ``within=``/``type=`` only look them up), without ``walkable``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error

from . import ir
from .analyses import analysis, closures
from .analyses import closure_shape as transitive_shape
from .terms import distinct_vars, is_anon

#: the roles, in the order a model usually declares them (``parent``: the edge, child first)
ROLES = ("edge", "type", "closure", "strict", "parent")


@dataclass(frozen=True)
class HierarchyRoles:
    """The relations playing each hierarchy role (None: no relation does)."""

    edge: str | None = None
    type: str | None = None
    closure: str | None = None
    strict: str | None = None
    #: the roles have the shape above: the hierarchy's walks answer for them
    walkable: bool = False
    #: "declared" (annotations), "recognised" (the rules' shape) or "" (no role at all)
    source: str = ""
    #: the edge's rows are (child, parent): ``@hierarchy(parent)``
    upward: bool = False
    #: the unary relations holding the objects of each type (the type is the relation's name)
    kinds: tuple[str, ...] = ()
    #: the model's other hierarchies (closures over other edges)
    others: tuple[HierarchyRoles, ...] = ()
    #: why the hierarchy's walks do not answer for the model ("" when they do)
    why: str = field(default="", compare=False)

    @property
    def stored(self) -> frozenset[str]:
        """The stored roles (the edge, the types): a change to them changes the
        hierarchy."""
        return frozenset(r for r in (self.edge, self.type, *self.kinds) if r is not None)

    @property
    def closures(self) -> frozenset[str]:
        """``closure`` and ``strict``: the relations an ancestor is asked of."""
        return frozenset(r for r in (self.closure, self.strict) if r is not None)

    @property
    def typed(self) -> bool:
        """Whether objects have types: a ``type`` relation or ``kinds``."""
        return self.type is not None or bool(self.kinds)

    @property
    def down(self) -> tuple[int, int]:
        """The edge's (parent, child) columns."""
        return (1, 0) if self.upward else (0, 1)

    def type_atom(self, x: ir.Value, t: ir.Value) -> tuple[str, ir.Row] | None:
        """The stored row saying that ``x`` has the type ``t``: ``(type, (x, t))``, or
        ``(t, (x,))`` when ``t`` is one of ``kinds``; None when no relation can say it."""
        if self.type is not None:
            return self.type, (x, t)
        return (str(t), (x,)) if t in self.kinds else None

    def need(self, role: str, what: str) -> str:
        """The relation playing ``role``; ``unknown-relation`` naming the role (for ``what``,
        e.g. "`list(type=)`") when none does. ``type`` is met by ``kinds`` too (the first is
        returned: :meth:`type_atom` says which holds a type)."""
        rel: str | None = getattr(self, role)
        if rel is None and role == "type" and self.kinds:
            rel = self.kinds[0]
        if rel is None:
            raise GrantlogError([error(
                "unknown-relation", f"{what} needs a relation declared `@hierarchy({role})`",
                Span("<api>", 0, 0, 0, 0),
                f"declare one, e.g. `@hierarchy({role}) rel {_EXAMPLE[role]}.`, or import "
                "prelude.gl (docs/evaluation.md)")])
        return rel

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = [o.to_dict() for o in v] if f.name == "others" else \
                list(v) if isinstance(v, tuple) else v
        return out


_EXAMPLE = {"edge": "contains(parent: string, child: string)",
            "type": "entity(object: string, type: string)",
            "closure": "ancestor_or_self(anc: string, obj: string)",
            "strict": "ancestor(anc: string, obj: string)",
            "parent": "parent(child: string, parent: string)"}


@dataclass(frozen=True)
class Shape:
    """A closure relation's parts (see the module doc)."""

    strict: str | None
    edge: str
    upward: bool
    type: str | None
    kinds: tuple[str, ...]


def hierarchy_roles(program: ir.Program) -> HierarchyRoles:
    """``program``'s hierarchy roles (found once per program)."""
    return analysis(program, "hierarchy_roles", _analyse)[0]


def hierarchy_problems(program: ir.Program) -> list[Diagnostic]:
    """``hierarchy-role``: a declared role whose rules do not have the hierarchy's shape (run
    by the compiler after lowering; the declarations' own checks are in engine/compile)."""
    return analysis(program, "hierarchy_roles", _analyse)[1]


def _analyse(program: ir.Program) -> tuple[HierarchyRoles, list[Diagnostic]]:
    declared: dict[str, list[str]] = {}
    for rel in program.relations.values():
        for note in rel.annotations:
            name, _, arg = note.partition("(")
            if name == "hierarchy" and arg[:-1] in ROLES:
                declared.setdefault(arg[:-1], []).append(rel.name)
    if declared:
        roles, diags = _declared(program, declared)
    else:
        roles, diags = _recognised(program), []
    mine = {r for r in (roles.closure, roles.strict) if r is not None}
    whole = [(c, s) for c, s in _shapes(program) if c not in mine and s.strict not in mine]
    inner = {c for c, _ in whole} | {s.strict for _, s in whole} | mine
    others = tuple(HierarchyRoles(s.edge, s.type, c, s.strict, walkable=True,
                                  source="recognised", upward=s.upward, kinds=s.kinds)
                   for c, s in whole) + tuple(  # transitive closures alone (groups in groups)
        HierarchyRoles(t.edge, strict=rel, source="recognised", upward=t.flipped,
                       why="a transitive closure without reflexive rules")
        for rel, t in sorted(closures(program).items())
        if rel not in inner and not t.seeds and _stored_binary(t.edge, program))
    if others:
        roles = HierarchyRoles(**{f.name: getattr(roles, f.name) for f in fields(roles)
                                  if f.name != "others"}, others=others)
    return roles, diags


def _declared(program: ir.Program, declared: dict[str, list[str]],
              ) -> tuple[HierarchyRoles, list[Diagnostic]]:
    diags: list[Diagnostic] = []

    def bad(role: str, message: str, help: str | None = None) -> None:
        rel = program.relations[declared[role][0]]
        diags.append(error("hierarchy-role", message, rel.span or Span("<input>", 0, 0, 0, 0),
                           help))

    derived = program.derived
    for role in ("edge", "parent", "type"):
        for rel in declared.get(role, ()):
            if rel in derived:
                bad(role, f"`@hierarchy({role})` relation `{rel}` is derived by rules; the "
                    "hierarchy's edges and types are stored facts")
    for role in ("closure", "strict"):
        for rel in declared.get(role, ()):
            if rel not in derived:
                bad(role, f"`@hierarchy({role})` relation `{rel}` has no rules; it is derived "
                    "from the hierarchy's edges")
    one = {role: rels[0] for role, rels in declared.items()}
    upward = "parent" in one and "edge" not in one
    edge_role = "parent" if upward else "edge"
    types = declared.get("type", [])
    unary = [t for t in types if _arity(program, t) == 1]
    kinds = tuple(sorted(unary))
    type_ = None if unary else one.get("type")
    found: Shape | None = None
    closure = one.get("closure")
    why = ""
    if closure is not None and closure in derived:
        shape = closure_shape(program, closure)
        t, st, e = (one.get(role, role) for role in ("type", "strict", edge_role))
        if isinstance(shape, str):
            why = shape
            bad("closure", f"`@hierarchy(closure)` relation `{closure}` is not the "
                "reflexive-transitive closure of the hierarchy's edges",
                f"derive it by `{closure}(X, X) :- {t}(X, _).` and `{closure}(A, X) :- "
                f"{st}(A, X).`, with `{st}` the transitive closure of `{e}` (rules/prelude.gl); "
                f"here {shape}")
        else:
            found = shape
            parts: tuple[tuple[str, str | None], ...] = (
                ("strict", shape.strict), (edge_role, shape.edge), ("type", shape.type))
            for role, part in parts:
                if role in one and part is not None and one[role] != part:
                    bad(role, f"`@hierarchy({role})` is `{one[role]}`, but the closure "
                        f"`{closure}` is derived from `{part}`")
            if "edge" in one and one["edge"] == shape.edge and shape.upward:
                bad("edge", f"`@hierarchy(edge)` relation `{shape.edge}` is read child to "
                    f"parent by the closure `{closure}`",
                    f"declare it `@hierarchy(parent) rel {shape.edge}(child, parent)`")
            if "parent" in one and one["parent"] == shape.edge and not shape.upward:
                bad("parent", f"`@hierarchy(parent)` relation `{shape.edge}` is read parent "
                    f"to child by the closure `{closure}`",
                    f"declare it `@hierarchy(edge) rel {shape.edge}(parent, child)`")
            if (types and (shape.type is None) != (type_ is None)) or (
                    kinds and set(kinds) != set(shape.kinds)):
                seeds = ", ".join(f"`{k}`" for k in (shape.kinds or (shape.type,)))
                bad("type", f"`@hierarchy(type)` is {', '.join(f'`{x}`' for x in types)}, "
                    f"but the closure `{closure}` is seeded from {seeds}")
    strict = one.get("strict")
    if strict is not None and closure is None and strict in derived:
        c = closures(program).get(strict)
        edge = c.edge if c is not None and not c.seeds and _stored_binary(c.edge, program) \
            else None
        given = one.get(edge_role)
        if c is None or edge is None or (given is not None and (
                given != edge or c.flipped != upward)):
            bad("strict", f"`@hierarchy(strict)` relation `{strict}` is not the transitive "
                "closure of the hierarchy's edge relation")
    if found is not None:
        edge_rel: str | None = found.edge
        upward, type_, kinds, strict = found.upward, found.type, found.kinds, found.strict
    else:
        edge_rel = one.get(edge_role)
        why = why or ("no relation is declared `@hierarchy(closure)`" if closure is None
                      else f"`{closure}` is not the hierarchy's closure")
    walkable = found is not None and not diags
    return HierarchyRoles(edge_rel, type_, closure, strict, walkable=walkable,
                          source="declared", upward=upward, kinds=kinds,
                          why="" if walkable else why or "the declarations have errors"), diags


def _recognised(program: ir.Program) -> HierarchyRoles:
    """The roles from the rules' shape alone: the one closure with the whole shape (of
    several, the one reaching the decision's resource column), else the one with a reflexive
    rule over a stored type relation (``closure`` and ``type`` only), else none."""
    whole = _shapes(program)
    if len(whole) > 1:
        reached = _reaching(program)
        near = [(c, s) for c, s in whole if (c, 1) in reached]
        if len(near) != 1:
            names = ", ".join(f"`{c}`" for c, _ in whole)
            return HierarchyRoles(why=f"several closures ({names}) and "
                                  + ("none" if not near else "more than one")
                                  + f" reaches the resource column of `{program.decision}`")
        whole = near
    if len(whole) == 1:
        (c, s), = whole
        return HierarchyRoles(s.edge, s.type, c, s.strict, walkable=True, source="recognised",
                              upward=s.upward, kinds=s.kinds)
    part = [(c, seed[0]) for c in sorted(program.derived) for r in program.rules_for(c)
            if (seed := _seed(r, program)) is not None and seed[1] == 2]
    why = _why_none(program)
    if len(part) == 1:
        (c, t), = part
        return HierarchyRoles(type=t, closure=c, source="recognised", why=why)
    return HierarchyRoles(why=why)


def _shapes(program: ir.Program) -> list[tuple[str, Shape]]:
    """Every derived relation with a closure's whole shape, by name (cached)."""
    def compute(p: ir.Program) -> list[tuple[str, Shape]]:
        return [(c, s) for c in sorted(p.derived)
                if isinstance(s := closure_shape(p, c), Shape)]
    return analysis(program, "hierarchy_shapes", compute)


def _why_none(program: ir.Program) -> str:
    """Why no relation has the closure's shape: the nearest miss's reason."""
    misses = []
    for c in sorted(program.derived):
        if any(_seed(r, program) is not None for r in program.rules_for(c)):
            got = closure_shape(program, c)
            if isinstance(got, str):
                misses.append(got)
    if misses:
        return misses[0]
    return ("no relation has a reflexive rule such as `closure(X, X) :- type(X, _).` over a "
            "transitive closure of a stored edge")


def _reaching(program: ir.Program) -> set[tuple[str, int]]:
    """The (relation, column) pairs whose values flow into the decision relation's resource
    column (its third) through the rules' shared variables."""
    out: set[tuple[str, int]] = set()
    todo = [(program.decision, 2)]
    while todo:
        rel, col = todo.pop()
        if (rel, col) in out:
            continue
        out.add((rel, col))
        for r in program.rules_for(rel):
            if col >= len(r.head.args):
                continue
            t = r.head.args[col]
            if not isinstance(t, ir.Var):
                continue
            for lit in r.body:
                if isinstance(lit, ir.Atom):
                    todo.extend((lit.rel, j) for j, a in enumerate(lit.args) if a == t)
    return out


def closure_shape(program: ir.Program, rel: str) -> Shape | str:
    """``rel``'s :class:`Shape` when its rules are a closure's (the module doc), else why
    they are not (a reason for ``grantlog plan``)."""
    rules = program.rules_for(rel)
    seeds = [(r, s) for r in rules if (s := _seed(r, program)) is not None]
    rest = [r for r in rules if _seed(r, program) is None]
    if not seeds:
        return f"`{rel}` has no reflexive rule `{rel}(X, X) :- type(X, _).` over a stored relation"
    if any(n == 2 for _, (_, n) in seeds) and len(seeds) > 1:
        return f"`{rel}` is seeded from a binary relation and from others"
    binary = seeds[0][1][1] == 2
    type_ = seeds[0][1][0] if binary else None
    kinds = () if binary else tuple(sorted({s for _, (s, _) in seeds}))
    if len(rest) == 1:
        other = rest[0]
        head = distinct_vars(other.head.args)
        lit = other.body[0] if len(other.body) == 1 else None
        if head is None or len(head) != 2 or not isinstance(lit, ir.Atom) or lit.rel == rel \
                or distinct_vars(lit.args) != head:
            return (f"`{rel}` has a rule other than its reflexive ones and "
                    f"`{rel}(A, X) :- strict(A, X).` (`{other.head}`)")
        c = closures(program).get(lit.rel)
        if c is None or c.seeds:
            return f"`{lit.rel}`, read by `{rel}`, is not a transitive closure of one relation"
        strict: str | None = lit.rel
    elif len(rest) == 2:
        c = transitive_shape(rest)
        if c is None:
            return (f"`{rel}`'s rules besides its reflexive ones are not a transitive "
                    "closure (an exit rule over one edge relation and one step rule)")
        strict = None
    else:
        return (f"`{rel}` has {len(rest)} rules besides its reflexive ones; a closure has "
                f"`{rel}(A, X) :- strict(A, X).` or an exit rule and a step rule")
    if not _stored_binary(c.edge, program):
        return f"the edge `{c.edge}` of `{c.rel}` is not a stored binary relation"
    if c.edge == type_ or c.edge in kinds:
        return f"`{c.edge}` is both the edge and a type of `{rel}`"
    return Shape(strict, c.edge, c.flipped, type_, kinds)


def transitive_edge(program: ir.Program, rel: str) -> str | None:
    """The edge when ``rel`` is the transitive closure of a stored binary relation
    (engine/core/analyses.py finds the closure shapes)."""
    c = closures(program).get(rel)
    return c.edge if c is not None and not c.seeds and _stored_binary(c.edge, program) else None


def _arity(program: ir.Program, rel: str) -> int:
    r = program.relations.get(rel)
    return r.arity if r is not None else -1


def _stored_binary(rel: str, program: ir.Program) -> bool:
    return _arity(program, rel) == 2 and rel not in program.derived


def _seed(rule: ir.Rule, program: ir.Program) -> tuple[str, int] | None:
    """(relation, arity) when ``rule`` is ``rel(X, X) :- type(X, _).`` with ``type`` stored,
    binary, or ``rel(X, X) :- kind(X).`` with ``kind`` stored, unary."""
    x, y = rule.head.args if len(rule.head.args) == 2 else (None, None)
    if not (isinstance(x, ir.Var) and x == y and not is_anon(x)) or len(rule.body) != 1:
        return None
    lit = rule.body[0]
    if not isinstance(lit, ir.Atom) or not lit.args or lit.args[0] != x or \
            lit.rel in program.derived:
        return None
    if len(lit.args) == 1:
        return (lit.rel, 1) if _arity(program, lit.rel) == 1 else None
    if len(lit.args) != 2 or not isinstance(lit.args[1], ir.Var) or lit.args[1] == x:
        return None
    return (lit.rel, 2) if _stored_binary(lit.rel, program) else None
