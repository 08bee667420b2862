"""What a data filter answers (engine/answer/residual.py computes them): a residual
condition on a resource (:class:`Residual`), or on a row of a table (:class:`RowFilter`)."""

from __future__ import annotations

from typing import Any

from grantlog.grammar.diagnostics import Diagnostic

from ..core import ir
from .conditions import Cond, Test, compile_cond, row_holds, to_json


class Residual:
    """A filter: the condition a resource must meet (``cond``), for ``subject`` and
    ``operation`` at ``revision``; ``holds(x)`` decides it for a known resource."""

    def __init__(self, subject: ir.Value, operation: ir.Value, cond: Cond, revision: int,
                 ancestors: Any, types: Any, parents: Any,
                 chains: dict[Any, tuple[Any, ...]] | None = None) -> None:
        self.subject, self.operation, self.cond, self.revision = (
            subject, operation, cond, revision)
        self._ancestors, self._types, self._parents = ancestors, types, parents
        self._test: Test | None = None
        #: in a tree, each object the filter is "under": the ids from the root down to it
        #: (SQL over a path column then asks for a prefix, which an index answers)
        self.chains = chains or {}
        #: what is wrong with the question (``unknown-constant``: engine/answer/vocabulary.py)
        self.warnings: tuple[Diagnostic, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "operation": self.operation,
                "revision": self.revision, "condition": to_json(self.cond)}

    def __repr__(self) -> str:
        """Short: ``<Residual alice load_table at revision 3: {"under": "m1.c1"}>`` (the
        condition as JSON, cut at 120 characters)."""
        import json

        cond = json.dumps(to_json(self.cond), ensure_ascii=False, default=str)
        if len(cond) > 120:
            cond = cond[:117] + "..."
        return (f"<Residual {ir.show_value(self.subject)} {ir.show_value(self.operation)} "
                f"at revision {self.revision}: {cond}>")

    def holds(self, resource: ir.Value) -> bool:
        if self._test is None:
            self._test = compile_cond(self.cond)
        x = resource
        return bool(self._test(x, self._ancestors(x), self._types(x), self._parents(x)))




class RowFilter:
    """A row filter: the condition (``cond``, over cells only) a row of ``table`` must
    meet for ``relation(subject, table, row)`` at ``revision``."""

    def __init__(self, subject: ir.Value, table: ir.Value, relation: str, cond: Cond,
                 revision: int) -> None:
        self.subject, self.table, self.relation = subject, table, relation
        self.cond, self.revision = cond, revision

    def to_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "table": self.table, "relation": self.relation,
                "revision": self.revision, "condition": to_json(self.cond)}

    def holds(self, cells: dict[Any, Any]) -> bool:
        """Whether the row ``{column: value}`` passes."""
        return row_holds(self.cond, cells)
