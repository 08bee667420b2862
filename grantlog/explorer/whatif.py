"""The what-if pane's server side: a draft of the rules beside the served ones, the permission
diff between them, an example proof of each difference, and the decision log's requests whose
answers the draft would change.

- ``POST /api/whatif/diff`` ``{drafts: {DOC: TEXT}, offset, limit}``: the draft compiled (its
  diagnostics when it does not), then the decision relation's rows gained and lost from the
  served program to the draft (engine/answer/whatif.py ``diff_reasoners``), grouped per subject
  and resource and paged (``left_out`` says how many groups the page leaves out)
- ``POST /api/whatif/proof`` ``{fact, side}``: the proof (or why-not) graph of ``fact`` under
  the ``served`` side or the last diffed ``draft``
- ``POST /api/whatif/replay`` ``{drafts: {DOC: TEXT}}``: the checks of the decision log
  (``grantlog explore --log FILE``; the service's ``--decision-log`` under ``serve --ui``)
  re-decided under the draft (grantlog/service/replay.py ``replay``): those that would change

The draft sees the served side's facts: its own documents' facts (as edited) and the facts the
served reasoner holds besides its files' (a store's, facts inserted at run time). The served
program keeps answering the ask bar; nothing here changes it."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import grantlog
from grantlog.engine.answer.whatif import Difference, diff_reasoners
from grantlog.grammar.diagnostics import GrantlogError, Span, error

from . import ask, rules
from .workspace import Workspace

#: groups (subject, resource) one diff page holds by default, and at most
PAGE, MAX_PAGE = 50, 500
#: changed requests one replay answer lists at most (the rest are counted)
MAX_REPLAYED = 200
REQUEST = Span("<request>", 0, 0, 0, 0)
SIDES = ("served", "draft")

Endpoint = Callable[[Any], Awaitable[Any]]


def _fail(code: str, message: str, hint: str | None = None) -> GrantlogError:
    return GrantlogError([error(code, message, REQUEST, hint)])


def _file_rows(program: Any) -> dict[str, set[Any]]:
    """The base facts ``program``'s own files give, by relation."""
    by = getattr(program.facts, "by_relation", None)
    if by is not None:
        return {rel: set(rows) for rel, rows in by().items()}
    out: dict[str, set[Any]] = {}
    for f in program.facts:
        out.setdefault(f.rel, set()).add(f.row)
    return out


class Drafts:
    """The last compiled draft (its program, its reasoner and its diff), rebuilt when the
    draft's texts or the served side (its program or revision) change."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.lock = threading.Lock()
        self.key: Any = None
        self.reasoner: Any = None
        self.diff: Any = None

    def texts(self, body: dict[str, Any]) -> dict[int, str]:
        """The request's ``drafts``: document number -> its draft text."""
        drafts = body.get("drafts")
        if not isinstance(drafts, dict):
            raise _fail("bad-request", "`drafts` must be an object: document number -> text")
        out: dict[int, str] = {}
        for k, v in drafts.items():
            if not (isinstance(k, str) and k.isascii() and k.isdigit()) or \
                    not 0 <= int(k) < len(self.ws.docs):
                raise _fail("bad-request", f"no document `{k}`")
            if not isinstance(v, str):
                raise _fail("bad-request", f"the draft of document {k} must be a string")
            if not self.ws.docs[int(k)].editable and v != self.ws.docs[int(k)].live:
                raise _fail("bad-request", f"document {k} is read only")
            out[int(k)] = v
        return out

    def build(self, edits: dict[int, str]) -> list[Any] | None:
        """Make the draft of ``edits`` current (under the workspace's lock): its errors when
        it does not compile, else None."""
        ws = self.ws
        texts = {d.path: edits.get(i, d.live) for i, d in enumerate(ws.docs)}
        key = (tuple(sorted(texts.items())), tuple(d.live for d in ws.docs), id(ws.reasoner),
               ws.reasoner.revision)
        if key == self.key:
            return None
        try:
            program = grantlog.compile(paths=list(texts), files=texts, disk=False)
        except GrantlogError as e:
            return list(e.diagnostics)
        draft = grantlog.Reasoner(program)
        # the served side's facts its files do not give (a store's, inserted ones)
        given = _file_rows(ws.program)
        derived = program.derived
        extra = {rel: rows - given.get(rel, set())
                 for rel, rows in ws.reasoner.base_facts().items()
                 if rel in program.relations and rel not in derived}
        # (a relation the draft declares with other columns keeps only the draft's own rows)
        extra = {rel: rows for rel, rows in extra.items()
                 if rows and len(next(iter(rows))) == program.relations[rel].arity}
        if extra:
            draft.seed(extra, 0)
        decision = ws.program.decision
        diff = diff_reasoners(ws.reasoner, draft, decision, proofs=False)
        old, self.reasoner = self.reasoner, draft
        self.key, self.diff = key, diff
        if old is not None:
            old.close()
        return None


def _group(d: Difference, arity: int) -> tuple[str, str, str]:
    """(subject, resource, what) of a decision row: ``allowed(S, O, R)``'s S, R and O; for
    another arity the first and last columns and the rest."""
    row = [str(v) for v in d.row]
    if arity >= 3:
        return row[0], row[-1], ", ".join(row[1:-1])
    if arity == 2:
        return row[0], row[1], ""
    return (row[0] if row else ""), "", ""


