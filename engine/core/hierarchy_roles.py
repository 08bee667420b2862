"""Which relations are the resource hierarchy: an analysis on the IR, cached on the program.

The engine knows no relation by name. Listing (``type=``, ``within=``, the walk down from what
a filter admits), data filters, levels and ``prepare()`` read four *roles* instead:

* ``edge``: ``edge(parent, child)``, a stored binary relation: one step down the hierarchy;
* ``type``: ``type(object, type)``, a stored binary relation: an object exists and has a type;
* ``strict``: ``strict(anc, obj)``, the transitive closure of ``edge``;
* ``closure``: ``closure(anc, obj)``, ``strict`` and every typed object itself (the
  reflexive-transitive closure of ``edge`` over ``type``).

A model declares them (rules/prelude.gl: ``@hierarchy(edge) rel contains(...)``, ...), or,
declaring none, has them recognised from its rules' shape: a derived binary relation defined
exactly by

    closure(X, X) :- type(X, _).
    closure(A, X) :- strict(A, X).
    strict(P, C) :- edge(P, C).
    strict(A, C) :- strict(A, P), edge(P, C).      (or any step engine/core/analyses.py's
                                                     closure shapes accept)

with ``edge`` and ``type`` stored. Either way ``walkable`` says that the rules have that shape,
which is what lets the hierarchy's walks (engine/answer/hierarchy.py) answer for them. A model
whose closure relation has other rules still has ``closure`` and ``type`` recognised from the
reflexive rule (listing ``within=``/``type=`` only look them up), without ``walkable``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error

from . import ir
from .analyses import analysis, closures
from .terms import distinct_vars, is_anon

#: the roles, in the order a model usually declares them
ROLES = ("edge", "type", "closure", "strict")


@dataclass(frozen=True)
class HierarchyRoles:
    """The relations playing each hierarchy role (None: no relation does)."""

    edge: str | None = None
    type: str | None = None
    closure: str | None = None
    strict: str | None = None
    #: the four have the shape above: the hierarchy's walks answer for them
    walkable: bool = False
    #: "declared" (annotations), "recognised" (the rules' shape) or "" (no role at all)
    source: str = ""

    @property
    def stored(self) -> frozenset[str]:
        """The stored roles (``edge``, ``type``): a change to them changes the hierarchy."""
        return frozenset(r for r in (self.edge, self.type) if r is not None)

    @property
    def closures(self) -> frozenset[str]:
        """``closure`` and ``strict``: the relations an ancestor is asked of."""
        return frozenset(r for r in (self.closure, self.strict) if r is not None)

    def need(self, role: str, what: str) -> str:
        """The relation playing ``role``; ``unknown-relation`` naming the role (for ``what``,
        e.g. "`list(type=)`") when none does."""
        rel: str | None = getattr(self, role)
        if rel is None:
            raise GrantlogError([error(
                "unknown-relation", f"{what} needs a relation declared `@hierarchy({role})`",
                Span("<api>", 0, 0, 0, 0),
                f"declare one, e.g. `@hierarchy({role}) rel {_EXAMPLE[role]}.`, or import "
                "prelude.gl (docs/evaluation.md)")])
        return rel

    def to_dict(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


_EXAMPLE = {"edge": "contains(parent: string, child: string)",
            "type": "entity(object: string, type: string)",
            "closure": "ancestor_or_self(anc: string, obj: string)",
            "strict": "ancestor(anc: string, obj: string)"}


def hierarchy_roles(program: ir.Program) -> HierarchyRoles:
    """``program``'s hierarchy roles (found once per program)."""
    return analysis(program, "hierarchy_roles", _analyse)[0]


def hierarchy_problems(program: ir.Program) -> list[Diagnostic]:
    """``hierarchy-role``: a declared role whose rules do not have the hierarchy's shape (run
    by the compiler after lowering; the declarations' own checks are in engine/compile)."""
    return analysis(program, "hierarchy_roles", _analyse)[1]


def _analyse(program: ir.Program) -> tuple[HierarchyRoles, list[Diagnostic]]:
    declared: dict[str, str] = {}
    for rel in program.relations.values():
        for note in rel.annotations:
            name, _, arg = note.partition("(")
            if name == "hierarchy" and arg[:-1] in ROLES:
                declared.setdefault(arg[:-1], rel.name)
    return _declared(program, declared) if declared else (_recognised(program), [])


