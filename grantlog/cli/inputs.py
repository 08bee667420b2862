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
from grantlog.engine.core import progress
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


def rule_files(a: argparse.Namespace, files: Sequence[str], facts: bool = True) -> list[str]:
    """Rule files: ``--model NAME`` (a shipped model), the given files, ``--facts`` files
    (unless ``facts`` is false: the command reads them its own way)."""
    paths: list[str] = []
    if getattr(a, "model", None):
        paths.append(model_file(a.model))
    paths += list(files)
    if facts:
        paths += list(getattr(a, "facts", None) or [])
    if not paths:
        named = "with --rules FILE" if hasattr(a, "rules") else "as arguments"
        raise GrantlogError([error("no-input", "no rule files given", COMMAND_LINE,
                                   f"name rule files {named}, or a shipped model with "
                                   "--model")])
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
    if not store:
        return Reasoner(program)
    with progress.task("reading the store"):  # every base fact: seconds at a million rows
        return Reasoner(program, store=store, follow=False, create=getattr(a, "create", False))


def load(a: argparse.Namespace, files: Sequence[str]) -> Reasoner:
    """The reasoner over a command's inputs: ``files`` with ``--model``, ``--facts``,
    ``--store`` and ``--strict``."""
    return reasoner(a, compile_rules(rule_files(a, files), a.strict))


#: one meaning per flag: the help of the options every command shares (the flags mean the same
#: in every command that has them; tests/test_cli_parser.py walks the parser to keep it so)
HELP_STRICT = ("unknown relations, and constants of a question (check, list, who, filter) that "
               "no rule, declaration or fact mentions, are errors (exit 2), not warnings")
HELP_MODEL = "a shipped model, read before the rule files (see `grantlog models`)"
HELP_FILES = "rule files (or directories of .gl files)"
HELP_RULES = "a rule file (or a directory of .gl files); repeatable"
HELP_FACTS = "a file of facts (or rules) read after the rule files; repeatable"
HELP_STORE = "also the base facts of this store (sqlite:///facts.db, postgresql://...; " \
    "see `grantlog store`)"
HELP_CREATE = "create the --store if it does not exist (else: store-not-found)"
HELP_JSON = "print JSON instead of text"
HELP_PROGRESS = "show progress bars of long work (reading facts, planning, evaluating) on " \
    "stderr even when stderr is not a terminal (default: only on a terminal)"
HELP_QUIET = "no progress bars on stderr, even on a terminal (warnings and errors still are)"
#: the positionals commands name after their rule files
HELP_POSITIONAL = {
    "SUBJECT": "who asks, e.g. alice",
    "OPERATION": "what they would do, e.g. load_table",
    "RESOURCE": "what they would do it on, e.g. m1.lakehouse.sales.orders",
    "GOAL": "an atom, its variables capitalised, e.g. 'allowed(U, load_table, T)'",
}


def add_inputs(sp: argparse.ArgumentParser, files: str | None = "positional",
               facts: bool = True, store: bool = True) -> None:
    """The inputs of a command that reads rules: ``--model/-m NAME``, then the rule files
    (``files="positional"``: ``[FILE ...]``; ``"option"``: repeatable ``--rules FILE``, for
    commands whose positionals are something else; None: the command reads its own),
    ``--facts/-f FILE`` and ``--store/-s URL`` (with ``--create``); :func:`rule_files` reads
    them back in that order."""
    add_model(sp)
    if files == "positional":
        sp.add_argument("files", nargs="*", metavar="FILE", help=HELP_FILES)
    elif files == "option":
        sp.add_argument("--rules", action="append", default=[], metavar="FILE",
                        help=HELP_RULES)
    if facts:
        sp.add_argument("--facts", "-f", action="append", metavar="FILE", help=HELP_FACTS)
    if store:
        sp.add_argument("--store", "-s", metavar="URL", help=HELP_STORE)
        sp.add_argument("--create", action="store_true", help=HELP_CREATE)


def add_model(sp: argparse.ArgumentParser, help: str = HELP_MODEL) -> None:
    """``--model/-m NAME``, completed in the shell with the shipped models' names."""
    from .parser import complete_models

    action = sp.add_argument("--model", "-m", metavar="NAME", help=help)
    action.completer = complete_models  # type: ignore[attr-defined]


def add_json(sp: argparse.ArgumentParser, help: str = HELP_JSON) -> None:
    sp.add_argument("--json", action="store_true", help=help)


def add_progress(sp: argparse.ArgumentParser, help: str = HELP_PROGRESS) -> None:
    """``--progress`` (always show progress on stderr) or ``--quiet/-q`` (never): one
    ``progress`` argument, True, False or None (the default: when stderr is a terminal), that
    grantlog/cli/main.py hands to engine/core/progress.py's ``reporting``."""
    shown = sp.add_mutually_exclusive_group()
    shown.add_argument("--progress", action="store_const", const=True, dest="progress",
                       help=help)
    shown.add_argument("--quiet", "-q", action="store_const", const=False, dest="progress",
                       help=HELP_QUIET)


def add_command(sub: Any, name: str, help: str, inputs: bool = False,
                args: Sequence[str] = (), json: bool = False,
                usage: str | None = None, progress: bool = True) -> argparse.ArgumentParser:
    """A subcommand with ``--strict`` and (``progress``: every command that compiles rules)
    ``--progress``/``--quiet`` (:func:`add_progress`); ``inputs``: also the inputs of
    :func:`add_inputs`; ``args``: positionals after the rule files, by metavar (``SUBJECT``:
    ``a.subject``); ``json``: also ``--json``. Its usage line reads ``grantlog NAME [options]
    [FILE ...] ARGS`` unless ``usage`` says otherwise."""
    sp: argparse.ArgumentParser = sub.add_parser(name, help=help, description=help,
                                                 usage=usage)
    sp.add_argument("--strict", action="store_true", help=HELP_STRICT)
    if progress:
        add_progress(sp)
    if inputs:
        add_inputs(sp)
    for metavar in args:
        sp.add_argument(metavar.lower(), metavar=metavar, help=HELP_POSITIONAL[metavar])
    if json:
        add_json(sp)
    return sp


def read_stdin() -> str:
    """stdin as UTF-8 text, like a rule file (`bad-encoding` at the first bad byte)."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream without bytes underneath (tests, embedding)
        return sys.stdin.read()
    raw: bytes = buffer.read()
    try:
        return raw.decode("utf-8-sig")  # a byte-order mark is dropped
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise GrantlogError([error("bad-encoding", f"stdin is not UTF-8 text (byte {e.start})",
                                   Span("<stdin>", line, col, line, col + 1),
                                   "rule files are read as UTF-8; convert the input")]) from None
