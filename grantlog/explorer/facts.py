"""The facts pane's server side: the base relations as tables (columns as declared, rows
sorted), filtered by a substring of any cell, and their rows added and deleted (:func:`write`):
in memory, or with ``--store`` in the store as a transaction. A derived relation's rows are
not editable (the service's write rule); a fact document is also edited as text in the rules
pane."""

from __future__ import annotations

import getpass
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from grantlog.grammar.diagnostics import GrantlogError, Span, error

#: the most rows one table answer holds (the page says how many matched)
MAX_ROWS = 1000


def relations(r: Any) -> list[dict[str, Any]]:
    """Every base relation with facts: name, columns, row count."""
    rels = r.program.relations
    out = []
    for name, rows in sorted(r.base_facts().items()):
        rel = rels.get(name)
        cols = list(rel.columns) if rel is not None else []
        out.append({"name": name, "columns": cols, "rows": len(rows)})
    return out


def table(r: Any, name: str, contains: str = "", limit: int = MAX_ROWS) -> dict[str, Any]:
    """The rows of base relation ``name`` whose cells contain ``contains`` (case-insensitive),
    at most ``limit``; ``matched`` counts them all. An unknown name is an empty table."""
    rows = r.base_facts().get(name, set())
    rel = r.program.relations.get(name)
    needle = contains.casefold()
    shown = sorted([str(v) for v in row] for row in rows)
    hits = [row for row in shown if not needle or any(needle in c.casefold() for c in row)]
    arity = len(next(iter(rows))) if rows else 0
    cols = list(rel.columns) if rel is not None else [f"#{i + 1}" for i in range(arity)]
    return {"name": name, "columns": cols, "matched": len(hits), "rows": hits[:limit],
            "editable": rel is not None and name not in r.program.read_only}


# ---- editing: rows added and deleted in the page ---------------------------------------------


def _cells(rel: Any, row: Any) -> tuple[Any, ...]:
    """A row as the page sends it (a list of cells, each text) in the relation's value types:
    a cell of an ``int`` column that reads as an integer is that integer; anything else is
    checked by the write (``bad-fact``)."""
    if not isinstance(row, list):
        return (row,)  # not a row: the write's check says so (``bad-fact``)
    types = tuple(rel.types) + (None,) * max(0, len(row) - len(rel.types)) if rel else ()
    out: list[Any] = []
    for i, cell in enumerate(row):
        if isinstance(cell, str) and i < len(types) and types[i] == "int" \
                and cell.strip().lstrip("-").isdigit():
            out.append(int(cell.strip()))
        else:
            out.append(cell)
    return tuple(out)


def write(ws: Any, rel: str, insert: list[Any], retract: list[Any],
          author: str | None, reason: str | None) -> dict[str, Any]:
    """Rows of base relation ``rel`` added and deleted as one transaction of the workspace's
    reasoner: with a store, written to it (``author`` and ``reason`` recorded with it);
    without, kept in memory and applied again after each recompile. The write's checks are
    the compiler's (``unknown-relation``, ``derived-relation``, ``bad-fact``); the pins
    re-run. Answers the new revision, the relations' counts and the pins."""
    with ws.lock:
        r = ws.reasoner
        relation = r.program.relations.get(rel)
        ins = [_cells(relation, row) for row in insert]
        dels = [_cells(relation, row) for row in retract]
        with r.transaction(author=author, reason=reason) as tx:
            if dels:
                tx.retract(rel, dels)
            if ins:
                tx.insert(rel, ins)
        if ws.store is None:
            ws.fact_edits.append((rel, ins, dels))
        ws.pins.rerun(r)
        return {"revision": tx.revision, "relations": relations(r), "pins": ws.pins.to_list()}


def replay(edits: list[tuple[str, list[Any], list[Any]]], r: Any) -> list[Any]:
    """The page's in-memory edits applied to a new reasoner (after a recompile), in order;
    an edit the new program refuses (its relation gone or now derived, its rows of another
    arity) is dropped. Answers the edits kept."""
    kept = []
    for rel, ins, dels in edits:
        try:
            with r.transaction() as tx:
                if dels:
                    tx.retract(rel, dels)
                if ins:
                    tx.insert(rel, ins)
        except GrantlogError:
            continue
        kept.append((rel, ins, dels))
    return kept


def routes(ws: Any, handled: Callable[..., Any], body: Callable[..., Any],
           run_in: Callable[..., Any]) -> list[Route]:
    """``POST /api/facts/edit`` ``{rel, insert?: [[cell...]], retract?: [[cell...]],
    reason?, author?}``: :meth:`Workspace.write_facts` (``author`` defaults to the user
    running the explorer). A server that mounts the explorer guards this path (writes)."""

    async def edit(request: Request) -> Response:
        data = await body(request)
        rel = data.get("rel")
        ins, dels = data.get("insert", []), data.get("retract", [])
        author, reason = data.get("author"), data.get("reason")
        if not isinstance(rel, str) or not isinstance(ins, list) \
                or not isinstance(dels, list) or not all(
                    v is None or isinstance(v, str) for v in (author, reason)):
            raise GrantlogError([error("bad-request", "an edit is `{rel, insert: [[cell, "
                                       "...]], retract: [[cell, ...]], reason, author}`",
                                       Span("<request>", 0, 0, 0, 0))])
        return JSONResponse(await run_in(lambda: ws.write_facts(
            rel, ins, dels, author=author or getpass.getuser(), reason=reason or None)))

    return [Route("/api/facts/edit", handled(edit), methods=["POST"])]
