"""OPA's Data API for the platforms whose authorizer plugins call OPA (Trino, Apache Polaris).

A platform's plugin POSTs ``{"input": ...}`` to ``/v1/data/<path>`` and reads ``{"result":
...}``. A *mapping* (a TOML file: grantlog/interop/trino.toml, polaris.toml; docs/opa.md says
how to write one) tells, without code, how the plugin's input becomes grantlog questions:

* ``[input]``: JMESPath expressions for the subject, the operation and where the resource
  documents are (``resource``: one; ``batch``: a list, each answered; ``all``: a list that must
  all be allowed);
* ``[[resource]]``: how a resource document becomes an object id: the first entry whose
  ``when`` (JMESPath) holds; ``id`` lists the id's parts, each ``{var}`` (from ``[vars]``) or a
  JMESPath expression over the document (a list expression gives several parts), joined by
  ``separator``;
* ``[operations]``: the platform's operation → a grantlog operation, or ``{operation, id}`` to
  decide another object (``id`` parts as above, over the input), or ``{allow = true|false}``;
  an operation not listed is denied, saying so;
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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError

from grantlog.engine.explain import Limits
from grantlog.grammar.diagnostics import GrantlogError, Span, error
from grantlog.tomlfile import read_toml

KINDS = ("allow", "allow_object", "batch", "row_filters", "column_mask", "batch_column_masks")
HERE = Path(__file__).resolve().parent


def shipped() -> list[str]:
    """The names of the shipped mappings (grantlog/interop/*.toml)."""
    return sorted(p.stem for p in HERE.glob("*.toml"))


class Unmapped(Exception):
    """The input does not say what the mapping needs (a deny, with this as its reason)."""


@dataclass
class Decision:
    subject: str
    operation: str
    resource: str
    allowed: bool
    reasons: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass
class Answer:
    result: Any
    reason: str | None = None
    decisions: list[Decision] = field(default_factory=list)
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
        out: list[str] = []
        for kind, v in self.parts:
            if kind == "const":
                out.append(v)
                continue
            got = v.search(doc)
            values = got if isinstance(got, list) else [got]
            if got is None or not values or any(
                    not isinstance(x, str | int) or isinstance(x, bool) or x == ""
                    for x in values):
                raise Unmapped(f"the input has no `{v.expression}` here")
            out += [str(x) for x in values]
        return self.sep.join(out)


@dataclass
class _Op:
    operation: str | None = None
    id: _Id | None = None
    allow: bool | None = None


class Mapping:
    """One platform's mapping, loaded from its TOML file."""

    def __init__(self, data: dict[str, Any], where: str) -> None:
        self.where = where
        known = {"name", "description", "separator", "vars", "input", "resource", "operations",
                 "endpoints", "row_filters", "column_masks"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise _bad(where, f"unknown keys: {', '.join(unknown)}")
        self.name = str(data.get("name") or Path(where).stem)
        sep = data.get("separator", ".")
        vars_ = data.get("vars", {})
        if not isinstance(sep, str) or not isinstance(vars_, dict) or not all(
                isinstance(v, str) for v in vars_.values()):
            raise _bad(where, "`separator` is a string and [vars] holds strings")
        inp = data.get("input")
        if not isinstance(inp, dict) or "subject" not in inp or "operation" not in inp:
            raise _bad(where, "[input] needs `subject` and `operation`")
        self.subject = _compile(inp["subject"], where, "input.subject")
        self.operation = _compile(inp["operation"], where, "input.operation")
        self.one = _compile(inp["resource"], where, "input.resource") \
            if "resource" in inp else None
        self.batch = _compile(inp["batch"], where, "input.batch") if "batch" in inp else None
        self.all = _compile(inp["all"], where, "input.all") if "all" in inp else None
        self.kinds: list[tuple[Any, _Id]] = []
        for i, r in enumerate(data.get("resource", [])):
            if not isinstance(r, dict) or set(r) != {"when", "id"}:
                raise _bad(where, f"resource[{i}] needs exactly `when` and `id`")
            self.kinds.append((_compile(r["when"], where, f"resource[{i}].when"),
                               _Id(r["id"], sep, vars_, where, f"resource[{i}].id")))
        self.ops: dict[str, _Op] = {}
        for name, v in data.get("operations", {}).items():
            if isinstance(v, str):
                self.ops[name] = _Op(operation=v)
            elif isinstance(v, dict) and set(v) == {"allow"} and isinstance(v["allow"], bool):
                self.ops[name] = _Op(allow=v["allow"])
            elif isinstance(v, dict) and set(v) == {"operation", "id"}:
                self.ops[name] = _Op(operation=str(v["operation"]),
                                     id=_Id(v["id"], sep, vars_, where,
                                            f"operations.{name}.id"))
            else:
                raise _bad(where, f"operations.{name} is an operation name, "
                           "{operation, id} or {allow = true|false}")
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
        got = expr.search(doc)
        if not isinstance(got, str) or not got:
            raise Unmapped(f"the input has no {what} (`{expr.expression}`)")
        return got

    def resource_id(self, doc: Any) -> str:
        """The object id of one resource document."""
        for when, ident in self.kinds:
            if when.search(doc):
                return ident.build(doc)
        raise Unmapped("no [[resource]] entry of the mapping matches the resource")

    def question(self, inp: Any, doc: Any) -> tuple[str, str, str] | bool:
        """(subject, operation, resource) for one resource document, or the constant answer
        of an operation mapped to ``allow``."""
        subject = self._str(self.subject, inp, "subject")
        op_name = self._str(self.operation, inp, "operation")
        op = self.ops.get(op_name)
        if op is None:
            raise Unmapped(f"the mapping `{self.name}` does not map the operation `{op_name}`")
        if op.allow is not None:
            return op.allow
        assert op.operation is not None
        resource = op.id.build(inp) if op.id is not None else self.resource_id(doc)
        return subject, op.operation, resource

    # -- answers -------------------------------------------------------------------------------

    def answer(self, kind: str, inp: Any, reasoner: Any) -> Answer:
        """The plugin's result for ``kind`` (:data:`KINDS`) on input document ``inp``."""
        if kind in ("allow", "allow_object"):
            docs = [self._doc(inp)]
            if self.all is not None:
                listed = self.all.search(inp)
                docs = listed if isinstance(listed, list) and listed else [None]
            ans = self._all(inp, docs, reasoner)
            if kind == "allow_object":
                ans.result = {"allow": ans.result} | (
                    {"reason": ans.reason} if ans.reason else {})
            return ans
        if kind == "batch":
            listed = self._listed(inp)
            if listed is None:
                return Answer([], "the input has no list of resources to filter")
            allowed, decisions, reasons = [], [], []
            for i, doc in enumerate(listed):
                one = self._all(inp, [doc], reasoner, explain=False)
                decisions += one.decisions
                if one.result:
                    allowed.append(i)
                elif one.reason:
                    reasons.append(f"[{i}] {one.reason}")
            return Answer(allowed, "; ".join(reasons[:10]) or None, decisions)
        if kind == "row_filters":
            return self._row_filters(inp, reasoner)
        if kind == "column_mask":
            return self._mask(inp, self._doc(inp), reasoner)
        assert kind == "batch_column_masks"
        out, detail = [], {}
        for i, doc in enumerate(self._listed(inp) or []):
            one = self._mask(inp, doc, reasoner)
            if one.result is not None:
                out.append({"index": i, "viewExpression": one.result})
                detail[str(i)] = one.detail
        return Answer(out, None, [], detail)

    def _doc(self, inp: Any) -> Any:
        """The input's one resource document (``input.resource``)."""
        return self.one.search(inp) if self.one is not None else None

    def _listed(self, inp: Any) -> list[Any] | None:
        """The input's list of resource documents (``input.batch``), or None."""
        got = self.batch.search(inp) if self.batch is not None else None
        return got if isinstance(got, list) else None

    def _all(self, inp: Any, docs: list[Any], reasoner: Any, explain: bool = True) -> Answer:
        """Allowed when every document's question is (fail closed)."""
        decisions: list[Decision] = []
        for doc in docs:
            try:
                q = self.question(inp, doc)
            except Unmapped as exc:
                return Answer(False, str(exc), decisions)
            if q is True or q is False:
                if not q:
                    return Answer(False, "the mapping denies this operation", decisions)
                continue
            d = _decide(reasoner, *q)
            decisions.append(d)
            if not d.allowed:
                why = d.error or (self._why_not(reasoner, *q) if explain else "")
                return Answer(False, f"{q[0]} may not {q[1]} {q[2]}" + (f": {why}" if why
                                                                        else ""), decisions)
        return Answer(True, None, decisions)

    def _why_not(self, reasoner: Any, subject: str, operation: str, resource: str) -> str:
        """:func:`why_not`, kept per revision (platforms ask the same question again and
        again: a query's every statement re-checks its tables)."""
        key = (reasoner.revision, subject, operation, resource)
        got = self._reasons.get(key)
        if got is None:
            if len(self._reasons) >= 10_000:
                self._reasons.clear()
            got = self._reasons[key] = why_not(reasoner, subject, operation, resource)
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
            typ = self.mask_type.search(doc)
            rows = reasoner.query(f"{self.mask_relation}({_q(subject)}, {_q(table)}, "
                                  f"{_q(column)}, M)")
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


def _q(v: str) -> str:
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _first(exc: GrantlogError) -> str:
    d = exc.diagnostics[0] if exc.diagnostics else None
    return f"{d.code}: {d.message}" if d is not None else str(exc)


#: a why-not summary's reach: the rules that could allow, and what each needs, a few levels down
#: (a deny's reason must cost about what the check did, not a whole why-not tree's search)
REASON_LIMITS = Limits(depth=3, alternatives=3, nodes=30, search=500, proofs=False)
_OK = ("holds", "fact", "rule", "comparison")


def why_not(reasoner: Any, subject: str, operation: str, resource: str) -> str:
    """A deny's why-not summary: for each rule that could have allowed it (at most three),
    the chain of first failed conditions down to the deepest one explained."""
    goal = f"{reasoner.program.decision}({_q(subject)}, {_q(operation)}, {_q(resource)})"
    try:
        tree = reasoner.explain(goal, REASON_LIMITS).why_not
    except Exception:  # the reason is optional: never let it turn a deny into an error
        return ""
    if tree is None:
        return ""
    alts = [c for c in tree.children if c.kind == "alternative"] or [tree]
    out = []
    for alt in alts[:3]:
        chain: list[str] = []
        node, last = alt, None
        while True:
            failed = next((c for c in node.children if c.kind not in _OK), None)
            if failed is None:
                break
            chain.append(failed.text)
            last = failed
            subs = [c for c in failed.children if c.kind == "alternative"]
            if len(subs) != 1:  # several rules could make it hold: stop at it
                break
            node = subs[0]
        name = f"rule {alt.rule.name}" if alt.rule is not None else "the goal"
        if last is None:
            out.append(f"{name}: {alt.reason()}")
        else:
            out.append(f"{name} needs " + ", which needs ".join(chain) + f": {last.reason()}")
    more = f" (and {len(alts) - 3} more rules)" if len(alts) > 3 else ""
    return "; ".join(out) + more if out else "no rule allows it"


def _decide(reasoner: Any, subject: str, operation: str, resource: str) -> Decision:
    """One check, failing closed."""
    try:
        d = reasoner.check(subject, operation, resource)
    except GrantlogError as exc:
        return Decision(subject, operation, resource, False, [], _first(exc))
    except Exception as exc:  # fail closed, whatever went wrong
        return Decision(subject, operation, resource, False, [],
                        f"internal-error: {type(exc).__name__}: {exc}")
    return Decision(subject, operation, resource, d.allowed, list(d.reasons))
