"""The demand transformation (magic sets): a program restricted to what one goal needs.

``demand(program, "allowed(U, load_table, T)", where='catalog_of(T, "m1.c1")')`` returns a
new :class:`ir.Program` whose relation ``allowed__goal`` holds exactly the rows of ``allowed``
that match the goal and satisfy ``where``, computed bottom-up without deriving anything the
goal cannot use. Any evaluator runs it (the Spark backend does, spark_bridge/); the rules are
the compiled ones, rewritten, never a second hand-written set.

The rewrite (Beeri & Ramakrishnan's generalized magic sets, with constants specialised):

* An *adornment* of a relation says, per column, whether a call binds it to a variable (``b``),
  to a constant (``c``: the constant is part of the adornment) or leaves it free (``f``).
  Calls come from the query rule ``<rel>__goal(goal args) :- where..., goal`` and then from the
  body of every adorned rule, left to right in a sideways-information-passing order (``sips``):
  greedy, the atom with most bound columns first among those connected to what is bound.
* ``q`` called with adornment ``α`` becomes the relation ``q__α`` (e.g. ``allowed__fcb``) with
  q's rules: a constant of the call is substituted into each rule (rules whose head has another
  constant there are dropped, so ``allowed(_, load_table, T)`` keeps only the load_table rules),
  and when ``α`` has bound columns the rule reads ``magic__q__α(bound args)`` first.
* ``magic__q__α`` holds the bindings the callers ask for: for each call, a rule whose body is the
  caller's magic atom and the literals before the call in the sips order.
* Only the *restricted* relations are adorned: by default the in-memory engine's virtual ones
  (``program.virtual``: the decision relation and what it is built from, not the hierarchy
  closure or other recursion below it), minus ``keep``. The others are computed in full by their
  own rules (so a transitive closure keeps its shape, and its path-doubling evaluation).

Stratified negation: passing bindings sideways can put a negation on a cycle (a magic set that
depends on a relation computed with the negation it seeds). The rewrite checks the result; for
every such cycle it stops the magic rules on the cycle from passing bindings through adorned
literals of the cycle (a larger magic set, still correct) and rewrites again, until the program is
stratified. Negated literals are adorned too (their magic rules use positive literals only).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from ..core import analyses, ir
from ..core.analyses import components, stratify
from ..core.facts import Facts
from ..core.terms import lit_atom, term_vars
from .greedy import greedy, place_ready
from .join import comparison
from .unfold import instantiate

Adornment = tuple["ir.Const | str", ...]  # per column: "f", "b" or the constant
InstanceKey = tuple[int, Adornment]  # (rule index, adornment of its head); -1: the query rule
#: unfolded view calls of a body: (the view atom, its position in the original body, the
#: body positions of its unfolded literals)
Groups = tuple[tuple["ir.Atom", int, tuple[int, ...]], ...]
GOAL_RULE = -1


@dataclass(frozen=True)
class Demand:
    """A program rewritten for one goal (:func:`demand`)."""

    #: the rewritten program; evaluate it bottom-up with any backend
    program: ir.Program
    #: the relation holding the answers: rows of ``goal.rel`` matching the goal and ``where``
    answer: str
    #: the goal atom (anonymous variables named)
    goal: ir.Atom
    #: the relation the goal atom reads in the rewritten program (adorned, or the original)
    goal_relation: str
    #: relation of the rewritten program -> relation of the original it holds rows of
    #: (adorned relations, the answer relation, unrestricted relations themselves)
    origin: dict[str, str] = field(default_factory=dict)
    #: the magic relations (bindings asked for, not rows of any original relation)
    magic: frozenset[str] = frozenset()
    #: rule instances whose sideways passing was cut to keep the program stratified
    cut: int = 0

    def describe(self) -> str:
        """One line per rewritten rule (for ``--explain-plan`` and debugging)."""
        return "\n".join(f"{r.name}: {r}" for r in self.program.rules)


def demand(
    program: ir.Program,
    goal: str,
    where: str | None = None,
    *,
    restrict: Collection[str] | None = None,
    keep: Iterable[str] = (),
    unfold: bool = True,
) -> Demand:
    """Rewrite ``program`` for the rows of ``goal`` (one atom: constants and variables) that
    satisfy ``where`` (literals sharing its variables, evaluated first).

    ``restrict``: the derived relations to restrict by demand (default ``program.virtual``);
    ``keep``: relations never restricted (e.g. derived relations given extra rows from outside,
    which only their original name receives); ``unfold``: replace calls of views by their
    bodies first (:func:`unfold_views`). Raises :class:`GrantlogError` for a bad goal.
    """
    goal_atom, where_body = parse_goal(program, goal, where)
    kept = frozenset(keep)
    restricted = set(default_restricted(program, kept) if restrict is None else restrict)
    restricted &= program.derived
    restricted -= kept
    groups: dict[int, Groups] = {}
    if unfold:
        program, where_body, groups = unfold_views(program, frozenset(restricted),
                                                   goal_atom.rel, where_body)
    return rewrite(program, goal_atom, where_body, frozenset(restricted), groups)


def _anonymous(k: int, name: str) -> str:
    """An unfolded view's anonymous variable ``_?N`` at the ``k``-th call: ``_?uk.N``."""
    return f"_?u{k}.{name[2:]}"


