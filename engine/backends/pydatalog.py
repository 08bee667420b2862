"""The pyDatalog backend: an independent oracle for the in-memory engine.

:class:`PyDatalogReasoner` answers the questions of :class:`engine.answer.reasoner.Reasoner`
(``insert`` / ``retract`` / ``transaction``, ``rows``, ``query``, ``ask``, ``check``, ``list``,
``who``) with pyDatalog 0.22's engine: top-down SLG resolution with tabling, a different
algorithm from the in-memory bottom-up evaluator, sharing nothing with it but the IR. The
differential tests (tests/test_differential.py) compare the two on the case corpus, on
generated programs and on every test block of the seed models.

Translation (IR → ``pyDatalog.pyEngine`` literals and clauses; the ``pyDatalog.pyParser``
layer — ``+p(a)``, ``p(X) <= q(X)``, ``assert_fact`` — is not used: it turns the string
``"True"`` into the boolean ``True`` (so ``p("True")`` and ``p(1)`` are the same fact), the
string ``"??"`` into a generated name, and strings starting with an uppercase letter or ``_``
into variables):

* relation ``r`` is the predicate ``gl:r`` (``:`` cannot occur in a Python identifier, so no
  ``@pyDatalog.predicate()`` resolver of the host program can shadow it); every relation is
  registered, so one without rows answers nothing instead of raising;
* constants are ``pyEngine.Const`` of the value (ints and strs never compare equal);
* pyDatalog resolves a body left to right, so positive atoms come first (source order) and
  every comparison, ``=`` and negation is placed as soon as its variables are bound: pyDatalog
  raises on an unbound ``<``, answers a negation whose variable is still unbound as if it were
  a question about every value at once (``p(X) <= ~r(X) & q(X)`` with ``q = {1, 2}``,
  ``r = {1}`` has no answer instead of ``2``), and fails ``X == X`` for an unbound ``X``
  (``t(X) <= (X == X) & q(X)`` has no answer);
* ``not r(..)`` is ``~gl:r(..)``; an anonymous ``_`` in it stays a free variable, which
  pyDatalog reads as "for no value" (grantlog's meaning);
* ``X = t`` is pyDatalog's ``==`` primitive (it binds the unbound side), ``!=`` is native;
* ``< <= > >=`` are native when both sides are statically of one type (constants, variables
  of ``int`` / ``string`` columns, through ``=``); otherwise both sides become pyDatalog lambda
  expressions computing ``(0, n)`` for an int and ``(1, s)`` for a string, compared as tuples:
  grantlog's order (every int before every string), where native Python ordering raises
  ``TypeError`` between an int and a string;
* recursion: see :class:`_Translator` — pyDatalog never terminates once its subgoals form a
  cycle of two or more distinct calls (``r0(X, ab) <= r0(X, X)`` and ``r0(Y, Y) <= r0(Z, Y)``
  loop forever on an empty database; ``path(X, Z) <= link(X, Y) & path(Y, Z)`` loops over a
  3-cycle of links), so recursive calls are translated to never form one.

With these translations every checked program is supported; what remains refused, with a
``GrantlogError`` of code ``unsupported-feature``, is listed in :data:`REFUSED`.

Each instance has its own ``pyDatalog.Logic`` (pyDatalog's per-thread database), installed
in the calling thread only for the duration of a call, after which the caller's own logic is
put back: instances never see each other's predicates and the host program's pyDatalog state
is left alone. A lock serializes the calls on one instance.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from grantlog.grammar.diagnostics import GrantlogError, Span, error
from pyDatalog import Logic, pyEngine, pyParser

from ..answer.decide import decision_relation
from ..compile.compiler import compile_goal
from ..core import arguments, ir
from ..core.hierarchy_roles import hierarchy_roles
from ..core.results import Change, Changes, Decision, Transaction, Writes
from ..core.terms import lit_vars

UNSUPPORTED = "unsupported-feature"

#: what this backend refuses (code ``unsupported-feature``), and why
REFUSED: dict[str, str] = {
    "explanations": "pyDatalog keeps no derivations, so `explain` has no proof to show",
    "validity intervals": "this backend keeps facts without a clock",
}

_API = Span("<api>", 0, 0, 0, 0)
_PREFIX = "gl:"
_TYPED = ("int", "string")


def unsupported(feature: str, span: Span | None, why: str) -> GrantlogError:
    """The error for something this backend cannot answer faithfully."""
    return GrantlogError([error(
        UNSUPPORTED, f"the pyDatalog backend does not support {feature}", span or _API,
        f"{why}; the in-memory backend (the default) does")])


def _anonymous(name: str) -> bool:
    return name.startswith("_?")  # engine/compile/lower.py renames each `_` to `_?N`


class _Translator:
    """IR rules, facts and goals → pyDatalog engine clauses and literals.

    Recursion. pyDatalog tables one subgoal per distinct call (predicate and arguments, up to
    variable renaming) and never terminates once its subgoals call each other in a cycle of
    two or more distinct calls — which bound recursive calls create as soon as the data has a
    cycle (``path(a, Z)`` → ``path(b, Z)`` → ``path(c, Z)`` → ``path(a, Z)``), and mutual
    recursion creates by itself. Inside a recursive component (a stratum) a call therefore
    keeps bound only its component's *invariant* positions — those where every rule passes
    its head's variable on unchanged to every recursive atom (the user of ``allowed(U, Op, O)``
    in most policies, the ancestor of ``ancestor(A, C) :- ancestor(A, P), contains(P, C)``) —
    and gets a fresh variable everywhere else, followed by an ``==`` filter for what was there.
    A component of several relations is one predicate ``gl#sccN(tag, columns.., padding)``
    (``tag`` names the relation; rows of fewer columns are padded with 0) whose tag is never
    bound in a recursive call either, with a bridge clause
    ``gl:r(X..) <= gl#sccN("r", X.., 0..)`` per relation for the rest of the program. A call
    made from inside the component then binds at most the invariant positions, to the values
    of its caller's call, so along any chain of calls the bindings only ever grow more
    specific: the only cycles left are a call calling itself, which pyDatalog handles.
    """

    def __init__(self, program: ir.Program) -> None:
        self.program = program
        #: rule index -> the relations of its recursive component (rules in recursive strata)
        self.scc: dict[int, frozenset[str]] = {}
        #: relation of a multi-relation component -> (the component's predicate, width)
        self.merged: dict[str, tuple[str, int]] = {}
        #: relation of a recursive component -> the component's invariant positions
        self.invariant: dict[str, frozenset[int]] = {}
        for st in program.strata:
            if not st.recursive:
                continue
            for i in st.rules:
                self.scc[i] = frozenset(st.relations)
            keep = self._invariant(st)
            width = max(program.relations[r].arity for r in st.relations)
            for r in st.relations:
                self.invariant[r] = keep
                if len(st.relations) > 1:
                    self.merged[r] = (f"gl#scc{st.index}", width)

    def _invariant(self, st: ir.Stratum) -> frozenset[int]:
        rels = set(st.relations)
        keep = set(range(min(self.program.relations[r].arity for r in rels)))
        for i in st.rules:
            rule = self.program.rules[i]
            for lit in rule.body:
                if isinstance(lit, ir.Atom) and lit.rel in rels:
                    for k in list(keep):
                        head = rule.head.args[k]
                        if not (isinstance(head, ir.Var) and lit.args[k] == head):
                            keep.discard(k)
        return frozenset(keep)

    # -- terms, literals, clauses ---------------------------------------------------------------

    @staticmethod
    def pred(rel: str) -> str:
        return _PREFIX + rel

    @staticmethod
    def term(t: ir.Term) -> Any:
        if isinstance(t, ir.Const):
            return pyEngine.Const(t.value)
        return pyEngine.Var(t.name)

    def atom(self, a: ir.Atom, negated: bool = False) -> Any:
        name = ("~" if negated else "") + self.pred(a.rel)
        return pyEngine.Literal(name, [self.term(t) for t in a.args])

    def stored(self, rel: str, args: Sequence[Any]) -> Any:
        """The literal rows of ``rel`` are stored under (the component's, if merged)."""
        m = self.merged.get(rel)
        if m is None:
            return pyEngine.Literal(self.pred(rel), list(args))
        pred, width = m
        pad = [pyEngine.Const(0)] * (width - len(args))
        return pyEngine.Literal(pred, [pyEngine.Const(rel), *args, *pad])

    def fact(self, rel: str, row: ir.Row) -> Any:
        return pyEngine.Clause(self.stored(rel, [pyEngine.Const(v) for v in row]), [])

    def open_rows(self, rel: str, values: Sequence[ir.Value | None]) -> Any:
        """``rel(..)`` with the given values bound and a variable wherever ``None`` is."""
        return pyEngine.Literal(self.pred(rel), [
            pyEngine.Var(f"V{i}") if v is None else pyEngine.Const(v)
            for i, v in enumerate(values)])

    def clauses(self) -> list[Any]:
        """Every rule as a clause, then the bridge clause of each merged relation."""
        out: list[Any] = []
        for rule in self.program.rules:
            head = self.stored(rule.head.rel, [self.term(t) for t in rule.head.args])
            body = self.body(rule.body, rule.span, self.scc.get(rule.index, frozenset()))
            out.append(pyEngine.Clause(head, body))
        for rel in sorted(self.merged):
            xs = [pyEngine.Var(f"X{i}") for i in range(self.program.relations[rel].arity)]
            out.append(pyEngine.Clause(pyEngine.Literal(self.pred(rel), xs),
                                       [self.stored(rel, xs)]))
        return out

    # -- comparisons ----------------------------------------------------------------------------

    def types(self, body: Sequence[ir.Lit]) -> dict[str, str]:
        """The variables whose type is known statically: typed columns, then through `=`."""
        out: dict[str, str] = {}
        for lit in body:
            if isinstance(lit, ir.Atom):
                rel = self.program.relations[lit.rel]
                for t, typ in zip(lit.args, rel.types, strict=True):
                    if isinstance(t, ir.Var) and typ in _TYPED:
                        out.setdefault(t.name, typ)
        changed = True
        while changed:
            changed = False
            for lit in body:
                if isinstance(lit, ir.Cmp) and lit.op == "=":
                    for a, b in ((lit.left, lit.right), (lit.right, lit.left)):
                        tb = self.type_of(b, out)
                        if isinstance(a, ir.Var) and a.name not in out and tb is not None:
                            out[a.name] = tb
                            changed = True
        return out

    @staticmethod
    def type_of(t: ir.Term, types: dict[str, str]) -> str | None:
        if isinstance(t, ir.Const):
            return "int" if isinstance(t.value, int) else "string"
        return types.get(t.name)

    def keyed(self, t: ir.Term) -> Any:
        """A term whose value is ``ir.value_key`` of ``t`` (a pyDatalog lambda expression)."""
        if isinstance(t, ir.Const):
            return pyEngine.Term_of(ir.value_key(t.value))
        return pyEngine.Operation(pyEngine.Const(None), ir.value_key,
                                  pyEngine.VarTuple([self.term(t)]))

    def cmp(self, c: ir.Cmp, types: dict[str, str]) -> Any:
        left, right = self.term(c.left), self.term(c.right)
        if c.op == "=":
            return pyEngine.Literal("==", [left, right])
        if c.op != "!=":
            lt, rt = self.type_of(c.left, types), self.type_of(c.right, types)
            if lt is None or lt != rt:
                left, right = self.keyed(c.left), self.keyed(c.right)
        return pyEngine.Literal(c.op, [left, right])

    # -- bodies ---------------------------------------------------------------------------------

    def open_call(self, a: ir.Atom, filters: list[ir.Lit], n: int) -> Any:
        """A recursive call of ``a``: bound only at its component's invariant positions (see
        the class doc); ``filters`` gets an `=` for every other argument."""
        args: list[ir.Var] = []

        def fresh() -> ir.Var:
            v = ir.Var(f"?o{n}_{len(args)}")  # `?` cannot start a grantlog variable
            args.append(v)
            return v

        m = self.merged.get(a.rel)
        if m is not None:
            filters.append(ir.Cmp("=", fresh(), ir.Const(a.rel)))
        keep = self.invariant[a.rel]
        for k, t in enumerate(a.args):
            if k in keep:
                assert isinstance(t, ir.Var)
                args.append(t)
            else:
                filters.append(ir.Cmp("=", fresh(), t))
        if m is None:
            return self.atom(ir.Atom(a.rel, tuple(args)))
        while len(args) < m[1] + 1:
            fresh()
        return pyEngine.Literal(m[0], [self.term(v) for v in args])

    def body(self, body: Sequence[ir.Lit], span: Span | None,
             scc: frozenset[str] = frozenset()) -> list[Any]:
        """The body in an order pyDatalog resolves correctly: positive atoms in source order
        (recursive calls of ``scc`` made by :meth:`open_call`), each comparison, `=` and
        negation as soon as its variables are bound."""
        out: list[Any] = []
        rest: list[ir.Lit] = [lit for lit in body if not isinstance(lit, ir.Atom)]
        bound: set[str] = set()
        filters: list[ir.Lit] = []
        calls: list[tuple[Any, list[ir.Lit], set[str]]] = []
        for lit in body:
            if isinstance(lit, ir.Atom) and lit.rel in scc:
                mine: list[ir.Lit] = []
                call = self.open_call(lit, mine, len(filters))
                filters += mine
                calls.append((call, mine, {str(t) for t in call.terms
                                           if isinstance(t, pyEngine.Var)}))
            elif isinstance(lit, ir.Atom):
                calls.append((self.atom(lit), [], lit_vars(lit)))
        types = self.types([*body, *filters])

        def ready(lit: ir.Lit) -> bool:
            if isinstance(lit, ir.Neg):  # `_` in a negation stays free: "for no value"
                return lit_vars(lit, named=True) <= bound
            if isinstance(lit, ir.Cmp) and lit.op == "=":  # binds one side from the other
                return any(isinstance(t, ir.Const) or t.name in bound
                           for t in (lit.left, lit.right))
            return lit_vars(lit) <= bound

        def flush() -> None:
            while True:
                lit = next((x for x in rest if ready(x)), None)
                if lit is None:
                    return
                rest.remove(lit)
                if isinstance(lit, ir.Neg):
                    out.append(self.atom(lit.atom, negated=True))
                elif isinstance(lit, ir.Cmp):
                    out.append(self.cmp(lit, types))
                    bound.update(lit_vars(lit))

        flush()
        for call, mine, names in calls:
            out.append(call)
            bound.update(names)
            rest[:0] = mine
            flush()
        if rest:  # the checks reject unsafe rules and goals before they get here
            shown = ", ".join(str(x) for x in rest)
            raise unsupported("an unsafe body", span, f"nothing binds `{shown}`")
        return out


class PyDatalogReasoner(Writes):
    """The pyDatalog backend: ``grantlog.Reasoner(program, backend="pydatalog")``.

    The same questions and answers as :class:`~engine.answer.reasoner.Reasoner`: ``query`` sorts
    its bindings the same way, ``insert`` / ``retract`` / ``transaction`` report the same
    :class:`~engine.answer.reasoner.Changes` (materialized relations, and virtual ones when watched;
    computed here by evaluating them before and after), ``check`` answers
    ``Decision(allowed, ())`` — no reasons — and ``explain`` is refused.
    """

    def __init__(self, program: ir.Program, watch: Iterable[str] | str = ()) -> None:
        """``watch``: virtual relations whose changes every transaction reports (``"all"``)."""
        self.program = program = arguments.program(program)
        if program.validity:  # the rule files' facts with an interval
            raise unsupported("validity intervals", None, REFUSED["validity intervals"])
        self._watch = arguments.relation_names(program, watch)
        self._tr = _Translator(program)
        self._lock = threading.RLock()
        self._base: dict[str, set[ir.Row]] = {r: set() for r in program.relations}
        for f in program.facts:
            self._base[f.rel].add(f.row)
        #: rows of relations evaluated since the last change (the "before" of a transaction)
        self._known: dict[str, set[ir.Row]] = {}
        self._goals: dict[str, tuple[Any, tuple[str, ...]]] = {}
        self._logic = self._new_logic()
        with self._active():  # a literal interns its predicate in the active logic
            for name, relation in program.relations.items():
                pyEngine.insert(pyEngine.Pred(self._tr.pred(name), relation.arity))
            for clause in self._tr.clauses():
                pyEngine.assert_(clause)
            for rel, rows in self._base.items():
                for row in rows:
                    pyEngine.assert_(self._tr.fact(rel, row))

    # -- pyDatalog's per-thread state -----------------------------------------------------------

    @staticmethod
    def _new_logic() -> Any:
        """A fresh pyDatalog logic, leaving the calling thread's in place."""
        parsed = getattr(pyParser.Thread_storage, "variables", None)
        with borrowed(None):
            logic = Logic()  # installs itself in the thread and clears pyParser's state
        if parsed is not None:
            pyParser.Thread_storage.variables = parsed
        return logic

    @contextmanager
    def _active(self) -> Iterator[None]:
        """This instance's logic in the calling thread for the duration of the block."""
        with self._lock, borrowed(self._logic):
            yield

    def _ask(self, literal: Any) -> set[ir.Row]:
        got = literal.ask()
        if got is True:  # "true for every value": a non-ground answer, never for a safe program
            raise AssertionError(f"pyDatalog answered `{literal}` without binding it")
        return {tuple(r) for r in got}

    # -- updates --------------------------------------------------------------------------------

    def _relation(self, rel: str) -> ir.Relation:
        return arguments.relation(self.program, rel)

    def _rows(self, rel: str, rows: Iterable[Sequence[ir.Value]]) -> list[ir.Row]:
        return self.program.writable_rows(rel, rows)

    @contextmanager
    def transaction(self, watch: Iterable[str] | str = ()) -> Iterator[Transaction]:
        """A batch of inserts and retracts applied atomically when the block ends (nothing is
        applied if it raises); ``tx.changes`` as in the in-memory reasoner."""
        names = arguments.relation_names(self.program, watch)
        tx = Transaction(self._rows)
        yield tx
        tx.changes = self._commit(tx, names | self._watch)

    def _commit(self, tx: Transaction, watch: frozenset[str]) -> Changes:
        if tx.valid:
            raise unsupported("validity intervals", None, REFUSED["validity intervals"])
        with self._active():
            ins: list[tuple[str, ir.Row]] = []
            dels: list[tuple[str, ir.Row]] = []
            for rel, ops in tx.ops.items():
                base = self._base[rel]
                for row, present in ops.items():
                    if present and row not in base:
                        ins.append((rel, row))
                    elif not present and row in base:
                        dels.append((rel, row))
            if not ins and not dels:
                return Changes({}, self.program.derived)
            reported = [r for r in self.program.relations
                        if r not in self.program.virtual or r in watch]
            before = {r: self._evaluate(r) for r in reported}
            for rel, row in ins:
                self._base[rel].add(row)
                pyEngine.assert_(self._tr.fact(rel, row))
            for rel, row in dels:
                self._base[rel].discard(row)
                pyEngine.retract(self._tr.fact(rel, row))
            self._known = {}
            changed: dict[str, Change] = {}
            for r in reported:
                after = self._evaluate(r)
                c = Change(after - before[r], before[r] - after)
                if c:
                    changed[r] = c
            return Changes(changed, self.program.derived)

    def _evaluate(self, rel: str) -> set[ir.Row]:
        """Every row of ``rel`` (call with the logic active)."""
        rows = self._known.get(rel)
        if rows is None:
            arity = self.program.relations[rel].arity
            rows = self._known[rel] = self._ask(self._tr.open_rows(rel, [None] * arity))
        return set(rows)

    # -- reads ----------------------------------------------------------------------------------

    def rows(self, rel: str) -> set[ir.Row]:
        """Every row of a relation, base or derived."""
        self._relation(rel)
        with self._active():
            return self._evaluate(rel)

    def all_rows(self) -> dict[str, set[ir.Row]]:
        with self._active():
            return {r: self._evaluate(r) for r in sorted(self.program.relations)}

    def _goal(self, text: str) -> tuple[Any, tuple[str, ...]]:
        """The goal as the clause ``gl?goalN(names..) <= body`` (asserted once per text)."""
        g = self._goals.get(text)
        if g is None:
            body, names = compile_goal(self.program, text)
            head = pyEngine.Literal(f"gl?goal{len(self._goals)}",
                                    [pyEngine.Var(n) for n in names])
            pyEngine.assert_(pyEngine.Clause(
                head, self._tr.body(body, Span("<goal>", 1, 1, 1, len(text) + 1))))
            g = self._goals[text] = (head, tuple(names))
        return g

    def query(self, goal: str) -> list[dict[str, ir.Value]]:
        """Every binding of the goal's named variables, sorted (as the in-memory reasoner)."""
        with self._active():
            head, names = self._goal(goal)
            found = self._ask(head)
        return [dict(zip(names, row, strict=True)) for row in sorted(found, key=ir.row_key)]

    def ask(self, goal: str) -> bool:
        """Whether the goal has at least one answer."""
        return bool(self.query(goal))

    def _decision(self, values: Sequence[ir.Value | None]) -> set[ir.Row]:
        rel = decision_relation(self.program, self._relation)
        with self._active():
            return self._ask(self._tr.open_rows(rel, values))

    def prepare(self) -> None:
        """Nothing to prepare: pyDatalog plans each query itself (the in-memory reasoner's
        ``prepare`` builds its indexes ahead of the first checks)."""

    def check(self, subject: str, operation: str, resource: str) -> Decision:
        """Is ``decision(subject, operation, resource)`` true? (no reasons on this backend)"""
        return Decision(bool(self._decision((subject, operation, resource))), ())

    def list(
        self, subject: str, operation: str, type: str | None = None,
        within: str | None = None,
    ) -> builtins.list[ir.Value]:
        """The resources ``subject`` may perform ``operation`` on, sorted; with ``type``, only
        resources with ``type(resource, type)``; with ``within``, only those with
        ``closure(within, resource)`` (the relations declared ``@hierarchy(type)`` and
        ``@hierarchy(closure)``: engine/core/hierarchy_roles.py)."""
        roles = hierarchy_roles(self.program)
        type_rel = roles.need("type", "`list(type=)`") if type is not None else None
        closure = roles.need("closure", "`list(within=)`") if within is not None else None
        found = {row[2] for row in self._decision((subject, operation, None))}
        if type_rel is not None and type is not None:
            with self._active():
                found = {x for x in found if (a := roles.type_atom(x, type)) is not None
                         and self._ask(self._tr.open_rows(*a))}
        if closure is not None:
            with self._active():
                found = {x for x in found
                         if self._ask(self._tr.open_rows(closure, (within, x)))}
        return sorted(found, key=ir.value_key)

    def who(self, operation: str, resource: str) -> builtins.list[ir.Value]:
        """The subjects that may perform ``operation`` on ``resource``, sorted."""
        found = {row[0] for row in self._decision((None, operation, resource))}
        return sorted(found, key=ir.value_key)

    def explain(self, goal: str) -> Any:
        """Refused: see :data:`REFUSED`."""
        raise unsupported("explanations", None, REFUSED["explanations"])


@contextmanager
def borrowed(logic: Any) -> Iterator[None]:
    """Make ``logic`` the calling thread's pyDatalog logic for the block (``None``: leave
    whatever the block installs), then put the thread's previous logic and pyDatalog's
    fresh-variable counter back."""
    tl, fresh = Logic.tl, pyEngine.Fresh_var.tl
    prev = getattr(tl, "logic", None)
    counter = getattr(fresh, "counter", None)
    if logic is not None:
        tl.logic = logic
    if counter is None:  # a thread pyDatalog has not seen yet
        fresh.counter = 0
    try:
        yield
    finally:
        if prev is None:
            if hasattr(tl, "logic"):
                del tl.logic
        else:
            tl.logic = prev
        if counter is not None:
            fresh.counter = counter




__all__ = ["REFUSED", "UNSUPPORTED", "PyDatalogReasoner", "unsupported"]
