"""Source spans, diagnostics and their one rendering.

Every error or warning grantlog reports is a :class:`Diagnostic` with a stable ``code``, a
lowercase ``message`` without a trailing period (user input in backticks), an optional ``help``
line and the :class:`Span` it points at. :class:`GrantlogError` carries a list of them, sorted by
location, and renders them as::

    rules/demo.gl:3:12: error[unsafe-variable]: variable `Y` in the head is not bound ...
        3 | path(X, Y) :- edge(X, Z).
          |         ^
      help: ...
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning"]

MAX_RENDERED = 50


@dataclass(frozen=True, order=True)
class Span:
    """A region of a source file; lines and columns start at 1, ``end_col`` is exclusive."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.col}"


NO_SPAN = Span("<unknown>", 0, 0, 0, 0)


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    span: Span
    severity: Severity = "error"
    help: str | None = None
    notes: tuple[str, ...] = ()

    def render(self, sources: Mapping[str, str] | None = None) -> str:
        """The diagnostic as text: location, message, source line with a caret, help."""
        head = f"{self.span}: {self.severity}[{self.code}]: {self.message}"
        lines = [head]
        text = (sources or {}).get(self.span.file)
        if text is not None and self.span.line > 0:
            src_lines = text.split("\n")
            if self.span.line <= len(src_lines):
                src = src_lines[self.span.line - 1].rstrip("\r").expandtabs(1)
                gutter = str(self.span.line)
                pad = " " * len(gutter)
                start = max(self.span.col, 1)
                if self.span.end_line == self.span.line and self.span.end_col > start:
                    width = self.span.end_col - start
                else:
                    width = max(len(src) - start + 1, 1)
                lines.append(f" {gutter} | {src}")
                lines.append(f" {pad} | {' ' * (start - 1)}{'^' * width}")
        for note in self.notes:
            lines.append(f"  note: {note}")
        if self.help:
            lines.append(f"  help: {self.help}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "file": self.span.file,
            "line": self.span.line,
            "col": self.span.col,
            "end_line": self.span.end_line,
            "end_col": self.span.end_col,
            "help": self.help,
            "notes": list(self.notes),
        }


def sort_diagnostics(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Sorted by file and position; exact duplicates removed."""
    seen: set[Diagnostic] = set()
    out: list[Diagnostic] = []
    for d in sorted(diags, key=lambda d: (d.span, d.code, d.message)):
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def render_all(
    diags: Iterable[Diagnostic], sources: Mapping[str, str] | None = None, limit: int = MAX_RENDERED
) -> str:
    ordered = sort_diagnostics(diags)
    parts = [d.render(sources) for d in ordered[:limit]]
    if len(ordered) > limit:
        parts.append(f"... and {len(ordered) - limit} more diagnostics")
    return "\n".join(parts)


@dataclass
class GrantlogError(Exception):
    """Raised for any user error: bad rule text, a bad goal, a missing file.

    ``diagnostics`` lists what went wrong; ``str(err)`` renders them with source lines.
    """

    diagnostics: list[Diagnostic]
    sources: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.diagnostics = sort_diagnostics(self.diagnostics)
        super().__init__(self.__str__())

    def __str__(self) -> str:
        return render_all(self.diagnostics, self.sources)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]


def error(code: str, message: str, span: Span, help: str | None = None) -> Diagnostic:
    return Diagnostic(code, message, span, "error", help)


def warning(code: str, message: str, span: Span, help: str | None = None) -> Diagnostic:
    return Diagnostic(code, message, span, "warning", help)
