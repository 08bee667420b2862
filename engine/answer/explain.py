"""Explanations: why a goal holds, and why it does not.

**Why** (the goal holds): every materialized row carries the round in which it was first
derived (base facts: 0). A proof of a row is a rule instance whose positive body rows all have
lower levels; among the instances we take the one whose highest body level is smallest, so the
tree is as shallow as the evaluation allows, and recursion always terminates (:class:`Prover`).
Relations answered on demand have no levels: a non-recursive one takes any instance; a
recursive (tabled) one takes an instance of least height, found by iterative deepening over
its component, so its proofs are well-founded too.

**Why not** (the goal does not hold, :class:`WhyNot`): every rule whose head unifies with the
goal is a way it could have been derived, and each way is shown with its body literals as
written, each marked as holding, failing or not reached, for one binding of the rule's
variables: the binding that *gets furthest*. The body is read in the author's order (with the
goal's values bound), checking every literal as soon as its variables are bound and binding
variables from the next positive literal with a known argument (:meth:`WhyNot._search` has
the details); among the bindings so found we take

1. the one with the fewest literals not shown to hold (failed, or not reached because a
   positive literal with variables to bind had no matching row): a binding that fails one
   check beats one that fails two, and one that fails at the last literal beats one stopped
   at the first;
2. then one that was not stopped early (every literal checked);
3. then the first found (rows in storage order, which is stable).

The first failing literal of the chosen binding (as written) is explained in depth, later
ones briefly (a derived one is only named: "does not hold either"): a positive literal on a
derived relation recursively (a why-not of the sub-goal with the values known so far; its
unbound variables are named: "does not hold for any G"); a positive literal on a base relation
is a leaf, the missing base fact; a negated literal that is true names the fact that blocked it
(the DENY that won, the override that fired) with that fact's why-proof; a comparison that is
false is a leaf. Trees are bounded (:class:`Limits`): nesting depth, rules shown per goal (the
ones that got furthest; a "… N more rules" node counts the rest), total nodes, and bindings
tried per rule body. A sub-goal explained once is shown again as "explained above"; a sub-goal
that needs itself (recursion) as "recursive".

Both kinds of tree are made of :class:`Proof` nodes, rendered as text (:meth:`Proof.render`),
JSON (:meth:`Proof.to_dict`), Graphviz DOT and Mermaid (:func:`to_dot`, :func:`to_mermaid`).
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from grantlog.grammar.diagnostics import Span

from ..core import ir
from ..core.terms import compare, is_anon, unify
from ..eval.demand import DemandContext
from ..plan.codegen import solve
from ..plan.join import RulePlan, plan_bound

MAX_DEPTH = 200

#: node kinds of why-proofs
WHY_KINDS = ("rule", "fact", "absent", "comparison", "goal", "truncated")
#: node kinds of why-not trees
WHY_NOT_KINDS = ("fails", "alternative", "holds", "missing", "blocked", "false", "unchecked",
                 "no-rule", "more", "seen", "cycle", "limit", "unexpanded")


@dataclass
class Proof:
    """One node of a why-proof or a why-not tree.

    Why-proofs: ``rule`` (a rule instance), ``fact`` (a base fact), ``absent`` (a negated
    literal that holds), ``comparison`` (one that holds), ``goal`` (a conjunctive goal),
    ``truncated``.

    Why-not trees: ``fails`` (a goal or sub-goal that does not hold; ``free`` names its unbound
    variables; children are its ``alternative`` rules), ``alternative`` (a rule that could
    derive it; children are its body literals in plan order), ``holds`` (a literal satisfied
    by the chosen binding), ``missing`` (a base fact that does not exist), ``blocked`` (a
    negated literal whose atom holds; the child is that atom's why-proof), ``false`` (a
    comparison that fails), ``unchecked`` (a literal not reached), ``no-rule`` (a derived
    relation none of whose rule heads match), ``more`` (``count`` alternatives not shown),
    ``seen`` (explained above), ``cycle`` (recursive sub-goal), ``limit`` (not expanded: size
    limit), ``unexpanded`` (a derived literal that fails after an earlier failing one).

    ``rel`` and ``row`` give the fact of the node when it is one ground atom.
    """

    text: str
    kind: str
    rule: ir.Rule | None = None
    bindings: dict[str, ir.Value] = field(default_factory=dict)
    origin: str | None = None
    children: list[Proof] = field(default_factory=list)
    rel: str | None = None
    row: ir.Row | None = None
    free: tuple[str, ...] = ()
    count: int = 0

    def reason(self) -> str:
        """Why the node's text holds or fails, in words (the part after ``<-``)."""
        k = self.kind
        if k == "rule" and self.rule is not None:
            return f"rule {self.rule.summary}"
        if k == "fact":
            return f"fact ({self.origin})"
        if k == "absent":
            return "no such fact"
        if k in ("comparison", "holds"):
            return "holds"
        if k == "goal":
            return "goal"
        if k == "fails":
            if self.free:
                return f"does not hold for any {', '.join(self.free)}"
            return "does not hold" if self.row is not None or self.rel is None else (
                "does not hold for any value")
        if k == "alternative" and self.rule is not None:
            return f"rule {self.rule.summary}"
        if k == "missing":
            if self.free:
                return f"no base fact for any {', '.join(self.free)}"
            return "missing base fact" if self.row is not None else "no base fact matches"
        if k == "blocked":
            return "blocked: the negated fact holds"
        if k == "false":
            return "fails"
        if k == "unchecked":
            return "not reached"
        if k == "no-rule":
            return "does not hold: no rule head matches"
        if k == "seen":
            return "does not hold (explained above)"
        if k == "cycle":
            return "does not hold (recursive: needs itself, explained above)"
        if k == "limit":
            return "does not hold (not expanded: depth or size limit)"
        if k == "unexpanded":
            some = f" for any {', '.join(self.free)}" if self.free else ""
            return f"does not hold{some} either (not expanded)"
        return "..."

    def label(self) -> str:
        if self.kind == "more":
            return self.text
        if self.kind == "alternative":
            return f"via {self.reason()}"
        return f"{self.text}  <- {self.reason()}"

    def render(self) -> str:
        lines = [self.label()]
        self._render_children(lines, "")
        return "\n".join(lines)

    def _render_children(self, lines: list[str], prefix: str) -> None:
        for i, c in enumerate(self.children):
            last = i == len(self.children) - 1
            lines.append(f"{prefix}{'└── ' if last else '├── '}{c.label()}")
            c._render_children(lines, prefix + ("    " if last else "│   "))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"fact": self.text, "kind": self.kind}
        if self.rel is not None and self.row is not None and self.kind in WHY_NOT_KINDS:
            d["relation"] = self.rel
            d["args"] = list(self.row)
        if self.free:
            d["free"] = list(self.free)
        if self.rule is not None:
            d["rule"] = self.rule.name
            d["doc"] = self.rule.doc_line
            d["at"] = str(self.rule.span)
            d["bindings"] = dict(sorted(self.bindings.items()))
        if self.origin is not None:
            d["origin"] = self.origin
        if self.kind == "more":
            d["count"] = self.count
        if self.children:
            d["children"] = [c.to_dict() for c in self.children]
        return d

    def rule_names(self) -> list[str]:
        """Every rule in the tree, breadth first, once each."""
        out: list[str] = []
        stack = [self]
        while stack:
            n = stack.pop(0)
            if n.rule is not None and n.rule.name not in out:
                out.append(n.rule.name)
            stack.extend(n.children)
        return out

    def reasons(self) -> list[str]:
        """The deciding rule, then the derived premises' rules one level below, once each."""
        if self.kind != "rule" or self.rule is None:
            return []
        out = [self.rule.name]
        for c in self.children:
            if c.kind == "rule" and c.rule is not None and c.rule.name not in out:
                out.append(c.rule.name)
        return out

    def walk(self) -> Iterator[Proof]:
        """Every node once (shared sub-proofs once), depth first."""
        seen: set[int] = set()
        stack = [self]
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            yield n
            stack.extend(reversed(n.children))


