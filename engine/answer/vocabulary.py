"""Is a question's constant known? A DENY (or an empty list) that is only a typo.

``check(alice, load_tabel, t1)`` is denied whatever the policy says: no rule, declaration or
fact can put ``load_tabel`` in the decision's operation column. Such an answer carries an
``unknown-constant`` warning with a "did you mean" (``strict``: the error instead), so a typo
never reads as a policy decision.

Known means: a rule or a rule file's fact can put the value in the argument's column
(engine/compile/columns.py: the program's constants per column, computed once per program),
or a stored row holds it in one of the base columns that feed that column (one index lookup
each: the database keeps a hash index per column asked, so a question costs microseconds
however many resources there are, never a scan). A column fed by a relation answered on
demand is not looked into: its values are taken as known (no false warning).

Only answers that could be a typo pay: a denied check, an empty ``list``/``who``, a filter
that admits nothing. An allowed check or a non-empty listing used every constant it was
given. And they pay for the "did you mean" only when it is read: the warning's ``help``
(:class:`Unknown`) is computed when first read (shown, rendered, turned into JSON), so the
denials a program only counts (a filter's or a listing's checks, a sweep of every value)
make none. The suggestion (engine/core/suggest.py) is made among the same column's constants and
stored values: over the live database, an index of each column's values (:func:`stored_names`,
built on the first suggestion and kept up to date as rows come and go), so a denial of an
unknown table among a million costs a millisecond or two, not a pass over every value
(the first suggestion of a column builds its index: about a second at a million).
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, NamedTuple

from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span

from ..compile.columns import column_sources
from ..core import ir
from ..core.analyses import analysis
from ..core.hierarchy_roles import hierarchy_roles
from ..core.results import Answers, Decision
from ..core.suggest import Names, closest
from ..eval.database import Database
from ..eval.demand import DemandContext

CODE = "unknown-constant"
#: a question's argument is in no file: the diagnostic is rendered without a place
NOWHERE = Span("<api>", 0, 0, 0, 0)
#: the decision's columns, when its declaration does not name them
_COLUMNS = ("subject", "operation", "resource")
#: the "column" of a type named by a unary relation (``list(type="table")`` with ``table(X)``
#: a type relation): known when it is one of the hierarchy's kinds, or a unary relation
KINDS = -1


class Arg(NamedTuple):
    """One argument of a question: what it is (the column's name, e.g. ``operation``), the
    column it stands in and its value."""

    what: str
    relation: str
    column: int
    value: ir.Value


def decision_args(program: ir.Program, rel: str, row: Sequence[ir.Value | None]) -> list[Arg]:
    """The arguments of a question on the decision relation ``rel``: ``row`` holds the
    subject, operation and resource given (None: not given, e.g. ``who``'s subject)."""
    r = program.relations.get(rel)
    names = r.columns if r is not None and r.declared and len(r.columns) == 3 else _COLUMNS
    return [Arg(names[i], rel, i, v) for i, v in enumerate(row) if v is not None]


def hierarchy_args(program: ir.Program, rel: str, type: ir.Value | None,
                   within: ir.Value | None) -> list[Arg]:
    """``list``/``filter``'s ``type`` (a type of the relation declared ``@hierarchy(type)``)
    and ``within`` (an ancestor in the ``@hierarchy(closure)`` relation)."""
    roles = hierarchy_roles(program)
    out: list[Arg] = []
    if type is not None and roles.type is not None:
        t = program.relations.get(roles.type)
        name = t.columns[1] if t is not None and t.declared and len(t.columns) == 2 else "type"
        out.append(Arg(name, roles.type, 1, type))
    elif type is not None and roles.kinds:
        out.append(Arg("type", "", KINDS, type))
    if within is not None and roles.closure is not None:
        out.append(Arg(decision_args(program, rel, (None, None, within))[0].what,
                       roles.closure, 0, within))
    return out


def sources(program: ir.Program, rel: str, column: int) -> Sources | None:
    """The constants that rules and rule-file facts put in the column, and the base columns
    feeding it as (relation, (column,)) index keys (engine/compile/columns.py), kept with
    the program per column; None for a column the program does not have."""
    cache = analysis(program, "vocabulary", _empty)
    key = (rel, column)
    if key not in cache:
        try:
            src = column_sources(program, rel, column)
        except (KeyError, IndexError):
            cache[key] = None
        else:
            cache[key] = (src.constants, tuple((b, (c,)) for b, c in sorted(src.bases)))
    return cache[key]


Sources = tuple[frozenset[ir.Value], tuple[tuple[str, tuple[int]], ...]]


def _empty(program: ir.Program) -> dict[tuple[str, int], Sources | None]:
    return {}


def prepare(program: ir.Program, ctx: DemandContext, rel: str) -> None:
    """Build the indexes :func:`known` reads for the decision relation ``rel``'s columns
    now, not on the first denied check (``Reasoner.prepare``)."""
    for column in range(3):
        got = sources(program, rel, column)
        for b, cols in got[1] if got is not None else ():
            if b not in program.virtual:
                ctx.base_index(b, cols)


def known(program: ir.Program, ctx: DemandContext, rel: str, column: int,
          value: ir.Value) -> bool:
    """Can ``value`` stand in ``rel``'s ``column``: a rule or rule-file fact puts it there,
    or a stored row of a base column feeding it holds it (index lookups only)."""
    if column == KINDS:
        r = program.relations.get(str(value))
        return r is not None and r.arity == 1
    got = sources(program, rel, column)
    if got is None:  # not a column of the program: nothing to say
        return True
    consts, bases = got
    if value in consts:
        return True
    virtual, index = program.virtual, ctx.base_index
    return any(b in virtual or value in index(b, cols) for b, cols in bases)


def suggestion(program: ir.Program, ctx: DemandContext, arg: Arg) -> str | None:
    """The known value of ``arg``'s column closest to its value, if any: among the column's
    constants, and the values stored in each base column feeding it (their index's keys)."""
    return suggester(program, ctx, arg)()


def suggester(program: ir.Program, ctx: DemandContext, arg: Arg
              ) -> Callable[[], str | None]:
    """:func:`suggestion`, to be computed later: what it reads of the database is taken now
    (under the reasoner's lock: the live columns' :class:`Names`, which are safe to share
    and kept up to date; over another view, its suggestion itself), the comparisons are
    made when it is called."""
    value = arg.value
    if arg.column == KINDS:
        kinds = hierarchy_roles(program).kinds
        return lambda: closest(value, kinds)
    got = sources(program, arg.relation, arg.column)
    if got is None:
        return lambda: None
    consts, bases = got
    names: list[Names] = []
    found: list[str] = []
    for rel, cols in bases:
        if rel not in program.virtual and ctx.full.get(rel):
            pool = stored_names(ctx, rel, cols)
            if isinstance(pool, Names):
                names.append(pool)
            elif (c := closest(value, pool)) is not None:
                found.append(c)

    def near() -> str | None:
        best = [closest(value, consts), *(pool.closest(value) for pool in names), *found]
        return closest(value, [c for c in best if c is not None])
    return near


#: per live database, (relation, column) -> the column's stored values as suggestion names
_NAMES: weakref.WeakKeyDictionary[Database, dict[tuple[str, int], Names]] = (
    weakref.WeakKeyDictionary())
_NAMES_LOCK = threading.Lock()


def stored_names(ctx: DemandContext, rel: str, cols: tuple[int, ...]
                 ) -> Names | Iterable[object]:
    """The values stored in base relation ``rel``'s column ``cols`` to suggest from: over
    the live database, a :class:`Names` index (engine/core/suggest.py) built on the first
    question and kept up to date as rows are added and removed (a watcher of the
    database), so a suggestion among a million tables costs a millisecond or two, not a
    pass over every value; over another view (a past revision), its index's keys."""
    db = getattr(ctx.base_index, "__self__", None)
    if not isinstance(db, Database) or len(cols) != 1:
        keys: Iterable[object] = ctx.base_index(rel, cols).keys()
        return keys
    with _NAMES_LOCK:
        kept = _NAMES.setdefault(db, {})
        names = kept.get((rel, cols[0]))
        if names is None:
            names = kept[(rel, cols[0])] = _watched(db, rel, cols[0])
    return names


def _watched(db: Database, rel: str, col: int) -> Names:
    """A :class:`Names` of the values in ``rel``'s column ``col``, told of every change."""
    names = Names(db.index(rel, (col,)).keys())

    def watch(rows: Collection[ir.Row], added: bool) -> None:
        if added:
            names.add(row[col] for row in rows)
            return
        ix = db.index(rel, (col,))
        names.discard([v for v in {row[col] for row in rows} if v not in ix])
    db.watchers.setdefault(rel, []).append(watch)
    return names


def unknown(program: ir.Program, ctx: DemandContext, args: Iterable[Arg]
            ) -> tuple[Diagnostic, ...]:
    """An ``unknown-constant`` warning for each argument no rule, declaration or fact
    mentions (in its column), with a "did you mean" (computed when read: :class:`Unknown`)."""
    out: list[Diagnostic] = []
    for arg in args:
        if known(program, ctx, arg.relation, arg.column, arg.value):
            continue
        out.append(Unknown(
            CODE, f"no rule, declaration or fact has `{arg.value}` as the {arg.what}",
            NOWHERE, "warning", later=suggester(program, ctx, arg)))
    return tuple(out)


def did_you_mean(near: str | None) -> str:
    """An ``unknown-constant`` warning's help for the suggestion ``near``."""
    return (f"did you mean `{near}`?" if near is not None else
            "check its spelling: no answer can involve it, whatever the policy says")


class Unknown(Diagnostic):
    """An ``unknown-constant`` warning whose help, the "did you mean", is computed when it
    is first read (``later``: the suggestion, :func:`suggester`) — rendered, shown, turned
    into JSON or compared — not when the denial is decided: a program that reads only
    ``allowed`` pays nothing for it. Equal to the :class:`Diagnostic` with the same
    fields, shown and pickled as one."""

    def __init__(self, code: str, message: str, span: Span, severity: Any = "error",
                 help: str | None = None, notes: tuple[str, ...] = (),
                 later: Callable[[], str | None] | None = None) -> None:
        object.__setattr__(self, "_later", later)
        super().__init__(code, message, span, severity, help, notes)

    @property
    def help(self) -> str | None:
        later = self.__dict__.get("_later")
        if later is not None:  # (two threads may both compute it: the same text)
            self.__dict__["_help"] = did_you_mean(later())
            self.__dict__["_later"] = None
        got: str | None = self.__dict__.get("_help")
        return got

    @help.setter
    def help(self, text: str | None) -> None:
        if self.__dict__.get("_later") is None:
            self.__dict__["_help"] = text

    def plain(self) -> Diagnostic:
        """The same warning as a plain :class:`Diagnostic` (its help computed)."""
        return Diagnostic(self.code, self.message, self.span, self.severity, self.help,
                          self.notes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Diagnostic):
            return NotImplemented
        return self.plain() == (other.plain() if isinstance(other, Unknown) else other)

    def __hash__(self) -> int:
        return hash(self.plain())

    def __repr__(self) -> str:
        return repr(self.plain())

    def __reduce__(self) -> tuple[Any, ...]:
        return (Diagnostic, (self.code, self.message, self.span, self.severity, self.help,
                             self.notes))


def settle(found: tuple[Diagnostic, ...], strict: bool) -> tuple[Diagnostic, ...]:
    """``found`` as warnings; with ``strict`` the same diagnostics raised as errors."""
    if found and strict:
        raise GrantlogError([dataclasses.replace(
            d.plain() if isinstance(d, Unknown) else d, severity="error") for d in found])
    return found


def decided(program: ir.Program, ctx: DemandContext, rel: str, row: ir.Row,
            decision: Decision, strict: bool = False) -> Decision:
    """A check's decision with the warnings of its unknown constants (a denial only: an
    allowed row's constants are all known); ``strict``: raised instead."""
    if decision.allowed or (known(program, ctx, rel, 0, row[0])  # unrolled: a deny's cost
                            and known(program, ctx, rel, 1, row[1])
                            and known(program, ctx, rel, 2, row[2])):
        return decision
    found = settle(unknown(program, ctx, decision_args(program, rel, row)), strict)
    return dataclasses.replace(decision, warnings=found) if found else decision


def answered(program: ir.Program, ctx: DemandContext, args: Iterable[Arg],
             answers: Answers[ir.Value], strict: bool = False) -> Answers[ir.Value]:
    """A ``list``/``who`` answer with the warnings of its unknown constants (an empty one
    only); ``strict``: raised instead."""
    if not answers:
        answers.warnings = settle(unknown(program, ctx, args), strict)
    return answers


def to_json(found: Iterable[Diagnostic]) -> list[dict[str, str | None]]:
    """Warnings as answers carry them (the service, ``--json``): code, message and help."""
    return [{"code": d.code, "message": d.message, "help": d.help} for d in found]
