"""A deliberately naive bottom-up Datalog evaluator: the oracle for the property tests.

It shares nothing with ``engine/`` but the parser: the AST is turned into a tiny representation
of its own (terms are ``("var", name)``, ``("any",)`` for ``_`` or ``("const", value)``), strata
are computed by plain relaxation of stratum numbers, and each stratum is evaluated by running
every rule over every fact with nested loops until nothing changes. Slow on purpose; programs
in the tests are tiny.

>>> db = naive_eval_text('e(1, 2). e(2, 3). p(X, Y) :- e(X, Y). p(X, Z) :- p(X, Y), e(Y, Z).')
>>> sorted(db["p"])
[(1, 2), (1, 3), (2, 3)]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from grantlog.grammar import ast
from grantlog.grammar.parser import parse, parse_goal

Value = str | int
Row = tuple[Value, ...]
Term = tuple[str] | tuple[str, object]  # ("var", name) | ("any",) | ("const", value)
Env = dict[str, Value]
Db = dict[str, set[Row]]


@dataclass(frozen=True)
class NAtom:
    rel: str
    args: tuple[Term, ...]


@dataclass(frozen=True)
class NLit:
    kind: str  # "pos" | "neg" | "cmp"
    atom: NAtom | None = None
    op: str = ""
    left: Term = ("any",)
    right: Term = ("any",)


@dataclass(frozen=True)
class NRule:
    head: NAtom
    body: tuple[NLit, ...]


@dataclass
class NProgram:
    arity: dict[str, int]
    facts: Db
    rules: list[NRule]


# -- AST → tiny representation ---------------------------------------------------------------


def _term(t: ast.Term) -> Term:
    if isinstance(t, ast.Const):
        return ("const", t.value)
    if t.name == "_":
        return ("any",)
    return ("var", t.name)


def _atom(a: ast.Atom) -> NAtom:
    return NAtom(a.rel, tuple(_term(t) for t in a.args))


def _lit(lit: ast.Literal) -> NLit:
    if isinstance(lit, ast.Atom):
        return NLit("pos", _atom(lit))
    if isinstance(lit, ast.Negation):
        return NLit("neg", _atom(lit.atom))
    return NLit("cmp", None, lit.op, _term(lit.left), _term(lit.right))


def from_module(mod: ast.Module) -> NProgram:
    """The program's facts and rules (test blocks are ignored)."""
    prog = NProgram({}, {}, [])

    def see(a: NAtom) -> None:
        prog.arity.setdefault(a.rel, len(a.args))
        prog.facts.setdefault(a.rel, set())

    for st in mod.statements:
        if isinstance(st, ast.Decl):
            prog.arity.setdefault(st.name, len(st.columns))
            prog.facts.setdefault(st.name, set())
        if not isinstance(st, ast.Clause):
            continue
        head = _atom(st.head)
        see(head)
        if not st.body:
            prog.facts[head.rel].add(tuple(_const(t) for t in head.args))
            continue
        body = tuple(_lit(x) for x in st.body)
        for lit in body:
            if lit.atom is not None:
                see(lit.atom)
        prog.rules.append(NRule(head, body))
    return prog


def _const(t: Term) -> Value:
    assert t[0] == "const", f"fact with a variable: {t}"
    v = t[1]
    assert isinstance(v, str | int)
    return v


# -- evaluation ------------------------------------------------------------------------------


def _key(v: Value) -> tuple[int, Value]:
    # integers sort before strings, then natural order (the engine's documented order)
    return (0, v) if isinstance(v, int) else (1, v)


def compare(op: str, a: Value, b: Value) -> bool:
    if op == "=":
        return a == b
    if op == "!=":
        return a != b
    ka, kb = _key(a), _key(b)
    if op == "<":
        return ka < kb
    if op == "<=":
        return ka <= kb
    if op == ">":
        return ka > kb
    if op == ">=":
        return ka >= kb
    raise ValueError(op)


def _match(args: tuple[Term, ...], row: Row, env: Env) -> Env | None:
    """Extend ``env`` so that ``args`` equals ``row``, or None."""
    out = dict(env)
    for t, v in zip(args, row, strict=True):
        if t[0] == "any":
            continue
        if t[0] == "const":
            if t[1] != v:
                return None
            continue
        name = t[1]
        assert isinstance(name, str)
        if name in out:
            if out[name] != v:
                return None
        else:
            out[name] = v
    return out