def page(diff: Any, program: Any, offset: int, limit: int) -> dict[str, Any]:
    """The diff grouped per (subject, resource), groups sorted, ``limit`` of them from
    ``offset``; each change ``{sign, fact, what}``."""
    rel = program.relations.get(diff.relation)
    arity = rel.arity if rel is not None else 3
    groups: dict[tuple[str, str], dict[str, list[dict[str, str]]]] = {}
    for sign, items in (("+", diff.gained), ("-", diff.lost)):
        for d in items:
            subject, resource, what = _group(d, arity)
            g = groups.setdefault((subject, resource), {"gained": [], "lost": []})
            g["gained" if sign == "+" else "lost"].append(
                {"sign": sign, "fact": d.fact, "what": what})
    keys = sorted(groups)
    shown = keys[offset:offset + limit]
    return {"relation": diff.relation,
            "columns": list(rel.columns) if rel is not None else [],
            "counts": {"gained": len(diff.gained), "lost": len(diff.lost),
                       "groups": len(keys),
                       "subjects": len({k[0] for k in keys})},
            "offset": offset, "limit": limit,
            "left_out": len(keys) - len(shown),
            "groups": [{"subject": s, "resource": r, **groups[(s, r)]} for s, r in shown]}


def replay_log(path: str, served: Any, draft: Any) -> dict[str, Any]:
    """The checks of the decision log ``path`` re-decided under ``draft``: those whose answer
    would change (the logged answer, the draft's, and the served one's now)."""
    from grantlog.service.replay import entries, replay

    name = os.path.basename(path)
    try:
        logged = entries([path])
    except GrantlogError as e:
        d = e.diagnostics[0]
        where = f":{d.span.line}" if d.span is not None and d.span.line else ""
        message = d.message.replace(path, name)
        raise GrantlogError([dataclasses.replace(
            d, span=REQUEST, message=f"the decision log `{name}{where}`: {message}")]) from None
    changed, replayed, masked, other = replay(logged, draft, proofs=False)
    out = []
    for c in changed[:MAX_REPLAYED]:
        s = served.query(c["goal"])
        out.append({"at": c["at"].replace(path, name), "goal": c["goal"], "was": c["was"],
                    "draft": c["now"], "served": bool(s), "request_id": c["request_id"],
                    "logged_revision": c["logged_revision"],
                    "logged_policy": c["logged_policy"]})
    return {"log": name, "replayed": replayed, "masked": masked, "not_decisions": other,
            "changed": out, "count": len(changed), "left_out": len(changed) - len(out)}


def routes(ws: Workspace, handled: Callable[[Endpoint], Any],
           body: Callable[[Any], Awaitable[dict[str, Any]]],
           run: Callable[[Callable[[], Any]], Awaitable[Any]]) -> list[Any]:
    """The pane's routes, with the app's error handling (``handled``), body reading
    (``body``) and worker-thread deadline (``run``)."""
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    drafts = Drafts(ws)

    def paths() -> list[str]:
        return [d.path for d in ws.docs]

    def _bound(data: dict[str, Any], name: str, default: int, cap: int) -> int:
        v = data.get(name, default)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise _fail("bad-request", f"`{name}` must be a non-negative integer")
        return min(v, cap)

    def with_draft(edits: Any, answer: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """``answer()`` once the draft ``edits`` compiled (``compiled: true`` added), or the
        draft's diagnostics (``compiled: false``), under the workspace's and drafts' locks."""
        with ws.lock, drafts.lock:
            found = drafts.build(edits)
            if found is not None:
                return {"compiled": False, "diagnostics": rules.diagnostics(found, paths())}
            out = answer()
            out["compiled"] = True
            return out

    async def diff(request: Any) -> Any:
        data = await body(request)
        edits = drafts.texts(data)
        offset = _bound(data, "offset", 0, 2**31)
        limit = _bound(data, "limit", PAGE, MAX_PAGE) or PAGE

        def compared() -> dict[str, Any]:
            out = page(drafts.diff, ws.program, offset, limit)
            out.update(served=ws.program.digest, draft=drafts.reasoner.program.digest,
                       warnings=rules.diagnostics(drafts.reasoner.program.warnings, paths()))
            return out
        return JSONResponse(await run(lambda: with_draft(edits, compared)))

    async def proof(request: Any) -> Any:
        data = await body(request)
        fact, side = data.get("fact"), data.get("side")
        if not isinstance(fact, str) or "(" not in fact:
            raise _fail("bad-request", "`fact` must be a fact such as `allowed(a, b, c)`")
        if side not in SIDES:
            raise _fail("bad-request", "`side` must be `served` or `draft`")

        def work() -> dict[str, Any]:
            with ws.lock, drafts.lock:
                r = ws.reasoner if side == "served" else drafts.reasoner
                if r is None:
                    raise _fail("no-draft", "no draft has been compared yet",
                                "run the diff first")
                out = ask.answer(r, ask.Question("goal", (fact,)))
                out["side"] = side
                return out
        return JSONResponse(await run(work))

    async def replay(request: Any) -> Any:
        data = await body(request)
        edits = drafts.texts(data)
        log = ws.log
        if not log:
            raise _fail("no-decision-log", "no decision log to replay",
                        "start the explorer with `--log FILE` (a decision log of "
                        "`grantlog serve --decision-log FILE`)")

        return JSONResponse(await run(
            lambda: with_draft(edits, lambda: replay_log(log, ws.reasoner, drafts.reasoner))))

    return [Route("/api/whatif/diff", handled(diff), methods=["POST"]),
            Route("/api/whatif/proof", handled(proof), methods=["POST"]),
            Route("/api/whatif/replay", handled(replay), methods=["POST"])]
