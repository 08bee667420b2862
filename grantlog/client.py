"""``grantlog.Client``: the decision service (`grantlog serve`) behind the Reasoner's methods.

>>> c = grantlog.Client("http://127.0.0.1:8181", token="...")   # doctest: +SKIP
>>> c.check("alice", "load_table", "m1.lakehouse.sales.orders")  # doctest: +SKIP
RemoteDecision(allowed=True, reasons=(...), revision=1, warnings=())

``check``, ``query``, ``ask``, ``list``, ``who``, ``explain``, ``insert``, ``retract``,
``transaction`` and ``watch`` answer as an embedded :class:`grantlog.Reasoner` does (the same
``Decision``, as :class:`RemoteDecision` with the service's ``warnings``, ``Answers`` and
``Changes``), so application code can move between embedded and remote. The client remembers
the highest revision it wrote or saw and passes it as ``at_least_revision`` on its reads
(read-your-writes across the service's workers). Errors the server reports come back as
:class:`GrantlogError` with the server's diagnostics (:class:`RevisionConflict` for a
compare-and-set conflict); a service that cannot be reached is a ``service-unavailable`` error
and an answer that is not the service's JSON (a proxy's HTML error page) an ``http-STATUS`` or
``bad-response`` one, from every method. The URL may carry a path prefix
(``https://gw.example/grantlog``). Needs ``httpx`` (``pip install 'grantlog[client]'``).

A constant no rule, declaration or fact of the served model mentions (``load_tabel``) is
denied and reported, as by the embedded Reasoner: the decision's (or an empty listing's)
``warnings`` hold an ``unknown-constant`` diagnostic; with ``strict=True`` (or a server
started with ``--strict``) the service answers 422 instead, raised as :class:`GrantlogError`
with that code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from grantlog.engine.core import arguments, ir
from grantlog.engine.core.results import (
    Answers,
    Change,
    Changes,
    Decision,
    RevisionConflict,
    Transaction,
    Writes,
)
from grantlog.engine.core.times import moment
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error, warning

_SERVER = Span("<server>", 0, 0, 0, 0)


def _read(path: str) -> str:
    """A rule file's text (``file-not-found`` when it cannot be read)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise GrantlogError([error("file-not-found", f"cannot read `{path}`: {reason}",
                                   Span(path, 0, 0, 0, 0))]) from None


def _excerpt(text: str) -> str:
    t = " ".join(text.split())
    return t if len(t) <= 200 else t[:200] + "..."


def _diagnostic(d: Any, severity: str = "error") -> Diagnostic:
    """One diagnostic of an answer (``{code, message, file?, line?, col?, help?, severity?}``)."""
    if not isinstance(d, dict):
        return error("bad-response", f"the answer holds `{d!r}` where a diagnostic belongs",
                     _SERVER)
    span = Span(d.get("file") or "<server>", d.get("line") or 0, d.get("col") or 0,
                d.get("end_line") or 0, d.get("end_col") or 0)
    make = warning if d.get("severity", severity) == "warning" else error
    return make(str(d.get("code", "error")), str(d.get("message", "")), span, d.get("help"))


def _diagnostics(body: Any, status: int) -> list[Diagnostic]:
    err = body.get("error", {}) if isinstance(body, dict) else {}
    err = err if isinstance(err, dict) else {}
    out = [_diagnostic(d) for d in err.get("diagnostics") or []]
    code = err.get("code", f"http-{status}")
    if not any(d.code == code for d in out):  # the error's own code is among them
        out.insert(0, error(code, err.get("message", f"the server answered {status}"),
                            _SERVER))
    return out


@dataclass(frozen=True, eq=False)
class RemoteDecision(Decision):
    """A :class:`Decision` from the service, with what the service reported about it in
    ``warnings`` (``unknown-constant`` for a constant no rule, declaration or fact mentions,
    as the embedded Reasoner reports it; in :meth:`Client.check_many`, the error that made an
    item fail closed). Equal to the embedded Reasoner's decision with the same ``allowed``
    and ``reasons``, as ``revision`` and ``warnings`` are not part of equality."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Decision):
            return NotImplemented
        return (self.allowed, self.reasons) == (other.allowed, other.reasons)

    def __hash__(self) -> int:
        return hash((self.allowed, self.reasons))


def _strict(strict: bool) -> dict[str, Any]:
    """A question's ``strict`` as the service takes it (sent only when true)."""
    if not isinstance(strict, bool):
        raise GrantlogError([error("bad-argument", f"`strict` must be True or False, not "
                                   f"`{strict!r}`", Span("<argument strict>", 0, 0, 0, 0))])
    return {"strict": True} if strict else {}


