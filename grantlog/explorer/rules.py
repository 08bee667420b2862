"""The rules pane's server side: the compiler's diagnostics of the documents as the page
shows them (the document they are in, 1-based line and column, severity, code, message,
help): the same diagnostics ``grantlog lint``'s compile step and the language server give."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from grantlog.grammar.diagnostics import Diagnostic


def diagnostics(found: Iterable[Diagnostic], paths: Sequence[str]) -> list[dict[str, Any]]:
    """``found`` as JSON; ``doc`` is the number of the document holding it (None: another
    file, e.g. a shipped model it imports, or the command line)."""
    where = {p: i for i, p in enumerate(paths)}
    out = []
    for d in found:
        s = d.span
        out.append({"doc": where.get(s.file), "file": s.shown_file, "line": s.line,
                    "col": s.col, "end_line": s.end_line, "end_col": s.end_col,
                    "severity": d.severity, "code": d.code, "message": d.message,
                    "help": d.help})
    return out
