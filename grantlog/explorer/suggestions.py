"""The why-not's suggested changes, the page's side: the smallest changes of base facts that
would flip a check or a goal that does not hold (engine/answer/suggest.py, through the public
``Reasoner.suggest``), each checked by running it, and "try it", which applies one in memory.

- ``POST /api/suggest`` ``{question}``: for a check or a goal (the ask bar's words) that does
  not hold: the suggestions (each a sentence and its facts), whether the search was cut short,
  and ``marks``: the why-not graph's nodes (the ids ``/api/ask`` drew) each suggestion repairs
- ``POST /api/suggest/try`` ``{edits: [{op, rel, row}]}``: apply the facts (``insert`` or
  ``retract``) to the explorer's reasoner, in memory, as one transaction: the page asks again
  and sees the answer flip; the answer holds the edits that undo it. Pins re-run. Refused when
  the facts live in a store (a write there is durable: the store's own commands do that)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from grantlog.engine.answer.suggest import Bounds
from grantlog.engine.core.ir import show_atom, show_value
from grantlog.grammar.diagnostics import GrantlogError, Span, error

from . import ask, proofs
from .workspace import Workspace

REQUEST = Span("<request>", 0, 0, 0, 0)
#: suggestions one answer lists
LIMIT = 5
#: the search's bounds in the page (a why-not must stay interactive: the search holds the
#: reasoner, so asks wait for it)
BOUNDS = Bounds(seconds=2.0)
#: facts one "try it" may change
MAX_EDITS = 20

Endpoint = Callable[[Any], Awaitable[Any]]


def _fail(message: str, hint: str | None = None) -> GrantlogError:
    return GrantlogError([error("bad-request", message, REQUEST, hint)])


def goal_of(r: Any, q: ask.Question) -> str:
    """The goal a check or goal question asks (``bad-request`` for list and who)."""
    if q.kind == "check":
        return show_atom(r.program.decision, tuple(q.args))
    if q.kind == "goal":
        return q.args[0]
    raise _fail(f"suggestions answer a check or a goal, not `{q.kind}`",
                "ask `check SUBJECT OPERATION RESOURCE` or a goal")


def _parts(fact: str) -> tuple[str, list[str]]:
    """A node's fact as its relation and argument texts (``not`` dropped)."""
    text = fact[4:] if fact.startswith("not ") else fact
    rel = proofs.relation_of(text)
    inner = text.split("(", 1)[1].rsplit(")", 1)[0] if "(" in text else ""
    args, cur, quoted = [], "", False
    for ch in inner:  # split at commas outside quotes
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if inner:
        args.append(cur.strip())
    return rel, args


def _matches(node_args: list[str], row: list[Any]) -> bool:
    if len(node_args) != len(row):
        return False
    for a, v in zip(node_args, row, strict=True):
        if a[:1].isupper() or a.startswith("_"):
            continue  # a variable of the why-not tree: any value
        if v != "_" and a != show_value(v):
            return False
    return True


def marks(graph: dict[str, Any], found: list[dict[str, Any]]) -> dict[str, list[int]]:
    """The why-not graph's failed nodes each suggestion repairs (node id -> suggestion
    numbers, from 0): a node whose fact is one of the suggestion's repaired premises (its
    variables standing for any value)."""
    out: dict[str, list[int]] = {}
    for node in graph.get("nodes", []):
        d = node["data"]
        if d.get("cls") != "failed" or not d.get("fact"):
            continue
        rel, args = _parts(d["fact"])
        blocked = d["fact"].startswith("not ")
        for i, s in enumerate(found):
            for rep in s["repairs"]:
                if (rep["rel"] == rel and (rep["kind"] == "blocked") == blocked
                        and _matches(args, rep["row"])):
                    out.setdefault(d["id"], []).append(i)
                    break
    return out


def answer(r: Any, q: ask.Question) -> dict[str, Any]:
    goal = goal_of(r, q)
    s = r.suggest(goal, limit=LIMIT, bounds=BOUNDS).to_dict()
    out = {"question": q.text, **s}
    if not s["holds"]:
        graph = proofs.graph(r.explain(goal).to_dict(), proofs.folded_relations(r.program))
        out["marks"] = marks(graph, s["suggestions"])
    return out


def _edits(data: dict[str, Any]) -> list[tuple[str, str, tuple[Any, ...]]]:
    raw = data.get("edits")
    if not isinstance(raw, list) or not raw or len(raw) > MAX_EDITS:
        raise _fail(f"`edits` must be a list of 1 to {MAX_EDITS} facts")
    out = []
    for e in raw:
        if not (isinstance(e, dict) and e.get("op") in ("insert", "retract")
                and isinstance(e.get("rel"), str) and isinstance(e.get("row"), list)
                and all(isinstance(v, (str, int)) and not isinstance(v, bool)
                        for v in e["row"])):
            raise _fail("each edit is `{op: insert|retract, rel, row}`")
        out.append((e["op"], e["rel"], tuple(e["row"])))
    return out


def apply(ws: Workspace, edits: list[tuple[str, str, tuple[Any, ...]]]) -> dict[str, Any]:
    """Apply ``edits`` to the workspace's reasoner in memory; the edits that undo them."""
    if ws.store is not None:
        raise _fail("`try it` changes facts in memory, and this explorer's facts are in a "
                    "store", "apply the change with `grantlog store` commands")
    r = ws.reasoner
    derived = r.program.derived
    # the base facts before: an edit that changes none (a fact there already, or not there
    # to retract) is not undone; a row rules also derive is told by the base facts only
    base = (r.base_facts() if any(rel in derived for _, rel, _ in edits) else
            {rel: r.view().F[rel] for _, rel, _ in edits if rel in r.program.relations})
    had = [row in base.get(rel, ()) for _, rel, row in edits]  # before: the view changes
    with r.transaction() as tx:
        for op, rel, row in edits:
            (tx.insert if op == "insert" else tx.retract)(rel, [row])
    undo = [{"op": "retract" if op == "insert" else "insert", "rel": rel, "row": list(row)}
            for (op, rel, row), there in zip(edits, had, strict=True)
            if there == (op == "retract")]
    ws.pins.rerun(r)
    return {"applied": len(undo), "undo": undo, "pins": ws.pins.to_list()}


def routes(ws: Workspace, handled: Callable[[Endpoint], Any],
           body: Callable[[Any], Awaitable[dict[str, Any]]],
           run: Callable[[Callable[[], Any]], Awaitable[Any]]) -> list[Any]:
    """The suggestions' routes, with the app's error handling, body reading and deadline."""
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def suggest(request: Any) -> Any:
        text = (await body(request)).get("question")
        if not isinstance(text, str):
            raise _fail("`question` must be a str")
        q = ask.parse(text)

        def work() -> dict[str, Any]:
            with ws.lock:  # not held while searching: an edit need not wait for it
                r = ws.reasoner
            return answer(r, q)
        return JSONResponse(await run(work))

    async def try_it(request: Any) -> Any:
        edits = _edits(await body(request))

        def work() -> dict[str, Any]:
            with ws.lock:
                return apply(ws, edits)
        return JSONResponse(await run(work))

    return [Route("/api/suggest", handled(suggest), methods=["POST"]),
            Route("/api/suggest/try", handled(try_it), methods=["POST"])]
