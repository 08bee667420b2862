"""What the explorer edits and asks: the documents (a shipped model, the rule files and fact
files named on the command line, each read once at start), the program they compile to and its
reasoner, and the pinned questions.

Nothing a request names is opened: a document is addressed by its number, its text comes in
the request, and the compiler reads no disk but the shipped models (``disk=False``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grantlog
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error
from grantlog.rules import model_path, models

from . import facts as factpane
from . import pins as pinned

COMMAND_LINE = Span("<command line>", 0, 0, 0, 0)


@dataclass
class Document:
    """One file of the workspace: its path (as the compiler and diagnostics name it), its
    text as last edited, and whether the page may edit it."""

    path: str
    text: str
    editable: bool = True
    #: the text the live program was compiled from (differs from ``text`` while a draft does
    #: not compile)
    live: str = ""

    @property
    def name(self) -> str:
        return Path(self.path).name


@dataclass
class Workspace:
    """The explorer's state: one per server, one user (the page)."""

    docs: list[Document]
    store: str | None = None
    reasoner: Any = None
    program: Any = None
    warnings: list[Diagnostic] = field(default_factory=list)
    pins: pinned.Pins = field(default_factory=pinned.Pins)
    lock: threading.RLock = field(default_factory=threading.RLock)
    #: the decision log the what-if pane replays (``--log FILE``; grantlog/explorer/whatif.py)
    log: str | None = None
    #: the facts pane's row edits (relation, inserted, retracted) kept without a store,
    #: applied again after each recompile (grantlog/explorer/facts.py)
    fact_edits: list[Any] = field(default_factory=list)

    @classmethod
    def open(cls, rules: Sequence[str], model: str | None, facts: Sequence[str],
             store: str | None = None) -> Workspace:
        """The documents of a command line: the model's file (editable when no RULES are
        given: the model is then what the page edits), RULES, then ``--facts``; compiled once
        (a file that does not compile is a user error here, as in every command)."""
        docs: list[Document] = []
        if model:
            path = model_path(model)
            if path is None:
                names = ", ".join(f"`{m.name}`" for m in models())
                raise GrantlogError([error("unknown-model", f"no shipped model `{model}`",
                                           COMMAND_LINE,
                                           f"shipped models: {names}")])
            docs.append(Document(str(path), path.read_text(encoding="utf-8"),
                                 editable=not rules))
        for p in [*rules, *facts]:
            for f in _gl_files(p):
                docs.append(Document(str(f), f.read_text(encoding="utf-8")))
        if not docs:
            raise GrantlogError([error("no-input", "no rule files given",
                                       COMMAND_LINE,
                                       "name rule files as arguments, or a shipped model "
                                       "with --model")])
        ws = cls(docs, store)
        found = ws.compile({})
        if found:
            raise GrantlogError(found)
        return ws

    # ---- compiling -----------------------------------------------------------------------

    def texts(self, edits: dict[int, str]) -> dict[str, str]:
        return {d.path: edits.get(i, d.text) for i, d in enumerate(self.docs)}

    def compile(self, edits: dict[int, str]) -> list[Diagnostic]:
        """Compile the documents with ``edits`` (document number -> text) and, when that
        succeeds, make it the live program (a new reasoner; the pins re-run). Answers the
        errors (the live program unchanged) or the warnings."""
        with self.lock:
            texts = self.texts(edits)
            try:
                program = grantlog.compile(paths=list(texts), files=texts, disk=False)
            except GrantlogError as e:
                for i, t in edits.items():
                    self.docs[i].text = t
                return list(e.diagnostics)
            reasoner = (grantlog.Reasoner(program) if self.store is None else
                        grantlog.Reasoner(program, store=self.store, follow=False))
            self.fact_edits = factpane.replay(self.fact_edits, reasoner)
            old = self.reasoner
            self.program, self.reasoner = program, reasoner
            for d in self.docs:
                d.text = d.live = texts[d.path]
            self.warnings = list(program.warnings)
            self.pins.rerun(reasoner)
            if old is not None:
                old.close()
            return self.warnings

    def write_facts(self, rel: str, insert: list[Any], retract: list[Any],
                    author: str | None = None, reason: str | None = None) -> dict[str, Any]:
        """The facts pane's write: rows of base relation ``rel`` added and deleted as one
        transaction (grantlog/explorer/facts.py's ``write``); the one method through which
        the page changes facts, so a server mounting the explorer can guard it."""
        return factpane.write(self, rel, insert, retract, author, reason)

    def close(self) -> None:
        with self.lock:
            if self.reasoner is not None:
                self.reasoner.close()

    # ---- what the page shows -------------------------------------------------------------

    def vocabulary(self, limit: int = 5000) -> dict[str, list[str]]:
        """What the ask bar completes: relation names (with their columns) and the constants
        of the base facts (at most ``limit``, sorted)."""
        with self.lock:
            rels = sorted(self.program.relations.values(), key=lambda r: r.name)
            consts: set[str] = set()
            for rows in self.reasoner.base_facts().values():
                for row in rows:
                    consts.update(str(v) for v in row)
                    if len(consts) >= limit:
                        break
                if len(consts) >= limit:
                    break
            return {"relations": [f"{r.name}({', '.join(r.columns)})" for r in rels],
                    "constants": sorted(consts)[:limit]}


def _gl_files(p: str) -> list[Path]:
    path = Path(p)
    return sorted(path.rglob("*.gl")) if path.is_dir() else [path]
