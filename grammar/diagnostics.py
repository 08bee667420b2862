"""Source spans, diagnostics and their one rendering.

Every error or warning grantlog reports is a :class:`Diagnostic` with a stable ``code``, a
lowercase ``message`` without a trailing period (user input in backticks), an optional ``help``
line and the :class:`Span` it points at. :class:`GrantlogError` carries a list of them, sorted by
location, and renders them as::

    rules/demo.gl:3:12: error[unsafe-variable]: variable `Y` in the head is not bound ...
        3 | path(X, Y) :- edge(X, Z).
          |         ^
      help: ...

Files are shown by :func:`display_path` (never a checkout's absolute path); a span that is not
in a file (``<goal>``, ``<command line>``, an API argument: :func:`argument_span`) names its
place in words after the message, ``<api>`` and ``<unknown>`` none.
"""

from __future__ import annotations

import functools
import os
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

    @property
    def shown_file(self) -> str:
        """The file as messages show it (:func:`display_path`)."""
        return display_path(self.file)

    @property
    def place(self) -> str | None:
        """Where a span that is not in a file points, in words ("in the goal", "in argument
        `limit`"; "" for a call of the API as a whole); None for a span in a file."""
        return pseudo_place(self.file)

    def __str__(self) -> str:
        place = self.place
        if place is not None and (self.line <= 0 or self.file not in POSITIONED):
            return place
        if self.line <= 0:
            return self.shown_file
        return f"{self.shown_file}:{self.line}:{self.col}"


NO_SPAN = Span("<unknown>", 0, 0, 0, 0)

#: pseudo-files (inputs that are not files) named in words; ``<api>`` and ``<unknown>``: a
#: call or an input as a whole, no place is shown
PLACES = {"<api>": "", "<unknown>": "", "<goal>": "in the goal",
          "<command line>": "on the command line", "<stdin>": "in the standard input",
          "<input>": "", "<server>": "from the server"}
#: pseudo-files whose lines and columns are shown as a file's (`<input>:3:12`)
POSITIONED = frozenset({"<input>", "<stdin>"})
#: the pseudo-file of a public API argument (:func:`argument_span`)
_ARGUMENT = "<argument "


def argument_span(name: str) -> Span:
    """The span of a diagnostic about the API argument ``name``: rendered "in argument
    `name`" instead of a file location."""
    return Span(f"{_ARGUMENT}{name}>", 0, 0, 0, 0)


def pseudo_place(file: str) -> str | None:
    """``file`` in words when it names no file (``<goal>``: "in the goal"), else None."""
    if not (file.startswith("<") and file.endswith(">")):
        return None
    if file.startswith(_ARGUMENT):
        return f"in argument `{file[len(_ARGUMENT):-1]}`"
    return PLACES.get(file, f"in the {file[1:-1]}")


def display_path(path: str) -> str:
    """A source file's name as messages, proofs and answers show it: never the absolute path
    of a checkout. A shipped rule file by its name as imported (`gravitino.gl`); an absolute
    path under the working directory relative to it; anything else as given."""
    if not os.path.isabs(path):
        return path
    try:
        cwd = os.getcwd()
    except OSError:  # the working directory was removed
        cwd = ""
    return _display_path(path, cwd)


@functools.lru_cache(maxsize=4096)
def _display_path(path: str, cwd: str) -> str:
    from grantlog.rules import rules_dir  # the shipped models (same layer: package data)

    real = os.path.realpath(path)
    shipped = str(rules_dir())
    if real.startswith(shipped + os.sep):
        return os.path.relpath(real, shipped).replace(os.sep, "/")
    if cwd and os.path.normpath(path).startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(path, cwd)
    return path


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
        text = (sources or {}).get(self.span.file)
        src_lines = text.split("\n") if text is not None and self.span.line > 0 else []
        shown = 0 < self.span.line <= len(src_lines)
        lines = [self._head(shown)]
        if shown:  # the source line and a caret under the span
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

    def _head(self, source_shown: bool) -> str:
        """The first line: ``file:line:col: error[code]: message``; a span that is not in a
        file names its place in words after the message ("(in the goal)"), or none."""
        what = f"{self.severity}[{self.code}]: {self.message}"
        sp = self.span
        place = sp.place
        if place is None or (sp.file in POSITIONED and sp.line > 0):
            return f"{sp}: {what}"
        if not place:
            return what
        if sp.line > 0 and not source_shown:
            place += f", line {sp.line} column {sp.col}" if sp.line > 1 else \
                f", column {sp.col}"
        return f"{what} ({place})"

    def to_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "file": self.span.shown_file,
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


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``n`` and the noun, singular for one: "1 rule file", "2 rule files", "0 rows"
    (``many``: an irregular plural; thousands separated: "12,000 facts")."""
    return f"{n:,} {noun if n == 1 else many or noun + 's'}"


def error(code: str, message: str, span: Span, help: str | None = None) -> Diagnostic:
    return Diagnostic(code, message, span, "error", help)


def warning(code: str, message: str, span: Span, help: str | None = None) -> Diagnostic:
    return Diagnostic(code, message, span, "warning", help)
