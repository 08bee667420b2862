"""What the commands share: their inputs (rule files, ``--model``, ``--facts``, ``--store``),
compiling them, printing, and the exit codes.

Every command that reads rules takes them the same way: ``--model NAME`` (a shipped model),
then the files named, then the ``--facts`` files (:func:`rule_files`). Front ends built on the
CLI (``grantlog serve``) use these functions too.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from grantlog.engine import compile_program
from grantlog.engine.core.ir import Program, show_value
from grantlog.grammar.diagnostics import GrantlogError, Span, error, render_all
from grantlog.reasoner import Reasoner
from grantlog.rules import model_path, models

EXIT_OK, EXIT_NO, EXIT_USER, EXIT_INTERNAL = 0, 1, 2, 3
#: where a diagnostic about the command's own arguments points
COMMAND_LINE = Span("<command line>", 0, 0, 0, 0)


def out(text: str) -> None:
    """Print ``text`` on stdout, ending it with a newline."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def print_values(a: argparse.Namespace, found: Sequence[Any]) -> int:
    """Print values found (``--json``: one JSON list; else one per line); exit 1 when none."""
    if a.json:
        out(json.dumps(found, ensure_ascii=False))
    else:
        for x in found:
            out(show_value(x))
    return EXIT_OK if found else EXIT_NO


def model_file(name: str) -> str:
    """The rule file of the shipped model ``name`` (a diagnostic listing them if none)."""
    path = model_path(name)
    if path is None:
        names = ", ".join(f"`{m.name}`" for m in models()) or "none"
        raise GrantlogError([error("unknown-model", f"no shipped model `{name}`", COMMAND_LINE,
                                   f"shipped models: {names}")])
    return str(path)


def rule_files(a: argparse.Namespace, files: Sequence[str]) -> list[str]:
    """Rule files: ``--model NAME`` (a shipped model), the given files, ``--facts`` files."""
    paths: list[str] = []
    if getattr(a, "model", None):
        paths.append(model_file(a.model))
    paths += list(files)
    paths += list(getattr(a, "facts", None) or [])
    if not paths:
        raise GrantlogError([error("no-input", "no rule files given", COMMAND_LINE,
                                   "name rule files, or a shipped model with --model")])
    return paths


def compile_rules(paths: Sequence[str], strict: bool) -> Program:
    """The program of ``paths``; its warnings are printed on stderr."""
    program = compile_program(None, list(paths), strict=strict)
    if program.warnings:
        sys.stderr.write(render_all(program.warnings, program.sources) + "\n")
    return program


def reasoner(a: argparse.Namespace, program: Program) -> Reasoner:
    """The program's reasoner, over the facts of ``--store`` too when given (read once: the
    command answers at the store's current revision)."""
    store = getattr(a, "store", None)
    return Reasoner(program, store=store, follow=False) if store else Reasoner(program)


def load(a: argparse.Namespace, files: Sequence[str]) -> Reasoner:
    """The reasoner over a command's inputs: ``files`` with ``--model``, ``--facts``,
    ``--store`` and ``--strict``."""
    return reasoner(a, compile_rules(rule_files(a, files), a.strict))


def add_command(sub: Any, name: str, help: str, inputs: bool = False,
                args: str | None = None) -> argparse.ArgumentParser:
    """A subcommand with ``--strict``; ``inputs``: also ``--model``, ``--facts``, ``--store``;
    ``args``: also one or more arguments shown as ``args`` (e.g. ``FILE... GOAL``) and
    ``--json``."""
    sp: argparse.ArgumentParser = sub.add_parser(name, help=help, description=help)
    sp.add_argument("--strict", action="store_true",
                    help="unknown relations are errors, not warnings")
    if inputs:
        sp.add_argument("--model", "-m", help="a shipped model (see `grantlog models`)")
        sp.add_argument("--facts", "-f", action="append", metavar="FILE",
                        help="a file of facts (or rules) to add; repeatable")
        sp.add_argument("--store", "-s", metavar="URL",
                        help="also the base facts of this store (sqlite:///facts.db, "
                        "postgresql://...; see `grantlog store`)")
    if args is not None:
        sp.add_argument("args", nargs="+", metavar=args)
        sp.add_argument("--json", action="store_true")
    return sp


def read_stdin() -> str:
    """stdin as UTF-8 text, like a rule file (`bad-encoding` at the first bad byte)."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream without bytes underneath (tests, embedding)
        return sys.stdin.read()
    raw: bytes = buffer.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise GrantlogError([error("bad-encoding", f"stdin is not UTF-8 text (byte {e.start})",
                                   Span("<stdin>", line, col, line, col + 1),
                                   "rule files are read as UTF-8; convert the input")]) from None