def _declared(program: ir.Program, declared: dict[str, str],
              ) -> tuple[HierarchyRoles, list[Diagnostic]]:
    diags: list[Diagnostic] = []

    def bad(role: str, message: str, help: str | None = None) -> None:
        rel = program.relations[declared[role]]
        diags.append(error("hierarchy-role", message, rel.span or Span("<input>", 0, 0, 0, 0),
                           help))

    derived = program.derived
    for role in ("edge", "type"):
        rel = declared.get(role)
        if rel is not None and rel in derived:
            bad(role, f"`@hierarchy({role})` relation `{rel}` is derived by rules; the "
                "hierarchy's edges and types are stored facts")
    for role in ("closure", "strict"):
        rel = declared.get(role)
        if rel is not None and rel not in derived:
            bad(role, f"`@hierarchy({role})` relation `{rel}` has no rules; it is derived "
                "from the hierarchy's edges")
    found: dict[str, str] = {}
    closure = declared.get("closure")
    if closure is not None and closure in derived:
        shape = closure_shape(program, closure)
        t, st, e = (declared.get(role, role) for role in ("type", "strict", "edge"))
        if shape is None:
            bad("closure", f"`@hierarchy(closure)` relation `{closure}` is not the "
                "reflexive-transitive closure of the hierarchy's edges",
                f"derive it by `{closure}(X, X) :- {t}(X, _).` and `{closure}(A, X) :- "
                f"{st}(A, X).`, with `{st}` the transitive closure of `{e}` (rules/prelude.gl)")
        else:
            found = dict(zip(("strict", "edge", "type"), shape, strict=True))
            for role, rel in found.items():
                if declared.get(role, rel) != rel:
                    bad(role, f"`@hierarchy({role})` is `{declared[role]}`, but the closure "
                        f"`{closure}` is derived from `{rel}`")
    strict = declared.get("strict")
    if strict is not None and closure is None and strict in derived:
        edge = transitive_edge(program, strict)
        if edge is None or declared.get("edge", edge) != edge:
            bad("strict", f"`@hierarchy(strict)` relation `{strict}` is not the transitive "
                "closure of the hierarchy's edge relation")
    roles = {role: declared.get(role, found.get(role)) for role in ROLES}
    walkable = bool(found) and not diags
    return HierarchyRoles(**roles, walkable=walkable, source="declared"), diags


def _recognised(program: ir.Program) -> HierarchyRoles:
    """The roles from the rules' shape alone: the one relation with the whole shape, else
    the one with a reflexive rule over a stored type relation (``closure`` and ``type``
    only), else none."""
    derived = sorted(program.derived)
    whole = [(c, shape) for c in derived if (shape := closure_shape(program, c)) is not None]
    if len(whole) == 1:
        (c, (strict, edge, type_)), = whole
        return HierarchyRoles(edge, type_, c, strict, walkable=True, source="recognised")
    if whole:
        return HierarchyRoles()
    part = [(c, t) for c in derived for r in program.rules_for(c)
            if (t := _reflexive_type(r, program)) is not None]
    if len(part) == 1:
        (c, t), = part
        return HierarchyRoles(type=t, closure=c, source="recognised")
    return HierarchyRoles()


def closure_shape(program: ir.Program, rel: str) -> tuple[str, str, str] | None:
    """(strict, edge, type) when ``rel``'s rules are exactly ``rel(X, X) :- type(X, _).`` and
    ``rel(A, X) :- strict(A, X).`` with ``strict`` the transitive closure of a stored binary
    ``edge`` (:func:`transitive_edge`) and ``type`` stored and binary; else None."""
    rules = program.rules_for(rel)
    if len(rules) != 2:
        return None
    types = [t for r in rules if (t := _reflexive_type(r, program)) is not None]
    if len(types) != 1:
        return None
    other = rules[1] if _reflexive_type(rules[0], program) is not None else rules[0]
    head = distinct_vars(other.head.args)
    if head is None or len(head) != 2 or len(other.body) != 1:
        return None
    lit = other.body[0]
    if not isinstance(lit, ir.Atom) or lit.rel == rel or distinct_vars(lit.args) != head:
        return None
    edge = transitive_edge(program, lit.rel)
    if edge is None or edge == types[0]:
        return None
    return lit.rel, edge, types[0]


def transitive_edge(program: ir.Program, rel: str) -> str | None:
    """The edge when ``rel`` is the transitive closure of a stored binary relation
    (engine/core/analyses.py finds the closure shapes)."""
    c = closures(program).get(rel)
    return c.edge if c is not None and _stored_binary(c.edge, program) else None


def _stored_binary(rel: str, program: ir.Program) -> bool:
    r = program.relations.get(rel)
    return r is not None and r.arity == 2 and rel not in program.derived


def _reflexive_type(rule: ir.Rule, program: ir.Program) -> str | None:
    """``type`` when ``rule`` is ``rel(X, X) :- type(X, _).`` with ``type`` stored, binary."""
    x, y = rule.head.args if len(rule.head.args) == 2 else (None, None)
    if not (isinstance(x, ir.Var) and x == y and not is_anon(x)) or len(rule.body) != 1:
        return None
    lit = rule.body[0]
    if not isinstance(lit, ir.Atom) or len(lit.args) != 2 or lit.args[0] != x or \
            not isinstance(lit.args[1], ir.Var) or lit.args[1] == x:
        return None
    return lit.rel if _stored_binary(lit.rel, program) else None