def unfold_views(
    program: ir.Program, restricted: frozenset[str], goal_rel: str,
    where: tuple[ir.Lit, ...] = (),
) -> tuple[ir.Program, tuple[ir.Lit, ...], dict[int, Groups]]:
    """Replace each positive call of a *view* by the view's body (unfolding).

    A view is a restricted relation with one rule, no facts, outside recursion, whose head
    arguments are distinct variables and whose body (views in it unfolded first) reads only
    unrestricted relations: e.g. ``registered(U, O) :- metalake_of(O, M), metalake_user(U, M)``
    with ``metalake_of`` itself a view over ``entity`` and ``ancestor_or_self``. Restricting a
    view by demand would only materialize its magic set (often as large as the view's answers)
    to filter a join the caller can do directly. The unfolded literals go after the caller's
    own (a rule's reason stays one of its own literals); the goal relation's rules are left as
    they are; negated calls keep the view relation, which stays defined. Also returns, per
    rule index (``GOAL_RULE`` for ``where``), the unfolded calls: the view atom and the body
    positions that replaced it (:func:`sips` schedules them together, where the call was).
    """
    views: dict[str, ir.Rule] = {}
    counter = itertools.count()
    facts = {f.rel for f in program.facts}

    def expand(body: tuple[ir.Lit, ...]) -> tuple[ir.Lit, ...]:
        return expand_groups(body)[0]

    def expand_groups(body: tuple[ir.Lit, ...]) -> tuple[tuple[ir.Lit, ...], Groups]:
        own: list[ir.Lit] = []
        extra: list[ir.Lit] = []
        calls: list[tuple[ir.Atom, int, int, int]] = []
        for pos, lit in enumerate(body):
            if not (isinstance(lit, ir.Atom) and lit.rel in views):
                own.append(lit)
                continue
            view = views[lit.rel]
            calls.append((lit, pos, len(extra), len(extra) + len(view.body)))
            k = next(counter)
            extra.extend(instantiate(view, lit, f"~{k}", functools.partial(_anonymous, k)))
        n = len(own)
        return (*own, *extra), tuple((a, p, tuple(range(n + i, n + j)))
                                     for a, p, i, j in calls)

    candidates = analyses.views(program)
    for st in program.strata:  # dependencies first: views in a view's body are unfolded
        rel = st.relations[0]
        rule = candidates.get(rel)
        if rule is None or rel not in restricted or rel == goal_rel or rel in facts:
            continue
        body = expand(rule.body)
        if all(a.rel not in restricted for a in map(lit_atom, body) if a is not None):
            views[rel] = ir.Rule(rule.index, rule.name, rule.head, body, rule.doc, rule.span,
                                 rule.labelled)
    if not views:
        return program, where, {}
    groups: dict[int, Groups] = {}
    rules = []
    for r in program.rules:
        if r.head.rel == goal_rel:
            rules.append(r)
            continue
        body, g = expand_groups(r.body)
        groups[r.index] = g
        rules.append(ir.Rule(r.index, r.name, r.head, body, r.doc, r.span, r.labelled))
    out = ir.Program(program.relations, rules, program.facts, stratify(rules), program.tests,
                     program.sources, program.files, program.warnings, program.decision,
                     program.virtual)
    where2, groups[GOAL_RULE] = expand_groups(where)
    return out, where2, groups


