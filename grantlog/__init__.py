"""grantlog — a Datalog policy reasoner for data-platform authorization.

>>> import grantlog
>>> p = grantlog.compile('''
... member("alice", eng).
... grant(eng, read, t1).
... allowed(U, O, R) :- member(U, G), grant(G, O, R).
... ''')
>>> r = grantlog.Reasoner(p)
>>> r.ask('allowed("alice", read, t1)')
True
>>> r.query('allowed(U, O, t1)')
[{'U': 'alice', 'O': 'read'}]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grantlog.engine import Answers, Decision, Explanation, Program, Proof, RevisionConflict
from grantlog.engine.compile.compiler import compile_program
from grantlog.engine.core import arguments
from grantlog.grammar import Diagnostic, GrantlogError, Span
from grantlog.reasoner import Reasoner

if TYPE_CHECKING:
    from grantlog.client import Client

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``grantlog.Client``, imported on first use: a command line or a process that never
    talks to a service does not load it."""
    if name == "Client":
        from grantlog.client import Client

        return Client
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "Client"})


def compile(
    text: str | None = None,
    paths: Sequence[str | Path] = (),
    filename: str = "<input>",
    strict: bool = False,
    files: Mapping[str, str] | None = None,
    disk: bool = True,
) -> Program:
    """Compile rule text and/or `.gl` files (directories are searched for `.gl` files).

    Raises :class:`GrantlogError` with every diagnostic found. ``strict`` turns warnings about
    relations that are never declared, defined or given facts into errors. ``files`` maps
    paths to texts read instead of the disk (an uploaded policy, an editor's buffers); with
    ``disk=False`` nothing else is read but the shipped models. A wrong argument is a
    ``bad-argument`` error (a single path is one: ``paths=["a.gl"]``).
    """
    arguments.optional_text("text", text, "pass the rule text as a string, or files as `paths=`")
    found = arguments.paths(paths)
    arguments.text("filename", filename)
    arguments.flag("strict", strict)
    arguments.flag("disk", disk)
    return compile_program(text, found, filename, strict,
                           files=None if files is None else arguments.texts("files", files),
                           disk=disk)


__all__ = [
    "Answers",
    "Client",
    "Decision",
    "Diagnostic",
    "Explanation",
    "GrantlogError",
    "Program",
    "Proof",
    "Reasoner",
    "RevisionConflict",
    "Span",
    "compile",
]