@dataclass
class Explanation:
    """The answer to ``explain``: the why-proof of the first answer when the goal holds, the
    why-not tree when it has no answer."""

    goal: str
    holds: bool
    bindings: dict[str, ir.Value]
    proof: Proof | None
    why_not: Proof | None = None

    @property
    def tree(self) -> Proof | None:
        return self.proof if self.holds else self.why_not

    def render(self) -> str:
        tree = self.tree
        if tree is None:
            return f"{self.goal}: does not hold"
        return tree.render()

    def to_dict(self) -> dict[str, Any]:
        return {
            "goal": self.goal,
            "holds": self.holds,
            "bindings": self.bindings,
            "proof": self.proof.to_dict() if self.proof else None,
            "why_not": self.why_not.to_dict() if self.why_not else None,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def to_dot(self) -> str:
        """Graphviz DOT (``dot -Tsvg``): shared sub-proofs are drawn once."""
        return to_dot(self.tree or Proof(self.goal, "fails"))

    def to_mermaid(self) -> str:
        """A Mermaid flowchart: shared sub-proofs are drawn once."""
        return to_mermaid(self.tree or Proof(self.goal, "fails"))


Origin = Callable[[str, ir.Row], Span | str | None]


class Prover:
    """Rebuilds proofs. ``levels`` are the materialized relations (row -> level); ``ctx``
    answers every relation, virtual ones on demand (engine/demand.py)."""

    def __init__(self, program: ir.Program, levels: Mapping[str, Mapping[ir.Row, int]],
                 ctx: DemandContext, base_origin: Origin) -> None:
        self.program = program
        self.levels = levels
        self.ctx = ctx
        self.virtual = program.virtual
        self.origin = base_origin
        self.memo: dict[tuple[str, ir.Row], Proof] = {}
        self.plans: dict[tuple[int, tuple[str, ...]], RulePlan] = {}
        #: recursive relations answered on demand (tabled): no levels, so proofs of their rows
        #: are found by iterative deepening over the relations of their component
        self.component: dict[str, frozenset[str]] = {
            rel: frozenset(st.relations) for st in program.strata if st.recursive
            for rel in st.relations if rel in program.virtual}
        self.witness: dict[tuple[str, ir.Row], tuple[int, ir.Rule, dict[str, ir.Value]]] = {}
        self.fails_within: dict[tuple[str, ir.Row], int] = {}

    def _plan(self, rule: ir.Rule, bound: set[str]) -> RulePlan:
        k = (rule.index, tuple(sorted(bound)))
        p = self.plans.get(k)
        if p is None:
            p = self.plans[k] = plan_bound(rule, bound)
        return p

    def prove(self, rel: str, row: ir.Row, depth: int = 0) -> Proof:
        key = (rel, row)
        if key in self.memo:
            return self.memo[key]
        text = ir.show_atom(rel, row)
        origin = self.origin(rel, row)
        if origin is not None:
            node = Proof(text, "fact", origin=str(origin), rel=rel, row=row)
        elif depth > MAX_DEPTH:
            node = Proof(text, "truncated", rel=rel, row=row)
        else:
            node = self._by_rule(rel, row, text, depth)
        self.memo[key] = node
        return node

    def _by_rule(self, rel: str, row: ir.Row, text: str, depth: int) -> Proof:
        if rel in self.component:
            if row not in self.ctx.F[rel]:
                return Proof(text, "absent", rel=rel, row=row)
            for height in range(1, MAX_DEPTH):
                found = self._within(rel, row, height)
                if found is not None:
                    return self.instance(found[0], found[1], text, depth)
            return Proof(text, "truncated", rel=rel, row=row)
        if rel in self.virtual:
            if row not in self.ctx.F[rel]:
                return Proof(text, "absent", rel=rel, row=row)
            level = 1 << 62  # non-recursive: any instance is well-founded
        else:
            got = self.levels.get(rel, {}).get(row)
            if got is None:
                return Proof(text, "absent", rel=rel, row=row)
            level = got
        # the lowest instance; among equally low ones the first rule's, then the smallest
        # binding (the order rows are stored in is not part of the answer)
        best: tuple[tuple[int, tuple[Any, ...]], ir.Rule, dict[str, ir.Value]] | None = None
        for rule in self.program.rules_for(rel):
            binding = unify(rule.head, row)
            if binding is None:
                continue
            plan = self._plan(rule, set(binding))
            for env in solve(plan, self.ctx.F, None, self.ctx.index, binding):
                top = max((self._level(a, env) for a in rule.body if isinstance(a, ir.Atom)),
                          default=-1)
                if top < level:
                    rank = (top, ir.row_key(env[k] for k in sorted(env)))
                    if best is None or rank < best[0]:
                        best = (rank, rule, env)
            if best is not None and best[0][0] <= 0:
                break
        if best is None:  # cannot happen for a row the evaluator derived
            return Proof(text, "truncated", rel=rel, row=row)
        _, rule, env = best
        return self.instance(rule, env, text, depth)

    def _within(self, rel: str, row: ir.Row,
                height: int) -> tuple[ir.Rule, dict[str, ir.Value]] | None:
        """A rule instance deriving ``rel(row)`` (a row of a tabled recursive relation) whose
        body rows of the same component have proofs at most ``height - 1`` high."""
        key = (rel, row)
        got = self.witness.get(key)
        if got is not None and got[0] <= height:
            return got[1], got[2]
        if height <= 0 or self.fails_within.get(key, 0) >= height:
            return None
        same = self.component[rel]
        for rule in self.program.rules_for(rel):
            binding = unify(rule.head, row)
            if binding is None:
                continue
            plan = self._plan(rule, set(binding))
            for env in solve(plan, self.ctx.F, None, self.ctx.index, binding):
                if all(self.origin(a.rel, r) is not None
                       or self._within(a.rel, r, height - 1) is not None
                       for a in rule.body if isinstance(a, ir.Atom) and a.rel in same
                       for r in (_ground(a, env),)):
                    self.witness[key] = (height, rule, env)
                    return rule, env
        self.fails_within[key] = height
        return None

    def instance(self, rule: ir.Rule, env: Mapping[str, ir.Value], text: str,
                 depth: int) -> Proof:
        node = Proof(text, "rule", rule,
                     {k: v for k, v in env.items() if not k.startswith("_?")},
                     rel=rule.head.rel if rule.index >= 0 else None,
                     row=_ground(rule.head, env) if rule.index >= 0 else None)
        for lit in rule.body:
            if isinstance(lit, ir.Atom):
                r = _ground(lit, env)
                node.children.append(self.prove(lit.rel, r, depth + 1))
            elif isinstance(lit, ir.Neg):
                node.children.append(Proof(_show_partial(lit.atom, env), "absent"))
            else:
                node.children.append(Proof(
                    f"{_show_term(lit.left, env)} {lit.op} {_show_term(lit.right, env)}",
                    "comparison"))
        return node

    def _level(self, a: ir.Atom, env: Mapping[str, ir.Value]) -> int:
        if a.rel in self.virtual:
            return 0
        return self.levels[a.rel][_ground(a, env)]


# ---------------------------------------------------------------------------------------------
# why not


@dataclass(frozen=True)
class Limits:
    """Bounds on a why-not tree, so huge models stay readable."""

    #: nested sub-goals below the goal
    depth: int = 12
    #: rules shown per (sub-)goal; the rest are counted in a "… N more rules" node
    alternatives: int = 6
    #: why-not nodes in the whole tree (why-proofs of blocking facts not counted)
    nodes: int = 400
    #: search steps per rule body (bindings extended); the best binding so far is used
    search: int = 20000
    #: prove the facts that block negated literals (a summary can do without: cheaper)
    proofs: bool = True


@dataclass(frozen=True)
class _Outcome:
    """Where one binding of a rule body ended: its variables, the body literals that failed,
    the positive literal with no matching row that stopped it (if one did), and the literals
    it never reached (their variables were never bound)."""

    env: dict[str, ir.Value]
    failed: tuple[int, ...]
    stuck: int | None
    unreached: frozenset[int]

    @property
    def missing(self) -> int:
        """Literals not shown to hold: failed, stuck or never reached."""
        return len(self.failed) + len(self.unreached)

    @property
    def key(self) -> tuple[int, bool]:
        """Larger is better: fewest literals not shown to hold, then not stopped early."""
        return (-self.missing, self.stuck is None)


class _BodyHolds(Exception):
    """A rule body has a satisfying binding although its head was found false."""


class WhyNot:
    """Builds why-not trees over one read's view (``ctx``); ``prover`` gives the why-proofs of
    the facts that block negated literals."""

    def __init__(self, program: ir.Program, ctx: DemandContext, prover: Prover,
                 limits: Limits | None = None) -> None:
        self.derived = program.derived
        self.virtual = program.virtual
        self.rules: dict[str, list[ir.Rule]] = {}
        for r in program.rules:
            self.rules.setdefault(r.head.rel, []).append(r)
        self.ctx = ctx
        self.prover = prover
        self.limits = limits or Limits()
        self.nodes = 0
        self.done: set[tuple[Any, ...]] = set()

    def _node(self, text: str, kind: str, **kw: Any) -> Proof:
        self.nodes += 1
        return Proof(text, kind, **kw)

    def goal(self, rule: ir.Rule) -> Proof:
        """The why-not tree of a goal compiled as the body of ``rule`` (a ``<goal>`` rule)."""
        body = rule.body
        if len(body) == 1 and isinstance(body[0], ir.Atom):
            return self.atom(body[0].rel, body[0].args, 0, frozenset())
        out = self._search(rule, {})
        text = ", ".join(_show_lit(lit, {}) for lit in body)
        free = tuple(dict.fromkeys(
            t.name for lit in body for t in _lit_terms(lit)
            if isinstance(t, ir.Var) and not is_anon(t)))
        node = self._node(text, "fails", free=free)
        node.children = self._literals(rule, out, 0, frozenset())
        return node

    def atom(self, rel: str, terms: tuple[ir.Term, ...], depth: int,
             path: frozenset[tuple[Any, ...]]) -> Proof:
        """Why ``rel(terms)`` does not hold (variables in ``terms``: for any value)."""
        text = _show_open_atom(rel, terms)
        free = _free(terms)
        row = None if free or any(is_anon(t) for t in terms) else tuple(
            t.value for t in terms if isinstance(t, ir.Const))
        facts: dict[str, Any] = {"free": free, "rel": rel, "row": row}
        if rel not in self.derived:
            return self._node(text, "missing", **facts)
        key = _canon(rel, terms)
        if key in path:
            return self._node(text, "cycle", **facts)
        if key in self.done:
            return self._node(text, "seen", **facts)
        if depth > self.limits.depth or self.nodes >= self.limits.nodes:
            return self._node(text, "limit", **facts)
        alts: list[tuple[int, ir.Rule, _Outcome]] = []
        for i, rule in enumerate(self.rules.get(rel, ())):
            u = _unify_pattern(rule.head, terms)
            if u is None:
                continue
            env0, extra = u
            full = replace(rule, body=rule.body + extra) if extra else rule
            alts.append((i, full, self._search(full, env0)))
        if not alts:
            return self._node(text, "no-rule", **facts)
        shown = alts
        hidden = 0
        if len(alts) > self.limits.alternatives:
            ranked = sorted(alts, key=lambda a: a[2].key, reverse=True)  # stable: source order
            shown = sorted(ranked[: self.limits.alternatives], key=lambda a: a[0])
            hidden = len(alts) - len(shown)
        node = self._node(text, "fails", **facts)
        inner = path | {key}
        for _, rule, out in shown:
            env = {k: v for k, v in out.env.items() if not k.startswith("_?")}
            head = _show_open_atom(rule.head.rel, _open(rule.head.args, out.env))
            alt = self._node(head, "alternative", rule=rule, bindings=env)
            alt.children = self._literals(rule, out, depth, inner)
            node.children.append(alt)
        if hidden:
            node.children.append(self._node(
                f"… {hidden} more rule{'s' if hidden != 1 else ''} (each satisfies fewer body "
                "literals)", "more", count=hidden))
        self.done.add(key)
        return node

    def _literals(self, rule: ir.Rule, out: _Outcome, depth: int,
                  path: frozenset[tuple[Any, ...]]) -> list[Proof]:
        """The body literals of ``rule`` as written, each with its state under ``out``."""
        env = out.env
        failed = set(out.failed)
        first = min(failed)
        children: list[Proof] = []
        for j, lit in enumerate(rule.body):
            if j in out.unreached:
                children.append(self._node(_show_lit(lit, env), "unchecked"))
            elif j not in failed:
                ground = _ground_atom(lit, env)
                children.append(self._node(
                    _show_lit(lit, env), "holds",
                    rel=ground[0] if ground else None, row=ground[1] if ground else None))
            elif isinstance(lit, ir.Atom) and j != first and lit.rel in self.derived:
                terms = _open(lit.args, env)
                ground = _ground_atom(lit, env)
                children.append(self._node(
                    _show_open_atom(lit.rel, terms), "unexpanded", free=_free(terms),
                    rel=lit.rel, row=ground[1] if ground else None))
            elif isinstance(lit, ir.Atom):
                children.append(self.atom(lit.rel, _open(lit.args, env), depth + 1, path))
            elif isinstance(lit, ir.Neg):
                children.append(self._blocked(lit.atom, env))
            else:
                children.append(self._node(_show_lit(lit, env), "false"))
        return children

    def _blocked(self, atom: ir.Atom, env: Mapping[str, ir.Value]) -> Proof:
        terms = _open(atom.args, env)
        cols = tuple(c for c, t in enumerate(terms) if isinstance(t, ir.Const))
        key = tuple(t.value for t in terms if isinstance(t, ir.Const))
        if len(cols) == len(terms):
            row: ir.Row = key
        else:
            row = min(self.ctx.lookup(atom.rel, cols, key), key=ir.row_key)
        node = self._node(f"not {_show_open_atom(atom.rel, terms)}", "blocked")
        if self.limits.proofs:
            node.children.append(self.prover.prove(atom.rel, row))
        return node

    def _rows(self, atom: ir.Atom, env: Mapping[str, ir.Value]) -> Collection[ir.Row]:
        """The rows of ``atom`` matching the values bound in ``env`` (anonymous variables and
        unbound ones match anything; a variable repeated in the atom is not checked here)."""
        cols: list[int] = []
        key: list[ir.Value] = []
        for c, t in enumerate(atom.args):
            if isinstance(t, ir.Const):
                cols.append(c)
                key.append(t.value)
            elif t.name in env and not is_anon(t):
                cols.append(c)
                key.append(env[t.name])
        if len(cols) == len(atom.args):
            row = tuple(key)
            return (row,) if row in self.ctx.F[atom.rel] else ()
        got = self.ctx.lookup(atom.rel, tuple(cols), tuple(key))
        return got.keys() if isinstance(got, Mapping) else got

    def _search(self, rule: ir.Rule, env0: Mapping[str, ir.Value]) -> _Outcome:
        """The binding of the body that gets furthest (see the module docstring).

        The body is read in the author's order, in two ways, and the better outcome is kept
        (the first on a tie). At each point every literal whose variables are all bound is
        checked (a failed check is recorded and the search goes on). Then a positive literal
        binds more variables, one matching row at a time:

        * first way: the first literal linked to the values known so far by a bound
          variable, else the first with a constant argument, else the first: an object's
          schema is sought among the object's ancestors, not among all schemas;
        * second way: the first literal with a known argument (constant or variable), else
          the first: `schema_option(S, p_admin, P)` finds the admin permission of a schema
          before `user_permission(dave, P)` lists what dave holds.

        A literal with one matching row binds its variables (`member(alice, G)`: G = eng, so
        the failure reads `grant(eng, delete, t1)`). One with no matching row stops the
        binding there ("no `member(dave, G)` at all"). Before choosing among several rows,
        a stored literal with a known argument and no matching row stops the binding
        instead: no choice could make it hold, and an arbitrary choice would suggest facts
        nobody meant (`deprecated(use_catalog, modify_table)` because the role happens to
        hold use_catalog). Relations answered on demand are not probed ahead, as a partial
        lookup may evaluate a lot of rules. Full scans wait while anything narrower is left.
        """
        best = self._search_in(rule, env0, linked=True)
        if best.missing > 1 or best.stuck is not None:
            other = self._search_in(rule, env0, linked=False)
            if other.key > best.key:
                best = other
        return best

    def _search_in(self, rule: ir.Rule, env0: Mapping[str, ir.Value],
                   linked: bool) -> _Outcome:
        body = rule.body
        n = len(body)
        best: list[_Outcome] = []
        budget = self.limits.search
        done = False

        def bound(t: ir.Term, env: Mapping[str, ir.Value]) -> bool:
            return isinstance(t, ir.Const) or (t.name in env and not is_anon(t))

        def val(t: ir.Term, env: Mapping[str, ir.Value]) -> ir.Value:
            return t.value if isinstance(t, ir.Const) else env[t.name]

        def record(env: dict[str, ir.Value], failed: list[int], stuck: int | None,
                   rest: set[int]) -> None:
            nonlocal done
            o = _Outcome(env, tuple(failed), stuck, frozenset(rest))
            if not best or o.key > best[0].key:
                best[:] = [o]
                done = done or (o.missing == 1 and stuck is None)  # nothing can beat it

        def go(env: dict[str, ir.Value], rest: set[int], failed: list[int]) -> None:
            nonlocal budget, done
            budget -= 1
            if budget < 0:
                done = True
            if done and best:
                return
            env = dict(env)
            rest = set(rest)
            failed = list(failed)
            progress = True
            while progress:  # every literal that can be checked now
                progress = False
                for j in sorted(rest):
                    lit = body[j]
                    if isinstance(lit, ir.Cmp):
                        lb, rb = bound(lit.left, env), bound(lit.right, env)
                        if lb and rb:
                            if not compare(lit.op, val(lit.left, env), val(lit.right, env)):
                                failed.append(j)
                        elif lit.op == "=" and lb and isinstance(lit.right, ir.Var):
                            env[lit.right.name] = val(lit.left, env)
                        elif lit.op == "=" and rb and isinstance(lit.left, ir.Var):
                            env[lit.left.name] = val(lit.right, env)
                        else:
                            continue
                    elif isinstance(lit, ir.Neg):
                        if not all(bound(t, env) or is_anon(t) for t in lit.atom.args):
                            continue
                        if self._rows(lit.atom, env):
                            failed.append(j)
                    elif isinstance(lit, ir.Atom) and all(
                            bound(t, env) or is_anon(t) for t in lit.args):
                        if not self._rows(lit, env):
                            failed.append(j)
                    else:
                        continue
                    rest.discard(j)
                    progress = True
            if best:  # prune: this binding cannot beat the best one any more
                b = best[0]
                if len(failed) > b.missing or (len(failed) == b.missing and b.stuck is None):
                    return
            if not rest:
                if not failed:
                    raise _BodyHolds(str(rule))
                record(env, failed, None, rest)
                return
            # the next positive literal to bind variables (see the docstring); one without a
            # matching row stops the binding
            choice: tuple[tuple[int, int], int] | None = None
            for j in sorted(rest):
                lit = body[j]
                if isinstance(lit, ir.Atom):
                    known = any(bound(t, env) for t in lit.args)
                    tied = linked and any(isinstance(t, ir.Var) and bound(t, env)
                                          for t in lit.args)
                    rank = (0 if tied else 1 if known else 2, j)
                    if choice is None or rank < choice[0]:
                        choice = (rank, j)
            assert choice is not None, f"why-not: unplaceable literals in `{rule}`"
            j = choice[1]
            lit = body[j]
            assert isinstance(lit, ir.Atom)
            rows = self._rows(lit, env)
            if len(rows) > 1:  # a choice to make: first, is there a literal no choice can fix?
                for k in sorted(rest):
                    other = body[k]
                    if (k != j and isinstance(other, ir.Atom) and other.rel not in self.virtual
                            and any(bound(t, env) for t in other.args)
                            and not self._rows(other, env)):
                        j, lit, rows = k, other, ()
                        break
            rest.discard(j)
            matched = False
            for row in sorted(rows, key=ir.row_key) if len(rows) > 1 else rows:
                env2 = dict(env)
                ok = True
                for c, t in enumerate(lit.args):
                    if (isinstance(t, ir.Var) and not is_anon(t)
                            and env2.setdefault(t.name, row[c]) != row[c]):
                        ok = False
                        break
                if not ok:
                    continue
                matched = True
                go(env2, rest, failed)
                if done:
                    return
            if not matched:
                record(env, [*failed, j], j, rest)

        try:
            go(dict(env0), set(range(n)), [])
        except _BodyHolds as e:  # the evaluator and this search disagree: a bug, say so loudly
            raise AssertionError(
                f"why-not: the body of `{e}` holds, yet its head does not") from None
        assert best, "why-not: the search found no binding"
        return best[0]


def _unify_pattern(
    head: ir.Atom, pattern: tuple[ir.Term, ...]
) -> tuple[dict[str, ir.Value], tuple[ir.Lit, ...]] | None:
    """Unify a rule head with a goal pattern (constants and goal variables): the head
    variables bound to constants, and equalities between head variables the pattern forces."""
    parent: dict[tuple[str, Any], tuple[str, Any]] = {}

    def find(x: tuple[str, Any]) -> tuple[str, Any]:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for h, p in zip(head.args, pattern, strict=True):
        a = find(("c", h.value) if isinstance(h, ir.Const) else ("r", h.name))
        b = find(("c", p.value) if isinstance(p, ir.Const) else ("g", p.name))
        if a == b:
            continue
        if a[0] == "c" and b[0] == "c" and (type(a[1]) is not type(b[1]) or a[1] != b[1]):
            return None
        if b[0] == "c":
            a, b = b, a
        parent[b] = a  # constants stay roots
    env: dict[str, ir.Value] = {}
    firsts: dict[tuple[str, Any], str] = {}
    extra: list[ir.Lit] = []
    for t in head.args:
        if isinstance(t, ir.Const) or t.name in env:
            continue
        root = find(("r", t.name))
        if root[0] == "c":
            env[t.name] = root[1]
        elif root in firsts and firsts[root] != t.name:
            eq = ir.Cmp("=", ir.Var(firsts[root]), t)
            if eq not in extra:
                extra.append(eq)
        else:
            firsts[root] = t.name
    return env, tuple(extra)


def _canon(rel: str, terms: tuple[ir.Term, ...]) -> tuple[Any, ...]:
    """A goal pattern up to renaming of its variables."""
    names: dict[str, int] = {}
    out: list[Any] = [rel]
    for t in terms:
        if isinstance(t, ir.Const):
            out.append(("c", type(t.value).__name__, t.value))
        else:
            out.append(("v", names.setdefault(t.name, len(names))))
    return tuple(out)


def _open(args: tuple[ir.Term, ...], env: Mapping[str, ir.Value]) -> tuple[ir.Term, ...]:
    """Arguments with the bound variables replaced by their values."""
    return tuple(ir.Const(env[t.name]) if isinstance(t, ir.Var) and t.name in env else t
                 for t in args)


def _free(terms: tuple[ir.Term, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t.name for t in terms if isinstance(t, ir.Var) and not is_anon(t)))


def _show_open(t: ir.Term, env: Mapping[str, ir.Value]) -> str:
    if isinstance(t, ir.Const):
        return ir.show_value(t.value)
    if t.name in env:
        return ir.show_value(env[t.name])
    return "_" if is_anon(t) else t.name


def _show_open_atom(rel: str, terms: tuple[ir.Term, ...]) -> str:
    if not terms:
        return rel
    return f"{rel}({', '.join(_show_open(t, {}) for t in terms)})"


def _show_lit(lit: ir.Lit, env: Mapping[str, ir.Value]) -> str:
    if isinstance(lit, ir.Atom):
        return _show_open_atom(lit.rel, _open(lit.args, env))
    if isinstance(lit, ir.Neg):
        return f"not {_show_open_atom(lit.atom.rel, _open(lit.atom.args, env))}"
    return f"{_show_open(lit.left, env)} {lit.op} {_show_open(lit.right, env)}"


def _lit_terms(lit: ir.Lit) -> tuple[ir.Term, ...]:
    if isinstance(lit, ir.Atom):
        return lit.args
    if isinstance(lit, ir.Neg):
        return lit.atom.args
    return (lit.left, lit.right)


def _ground_atom(lit: ir.Lit, env: Mapping[str, ir.Value]) -> tuple[str, ir.Row] | None:
    if not isinstance(lit, ir.Atom):
        return None
    terms = _open(lit.args, env)
    if not all(isinstance(t, ir.Const) for t in terms):
        return None
    return lit.rel, tuple(t.value for t in terms if isinstance(t, ir.Const))


def _ground(a: ir.Atom, env: Mapping[str, ir.Value]) -> ir.Row:
    return tuple(t.value if isinstance(t, ir.Const) else env[t.name] for t in a.args)


def _show_term(t: ir.Term, env: Mapping[str, ir.Value]) -> str:
    if isinstance(t, ir.Const):
        return ir.show_value(t.value)
    if is_anon(t) or t.name not in env:
        return "_"
    return ir.show_value(env[t.name])


def _show_partial(a: ir.Atom, env: Mapping[str, ir.Value]) -> str:
    if not a.args:
        return f"not {a.rel}"
    return f"not {a.rel}({', '.join(_show_term(t, env) for t in a.args)})"


# ---------------------------------------------------------------------------------------------
# Graphviz DOT and Mermaid

#: node kind -> style class
_CLASS = {
    "rule": "holds", "fact": "fact", "absent": "holds", "comparison": "holds", "goal": "holds",
    "holds": "holds", "fails": "fails", "no-rule": "fails", "false": "fails",
    "unexpanded": "fails",
    "missing": "missing", "blocked": "blocked", "alternative": "alternative",
}
#: style class -> (fill, border)
_COLORS = {
    "holds": ("#e8f5e9", "#2e7d32"),
    "fact": ("#c8e6c9", "#1b5e20"),
    "fails": ("#fdecea", "#c62828"),
    "missing": ("#fff3e0", "#e65100"),
    "blocked": ("#f3e5f5", "#6a1b9a"),
    "alternative": ("#fffde7", "#9e9d24"),
    "note": ("#ffffff", "#757575"),
}
_WRAP = 60


def _lines(node: Proof) -> list[str]:
    """A node's label as lines: its fact (or rule), then the reason, wrapped."""
    if node.kind == "more":
        return [node.text]
    head = f"via {node.reason()}" if node.kind == "alternative" else node.text
    first = textwrap.wrap(head, _WRAP, break_long_words=False, break_on_hyphens=False) or [""]
    if node.kind == "alternative":
        return first
    return first + textwrap.wrap(node.reason(), _WRAP, break_long_words=False,
                                 break_on_hyphens=False)


def _graph(root: Proof) -> tuple[list[Proof], dict[int, str], list[tuple[str, str]]]:
    nodes = list(root.walk())
    ids = {id(n): f"n{i}" for i, n in enumerate(nodes)}
    edges: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for n in nodes:
        for c in n.children:
            e = (ids[id(n)], ids[id(c)])
            if e not in seen:
                seen.add(e)
                edges.append(e)
    return nodes, ids, edges


def _dot_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")


def to_dot(root: Proof) -> str:
    """A why-proof or why-not tree as a Graphviz digraph (node labels escaped for DOT)."""
    nodes, ids, edges = _graph(root)
    out = ["digraph explanation {",
           '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
           '  edge [color="#616161"];']
    for n in nodes:
        cls = _CLASS.get(n.kind, "note")
        fill, line = _COLORS[cls]
        label = "\\n".join(_dot_escape(x) for x in _lines(n))
        dashed = ', style="rounded,filled,dashed"' if cls == "note" else ""
        out.append(f'  {ids[id(n)]} [label="{label}", fillcolor="{fill}", color="{line}"'
                   f'{dashed}];')
    out += [f"  {a} -> {b};" for a, b in edges]
    out.append("}")
    return "\n".join(out) + "\n"


def _mermaid_escape(s: str) -> str:
    """Text for a quoted Mermaid label: characters Mermaid or its HTML labels would read are
    written as entity codes (``#34;``)."""
    return "".join(f"#{ord(ch)};" if ch in '"#<>&`|{}[]\\' or ord(ch) < 32 else ch for ch in s)


def to_mermaid(root: Proof) -> str:
    """A why-proof or why-not tree as a Mermaid flowchart (labels escaped as entity codes)."""
    nodes, ids, edges = _graph(root)
    out = ["flowchart TD"]
    used: list[str] = []
    for n in nodes:
        cls = _CLASS.get(n.kind, "note")
        if cls not in used:
            used.append(cls)
        label = "<br/>".join(_mermaid_escape(x) for x in _lines(n))
        out.append(f'  {ids[id(n)]}["{label}"]:::{cls}')
    out += [f"  {a} --> {b}" for a, b in edges]
    for cls in used:
        fill, line = _COLORS[cls]
        dash = ",stroke-dasharray:4 3" if cls == "note" else ""
        out.append(f"  classDef {cls} fill:{fill},stroke:{line},color:#000{dash}")
    return "\n".join(out) + "\n"