def default_restricted(program: ir.Program, keep: Collection[str] = ()) -> frozenset[str]:
    """The relations :func:`demand` restricts by default: the virtual ones (compile/materialize.py),
    except *projections*: those whose every rule reads one positive atom of an unrestricted
    relation (plus comparisons and negations of unrestricted ones), such as
    ``ancestor_or_self``. Such a relation is never larger than what it reads, computing it in
    full costs a scan, and restricting it would only add magic relations shared by unrelated
    calls (whose sideways bindings then form cycles the rewrite has to cut). ``keep``: relations
    computed in full whatever the analysis says."""
    restricted = set(program.virtual) - set(keep)
    changed = True
    while changed:
        changed = False
        for rel in sorted(restricted):
            rules = program.rules_for(rel)
            if rules and all(_projection(r, restricted) for r in rules):
                restricted.discard(rel)
                changed = True
    return frozenset(restricted)


def _projection(rule: ir.Rule, restricted: set[str]) -> bool:
    atoms = [lit for lit in rule.body if isinstance(lit, ir.Atom)]
    others = [lit.atom for lit in rule.body if isinstance(lit, ir.Neg)]
    return (len(atoms) == 1 and all(a.rel not in restricted for a in atoms + others))


def parse_goal(
    program: ir.Program, goal: str, where: str | None
) -> tuple[ir.Atom, tuple[ir.Lit, ...]]:
    """The goal atom (anonymous variables given names) and the ``where`` literals."""
    from ..compile.compiler import compile_goal

    body, _ = compile_goal(program, goal)
    if len(body) != 1 or not isinstance(body[0], ir.Atom):
        raise GrantlogError([error(
            "bad-goal", f"the goal must be one atom, like `allowed(U, load_table, T)`; "
            f"got `{goal}`", Span("<goal>", 1, 1, 1, 1 + len(goal)),
            "put the other conditions in `where`")])
    names = itertools.count()
    atom = body[0]
    atom = ir.Atom(atom.rel, tuple(
        ir.Var(f"Goal?{next(names)}") if isinstance(t, ir.Var) and t.name.startswith("_?")
        else t for t in atom.args))
    if not where or not where.strip():
        return atom, ()
    # compiled together with the goal, so a `where` variable may be bound by the goal only
    full, _ = compile_goal(program, f"{goal}, {where}")
    rest = full[1:]
    return atom, tuple(_rename_anon(lit, "_?w") for lit in rest)


def _rename_anon(lit: ir.Lit, prefix: str) -> ir.Lit:
    def t(x: ir.Term) -> ir.Term:
        if isinstance(x, ir.Var) and x.name.startswith("_?"):
            return ir.Var(prefix + x.name[2:])
        return x

    if isinstance(lit, ir.Atom):
        return ir.Atom(lit.rel, tuple(t(a) for a in lit.args))
    if isinstance(lit, ir.Neg):
        return ir.Neg(ir.Atom(lit.atom.rel, tuple(t(a) for a in lit.atom.args)))
    return ir.Cmp(lit.op, t(lit.left), t(lit.right))


# ---------------------------------------------------------------------------------------------
# the rewrite


def _subst_term(t: ir.Term, s: dict[str, ir.Const]) -> ir.Term:
    return s.get(t.name, t) if isinstance(t, ir.Var) else t


def substitute(lit: ir.Lit, s: dict[str, ir.Const]) -> ir.Lit:
    if isinstance(lit, ir.Atom):
        return ir.Atom(lit.rel, tuple(_subst_term(a, s) for a in lit.args))
    if isinstance(lit, ir.Neg):
        return ir.Neg(ir.Atom(lit.atom.rel, tuple(_subst_term(a, s) for a in lit.atom.args)))
    return ir.Cmp(lit.op, _subst_term(lit.left, s), _subst_term(lit.right, s))


def _code(ad: Adornment) -> str:
    return "".join(a if isinstance(a, str) else "c" for a in ad)


@dataclass
class _Call:
    """A call found in a rule instance: its position, adornment and magic rule prefix."""

    position: int
    atom: ir.Atom
    adornment: Adornment
    prefix: tuple[tuple[int, ir.Lit], ...]  # (body position or -1 for magic, literal)