def _moment(at_revision: int | None, as_of: object, now: object = None) -> dict[str, Any]:
    """A question's ``at_revision``/``as_of`` as the service takes them (``as_of``: a
    ``datetime`` or ``date``, naive meaning UTC, an ISO 8601 string, or seconds since the
    epoch, sent as it is; the others as ISO strings); ``now`` (the moment facts' validity
    intervals are read at) as seconds."""
    if now is not None:
        return _moment(at_revision, as_of) | {"now": moment(now, "now")}
    arguments.optional_int("at_revision", at_revision, 0)
    if as_of is None:
        return {} if at_revision is None else {"at_revision": at_revision}
    if at_revision is not None:
        raise arguments.bad_argument("as_of", "None when `at_revision` is given", as_of,
                                     "ask at a revision or at a time, not both")
    moment(as_of)  # checked here, before any HTTP, as the service checks it
    if isinstance(as_of, str):
        return {"as_of": as_of}
    if isinstance(as_of, datetime):
        aware = as_of if as_of.tzinfo else as_of.replace(tzinfo=UTC)
        return {"as_of": aware.isoformat()}
    if isinstance(as_of, date):
        return {"as_of": as_of.isoformat()}
    return {"as_of": as_of}  # exact: a commit's own time


def _decision(item: dict[str, Any], revision: int) -> RemoteDecision:
    warnings = [_diagnostic(w, "warning") for w in item.get("warnings") or []]
    if isinstance(item.get("error"), dict):
        warnings.append(_diagnostic(item["error"]))
    return RemoteDecision(item["allowed"] is True, tuple(item.get("reasons") or ()), revision,
                          tuple(warnings))


class RemoteExplanation:
    """What :meth:`Client.explain` returns: ``holds``, ``to_dict()``, ``to_json()``, and the
    renderings (``render()``, ``to_dot()``, ``to_mermaid()``) fetched from the server."""

    def __init__(self, client: Client, goal: str, body: dict[str, Any],
                 moment: dict[str, Any] | None = None) -> None:
        self._client, self.goal = client, goal
        self._moment = moment or {}
        self.holds: bool = bool(body["holds"])
        self._tree: dict[str, Any] = body["explanation"]
        self.revision: int = int(body.get("revision", 0))

    def to_dict(self) -> dict[str, Any]:
        return self._tree

    def to_json(self) -> str:
        return json.dumps(self._tree, indent=2, ensure_ascii=False)

    def _fmt(self, fmt: str) -> str:
        got = self._client._post("/v1/explain", {"goal": self.goal, "format": fmt,
                                                 "at_least_revision": self.revision}
                                 | self._moment)
        return str(got["explanation"])

    def render(self) -> str:
        return self._fmt("text")

    def to_dot(self) -> str:
        return self._fmt("dot")

    def to_mermaid(self) -> str:
        return self._fmt("mermaid")


