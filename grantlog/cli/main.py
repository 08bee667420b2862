"""The parser, built from each command group's ``add_parser``, and the entry point."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence
from typing import Any

from grantlog.engine.core import progress
from grantlog.grammar.diagnostics import GrantlogError

from .inputs import EXIT_INTERNAL, EXIT_OK, EXIT_USER, out
from .parser import Parser, autocomplete, completion_script

DESCRIPTION = "A Datalog policy reasoner for data-platform authorization: check, list, " \
    "explain and test policies written as rule files."
EPILOG = "Exit codes: 0 success (allowed, answers found); 1 a negative answer (denied, no " \
    "answers, failing tests, findings); 2 a user error; 3 an internal error. Options may " \
    "stand anywhere among a command's arguments. `grantlog COMMAND -h` describes a command."
SHELLS = ("bash", "zsh", "fish")


#: the modules that register each command group (``add_parser(sub)``), in the order
#: ``grantlog -h`` lists them; "" is this module (``completion``)
GROUPS = (
    "grantlog.cli.rules", "grantlog.cli.authoring", "grantlog.cli.listing",
    "grantlog.cli.interop", "grantlog.spark_bridge.cli", "grantlog.store.cli",
    "grantlog.service.cli", "grantlog.service.replay", "grantlog.cli.diff", "grantlog.cli.plan",
    "grantlog.cli.history", "grantlog.cli.review", "grantlog.explorer.cli", "",
)
#: which group registers each command: a command line naming one builds (and imports) that
#: group's parsers only, not the service's, the store's or Spark's (tests/test_cli_startup.py
#: checks the table against the groups)
COMMANDS = {
    **dict.fromkeys(("eval", "query", "explain", "check"), "grantlog.cli.rules"),
    **dict.fromkeys(("test", "fmt", "lint", "lsp", "models"), "grantlog.cli.authoring"),
    **dict.fromkeys(("list", "filter", "who"), "grantlog.cli.listing"),
    "import": "grantlog.cli.interop", "spark": "grantlog.spark_bridge.cli",
    "store": "grantlog.store.cli", "serve": "grantlog.service.cli",
    "logs": "grantlog.service.replay", "diff": "grantlog.cli.diff", "plan": "grantlog.cli.plan",
    "history": "grantlog.cli.history", "review": "grantlog.cli.review",
    "explore": "grantlog.explorer.cli", "completion": "",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``command`` (a name in :data:`COMMANDS`), only the group
    that registers it: what parsing that command's arguments needs."""
    import importlib

    p = Parser(prog="grantlog", description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("--version", action="version", version="grantlog 0.1.0",
                   help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in (GROUPS if command not in COMMANDS else (COMMANDS[command],)):
        add = importlib.import_module(group).add_parser if group else add_completion_parser
        add(sub)
    return p


def chosen(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names when it starts with one (no option before it: ``-h``,
    ``--version``), else None (the whole parser answers)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def add_completion_parser(sub: Any) -> None:
    sp = sub.add_parser("completion", help="print the shell completion script for bash, zsh or "
                        "fish", description="print the script that makes a shell complete "
                        "grantlog's commands, options and model names; e.g. `eval \"$(grantlog "
                        "completion bash)\"` in ~/.bashrc, `grantlog completion fish > "
                        "~/.config/fish/completions/grantlog.fish`")
    sp.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    sp.set_defaults(fn=cmd_completion)


def cmd_completion(a: argparse.Namespace) -> int:
    out(completion_script(a.shell))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if argv is None and "_ARGCOMPLETE" in os.environ:
        # a shell asking for completions (argcomplete): answers from the whole parser, exits
        autocomplete(build_parser())
    args = build_parser(chosen(words)).parse_args(words)
    args.ends_process = argv is None  # the process is this command, not a call from Python
    try:
        # commands that compile rules take --progress / --quiet (inputs.add_progress); the
        # others (serve, fmt, ...) show none
        with progress.reporting(getattr(args, "progress", False)):
            code: int = args.fn(args)
        if argv is None:  # the process is this command and ends now: the collection at exit
            gc.freeze()   # need not walk what it made (millions of rows after `eval`)
        return code
    except GrantlogError as e:
        sys.stderr.write(str(e) + "\n")
        return EXIT_USER
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except RecursionError:
        sys.stderr.write("error: the input nests too deeply to process\n")
        return EXIT_USER
    except Exception:  # a bug in grantlog: say so, with what a bug report needs
        import traceback

        traceback.print_exc()
        sys.stderr.write("grantlog: internal error (a bug in grantlog: please report it with the "
                         "command and input that caused it)\n")
        return EXIT_INTERNAL
