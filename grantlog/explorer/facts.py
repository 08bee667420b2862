"""The facts pane's server side: the base relations as tables (columns as declared, rows
sorted), filtered by a substring of any cell. Read only in this version: facts are edited as
text in the rules pane (their documents), which re-runs the pins."""

from __future__ import annotations

from typing import Any

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
    return {"name": name, "columns": cols, "matched": len(hits), "rows": hits[:limit]}
