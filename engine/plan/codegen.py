"""Join plans → Python functions (the in-memory backend's "synthesiser").

Each plan becomes one generated function ``run(F, D, I, O, B)`` of nested loops:

* ``F[rel]`` — the full relation, a dict ``row -> level`` (iteration yields rows);
* ``D[rel]`` — the delta of the current round: rows (a set, or a dict used as an ordered set);
* ``I(rel, cols)`` — a hash index on ``cols``: key (a value, or a tuple for several columns)
  -> list of rows;
* ``O(row)`` — where head rows go; ``B`` — values of pre-bound variables, a dict by name.

A function compiled for a lookup (:func:`compile_keyed`; ``key``: the head's terms at the
looked-up columns) is split in two: ``bind(F, I)`` reads what the body uses once per read's
view (indexes as ``I[(rel, cols)]``, a mapping; virtual relations as their demand lookups,
whose kept answers it reads directly) and returns ``run(O, B)``, where ``B`` is the lookup's
key tuple, whose constants and repeated variables it checks itself, and which calls
``O(row, rule index)``.

A rule's run that starts with a loop over a whole relation or delta first filters it by the
first later scan whose key that loop's row binds: a semi-join at C speed, so that the rows
that would find nothing there cost no probe in Python (on the hmmer-like case of
benchmarks/fact_bench.py, 1.86M rows probed become 0.66M); and it reads the indexes
the loop probes hashed when the loop is long enough for it (engine/core/lazy_index.py
``semijoin``, ``ready``; both leave short loops, as incremental maintenance runs, alone).

The rule is written as a comment above the loops. Plans nested deeper than Python allows (more
than ``MAX_LOOPS`` scans, or code Python refuses to compile) fall back to :func:`interpret`,
which runs the same steps generically (and is the reference the tests compare the generated
code with).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ..core import ir
from ..core.index import stored_get
from ..core.lazy_index import ready, semijoin
from ..core.terms import compare, is_anon, less
from .join import Assign, Filter, NegCheck, RulePlan, Scan, Step, Steps

RunFn = Callable[..., None]
#: a function compiled for a lookup: ``bind(F, I)`` -> ``run(O, B)`` (:func:`compile_keyed`)
Binder = Callable[[Any, Any], Callable[[Any, Any], None]]
MAX_LOOPS = 16


_CMP_EXPR = {
    "=": "({a} == {b})",
    "!=": "({a} != {b})",
    "<": "_lt({a}, {b})",
    "<=": "({a} == {b} or _lt({a}, {b}))",
    ">": "_lt({b}, {a})",
    ">=": "({a} == {b} or _lt({b}, {a}))",
}


class _Gen:
    def __init__(self, plan: RulePlan, key: tuple[ir.Term, ...] | None = None,
                 virtual: frozenset[str] = frozenset(), first: bool = False,
                 wide: Mapping[tuple[str, tuple[int, ...]], tuple[int, ...]] | None = None
                 ) -> None:
        self.plan = plan
        self.lookup = key
        self.first = first
        self.wide = wide or {}
        #: relations whose ``I[(rel, cols)]`` is a demand lookup (engine/eval/demand.py ``Lookup``):
        #: a lookup's function reads their kept answers itself (see :meth:`answer`)
        self.virtual = virtual if key is not None else frozenset()
        self.lookups: dict[tuple[str, tuple[int, ...]], tuple[str, str, str]] = {}
        self.names: dict[str, str] = {}
        self.lines: list[str] = []
        self.setup: list[str] = []
        self.indexes: dict[tuple[str, tuple[int, ...]], str] = {}
        self.rels: dict[tuple[str, str], str] = {}
        self.depth = 1
        self.loops = 0
        self.tmp = 0
        #: a lookup's function: where each variable is bound (the line after which it may be
        #: read, and that line's depth), for reads hoisted out of loops (:meth:`hoist`)
        self.at: dict[str, tuple[int, int]] = {}
        self.start = 0  # the first line after the key's checks and bindings
        #: the locals holding answers read so far, by (relation, columns, key expression):
        #: the same lookup again in a nested loop reuses them (:meth:`answer`)
        self.answers: dict[tuple[str, tuple[int, ...], str], str] = {}
        #: the local holding the rows of a loop over a whole relation or delta that the plan
        #: starts with (a rule's run, not a lookup's): the indexes probed in it are read as
        #: the loop's length makes worth it (:func:`~engine.core.lazy_index.ready`)
        self.outer: str | None = None

    def var(self, name: str) -> str:
        if name not in self.names:
            self.names[name] = f"v{len(self.names)}"
        return self.names[name]

    def term(self, t: ir.Term) -> str:
        return repr(t.value) if isinstance(t, ir.Const) else self.var(t.name)

    def key(self, terms: Iterable[ir.Term]) -> str:
        ts = [self.term(t) for t in terms]
        return ts[0] if len(ts) == 1 else "(" + ", ".join(ts) + ")"

    def row(self, terms: Iterable[ir.Term]) -> str:
        ts = [self.term(t) for t in terms]
        if len(ts) == 1:
            return f"({ts[0]},)"
        return "(" + ", ".join(ts) + ")"

    def rel(self, source: str, rel: str) -> str:
        k = (source, rel)
        if k not in self.rels:
            name = f"{'d' if source == 'delta' else 'f'}{len(self.rels)}"
            self.rels[k] = name
            self.setup.append(f"{name} = {'D' if source == 'delta' else 'F'}[{rel!r}]")
        return self.rels[k]

    def index(self, rel: str, cols: tuple[int, ...]) -> str:
        k = (rel, cols)
        if k not in self.indexes:
            name = f"ix{len(self.indexes)}"
            self.indexes[k] = name
            if self.lookup is None:
                self.setup.append(f"{name} = I({rel!r}, {cols!r})")
            else:  # a lookup's function reads the indexes from a mapping (one C-level get)
                self.setup.append(f"{name} = I[({rel!r}, {cols!r})]")
            if self.outer is not None:
                self.setup.append(f"{name} = _ready({name}, len({self.outer}))")
            # a unique index (engine/eval/database.py) keeps its one row per key bare: read
            # through database.stored_get (dict's own get for it: no Python call)
            self.setup.append(f"g{name}, u{name} = _stored_get({name})")
        return self.indexes[k]

    def bucket(self, rel: str, cols: tuple[int, ...], terms: tuple[ir.Term, ...]) -> str:
        """The rows of a stored index under the key ``terms``, as an expression. A lookup's function
        reads a :class:`~engine.eval.database.UniqueIndex` (one row per key, kept bare) with
        ``dict.get`` and wraps the row itself: no call of the index's Python ``get``; and
        where the key is bound outside the innermost loop, reads it there (:meth:`hoist`)."""
        key = self.key(terms)
        ix = self.index(rel, cols)
        self.tmp += 1
        r = f"_r{self.tmp}"
        expr = f"((({r},) if u{ix} else {r}) if ({r} := g{ix}({key})) is not None else ())"
        if self.lookup is None:
            return expr
        return self.hoist(expr, terms, f"_b{self.tmp}")

    def bound_here(self, name: str) -> None:
        """Record that ``name`` is bound by the lines emitted so far."""
        self.at[name] = (len(self.lines), self.depth)

    def hoist(self, expr: str, terms: Iterable[ir.Term], local: str) -> str:
        """A stored index's bucket read in a loop that does not bind its key is read once
        per binding of the key (a rule such as ``denied(U, P, O) :- holds(U, R), grant(R, P,
        A, deny), ancestor_or_self(A, O).`` reads ``holds(U, _)`` once, not once per
        ancestor): where the key's last variable is bound, a local starts empty, and the
        first use fills it (none when no row gets there): an expression reading it, or
        ``expr`` where nothing is gained."""
        spots = [self.at[t.name] for t in terms if isinstance(t, ir.Var)]
        pos, depth = max(spots) if spots else (self.start, 1)
        if depth >= self.depth:
            return expr
        self.lines.insert(pos, "    " * depth + f"{local} = None")
        for name, (p, d) in self.at.items():
            if p > pos:
                self.at[name] = (p + 1, d)
        return f"({local} if {local} is not None else ({local} := {expr}))"

    def answer(self, rel: str, cols: tuple[int, ...], terms: Iterable[ir.Term]) -> str:
        """Emit the rows of virtual ``rel`` whose ``cols`` equal ``terms`` into a fresh local
        (named in the return value): the answer kept for the key, or the lookup's ``ask``
        for a key without one. The same as ``Lookup.get`` without its call."""
        k = (rel, cols)
        if k not in self.lookups:
            n = len(self.lookups)
            self.lookups[k] = (f"lk{n}", f"tb{n}", f"an{n}")
            self.setup.append(f"lk{n} = I[({rel!r}, {cols!r})]")
            self.setup.append(f"tb{n} = lk{n}.table")
            self.setup.append(f"an{n} = lk{n}.ask")
        _, tb, an = self.lookups[k]
        row = self.row(terms)
        seen = self.answers.get((rel, cols, row))
        if seen is not None:  # read in an enclosing loop: still in scope, same key
            return seen
        self.tmp += 1
        key, got = f"_k{self.tmp}", f"_a{self.tmp}"
        self.emit(f"{key} = {row}")
        self.emit(f"{got} = {tb}.get({key})")
        self.emit(f"if {got} is None: {got} = {an}({key})")
        self.answers[(rel, cols, row)] = got
        return got

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def open_if(self, cond: str) -> None:
        self.emit(f"if {cond}:")
        self.depth += 1

    def demand(self, rel: str, cols: tuple[int, ...], terms: tuple[ir.Term, ...]
               ) -> tuple[str, list[tuple[int, ir.Term]]]:
        """Emit the answer of a lookup on virtual ``rel``, from the coarser lookup when
        :attr:`wide` names one: its local, and the (column, term) pairs its rows must still
        be filtered on."""
        wide = self.wide.get((rel, cols))
        if wide is None:
            return self.answer(rel, cols, terms), []
        at = dict(zip(cols, terms, strict=True))
        return (self.answer(rel, wide, tuple(at[c] for c in wide)),
                [(c, t) for c, t in at.items() if c not in wide])

    def scan(self, s: Scan) -> None:
        demand = s.rel in self.virtual and s.source == "full" and s.key_cols
        if len(s.key_cols) == s.arity:  # every column bound: a membership test
            if demand:
                got, rest = self.demand(s.rel, s.key_cols, s.key_terms)
                self.open_if(f"{self.row(s.key_terms)} in {got}" if rest else got)
            else:
                self.open_if(f"{self.row(s.key_terms)} in {self.rel(s.source, s.rel)}")
            return
        checks: list[str] = []
        checked: set[int] = set()
        if demand:
            iterable, rest = self.demand(s.rel, s.key_cols, s.key_terms)
            for col, t in rest:
                checks.append(f"_c{col} == {self.term(t)}")
                checked.add(col)
        elif s.key_cols and s.source == "full":
            iterable = self.bucket(s.rel, s.key_cols, s.key_terms)
        else:  # a delta is scanned; bound columns become filters
            iterable = self.rel(s.source, s.rel)
            for col, t in zip(s.key_cols, s.key_terms, strict=True):
                checks.append(f"_c{col} == {self.term(t)}")
                checked.add(col)
            if self.lookup is None and not self.loops and not s.key_cols:
                self.outer = iterable
                iterable = self.semijoin(s, iterable)
        out = dict(s.out)
        for col, name in s.eqs:
            checks.append(f"_c{col} == {self.var(name)}")
            checked.add(col)
        targets = []
        for col in range(s.arity):
            if col in out:
                targets.append(self.var(out[col]))
            elif col in checked:
                targets.append(f"_c{col}")
            else:
                targets.append("_")
        target = targets[0] + "," if s.arity == 1 else ", ".join(targets)
        self.emit(f"for {target} in {iterable}:")
        self.depth += 1
        self.loops += 1
        if checks:
            self.open_if(" and ".join(checks))
        for name in out.values():
            self.bound_here(name)

    def semijoin(self, first: Scan, rows: str) -> str:
        """The loop over ``rows`` (the plan's first step, ``first``), filtered by the first
        later scan whose key it binds wholly: a semi-join at C speed
        (:func:`~engine.core.lazy_index.semijoin`) before the nested loops, in place of a
        probe in Python per row for the rows that find nothing there."""
        bound = {name: col for col, name in first.out}
        for s in list(self.plan.steps)[1:]:
            if not (isinstance(s, Scan) and s.source == "full" and s.key_cols and all(
                    isinstance(t, ir.Var) and t.name in bound for t in s.key_terms)):
                continue
            cols = tuple(bound[t.name] for t in s.key_terms if isinstance(t, ir.Var))
            if len(s.key_cols) < s.arity:
                return f"_semijoin({rows}, {self.index(s.rel, s.key_cols)}, {cols!r})"
            if s.arity > 1:  # a membership test: the key is the row (a tuple)
                return f"_semijoin({rows}, {self.rel('full', s.rel)}, {cols!r})"
        return rows

    def step(self, s: Step) -> None:
        if isinstance(s, Scan):
            self.scan(s)
        elif isinstance(s, Filter):
            self.open_if(_CMP_EXPR[s.op].format(a=self.term(s.left), b=self.term(s.right)))
        elif isinstance(s, Assign):
            self.emit(f"{self.var(s.var)} = {self.term(s.value)}")
            self.bound_here(s.var)
        elif isinstance(s, NegCheck):
            if s.rel in self.virtual and s.key_cols:
                got, rest = self.demand(s.rel, s.key_cols, s.key_terms)
                if not rest:
                    self.open_if(f"not {got}")
                elif len(s.key_cols) == s.arity:
                    self.open_if(f"{self.row(s.key_terms)} not in {got}")
                else:
                    match = " and ".join(f"_r[{c}] == {self.term(t)}" for c, t in rest)
                    self.open_if(f"not any({match} for _r in {got})")
            elif len(s.key_cols) == s.arity:
                self.open_if(f"{self.row(s.key_terms)} not in {self.rel('full', s.rel)}")
            elif not s.key_cols:
                self.open_if(f"not {self.rel('full', s.rel)}")
            else:
                ix = self.index(s.rel, s.key_cols)
                self.open_if(f"not {ix}.get({self.key(s.key_terms)})")

    def source(self) -> str:
        if self.lookup is None:
            for name in self.plan.pre_bound:
                self.emit(f"{self.var(name)} = B[{name!r}]")
        else:
            assigned: set[str] = set()
            for i, t in enumerate(self.lookup):
                if isinstance(t, ir.Const):
                    self.emit(f"if B[{i}] != {t.value!r}: return")
                elif t.name in assigned:
                    self.emit(f"if B[{i}] != {self.var(t.name)}: return")
                else:
                    assigned.add(t.name)
                    self.emit(f"{self.var(t.name)} = B[{i}]")
            missing = set(self.plan.pre_bound) - assigned
            if missing:
                raise ValueError(f"pre-bound variables {sorted(missing)} not in the key")
            self.start = len(self.lines)
            for name in assigned:
                self.bound_here(name)
        for s in self.plan.steps:
            self.step(s)
        if self.lookup is None:
            self.emit(f"O({self.row(self.plan.head.args)})")
        else:  # with the rule's index: O is the answer dict's setdefault (first rule wins)
            self.emit(f"O({self.row(self.plan.head.args)}, {self.plan.rule.index})")
        if self.lookup is not None and (self.first or all(
                isinstance(t, ir.Const) or t in self.lookup for t in self.plan.head.args)):
            self.emit("return")  # a membership test (the one possible row is found), or first
        if self.lookup is not None:  # bound once per read's view: the setup leaves the calls
            header = ["def bind(F, I):", f"    # {self.plan.rule}"]
            header += ["    " + x for x in self.setup]
            header.append("    def run(O, B):")
            body = ["    " + x for x in self.lines] + ["    return run"]
            return "\n".join(header + body) + "\n"
        header = ["def run(F, D, I, O, B):", f"    # {self.plan.rule}"]
        header += ["    " + x for x in self.setup]
        return "\n".join(header + self.lines) + "\n"


def generate(plan: RulePlan, key: tuple[ir.Term, ...] | None = None,
             virtual: frozenset[str] = frozenset(), first: bool = False,
             wide: Mapping[tuple[str, tuple[int, ...]], tuple[int, ...]] | None = None) -> str:
    """The Python source for a plan (shown by ``grantlog`` debugging and tests); with ``key``,
    a function taking the key tuple of a lookup as ``B`` (see the module docstring), which
    reads the kept answers of the ``virtual`` relations' lookups itself (those named in
    ``wide`` from the coarser lookup on the columns given there, filtered), and with
    ``first`` returns after the first head row."""
    return _Gen(plan, key, virtual, first, wide).source()


def key_binding(key: tuple[ir.Term, ...], values: tuple[ir.Value, ...]
                ) -> dict[str, ir.Value] | None:
    """The variables a lookup key binds, or None when it contradicts the head's constants or
    repeated variables."""
    env: dict[str, ir.Value] = {}
    for t, v in zip(key, values, strict=True):
        if isinstance(t, ir.Const):
            if t.value != v:
                return None
        elif env.setdefault(t.name, v) != v:
            return None
    return env


def _exec(plan: RulePlan, src: str, name: str) -> Any:
    """The function ``name`` the source defines, or None where Python refuses to compile it
    (nested deeper than it allows: 100 indentation levels, a long run of negations or
    comparisons opening one ``if`` each)."""
    scope: dict[str, Any] = {"_lt": less, "_stored_get": stored_get, "_ready": ready,
                             "_semijoin": semijoin}
    try:
        code = compile(src, f"<rule {plan.rule.name}>", "exec")
    except (SyntaxError, RecursionError):
        return None
    exec(code, scope)
    return scope[name]


def _too_deep(plan: RulePlan) -> bool:
    steps = plan.steps
    loops = (steps.scans if isinstance(steps, Steps)
             else sum(1 for s in steps if isinstance(s, Scan)))
    return loops > MAX_LOOPS or any(is_anon(t) for t in plan.head.args)


def compile_plan(plan: RulePlan) -> RunFn:
    """The plan as a Python function ``run(F, D, I, O, B)`` (see the module docstring)."""
    fn: RunFn | None = None if _too_deep(plan) else _exec(plan, generate(plan), "run")
    if fn is None:
        return lambda F, D, I, O, B: interpret(plan, F, D, I, O, B)
    return fn


def compile_keyed(plan: RulePlan, key: tuple[ir.Term, ...],
                  virtual: frozenset[str] = frozenset(), first: bool = False,
                  wide: Mapping[tuple[str, tuple[int, ...]], tuple[int, ...]] | None = None
                  ) -> Binder:
    """The plan compiled for a lookup whose key is ``key`` (``virtual``, ``first`` and
    ``wide`` as in :func:`generate`): ``bind(F, I)`` reads the relations, indexes and
    lookups the body uses once and returns ``run(O, B)``, which answers one key. A read's
    view binds each function once and calls it for every key it looks up."""
    fn: Binder | None = (None if _too_deep(plan)
                         else _exec(plan, generate(plan, key, virtual, first, wide), "bind"))
    return interpreted(plan, key) if fn is None else fn


def interpreted(plan: RulePlan, key: tuple[ir.Term, ...]) -> Binder:
    terms, rid = key, plan.rule.index

    def bind(F: Any, I: Any) -> Callable[[Any, Any], None]:
        def run(O: Any, B: Any) -> None:
            env = key_binding(terms, B)
            if env is not None:
                for row in _rows(plan, F, None, lambda rel, cols: I[(rel, cols)], env):
                    O(row, rid)
        return run
    return bind


def _rows(plan: RulePlan, F: Any, D: Any, I: Any, B: Mapping[str, ir.Value]
          ) -> Iterator[ir.Row]:
    for env in solve(plan, F, D, I, B):
        yield tuple(t.value if isinstance(t, ir.Const) else env[t.name] for t in plan.head.args)


def interpret(
    plan: RulePlan,
    F: Mapping[str, Mapping[ir.Row, int]],
    D: Mapping[str, set[ir.Row]] | None,
    I: Callable[[str, tuple[int, ...]], Mapping[Any, Iterable[ir.Row]]],
    O: Callable[[ir.Row], None],
    B: Mapping[str, ir.Value],
) -> None:
    """Run a plan step by step with an environment dict: slow, simple, same answers."""
    for env in solve(plan, F, D, I, B):
        O(tuple(t.value if isinstance(t, ir.Const) else env[t.name] for t in plan.head.args))


def solve(
    plan: RulePlan,
    F: Mapping[str, Mapping[ir.Row, int]],
    D: Mapping[str, set[ir.Row]] | None,
    I: Callable[[str, tuple[int, ...]], Mapping[Any, Iterable[ir.Row]]],
    B: Mapping[str, ir.Value],
) -> Iterator[dict[str, ir.Value]]:
    """Every binding of the plan's variables that satisfies its body (a fresh dict each).

    A depth-first search with an explicit stack of one generator per step, over one
    environment each step writes its variables into (a later step only reads variables of
    earlier ones, so nothing is undone): a body of thousands of literals nests no deeper in
    Python than one of two, and a step costs its own columns, not a copy of every binding."""
    steps = plan.steps
    env: dict[str, ir.Value] = dict(B)

    def val(t: ir.Term) -> ir.Value:
        return t.value if isinstance(t, ir.Const) else env[t.name]

    def step(s: Step) -> Iterator[None]:
        """once per way ``s`` passes with the bindings so far (its own written into ``env``)"""
        if isinstance(s, Scan):
            src: Iterable[ir.Row]
            key = tuple(val(t) for t in s.key_terms)
            if s.source == "delta":
                assert D is not None
                src = D[s.rel]
            elif s.key_cols:
                k: Any = key[0] if len(key) == 1 else key
                src = I(s.rel, s.key_cols).get(k, ())
            else:
                src = F[s.rel]
            for row in src:
                if any(row[c] != v for c, v in zip(s.key_cols, key, strict=True)):
                    continue
                for c, name in s.out:
                    env[name] = row[c]
                if all(row[c] == env[name] for c, name in s.eqs):
                    yield None
        elif isinstance(s, Filter):
            if compare(s.op, val(s.left), val(s.right)):
                yield None
        elif isinstance(s, Assign):
            env[s.var] = val(s.value)
            yield None
        else:
            key = tuple(val(t) for t in s.key_terms)
            if len(s.key_cols) == s.arity:
                hit = key in F[s.rel]
            elif not s.key_cols:
                hit = bool(F[s.rel])
            else:
                hit = bool(I(s.rel, s.key_cols).get(key[0] if len(key) == 1 else key))
            if not hit:
                yield None

    if not steps:
        yield dict(env)
        return
    stack = [step(steps[0])]
    done = object()
    while stack:
        if next(stack[-1], done) is done:
            stack.pop()
        elif len(stack) == len(steps):
            yield dict(env)
        else:
            stack.append(step(steps[len(stack)]))