class _Rewriter:
    def __init__(self, program: ir.Program, goal: ir.Atom, where: tuple[ir.Lit, ...],
                 restricted: frozenset[str], blocked: set[tuple[InstanceKey, int]],
                 groups: dict[int, Groups] | None = None) -> None:
        self.program = program
        self.given = Facts.of(program.facts)
        self.groups = groups or {}
        self.goal = goal
        self.where = where
        self.restricted = restricted
        self.blocked = blocked
        self.names: dict[tuple[str, Adornment], str] = {}
        self.taken = set(program.relations)
        self.rules_of: dict[str, list[ir.Rule]] = {}
        spec: dict[str, set[int]] = {}
        for r in program.rules:
            self.rules_of.setdefault(r.head.rel, []).append(r)
            spec.setdefault(r.head.rel, set()).update(
                i for i, t in enumerate(r.head.args) if isinstance(t, ir.Const))
        #: relation -> head columns where some rule has a constant: a call's constant there
        #: is part of the adornment (rules with another constant drop out); elsewhere a
        #: constant is a binding like any other, so one adorned relation serves them all
        self.specialize = {rel: frozenset(cols) for rel, cols in spec.items()}
        self.rules: list[ir.Rule] = []
        self.rule_keys: list[tuple[str, tuple[str, ...]]] = []
        self.seen_rules: set[str] = set()
        #: magic rule index -> the (instance, body position, relation) of its adorned prefix
        #: literals, for cutting negation cycles
        self.sideways: dict[int, list[tuple[InstanceKey, int, str]]] = {}
        self.relations: dict[str, ir.Relation] = {}
        self.origin: dict[str, str] = {}
        self.magic: set[str] = set()
        self.facts: list[ir.Fact] = []
        self.full: set[str] = set()  # original relations used as they are

    # -- names -------------------------------------------------------------------------------

    def _fresh(self, base: str) -> str:
        name = base
        k = 2
        while name in self.taken:
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        return name

    def adorned(self, rel: str, ad: Adornment) -> str:
        key = (rel, ad)
        name = self.names.get(key)
        if name is None:
            name = self.names[key] = self._fresh(f"{rel}__{_code(ad)}")
            orig = self.program.relations[rel]
            self.relations[name] = ir.Relation(
                name, orig.arity, orig.columns, orig.types,
                (f"`{rel}` restricted to the calls {_code(ad)}",), False, orig.span)
            self.origin[name] = rel
            for f in self.given.of_relation(rel, lambda row: all(
                    isinstance(a, str) or a.value == v for a, v in zip(ad, row, strict=True))):
                self.facts.append(ir.Fact(name, f.row, f.span))
            self.queue.append((rel, ad))
            if "b" in ad:
                m = self._fresh(f"magic__{name}")
                cols = [i for i, a in enumerate(ad) if a == "b"]
                self.relations[m] = ir.Relation(
                    m, len(cols), tuple(orig.columns[i] for i in cols),
                    tuple(orig.types[i] for i in cols), (f"bindings asked of `{name}`",))
                self.magic.add(m)
                self.magic_of[name] = m
                self.magic_target[m] = name
        return name

    def use_full(self, rel: str) -> None:
        """``rel`` is read as it is: keep it and, transitively, what its rules read."""
        stack = [rel]
        while stack:
            r = stack.pop()
            if r in self.full:
                continue
            self.full.add(r)
            self.relations[r] = self.program.relations[r]
            self.origin[r] = r
            self.facts.extend(self.given.of_relation(r))
            for rule in self.rules_of.get(r, ()):
                self._add(rule)
                for lit in rule.body:
                    a = lit_atom(lit)
                    if a is not None:
                        stack.append(a.rel)

    def _add(self, rule: ir.Rule) -> int:
        key = (rule.name, (str(rule.head), *(str(b) for b in rule.body)))
        s = repr(key)
        if s in self.seen_rules:
            return -1
        self.seen_rules.add(s)
        idx = len(self.rules)
        self.rules.append(ir.Rule(idx, rule.name, rule.head, rule.body, rule.doc, rule.span,
                                  rule.labelled))
        return idx

    # -- the rewrite ---------------------------------------------------------------------------

    def run(self) -> tuple[str, str]:
        self.queue: list[tuple[str, Adornment]] = []
        self.magic_of: dict[str, str] = {}
        self.magic_target: dict[str, str] = {}
        goal = self.goal
        orig = self.program.relations[goal.rel]
        answer = self._fresh(f"{goal.rel}__goal")
        self.relations[answer] = ir.Relation(
            answer, orig.arity, orig.columns, orig.types,
            (f"the rows of `{goal.rel}` asked for",), False, orig.span)
        self.origin[answer] = goal.rel
        query = ir.Rule(GOAL_RULE, "goal", ir.Atom(answer, goal.args), (*self.where, goal))
        renamed = self.instance((GOAL_RULE, ()), query, set(), None,
                                self.groups.get(GOAL_RULE, ()), where_first=len(self.where))
        goal_rel = renamed[len(self.where)]
        while self.queue:
            rel, ad = self.queue.pop(0)
            for rule in self.rules_of.get(rel, ()):
                self.adorn_rule(rule, ad)
        assert isinstance(goal_rel, ir.Atom)
        return answer, goal_rel.rel

    def adorn_rule(self, rule: ir.Rule, ad: Adornment) -> None:
        s: dict[str, ir.Const] = {}
        for a, t in zip(ad, rule.head.args, strict=True):
            if isinstance(a, str):
                continue
            if isinstance(t, ir.Const):
                if t != a:
                    return  # the head has another constant: the rule cannot answer this call
            elif s.setdefault(t.name, a) != a:
                return
        head = ir.Atom(rule.head.rel, tuple(_subst_term(t, s) for t in rule.head.args))
        body = tuple(substitute(lit, s) for lit in rule.body)
        name = self.names[(rule.head.rel, ad)]
        magic_atom = None
        if "b" in ad:
            magic_atom = ir.Atom(self.magic_of[name], tuple(
                t for a, t in zip(ad, head.args, strict=True) if a == "b"))
        bound = term_vars(t for a, t in zip(ad, head.args, strict=True) if a == "b")
        r = ir.Rule(rule.index, rule.name, head, body, rule.doc, rule.span, rule.labelled)
        groups = tuple((substitute(a, s), p, ps) for a, p, ps in self.groups.get(rule.index, ()))
        self.instance((rule.index, ad), r, bound, magic_atom, groups)  # type: ignore[arg-type]

    def instance(self, key: InstanceKey, rule: ir.Rule, bound0: set[str],
                 magic_atom: ir.Atom | None, groups: Groups = (),
                 where_first: int = 0) -> list[ir.Lit]:
        """Add the adorned rule for one instance and the magic rules of its calls; returns
        the body with adorned relation names."""
        calls = sips(rule.body, bound0, self.restricted,
                     {p for (k, p) in self.blocked if k == key}, where_first, self.specialize,
                     groups)
        renamed: list[ir.Lit] = list(rule.body)
        prefix_base: list[tuple[int, ir.Lit]] = [(-1, magic_atom)] if magic_atom else []
        for call in calls:
            atom = call.atom
            if atom.rel in self.restricted:
                new = ir.Atom(self.adorned(atom.rel, call.adornment), atom.args)
            else:
                self.use_full(atom.rel)
                new = atom
            lit = rule.body[call.position]
            renamed[call.position] = ir.Neg(new) if isinstance(lit, ir.Neg) else new
            if new.rel in self.magic_of:
                m = self.magic_of[new.rel]
                args = tuple(t for a, t in zip(call.adornment, atom.args, strict=True)
                             if a == "b")
                body: list[ir.Lit] = [lit2 for _, lit2 in prefix_base]
                side: list[tuple[InstanceKey, int, str]] = []
                for pos, plit in call.prefix:
                    rl = renamed[pos] if pos >= 0 else plit
                    body.append(rl)
                    a2 = lit_atom(rl)
                    if a2 is not None and a2.rel in self.origin and a2.rel not in self.full:
                        side.append((key, pos, a2.rel))
                if not body:  # constants only: a fact
                    row = tuple(t.value for t in args if isinstance(t, ir.Const))
                    fact = ir.Fact(m, row, rule.span)
                    if fact not in self.facts:
                        self.facts.append(fact)
                    continue
                mr = ir.Rule(0, f"magic:{rule.name}", ir.Atom(m, args), tuple(body),
                             (f"bindings `{rule.name}` asks of `{new.rel}`",), rule.span)
                idx = self._add(mr)
                if idx >= 0:
                    self.sideways[idx] = side
        head_rel = rule.head.rel
        if key[0] != GOAL_RULE:
            head = ir.Atom(self.names[(head_rel, key[1])], rule.head.args)
        else:
            head = rule.head
        body_out = ([magic_atom] if magic_atom else []) + renamed
        self._add(ir.Rule(0, rule.name, head, tuple(body_out), rule.doc, rule.span,
                          rule.labelled))
        return renamed

    def result(self, answer: str, goal_rel: str) -> ir.Program:
        rules = self.rules
        strata = stratify(rules)
        return ir.Program(self.relations, rules, self.facts, strata, [],
                          self.program.sources, self.program.files, [], goal_rel)


