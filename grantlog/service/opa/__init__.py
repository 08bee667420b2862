"""OPA's Data API for the platforms whose authorizer plugins call OPA (Trino, Apache Polaris).

A platform's plugin POSTs ``{"input": ...}`` to ``/v1/data/<path>`` and reads ``{"result":
...}``. A *mapping* (a TOML file: grantlog/service/opa/trino.toml, polaris.toml; docs/opa.md says
how to write one) tells, without code, how the plugin's input becomes grantlog questions:

* ``[input]``: JMESPath expressions for the subject, the operation and where the resource
  documents are (``resource``: one; ``batch``: a list, each answered; ``all``: a list that must
  all be allowed; ``secondaries``: documents that must be allowed too, each with the
  operation ``[secondaries]`` gives);
* ``[[resource]]``: how a resource document becomes an object id: the first entry whose
  ``when`` (JMESPath) holds; ``id`` lists the id's parts, each ``{var}`` (from ``[vars]``) or a
  JMESPath expression over the document (a list expression gives several parts, an empty list
  none), joined by ``separator`` (a part that holds the separator is refused: two objects
  would share one id);
* ``[operations]``: the platform's operation → an *entry*: a grantlog operation on the
  document's object; ``{operation, id}`` (id parts over the input) or ``{operation, on}`` (id
  parts over the document) to decide another object; ``{allow = true|false}``; with ``also``
  (more checks on the same document, all needed) and ``items`` (a list in the document, each
  item decided with ``item`` bound: a batch answers positions in it); or a list of such
  entries, each with a ``when``, the first that holds deciding. An operation not listed is
  denied, saying so;
* ``[secondaries]``: the operation → the entry that decides each secondary document (an
  operation whose input carries secondaries the mapping does not decide is denied);
* ``[groups]``: the subject's groups (or roles) the platform sends, checked against the store's
  (see :class:`_Groups`);
* ``[endpoints]``: Data API path → what is answered there: ``allow`` (a boolean), ``allow_object``
  (``{"allow": ..., "reason": ...}``), ``batch`` (the allowed indexes), ``row_filters``,
  ``column_mask``, ``batch_column_masks``;
* ``[row_filters]``, ``[column_masks]``: the relations that hold them (rules/gravitino_data.gl's
  ``row_visible`` and ``column_mask``), the SQL dialect, and where the column's name and type
  are in the document.

Every answer is an :class:`Answer`: the plugin's ``result``, a ``reason`` for a deny (the
why-not summary: grantlog's reasons, or what could not be mapped), and the decisions made, for
the decision log. Deciding fails closed: an input the mapping cannot read is a deny carrying the
reason (or no filter rows at all for a row filter: see :meth:`Mapping.answer`).
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError

from grantlog.engine.answer.decide import decide_or_deny, deny_reason
from grantlog.engine.core.results import Decision
from grantlog.grammar.diagnostics import GrantlogError, Span, error
from grantlog.grammar.formatter import quote
from grantlog.tomlfile import read_toml

KINDS = ("allow", "allow_object", "batch", "row_filters", "column_mask", "batch_column_masks")
HERE = Path(__file__).resolve().parent
#: the keys of an operation entry (docs/opa.md)
ENTRY_KEYS = ("when", "allow", "operation", "id", "on", "items", "also")


def shipped() -> list[str]:
    """The names of the shipped mappings (grantlog/interop/*.toml)."""
    return sorted(p.stem for p in HERE.glob("*.toml"))


class Unmapped(Exception):
    """The input does not say what the mapping needs (a deny, with this as its reason)."""


@dataclass(frozen=True)
class Decided:
    """One check an answer made, for the decision log: the question and the engine's
    decision, with the error when deciding failed (a deny: engine/answer/decide.py)."""

    subject: str
    operation: str
    resource: str
    decision: Decision
    error: str | None = None


@dataclass
class Answer:
    result: Any
    reason: str | None = None
    decisions: list[Decided] = field(default_factory=list)
    #: what the row filter or masks were made from, for the decision log
    detail: dict[str, Any] = field(default_factory=dict)


def _bad(where: str, message: str) -> GrantlogError:
    return GrantlogError([error("bad-mapping", message, Span(where, 0, 0, 0, 0),
                                "see docs/opa.md for the mapping file's fields")])


def _compile(expr: Any, where: str, what: str) -> Any:
    if not isinstance(expr, str):
        raise _bad(where, f"{what} must be a JMESPath expression (a string)")
    try:
        return jmespath.compile(expr)
    except JMESPathError as exc:
        raise _bad(where, f"{what} `{expr}` is not JMESPath: {exc}") from None


def _search(expr: Any, doc: Any) -> Any:
    """``expr`` over an input's document; None when it cannot be evaluated there (a function
    given the wrong type: the input is the platform's, or an attacker's)."""
    try:
        return expr.search(doc)
    except JMESPathError:
        return None


def _holds(expr: Any, doc: Any) -> bool:
    """A ``when``: JMESPath's truth (null, false, "", [] and {} are false)."""
    return _search(expr, doc) not in (None, False, "", [], {})


class _Id:
    """An object id from a document: parts joined by the separator."""

    def __init__(self, parts: Any, sep: str, vars: dict[str, str], where: str,
                 what: str) -> None:
        if not isinstance(parts, list) or not parts:
            raise _bad(where, f"{what} must be a non-empty list of parts")
        self.sep = sep
        self.parts: list[tuple[str, Any]] = []
        for p in parts:
            if isinstance(p, str) and p.startswith("{") and p.endswith("}"):
                name = p[1:-1]
                if name not in vars:
                    raise _bad(where, f"{what}: `{p}` names no entry of [vars]")
                self.parts.append(("const", vars[name]))
            else:
                self.parts.append(("expr", _compile(p, where, f"a part of {what}")))

    def build(self, doc: Any) -> str:
        """The id; :class:`Unmapped` when a part is missing (an expression that finds
        nothing), is not a name, or holds the separator (two objects would share the id). A
        list expression that finds an empty list gives no part (a catalog's parents)."""
        out: list[str] = []
        for kind, v in self.parts:
            if kind == "const":
                out.append(v)
                continue
            got = _search(v, doc)
            if got is None:
                raise Unmapped(f"the input has no `{v.expression}` here")
            for x in got if isinstance(got, list) else [got]:
                if not isinstance(x, str | int) or isinstance(x, bool) or x == "":
                    raise Unmapped(f"the input's `{v.expression}` is not a name here")
                x = str(x)
                if self.sep and self.sep in x:
                    raise Unmapped(f"the name `{x}` (`{v.expression}`) holds the separator "
                                   f"`{self.sep}`: its object id would be ambiguous")
                out.append(x)
        if not out:
            raise Unmapped("the object id has no part here")
        return self.sep.join(out)


#: what one document (or item) asks: the (operation, object) pairs, all needed; None when the
#: mapping denies it (``allow = false``); the reason the input cannot give it
_Unit = list[tuple[str, str]] | None | Unmapped


@dataclass
class _Entry:
    """One case of an operation's entry: what is decided for a document."""

    when: Any = None
    allow: bool | None = None
    operation: str | None = None
    id: _Id | None = None  # parts over the input
    on: _Id | None = None  # parts over the document
    items: Any = None  # JMESPath over the document: the list of items, each decided
    also: list[_Entry] = field(default_factory=list)


class _Groups:
    """``[groups]``: the subject's groups (or roles) as the platform sends them, checked
    against the store's.

    grantlog decides from its store (it has no facts that hold for one request), so a
    platform's list is used as a check: the groups that *count* (``counts`` holds: a group
    that holds a role, a role that holds a privilege) must be the same in the request and in
    the store (``store``); then the store's decision is the one the platform's groups would
    give, and it is answered. When they differ, every answer of the request is a deny (no
    batch index, no row, every mask ``NULL``) whose reason names the groups to record or
    remove."""

    KEYS = ("input", "id", "store", "counts")

    def __init__(self, data: Any, vars: dict[str, str], where: str) -> None:
        if not isinstance(data, dict) or set(data) != set(self.KEYS) or not all(
                isinstance(v, str) for v in data.values()):
            raise _bad(where, "[groups] needs exactly `input` (JMESPath), `id` (a template), "
                       "`store` and `counts` (goals)")
        self.input = _compile(data["input"], where, "groups.input")
        self.id = data["id"]
        for _, name, _, _ in string.Formatter().parse(self.id):
            if name is not None and name != "name" and name not in vars:
                raise _bad(where, f"groups.id: `{{{name}}}` is neither `{{name}}` nor an "
                           "entry of [vars]")
        self.vars = vars
        self.store, self.counts = data["store"], data["counts"]
        if "{subject}" not in self.store:
            raise _bad(where, "groups.store must name the subject as `{subject}`")
        if "{group}" not in self.counts:
            raise _bad(where, "groups.counts must name the group as `{group}`")
        #: reasons (or None) by (revision, subject, the platform's groups)
        self._seen: dict[tuple[Any, ...], str | None] = {}

    def reason(self, subject: str, inp: Any, reasoner: Any) -> str | None:
        """Why the request's groups cannot be decided on (None: they agree with the store)."""
        got = _search(self.input, inp)
        got = [] if got is None else got
        if not isinstance(got, list) or not all(isinstance(g, str) and g for g in got):
            return f"the input's groups (`{self.input.expression}`) are not a list of names"
        names = tuple(sorted(set(got)))
        key = (reasoner.revision, subject, names)
        if key in self._seen:
            return self._seen[key]
        try:
            said = {string.Formatter().vformat(self.id, (), self.vars | {"name": n})
                    for n in names}
            rows = reasoner.query(self.store.replace("{subject}", quote(subject)))
            stored = set()
            for row in rows:
                if len(row) != 1:
                    raise _bad("[groups]", f"groups.store `{self.store}` must have one "
                               "named variable")
                stored.add(str(next(iter(row.values()))))
            counted = {g for g in said | stored
                       if reasoner.ask(self.counts.replace("{group}", quote(g)))}
        except GrantlogError as exc:
            return _first(exc)
        except Exception as exc:  # fail closed, whatever went wrong
            return f"internal-error: {type(exc).__name__}: {exc}"
        platform, store = sorted((said - stored) & counted), sorted((stored - said) & counted)
        why = None
        if platform or store:
            parts = ([f"only the platform: {', '.join(platform)}"] if platform else []) + (
                [f"only the store: {', '.join(store)}"] if store else [])
            why = (f"the groups of {subject} differ between the platform and the store "
                   f"({'; '.join(parts)}); grantlog decides from the store: record the "
                   "membership or remove it")
        if len(self._seen) >= 10_000:
            self._seen.clear()
        self._seen[key] = why
        return why


class Mapping:
    """One platform's mapping, loaded from its TOML file."""

    def __init__(self, data: dict[str, Any], where: str) -> None:
        self.where = where
        known = {"name", "description", "separator", "vars", "input", "resource", "operations",
                 "secondaries", "groups", "endpoints", "row_filters", "column_masks"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise _bad(where, f"unknown keys: {', '.join(unknown)}")
        self.name = str(data.get("name") or Path(where).stem)
        sep = data.get("separator", ".")
        vars_ = data.get("vars", {})
        if not isinstance(sep, str) or not isinstance(vars_, dict) or not all(
                isinstance(v, str) for v in vars_.values()):
            raise _bad(where, "`separator` is a string and [vars] holds strings")
        self.sep, self.vars = sep, vars_
        inp = data.get("input")
        if not isinstance(inp, dict) or "subject" not in inp or "operation" not in inp:
            raise _bad(where, "[input] needs `subject` and `operation`")
        unknown = sorted(set(inp) - {"subject", "operation", "resource", "batch", "all",
                                     "secondaries"})
        if unknown:
            raise _bad(where, f"[input] has unknown keys: {', '.join(unknown)}")
        self.subject = _compile(inp["subject"], where, "input.subject")
        self.operation = _compile(inp["operation"], where, "input.operation")
        self.one = _compile(inp["resource"], where, "input.resource") \
            if "resource" in inp else None
        self.batch = _compile(inp["batch"], where, "input.batch") if "batch" in inp else None
        self.all = _compile(inp["all"], where, "input.all") if "all" in inp else None
        self.secondary = _compile(inp["secondaries"], where, "input.secondaries") \
            if "secondaries" in inp else None
        self.kinds: list[tuple[Any, _Id]] = []
        for i, r in enumerate(data.get("resource", [])):
            if not isinstance(r, dict) or set(r) != {"when", "id"}:
                raise _bad(where, f"resource[{i}] needs exactly `when` and `id`")
            self.kinds.append((_compile(r["when"], where, f"resource[{i}].when"),
                               _Id(r["id"], sep, vars_, where, f"resource[{i}].id")))
        ops, secs = data.get("operations", {}), data.get("secondaries", {})
        if not isinstance(ops, dict) or not isinstance(secs, dict):
            raise _bad(where, "[operations] and [secondaries] map operation names to entries")
        self.ops = {str(k): self._cases(v, f"operations.{k}") for k, v in ops.items()}
        self.secondaries = {str(k): self._cases(v, f"secondaries.{k}")
                            for k, v in secs.items()}
        self.groups = _Groups(data["groups"], vars_, where) if "groups" in data else None
        eps = data.get("endpoints", {})
        if not isinstance(eps, dict) or not eps or not all(
                v in KINDS for v in eps.values()):
            raise _bad(where, f"[endpoints] maps Data API paths to one of {', '.join(KINDS)}")
        self.endpoints: dict[str, str] = {str(k).strip("/"): v for k, v in eps.items()}
        rf, cm = data.get("row_filters", {}), data.get("column_masks", {})
        self.row_relation = str(rf.get("relation", "row_visible"))
        self.row_dialect = str(rf.get("dialect", "trino"))
        self.mask_relation = str(cm.get("relation", "column_mask"))
        self.mask_dialect = str(cm.get("dialect", "trino"))
        self.mask_column = _compile(cm.get("column", "column.columnName"), where,
                                    "column_masks.column")
        self.mask_type = _compile(cm.get("type", "column.columnType"), where,
                                  "column_masks.type")
        #: deny reasons by (revision, subject, operation, resource)
        self._reasons: dict[tuple[Any, ...], str] = {}

    # -- reading the mapping -------------------------------------------------------------------

    def _cases(self, v: Any, what: str) -> list[_Entry]:
        """An entry, or a list of them (cases, each with a ``when`` but the last)."""
        if isinstance(v, list):
            if not v:
                raise _bad(self.where, f"{what} is an empty list of cases")
            return [self._entry(c, f"{what}[{i}]", case=True) for i, c in enumerate(v)]
        return [self._entry(v, what, case=True)]

    def _entry(self, v: Any, what: str, case: bool) -> _Entry:
        if isinstance(v, str):
            return _Entry(operation=v)
        if not isinstance(v, dict):
            raise _bad(self.where, f"{what} is an operation name, a table ({', '.join(ENTRY_KEYS)}"
                       ") or a list of tables")
        unknown = sorted(set(v) - set(ENTRY_KEYS))
        if unknown:
            raise _bad(self.where, f"{what} has unknown keys: {', '.join(unknown)} (an entry has "
                       f"{', '.join(ENTRY_KEYS)})")
        if not case and "when" in v:
            raise _bad(self.where, f"{what}: `when` chooses among cases; `also` checks all")
        if ("allow" in v) == ("operation" in v):
            raise _bad(self.where, f"{what} needs either `operation` or `allow`")
        if "id" in v and "on" in v:
            raise _bad(self.where, f"{what} has both `id` (over the input) and `on` (over the "
                       "document): one names the object")
        e = _Entry()
        if "when" in v:
            e.when = _compile(v["when"], self.where, f"{what}.when")
        if "allow" in v:
            if not isinstance(v["allow"], bool) or set(v) - {"allow", "when"}:
                raise _bad(self.where, f"{what}: `allow` is true or false, with nothing else "
                           "but `when`")
            e.allow = v["allow"]
            return e
        if not isinstance(v["operation"], str) or not v["operation"]:
            raise _bad(self.where, f"{what}.operation is an operation name")
        e.operation = v["operation"]
        if "id" in v:
            e.id = _Id(v["id"], self.sep, self.vars, self.where, f"{what}.id")
        if "on" in v:
            e.on = _Id(v["on"], self.sep, self.vars, self.where, f"{what}.on")
        if "items" in v:
            e.items = _compile(v["items"], self.where, f"{what}.items")
        also = v.get("also", [])
        for i, a in enumerate(also if isinstance(also, list) else [also]):
            e.also.append(self._entry(a, f"{what}.also[{i}]", case=False))
        return e

    @staticmethod
    def load(name_or_path: str) -> Mapping:
        """A shipped mapping by name (``trino``) or a mapping file."""
        path = HERE / f"{name_or_path}.toml" if name_or_path in shipped() else \
            Path(name_or_path)
        data = read_toml(path, "bad-mapping", f"the mapping `{name_or_path}` (shipped: "
                         f"{', '.join(shipped())})", "see docs/opa.md for the mapping file")
        return Mapping(data, str(path))

    # -- reading the input ---------------------------------------------------------------------

    def _str(self, expr: Any, doc: Any, what: str) -> str:
        got = _search(expr, doc)
        if not isinstance(got, str) or not got:
            raise Unmapped(f"the input has no {what} (`{expr.expression}`)")
        return got

    def resource_id(self, doc: Any) -> str:
        """The object id of one resource document."""
        for when, ident in self.kinds:
            if _holds(when, doc):
                return ident.build(doc)
        raise Unmapped("no [[resource]] entry of the mapping matches the resource")

    def _op(self, inp: Any) -> tuple[str, list[_Entry]]:
        name = self._str(self.operation, inp, "operation")
        cases = self.ops.get(name)
        if cases is None:
            raise Unmapped(f"the mapping `{self.name}` does not map the operation `{name}`")
        return name, cases

    @staticmethod
    def _pick(cases: list[_Entry], doc: Any, what: str) -> _Entry:
        for c in cases:
            if c.when is None or _holds(c.when, doc):
                return c
        raise Unmapped(f"no case of {what} holds for the resource")

    def _checks(self, e: _Entry, inp: Any, doc: Any) -> list[tuple[str, str]] | None:
        """The (operation, object) pairs entry ``e`` asks of ``doc``, all needed; None when
        the mapping denies (``allow = false``)."""
        if e.allow is not None:
            return [] if e.allow else None
        assert e.operation is not None
        resource = e.id.build(inp) if e.id is not None else \
            e.on.build(doc) if e.on is not None else self.resource_id(doc)
        out = [(e.operation, resource)]
        for a in e.also:
            more = self._checks(a, inp, doc)
            if more is None:
                return None
            out += more
        return out

    def _units(self, e: _Entry, inp: Any, doc: Any) -> list[_Unit]:
        """What ``doc`` asks under ``e``: one unit, or one per item with ``items``; a unit
        the input cannot give is the :class:`Unmapped` saying why."""
        if e.items is None:
            docs = [doc]
        else:
            listed = _search(e.items, doc)
            if not isinstance(listed, list) or not isinstance(doc, dict):
                raise Unmapped(f"the resource has no list `{e.items.expression}`")
            docs = [doc | {"item": x} for x in listed]
        out: list[_Unit] = []
        for d in docs:
            try:
                out.append(self._checks(e, inp, d))
            except Unmapped as exc:
                out.append(exc)
        return out

    # -- answers -------------------------------------------------------------------------------

    def answer(self, kind: str, inp: Any, reasoner: Any) -> Answer:
        """The plugin's result for ``kind`` (:data:`KINDS`) on input document ``inp``."""
        why = self._groups_reason(inp, reasoner)
        if kind in ("allow", "allow_object"):
            if why is not None:
                ans = Answer(False, why)
            else:
                docs = [self._doc(inp)]
                if self.all is not None:
                    listed = _search(self.all, inp)
                    docs = listed if isinstance(listed, list) and listed else [None]
                ans = self._allow(inp, docs, reasoner)
            if kind == "allow_object":
                ans.result = {"allow": ans.result} | (
                    {"reason": ans.reason} if ans.reason else {})
            return ans
        if kind == "batch":
            if why is not None:
                return Answer([], why)
            return self._batch(inp, reasoner)
        if kind == "row_filters":
            if why is not None:
                return Answer([{"expression": "FALSE"}], why)
            return self._row_filters(inp, reasoner)
        if kind == "column_mask":
            if why is not None:
                return Answer({"expression": "NULL"}, why)
            return self._mask(inp, self._doc(inp), reasoner)
        assert kind == "batch_column_masks"
        out, detail = [], {}
        for i, doc in enumerate(self._listed(inp) or []):
            one = Answer({"expression": "NULL"}, why) if why is not None else \
                self._mask(inp, doc, reasoner)
            if one.result is not None:
                out.append({"index": i, "viewExpression": one.result})
                detail[str(i)] = one.detail
        return Answer(out, why, [], detail)

    def _groups_reason(self, inp: Any, reasoner: Any) -> str | None:
        if self.groups is None:
            return None
        try:
            subject = self._str(self.subject, inp, "subject")
        except Unmapped:
            return None  # the answer says so itself
        return self.groups.reason(subject, inp, reasoner)

    def _doc(self, inp: Any) -> Any:
        """The input's one resource document (``input.resource``)."""
        return _search(self.one, inp) if self.one is not None else None

    def _listed(self, inp: Any) -> list[Any] | None:
        """The input's list of resource documents (``input.batch``), or None."""
        got = _search(self.batch, inp) if self.batch is not None else None
        return got if isinstance(got, list) else None

    def _secondary_docs(self, inp: Any) -> list[Any]:
        """The input's secondary documents (``input.secondaries``: a list, or one)."""
        if self.secondary is None:
            return []
        got = _search(self.secondary, inp)
        return [] if got is None or got == [] else got if isinstance(got, list) else [got]

    def _allow(self, inp: Any, docs: list[Any], reasoner: Any) -> Answer:
        """Allowed when every document's checks (and every secondary's) are (fail closed)."""
        decided: dict[tuple[str, str], Decided] = {}
        try:
            subject = self._str(self.subject, inp, "subject")
            name, cases = self._op(inp)
            units: list[_Unit] = []
            for doc in docs:
                e = self._pick(cases, doc, f"operations.{name}")
                got = self._units(e, inp, doc)
                if not got:
                    raise Unmapped(f"the resource's `{e.items.expression}` lists nothing")
                units += got
            units += self._secondary_units(inp, name)
        except Unmapped as exc:
            return Answer(False, str(exc))
        for unit in units:
            if isinstance(unit, Unmapped):
                return Answer(False, str(unit), list(decided.values()))
            if unit is None:
                return Answer(False, "the mapping denies this operation",
                              list(decided.values()))
            for op, resource in unit:
                d = self._decide(reasoner, decided, subject, op, resource)
                if not d.decision.allowed:
                    why = d.error or self._why_not(reasoner, subject, op, resource)
                    return Answer(False, f"{subject} may not {op} {resource}" + (
                        f": {why}" if why else ""), list(decided.values()))
        return Answer(True, None, list(decided.values()))

    def _secondary_units(self, inp: Any, name: str) -> list[_Unit]:
        docs = self._secondary_docs(inp)
        if not docs:
            return []
        cases = self.secondaries.get(name)
        if cases is None:
            raise Unmapped(f"the mapping `{self.name}` does not say how to decide the "
                           f"secondaries of `{name}` ([secondaries])")
        units: list[_Unit] = []
        for doc in docs:
            units += self._units(self._pick(cases, doc, f"secondaries.{name}"), inp, doc)
        return units

    def _batch(self, inp: Any, reasoner: Any) -> Answer:
        """The positions allowed: of the documents, or of their items (an entry with
        ``items``: FilterColumns' columns), counted across the documents in order."""
        listed = self._listed(inp)
        if listed is None:
            return Answer([], "the input has no list of resources to filter")
        decided: dict[tuple[str, str], Decided] = {}
        try:
            subject = self._str(self.subject, inp, "subject")
            name, cases = self._op(inp)
            gate = self._secondary_units(inp, name)
        except Unmapped as exc:
            return Answer([], str(exc))
        for unit in gate:
            why = self._unit_denied(reasoner, decided, subject, unit)
            if why is not None:
                return Answer([], f"a secondary resource: {why}", list(decided.values()))
        allowed: list[int] = []
        reasons: list[str] = []
        n = 0
        for i, doc in enumerate(listed):
            try:
                units = self._units(self._pick(cases, doc, f"operations.{name}"), inp, doc)
            except Unmapped as exc:  # no case, or no list of items: nothing of it is allowed
                reasons.append(f"[{i}] {exc}")
                n += 1
                continue
            for unit in units:
                why = self._unit_denied(reasoner, decided, subject, unit)
                if why is None:
                    allowed.append(n)
                else:
                    reasons.append(f"[{n}] {why}")
                n += 1
        return Answer(allowed, "; ".join(reasons[:10]) or None, list(decided.values()))

    def _unit_denied(self, reasoner: Any, decided: dict[tuple[str, str], Decided],
                     subject: str, unit: _Unit) -> str | None:
        """Why the unit is denied (without a why-not: batches are large), or None."""
        if isinstance(unit, Unmapped):
            return str(unit)
        if unit is None:
            return "the mapping denies this operation"
        for op, resource in unit:
            d = self._decide(reasoner, decided, subject, op, resource)
            if not d.decision.allowed:
                return f"{subject} may not {op} {resource}" + (f": {d.error}" if d.error
                                                               else "")
        return None

    @staticmethod
    def _decide(reasoner: Any, decided: dict[tuple[str, str], Decided], subject: str,
                operation: str, resource: str) -> Decided:
        """One check, once per request (FilterColumns asks the same table for each column)."""
        d = decided.get((operation, resource))
        if d is None:
            got, failure = decide_or_deny(reasoner, subject, operation, resource)
            d = decided[(operation, resource)] = Decided(
                subject, operation, resource, got, str(failure) if failure else None)
        return d

    def _why_not(self, reasoner: Any, subject: str, operation: str, resource: str) -> str:
        """A deny's why-not summary (engine/answer/decide.py), kept per revision (platforms
        ask the same question again and again: a query's every statement re-checks its
        tables)."""
        key = (reasoner.revision, subject, operation, resource)
        got = self._reasons.get(key)
        if got is None:
            if len(self._reasons) >= 10_000:
                self._reasons.clear()
            got = self._reasons[key] = deny_reason(reasoner, subject, operation, resource)
        return got

    def _row_filters(self, inp: Any, reasoner: Any) -> Answer:
        from grantlog.filters import row_filter_sql

        try:
            subject = self._str(self.subject, inp, "subject")
            table = self.resource_id(self._doc(inp))
            f = reasoner.row_filter(subject, table, self.row_relation)
            sql = row_filter_sql(f, self.row_dialect)
        except Unmapped as exc:  # fail closed: no row passes
            return Answer([{"expression": "FALSE"}], str(exc))
        except GrantlogError as exc:
            return Answer([{"expression": "FALSE"}], _first(exc))
        detail = {"subject": subject, "table": table, "condition": f.to_dict()["condition"],
                  "revision": f.revision}
        if f.cond == ("true",):
            return Answer([], None, [], detail)
        return Answer([{"expression": sql}], None, [], detail | {"sql": sql})

    def _mask(self, inp: Any, doc: Any, reasoner: Any) -> Answer:
        from grantlog.filters import mask_sql, strongest_mask

        try:
            subject = self._str(self.subject, inp, "subject")
            table = self.resource_id(doc)
            column = self._str(self.mask_column, doc, "column name")
            typ = _search(self.mask_type, doc)
            rows = reasoner.query(f"{self.mask_relation}({quote(subject)}, {quote(table)}, "
                                  f"{quote(column)}, M)")
            mask = strongest_mask(b["M"] for b in rows)
        except Unmapped as exc:  # fail closed: the column is hidden
            return Answer({"expression": "NULL"}, str(exc))
        except GrantlogError as exc:
            return Answer({"expression": "NULL"}, _first(exc))
        detail = {"subject": subject, "table": table, "column": column, "mask": mask}
        if mask is None:
            return Answer(None, None, [], detail)
        sql = mask_sql(mask, column, self.mask_dialect, typ if isinstance(typ, str) else None)
        return Answer({"expression": sql}, None, [], detail | {"sql": sql})


def _first(exc: GrantlogError) -> str:
    d = exc.diagnostics[0] if exc.diagnostics else None
    return f"{d.code}: {d.message}" if d is not None else str(exc)
