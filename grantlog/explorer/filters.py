"""The filters pane's server side: the data filter of a subject and an operation
(``Reasoner.filter``, as ``grantlog filter``) as its conditions and as SQL in a dialect the
page chooses, over the catalog table the page describes (grantlog/filters.py's ``Layout``: the
CLI's ``--layout`` fields).

- ``GET /api/filter/options``: the dialects and the default layout
- ``POST /api/filter`` ``{subject, operation, type?, dialect?, layout?, where?}``:
  ``{conditions, sql, dialect, warnings}``; a condition the layout cannot express is the
  renderer's error (``filter-layout``), never SQL that admits more"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from grantlog.engine.answer.vocabulary import to_json
from grantlog.filters import DIALECTS, Layout, check_dialect, select_sql, to_sql
from grantlog.grammar.diagnostics import GrantlogError, Span, error

from .workspace import Workspace

REQUEST = Span("<request>", 0, 0, 0, 0)
#: the layout the pane starts with (docs/filters.md's example table)
DEFAULT_LAYOUT: dict[str, Any] = {"table": "catalog_objects", "schema": None, "catalog": None,
                                  "id": "id", "type": "kind", "parent": "parent_id",
                                  "path": None, "path_separator": "/"}


def options() -> dict[str, Any]:
    return {"dialects": list(DIALECTS), "layout": DEFAULT_LAYOUT}


def answer(ws: Workspace, subject: str, operation: str, type_: str | None = None,
           dialect: str = "postgres", layout: dict[str, Any] | None = None,
           where: bool = False) -> dict[str, Any]:
    """The filter as conditions (its JSON, as ``grantlog filter`` prints) and as SQL: the
    whole query of the ids, or with ``where`` only its condition."""
    check_dialect(dialect)
    lay = Layout.from_dict(DEFAULT_LAYOUT if layout is None else layout,
                           Span("<layout>", 0, 0, 0, 0))
    with ws.lock:
        f = ws.reasoner.filter(subject, operation, type_ or None)
    sql = (to_sql if where else select_sql)(f, lay, dialect)
    return {"subject": subject, "operation": operation, "conditions": f.to_dict()["condition"],
            "dialect": dialect, "sql": sql, "warnings": to_json(f.warnings)}


def _text(data: dict[str, Any], name: str, optional: bool = False) -> Any:
    v = data.get(name)
    if v is None and optional:
        return None
    if not isinstance(v, str) or not v:
        raise GrantlogError([error("bad-request", f"`{name}` must be a non-empty string",
                                   REQUEST)])
    return v


def routes(ws: Workspace, handled: Callable[..., Any], body: Callable[..., Any],
           run_in: Callable[..., Any]) -> list[Route]:
    async def get_options(request: Request) -> Response:
        return JSONResponse(options())

    async def post(request: Request) -> Response:
        data = await body(request)
        subject, operation = _text(data, "subject"), _text(data, "operation")
        type_, dialect = _text(data, "type", True), _text(data, "dialect", True) or "postgres"
        layout = data.get("layout")
        return JSONResponse(await run_in(lambda: answer(
            ws, subject, operation, type_, dialect, layout, bool(data.get("where")))))

    return [Route("/api/filter/options", handled(get_options)),
            Route("/api/filter", handled(post), methods=["POST"])]