def sips(
    body: tuple[ir.Lit, ...],
    bound0: set[str],
    restricted: frozenset[str],
    blocked: set[int],
    where_first: int = 0,
    specialize: Mapping[str, frozenset[int]] | None = None,
    groups: Groups = (),
) -> list[_Call]:
    """The calls of a body in sideways-information-passing order.

    Positive atoms are taken in the author's order (left to right, as classic magic sets do),
    except that an atom joined to what is bound (by a variable, or by a constant while nothing
    is bound) goes before one that is not, so no call's bindings come from a cross product; the
    first ``where_first`` literals (a query's ``where``) come before the rest; an unfolded
    view's literals (``groups``) are scheduled together where the view's call was. Comparisons
    and negations are placed as soon as their variables are bound. A positive call's
    adornment binds the columns whose variables are bound by the head's magic atom and the
    non-``blocked`` literals before it (its magic rule's body: its ``prefix``); a negated
    call's, only those the head binds.
    """
    bound = set(bound0)
    avail = set(bound0)
    prefix: list[tuple[int, ir.Lit]] = []
    calls: list[_Call] = []
    atoms = [(i, lit) for i, lit in enumerate(body) if isinstance(lit, ir.Atom)]
    others = [(i, lit) for i, lit in enumerate(body) if not isinstance(lit, ir.Atom)]

    def adornment(atom: ir.Atom, known: set[str] = avail) -> Adornment:
        spec = (specialize or {}).get(atom.rel, frozenset())
        return tuple((t if i in spec else "b") if isinstance(t, ir.Const) else
                     ("b" if t.name in known and not t.name.startswith("_?") else "f")
                     for i, t in enumerate(atom.args))

    def place(i: int, lit: ir.Lit) -> bool:
        if isinstance(lit, ir.Cmp):
            how = comparison(lit, lambda t: term_vars([t]) <= bound)
            if how is False:
                return False
            if how is True:
                if term_vars([lit.left, lit.right]) <= avail:
                    prefix.append((i, lit))
            else:
                var, value = how
                bound.add(var.name)
                if term_vars([value]) <= avail and i not in blocked:
                    avail.add(var.name)
                    prefix.append((i, lit))
            return True
        assert isinstance(lit, ir.Neg)
        if not term_vars(lit.atom.args, named=True) <= bound:
            return False
        # a negation filters: its relation is asked only what the head binds
        # (its exceptions are usually few; the rows before it may be many)
        calls.append(_Call(i, lit.atom, adornment(lit.atom, set(bound0)), ()))
        return True

    def flush() -> None:
        place_ready(others, place)

    def score(a: tuple[int, ir.Atom]) -> tuple[int, int, float]:
        i, atom = a
        if i < 0:  # a group of unfolded literals: where the view's call was
            rank = group_rank[-1 - i]
            first = min(groups[-1 - i][2]) < where_first
        else:
            rank = source_rank[i]
            first = i < where_first
        shared = bool(term_vars(atom.args, named=True) & bound)
        consts = any(isinstance(t, ir.Const) for t in atom.args)
        # a query's `where` first; then atoms joined to what is bound (by a variable, or by
        # a constant while nothing is bound); then the author's order (left to right)
        return (1 if first else 0, 1 if shared or (consts and not bound) else 0, -rank)

    def take(item: tuple[int, ir.Atom]) -> None:
        i, atom = item
        calls.append(_Call(i, atom, adornment(atom), tuple(prefix)))
        new = term_vars(atom.args, named=True)
        bound.update(new)
        if i not in blocked:
            avail.update(new)
            prefix.append(item)
        flush()

    # an unfolded view's literals are scheduled together, where the view's call would be
    grouped = {p: g for g, (_, _, ps) in enumerate(groups) for p in ps}
    units: list[tuple[int, ir.Atom]] = [a for a in atoms if a[0] not in grouped]
    members: dict[int, list[tuple[int, ir.Atom]]] = {}
    for a in atoms:
        if a[0] in grouped:
            members.setdefault(grouped[a[0]], []).append(a)
    for g, (call, _, _) in enumerate(groups):
        if g in members:
            units.append((-1 - g, call))  # a negative position names the group
    # the author's order: own literals by position, each unfolded view where its call was
    own_positions = [p for p in range(len(body)) if p not in grouped]
    source_rank: dict[int, float] = {}
    for k, p in enumerate(own_positions):
        source_rank[p] = float(k)
    origins = {o for _, o, _ in groups}
    group_rank: list[float] = []
    for _, orig, ps in groups:
        before = sum(1 for q in range(orig) if q not in origins)
        group_rank.append(before - 0.5)
        for j, p in enumerate(ps):
            source_rank[p] = before - 0.5 + j / (2 * len(ps) + 1)
    def take_unit(item: tuple[int, ir.Atom]) -> None:
        if item[0] >= 0:
            take(item)
        else:  # a group: its literals in turn, by the same score
            greedy(members[-1 - item[0]], score, take)

    flush()
    greedy(units, score, take_unit)
    if others:
        raise AssertionError(f"unplaceable literals {[str(o) for _, o in others]}")
    return calls


