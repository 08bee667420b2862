"""Resources that no rule can tell apart get the same decision: one decision per kind.

A listing asks the same question for every table of a schema: ``allowed(u, load_table, T)``
for ten thousand ``T``. Most of those tables are alike: each is a table (``entity``) under the
schema (``contains``), and nothing else is recorded about it. Datalog with stratified negation
and equality cannot tell such values apart (its queries are *generic*: an automorphism of the
database that fixes the constants of the rules and of the question maps answers to answers).
Swapping two tables ``t1`` and ``t2`` whose facts are the same up to their own name is such an
automorphism, so ``allowed(u, load_table, t1)`` holds exactly when ``allowed(u, load_table,
t2)`` does: deciding one of them decides both.

:func:`kinds` groups candidate values by their *signature*: every base fact that mentions the
value, with the value replaced by a placeholder. Values with equal signatures are
interchangeable, unless

* the program compares values by order (``<``, ``<=``, ``>``, ``>=``: an automorphism need not
  preserve it), in which case nothing is grouped (:func:`generic`);
* the value is a constant of a rule, or a value the question fixes (the subject, the
  operation): such a value is its own group.

Only columns where the question's value can flow matter (:func:`reachable_columns`): columns
connected to the resource column of the decision relation through shared rule variables. A
fact with the value elsewhere (a table named like a type, in ``entity``'s type column) is
never joined with it, so it does not make the value different. Two values sharing a fact get
different signatures (each names the other), so they are never grouped together.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from typing import Any

from ..core import ir
from ..core.index import stored_get

#: stands for the value itself in its signature
SELF = ("\0self",)
SELF_AT = (SELF,)
#: comparisons that an automorphism may not preserve
ORDER = frozenset({"<", "<=", ">", ">="})
Column = tuple[str, int]


def generic(program: ir.Program) -> bool:
    """Whether no rule compares values by order (so rules cannot tell apart values whose
    facts agree)."""
    return not any(isinstance(lit, ir.Cmp) and lit.op in ORDER
                   for rule in program.rules for lit in rule.body)


def constants(program: ir.Program) -> set[ir.Value]:
    """The values written in rules (a value named in a rule is not like any other)."""
    out: set[ir.Value] = set()
    for rule in program.rules:
        terms = [t for a in _atoms(rule) for t in a.args]
        terms += [t for lit in rule.body if isinstance(lit, ir.Cmp) for t in (lit.left, lit.right)]
        out.update(t.value for t in terms if isinstance(t, ir.Const))
    return out


def _atoms(rule: ir.Rule) -> list[ir.Atom]:
    """The head and the body's atoms, negated ones included."""
    return [rule.head] + [lit.atom if isinstance(lit, ir.Neg) else lit
                          for lit in rule.body if not isinstance(lit, ir.Cmp)]


def reachable_columns(program: ir.Program, rel: str, col: int) -> frozenset[Column]:
    """The columns connected to ``rel``'s column ``col`` by rule variables: a variable's
    occurrences (in the head, body atoms, negated atoms, and comparisons with another
    variable) are all connected."""
    parent: dict[Any, Any] = {}

    def find(x: Any) -> Any:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: Any, b: Any) -> None:
        parent[find(a)] = find(b)

    for rule in program.rules:
        for a in _atoms(rule):
            for c, t in enumerate(a.args):
                if isinstance(t, ir.Var):
                    union(("var", rule.index, t.name), (a.rel, c))
        for lit in rule.body:
            if (isinstance(lit, ir.Cmp) and isinstance(lit.left, ir.Var)
                    and isinstance(lit.right, ir.Var)):
                union(("var", rule.index, lit.left.name), ("var", rule.index, lit.right.name))
    root = find((rel, col))
    # a column is (relation, column); a variable ("var", rule, name): the shapes tell them
    # apart whatever the relations are called
    return frozenset(k for k in list(parent) if len(k) == 2 and find(k) == root)


def kinds(
    candidates: Sequence[ir.Value],
    columns: Mapping[str, tuple[int, ...]],
    index: Callable[[str, tuple[int, ...]], Mapping[Any, Iterable[ir.Row]]],
    base: Mapping[str, Container[ir.Row] | None],
    fixed: set[ir.Value],
) -> list[list[ir.Value]]:
    """The candidates grouped by signature (see the module's docstring), in their order.

    ``columns``: per relation with stored rows, the columns where a candidate's facts count
    (:func:`reachable_columns`); ``index(rel, (col,))`` their hash indexes; ``base[rel]``: the
    base facts of a derived relation (its index also holds derived rows, which are left out),
    None for a relation with base facts only; ``fixed``: values that are each their own
    group. In a signature the value is replaced at those columns only: elsewhere it is
    another value as far as the rules can tell, and stays as it is (a fact naming the value
    in both kinds of column makes it unlike any other value)."""
    facts: dict[ir.Value, list[tuple[str, tuple[Any, ...]]]] = {}  # rows with SELF
    wanted = {x: None for x in candidates if x not in fixed}
    for rel, cols in columns.items():
        only = base.get(rel)
        for col in cols:
            ix = index(rel, (col,))
            # each candidate's bucket, reading the smaller side (one access each: at a
            # million rows an index access is mostly a cache miss)
            found: list[tuple[ir.Value, Any]]  # (candidate, its row or bucket)
            get, unique = stored_get(ix)  # a unique index keeps the row itself
            if len(ix) <= len(wanted):
                found = [(k, ix[k]) for k in ix if k in wanted]
            else:
                found = [(x, b) for x, b in zip(wanted, map(get, wanted), strict=True)
                         if b is not None]
            rows: list[tuple[ir.Value, ir.Row]]
            if unique:
                rows = found
                if only is None and len(rows) == len(wanted) and _alike(rows, col):
                    continue  # one row each, the same but for the candidate: no difference
            else:
                rows = [(x, row) for x, bucket in found for row in bucket]
            if only is not None:  # a derived row follows from the base facts: left out
                rows = [(x, row) for x, row in rows if row in only]
            once = [(x, (rel, row[:col] + SELF_AT + row[col + 1:])) for x, row in rows
                    if row.count(x) == 1]  # the value once, at this column: most rows
            for x, f in once:
                got = facts.get(x)
                if got is None:
                    facts[x] = [f]
                else:
                    got.append(f)
            if len(once) < len(rows):
                for x, row in rows:
                    if row.count(x) == 1 or any(row[c] == x for c in cols if c < col):
                        continue  # done above, or counted at its first column
                    facts.setdefault(x, []).append((rel, tuple(
                        SELF if c in cols and v == x else v for c, v in enumerate(row))))
    groups: dict[Any, list[ir.Value]] = {}
    out: list[list[ir.Value]] = []
    for x in candidates:
        if x not in wanted:
            out.append([x])
            continue
        got = facts.get(x)
        sig: Any = () if got is None else got[0] if len(got) == 1 else frozenset(got)
        group = groups.get(sig)
        if group is None:
            group = groups[sig] = []
            out.append(group)
        group.append(x)
    return out


def _alike(rows: list[tuple[ir.Value, ir.Row]], col: int) -> bool:
    """Whether the rows agree but for their value at ``col`` (every table of a schema:
    ``contains(schema, t)``): then each holds its value there only, as two candidates
    whose rows also held them elsewhere would differ there."""
    if rows and len(rows[0][1]) == 2:  # the other value alone (no tuple to make)
        return len({row[1 - col] for _, row in rows}) <= 1
    return len({row[:col] + row[col + 1:] for _, row in rows}) <= 1