class Client(Writes):
    """A connection (keep-alive) to a grantlog decision service."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 30.0,
                 **httpx_options: Any) -> None:
        arguments.text("url", url, "e.g. `grantlog.Client(\"http://127.0.0.1:8181\")`")
        arguments.optional_text("token", token)
        try:
            import httpx
        except ImportError as exc:
            raise GrantlogError([error(
                "missing-dependency", f"the client needs httpx ({exc})",
                Span("<api>", 0, 0, 0, 0), "install it with `pip install 'grantlog[client]'`")
            ]) from None
        if timeout is not None and not isinstance(timeout, httpx.Timeout):
            arguments.number("timeout", timeout)  # seconds; None (none) or an httpx.Timeout
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        try:
            self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers,
                                      timeout=timeout, **httpx_options)
        except (httpx.InvalidURL, httpx.LocalProtocolError, ValueError) as exc:
            raise arguments.bad_argument("url", "an http(s) URL", url, f"{exc}") from None
        self._httpx = httpx
        #: the highest revision this client wrote or saw (its reads wait for it)
        self.revision = 0

    # -- plumbing -------------------------------------------------------------------------------

    def _raise(self, resp: Any, sources: dict[str, str] | None = None,
               expected: int | None = None) -> None:
        """Raise the error answer ``resp`` (read) as a :class:`GrantlogError`; a revision
        conflict as :class:`RevisionConflict` of ``expected`` (the ``if_revision`` sent) and
        the revision the server reports."""
        try:
            body = resp.json()
        except ValueError:
            raise GrantlogError([error(
                f"http-{resp.status_code}", f"the server answered {resp.status_code} with a "
                f"body that is not JSON: {_excerpt(resp.text)}", _SERVER)]) from None
        diags = _diagnostics(body, resp.status_code)
        if resp.status_code == 409 and diags[0].code == "revision-conflict" \
                and expected is not None:
            actual = body.get("revision") if isinstance(body, dict) else None
            raise RevisionConflict(expected, actual if isinstance(actual, int) else -1)
        raise GrantlogError(diags, sources or {})

    def _unavailable(self, exc: Exception) -> GrantlogError:
        return GrantlogError([error("service-unavailable", f"cannot reach the service: {exc}",
                                    Span(str(self._http.base_url), 0, 0, 0, 0))])

    @staticmethod
    def _unsendable(exc: Exception) -> GrantlogError:
        """A request no URL can carry (an argument far too long for a query string)."""
        return GrantlogError([error("bad-argument", f"the request cannot be sent: {exc}",
                                    ir.API_SPAN, "shorten the arguments")])

    def _json(self, text: str) -> dict[str, Any]:
        """A success's JSON object (``bad-response`` when it is not one)."""
        try:
            got = json.loads(text)
        except ValueError:
            got = None
        if not isinstance(got, dict):
            raise GrantlogError([error("bad-response", "the answer is not the service's JSON: "
                                       f"{_excerpt(text)}", _SERVER)])
        return got

    def _post(self, path: str, body: dict[str, Any], expected: int | None = None) -> Any:
        return self._call("POST", path, body, expected=expected)

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None,
              params: dict[str, str] | None = None,
              sources: dict[str, str] | None = None, expected: int | None = None) -> Any:
        try:
            resp = self._http.request(method, path, json=body, params=params)
        except self._httpx.HTTPError as exc:
            raise self._unavailable(exc) from None
        except self._httpx.InvalidURL as exc:
            raise self._unsendable(exc) from None
        if resp.status_code >= 400:
            self._raise(resp, sources, expected)
        return self._json(resp.text)

    def _lines(self, method: str, path: str, **options: Any) -> Iterator[dict[str, Any]]:
        """The JSON objects of an NDJSON answer as they arrive; a transport failure, before or
        during the stream, is ``service-unavailable``; an ``{"error": ...}`` line raises it."""
        try:
            with self._http.stream(method, path, **options) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    self._raise(resp)
                for line in resp.iter_lines():
                    if not line.strip():
                        continue
                    item = self._json(line)
                    if "error" in item:
                        raise GrantlogError(_diagnostics(item, resp.status_code))
                    yield item
        except self._httpx.HTTPError as exc:
            raise self._unavailable(exc) from None
        except self._httpx.InvalidURL as exc:
            raise self._unsendable(exc) from None

    def _seen(self, revision: int) -> None:
        if revision > self.revision:
            self.revision = revision

    def _at_least(self, at_least: int | None) -> int:
        return self.revision if at_least is None else at_least

    # -- reads ----------------------------------------------------------------------------------

    def check(self, subject: str, operation: str, resource: str,
              at_least: int | None = None, strict: bool = False, *,
              at_revision: int | None = None, as_of: object = None,
              now: object = None) -> RemoteDecision:
        """As ``Reasoner.check``; ``at_revision``/``as_of`` (also of ``check_many``,
        ``query``, ``list``, ``who``, ``explain``): as the facts stood then; ``now``: with
        the facts' validity intervals read at that moment (docs/history.md)."""
        arguments.question(arguments.DECIDED, (subject, operation, resource), at_least)
        got = self._post("/v1/check", {"subject": subject, "operation": operation,
                                       "resource": resource,
                                       "at_least_revision": self._at_least(at_least)}
                         | _strict(strict) | _moment(at_revision, as_of, now))
        if "error" in got:  # the service failed closed
            raise GrantlogError(_diagnostics(got, 200))
        self._seen(got["revision"])
        return _decision(got, got["revision"])

    def check_many(self, checks: Sequence[tuple[str, str, str]],
                   at_least: int | None = None, strict: bool = False, *,
                   at_revision: int | None = None, as_of: object = None, now: object = None,
                   ) -> list[RemoteDecision]:
        """Many decisions in one request (the server's batch limit applies); an item the
        service failed closed on is a deny whose ``warnings`` hold the error."""
        found = arguments.triples("checks", checks, arguments.DECIDED)
        arguments.optional_int("at_least", at_least)
        got = self._post("/v1/check/batch", {
            "checks": [{"subject": s, "operation": o, "resource": r} for s, o, r in found],
            "at_least_revision": self._at_least(at_least)} | _strict(strict)
            | _moment(at_revision, as_of, now))
        rev = got["revision"]
        self._seen(rev)
        return [_decision(x, rev) for x in got["results"]]

    def query(self, goal: str, at_least: int | None = None, *, at_revision: int | None = None,
              as_of: object = None, now: object = None) -> Answers[dict[str, ir.Value]]:
        arguments.goal(goal, at_least)
        got = self._post("/v1/query", {"goal": goal,
                                       "at_least_revision": self._at_least(at_least)}
                         | _moment(at_revision, as_of, now))
        self._seen(got["revision"])
        return Answers(got["answers"], got["revision"])

    def ask(self, goal: str, at_least: int | None = None) -> bool:
        return bool(self.query(goal, at_least))

    def _stream(self, path: str, body: dict[str, Any], key: str) -> Answers[ir.Value]:
        out: list[ir.Value] = []
        revision = None
        warnings: list[Diagnostic] = []
        for item in self._lines("POST", path, json=body):
            if key in item:
                out.append(item[key])
            elif isinstance(item.get("revision"), int):
                revision = item["revision"]
                warnings = [_diagnostic(w, "warning") for w in item.get("warnings") or []]
        if revision is None:  # the closing line never came: the answer is cut short
            raise GrantlogError([error("bad-response", f"the answer of {path} ended before "
                                       "its closing line", _SERVER)])
        self._seen(revision)
        return Answers(out, revision, tuple(warnings))

    def list(self, subject: str, operation: str, type: str | None = None,
             within: str | None = None, at_least: int | None = None,
             strict: bool = False, *, at_revision: int | None = None,
             as_of: object = None, now: object = None) -> Answers[ir.Value]:
        arguments.question(arguments.LISTED[:4], (subject, operation, type, within), at_least,
                           2)
        body: dict[str, Any] = {"subject": subject, "operation": operation,
                                "at_least_revision": self._at_least(at_least)}
        if type is not None:
            body["type"] = type
        if within is not None:
            body["within"] = within
        return self._stream("/v1/list", body | _strict(strict) | _moment(at_revision, as_of, now),
                            "resource")

    def filter(self, subject: str, operation: str, type: str | None = None,
               sql: str | None = None, layout: Mapping[str, str] | None = None,
               at_least: int | None = None, strict: bool = False) -> dict[str, Any]:
        """The data filter (``Reasoner.filter``): ``{"condition": ..., "revision": N}``, and
        ``"sql"`` (a WHERE condition) when ``sql`` names a dialect and ``layout`` describes
        the catalog table (docs/filters.md); ``"warnings"`` when it admits nothing because
        of an unknown constant (``strict``: that is an error)."""
        arguments.question(arguments.FILTERED, (subject, operation, type), at_least, 1)
        arguments.optional_text("sql", sql, "name a dialect, e.g. `sql=\"postgres\"`")
        if layout is not None:
            arguments.texts("layout", layout)
        body: dict[str, Any] = {"subject": subject, "operation": operation,
                                "at_least_revision": self._at_least(at_least)}
        if type is not None:
            body["type"] = type
        if sql is not None or layout is not None:
            body["sql"], body["layout"] = sql, dict(layout or {})
        got = self._post("/v1/filter", body | _strict(strict))
        self._seen(got["revision"])
        return dict(got)

    def who(self, operation: str, resource: str,
            at_least: int | None = None, strict: bool = False, *,
            at_revision: int | None = None, as_of: object = None,
            now: object = None) -> Answers[ir.Value]:
        arguments.question(("operation", "resource"), (operation, resource), at_least)
        return self._stream("/v1/who", {"operation": operation, "resource": resource,
                                        "at_least_revision": self._at_least(at_least)}
                            | _strict(strict) | _moment(at_revision, as_of, now), "subject")

    def explain(self, goal: str, *, at_revision: int | None = None,
                as_of: object = None, now: object = None) -> RemoteExplanation:
        arguments.goal(goal)
        moment = _moment(at_revision, as_of, now)
        body = self._post("/v1/explain", {"goal": goal,
                                          "at_least_revision": self._at_least(None)} | moment)
        self._seen(int(body.get("revision", 0)))
        return RemoteExplanation(self, goal, body, moment)

    # -- writes ---------------------------------------------------------------------------------

    @contextmanager
    def transaction(self, watch: Iterable[str] | str = (), if_revision: int | None = None,
                    author: str | None = None, reason: str | None = None,
                    ticket: str | None = None) -> Iterator[Transaction]:
        """Inserts and retracts sent as one write when the block ends (nothing is sent if it
        raises); ``tx.changes`` holds the watched relations' changes (default: the server's
        watched relations), ``tx.revision`` the revision made. ``author`` (default: the
        token's name, when the server gave it one), ``reason``, ``ticket``: recorded with the
        transaction."""
        names = None if isinstance(watch, str) and watch == "all" else arguments.watch_names(watch)
        arguments.optional_int("if_revision", if_revision)
        meta = {k: arguments.optional_text(k, v) for k, v in
                (("author", author), ("reason", reason), ("ticket", ticket)) if v is not None}
        tx = Transaction(constants=True)
        yield tx
        timed: dict[tuple[str, Any, Any], list[list[ir.Value]]] = {}
        for r, rows in tx.valid.items():  # inserted with a validity interval
            for row, (since, until) in rows.items():
                lo, hi = (None if b is None else moment(b, k) for b, k in
                          ((since, "valid_from"), (until, "valid_until")))
                timed.setdefault((r, lo, hi), []).append(list(row))
        body: dict[str, Any] = {
            "insert": {r: [list(row) for row, p in ops.items()
                           if p and row not in tx.valid.get(r, ())]
                       for r, ops in tx.ops.items()},
            "retract": {r: [list(row) for row, p in ops.items() if not p]
                        for r, ops in tx.ops.items()}}
        if timed:
            body["timed"] = [{"relation": r, "rows": rows, "valid_from": f, "valid_until": u}
                             for (r, f, u), rows in timed.items()]
        if watch:
            body["watch"] = [watch] if names is None else list(names)
        if if_revision is not None:
            body["if_revision"] = if_revision
        got = self._post("/v1/write", body | meta, expected=if_revision)
        tx.revision = got["revision"]
        self._seen(got["revision"])
        tx.changes = Changes({rel: Change({tuple(x) for x in c["gained"]},
                                          {tuple(x) for x in c["lost"]})
                              for rel, c in got["changes"].items()},
                             frozenset(got["changes"]), got["revision"])

    def watch(self, since: int | None = None, relation: str | None = None,
              ) -> Iterator[dict[str, Any]]:
        """Each transaction's gained and lost rows of a watched relation, as they happen:
        ``{"revision", "relation", "gained", "lost"}`` (an endless iterator); a replaced
        policy comes as ``{"policy": HASH, "revision"}``."""
        arguments.optional_int("since", since)
        arguments.optional_text("relation", relation)
        params: dict[str, Any] = {"format": "ndjson"}
        if since is not None:
            params["since"] = since
        if relation is not None:
            params["relation"] = relation
        yield from self._lines("GET", "/v1/watch", params=params, timeout=None)

    # -- the policy -----------------------------------------------------------------------------

    def policy(self, sources: bool = False) -> dict[str, Any]:
        """The served rule files and their hash (``GET /v1/policy``; with their texts)."""
        arguments.flag("sources", sources)
        got: dict[str, Any] = self._call("GET", "/v1/policy",
                                         params={"sources": "true"} if sources else None)
        return got

    def set_policy(self, files: Mapping[str, str] | Iterable[str | os.PathLike[str]],
                   if_hash: str | None = None) -> dict[str, Any]:
        """Replace the served rules (``PUT /v1/policy``, the ``admin`` scope): ``files`` maps
        names to texts, or lists paths, read here and named relative to their common folder
        (so their imports of one another resolve). Raises :class:`GrantlogError` with the
        server's diagnostics, rendered against these texts, if the rules do not compile; the
        old policy then keeps serving."""
        arguments.optional_text("if_hash", if_hash)
        if isinstance(files, Mapping):
            texts = arguments.texts("files", files)
        else:
            paths = [os.path.abspath(p) for p in arguments.paths(files, "files")]
            base = os.path.commonpath([os.path.dirname(p) for p in paths]) if paths else ""
            texts = {os.path.relpath(p, base).replace(os.sep, "/"): _read(p) for p in paths}
        body: dict[str, Any] = {"files": texts}
        if if_hash is not None:
            body["if_hash"] = if_hash
        got: dict[str, Any] = self._call("PUT", "/v1/policy", body, sources=texts)
        return got

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