def _components(rules: list[ir.Rule]) -> tuple[dict[str, int], set[int]]:
    """relation -> its strongly connected component, and the components with a negation
    inside"""
    comp_of: dict[str, int] = {}
    for k, comp in enumerate(components(rules)):
        for r in comp:
            comp_of[r] = k
    neg = [(r.head.rel, lit.atom.rel) for r in rules for lit in r.body if isinstance(lit, ir.Neg)]
    return comp_of, {comp_of[h] for h, b in neg if comp_of[h] == comp_of[b]}


def rewrite(
    program: ir.Program, goal: ir.Atom, where: tuple[ir.Lit, ...], restricted: frozenset[str],
    groups: dict[int, Groups] | None = None,
) -> Demand:
    """The rewrite for a parsed goal (see :func:`demand`).

    Sideways passing through an adorned literal can close a cycle that the original program
    does not have (the literal's relation and the called one share an adorned descendant):
    with a negation on it, the program is not stratified; without, it is correct but turns
    non-recursive work into a fixpoint. Each round cuts, in every magic rule of such a
    component, its last such sideways edge, and rewrites again. (Cutting one edge per
    component per round, as this did before, blocked a few edges fewer but took 165 rounds,
    4.7 s, for the Gravitino model's goal `allowed(S, O, R)`; cutting them all: 2 rounds,
    0.07 s, 912 rules against 914. A cut edge only makes the demand less selective, never
    wrong.)
    """
    orig_comp: dict[str, int] = {}
    for st in program.strata:
        for r in st.relations:
            orig_comp[r] = st.index
    recursive = {st.index for st in program.strata if st.recursive}
    blocked: set[tuple[InstanceKey, int]] = set()
    while True:
        rw = _Rewriter(program, goal, where, restricted, blocked, groups)
        answer, goal_rel = rw.run()
        comp_of, negative = _components(rw.rules)
        cut: dict[int, tuple[InstanceKey, int]] = {}
        for idx in sorted(rw.sideways):
            q = rw.rules[idx].head.rel
            k = comp_of[q]
            for key, pos, rel in reversed(rw.sideways[idx]):
                if comp_of.get(rel) != k:
                    continue
                if k not in negative:  # a positive cycle: keep genuine recursion
                    p0, q0 = rw.origin[rel], rw.origin[rw.magic_target[q]]
                    c = orig_comp.get(p0)
                    if c is not None and c == orig_comp.get(q0) and c in recursive:
                        continue
                cut[idx] = (key, pos)
                break
        if not cut:
            if negative:  # cannot happen (see the module doc); fail loudly if it does
                raise AssertionError("the demand rewrite is not stratified")
            break
        blocked |= set(cut.values())
    return Demand(rw.result(answer, goal_rel), answer, goal, goal_rel, rw.origin,
                  frozenset(rw.magic), len(blocked))