def _value(t: Term, env: Env) -> Value | None:
    if t[0] == "const":
        v = t[1]
        assert isinstance(v, str | int)
        return v
    if t[0] == "var":
        return env.get(str(t[1]))
    return None


def solve(body: tuple[NLit, ...], db: Db) -> Iterator[Env]:
    """Every environment satisfying ``body`` over ``db`` (duplicates removed)."""
    envs: list[Env] = [{}]
    for lit in body:
        if lit.kind != "pos":
            continue
        assert lit.atom is not None
        nxt: dict[tuple[tuple[str, Value], ...], Env] = {}
        for env in envs:
            for row in db.get(lit.atom.rel, set()):
                e = _match(lit.atom.args, row, env)
                if e is not None:
                    nxt[tuple(sorted(e.items(), key=lambda kv: kv[0]))] = e
        envs = list(nxt.values())
    cmps = [x for x in body if x.kind == "cmp"]
    negs = [x for x in body if x.kind == "neg"]
    for env in envs:
        env = dict(env)
        # `V = t` binds an unbound V once t is known, repeated until nothing changes
        changed = True
        while changed:
            changed = False
            for c in cmps:
                if c.op != "=":
                    continue
                for this, other in ((c.left, c.right), (c.right, c.left)):
                    val = _value(other, env)
                    if this[0] == "var" and str(this[1]) not in env and val is not None:
                        env[str(this[1])] = val
                        changed = True
        ok = True
        for c in cmps:
            a, b = _value(c.left, env), _value(c.right, env)
            assert a is not None and b is not None, "unsafe comparison reached the oracle"
            if not compare(c.op, a, b):
                ok = False
                break
        if not ok:
            continue
        for n in negs:
            assert n.atom is not None
            if any(_match(n.atom.args, row, env) is not None
                   for row in db.get(n.atom.rel, set())):
                ok = False
                break
        if ok:
            yield env


def _instantiate(a: NAtom, env: Env) -> Row:
    out: list[Value] = []
    for t in a.args:
        v = _value(t, env)
        assert v is not None, f"unsafe head variable in {a}"
        out.append(v)
    return tuple(out)


def strata(prog: NProgram) -> dict[str, int]:
    """Stratum numbers by relaxation: a head is at least as high as its positive body
    relations and strictly higher than its negated ones."""
    level = dict.fromkeys(prog.arity, 0)
    limit = len(level) + 1
    changed = True
    while changed:
        changed = False
        for r in prog.rules:
            need = level[r.head.rel]
            for lit in r.body:
                if lit.atom is None:
                    continue
                below = level[lit.atom.rel] + (1 if lit.kind == "neg" else 0)
                need = max(need, below)
            if need > level[r.head.rel]:
                assert need <= limit, "program is not stratified"
                level[r.head.rel] = need
                changed = True
    return level


def evaluate(prog: NProgram, extra: Db | None = None) -> Db:
    """Every relation's rows: facts (plus ``extra``) and everything the rules derive."""
    db: Db = {rel: set(rows) for rel, rows in prog.facts.items()}
    for rel, rows in (extra or {}).items():
        db.setdefault(rel, set()).update(rows)
    level = strata(prog)
    for k in sorted(set(level.values())):
        rules = [r for r in prog.rules if level[r.head.rel] == k]
        changed = True
        while changed:
            changed = False
            for r in rules:
                derived = {_instantiate(r.head, env) for env in solve(r.body, db)}
                new = derived - db[r.head.rel]
                if new:
                    db[r.head.rel] |= new
                    changed = True
    return db


def naive_eval_text(text: str) -> Db:
    return evaluate(from_module(parse(text)))


def goal_names(goal: str) -> list[str]:
    """The named variables of a goal, in order of first appearance."""
    names: list[str] = []
    for lit in parse_goal(goal):
        if isinstance(lit, ast.Atom):
            terms = list(lit.args)
        elif isinstance(lit, ast.Negation):
            terms = list(lit.atom.args)
        else:
            terms = [lit.left, lit.right]
        for t in terms:
            if isinstance(t, ast.Var) and t.name != "_" and t.name not in names:
                names.append(t.name)
    return names


def naive_query(db: Db, goal: str) -> set[Row]:
    """The answers to a goal over an evaluated database, as rows of its named variables."""
    body = tuple(_lit(x) for x in parse_goal(goal))
    names = goal_names(goal)
    return {tuple(env[n] for n in names) for env in solve(body, db)}
