"""The parser, built from each command group's ``add_parser``, and the entry point."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from grantlog.engine.core import progress
from grantlog.grammar.diagnostics import GrantlogError

from . import authoring, diff, interop, listing, plan, rules
from .inputs import EXIT_INTERNAL, EXIT_OK, EXIT_USER, out
from .parser import Parser, autocomplete, completion_script

DESCRIPTION = "A Datalog policy reasoner for data-platform authorization: check, list, " \
    "explain and test policies written as rule files."
EPILOG = "Exit codes: 0 success (allowed, answers found); 1 a negative answer (denied, no " \
    "answers, failing tests, findings); 2 a user error; 3 an internal error. Options may " \
    "stand anywhere among a command's arguments. `grantlog COMMAND -h` describes a command."
SHELLS = ("bash", "zsh", "fish")


def build_parser() -> argparse.ArgumentParser:
    from grantlog.service.cli import add_parser as add_serve_parser
    from grantlog.service.replay import add_parser as add_logs_parser
    from grantlog.spark_bridge.cli import add_parser as add_spark_parser
    from grantlog.store.cli import add_parser as add_store_parser

    p = Parser(prog="grantlog", description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("--version", action="version", version="grantlog 0.1.0",
                   help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (rules.add_parser, authoring.add_parser, listing.add_parser,
                interop.add_parser, add_spark_parser, add_store_parser, add_serve_parser,
                add_logs_parser, diff.add_parser, plan.add_parser, add_completion_parser):
        add(sub)
    return p


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
    parser = build_parser()
    if argv is None:
        autocomplete(parser)  # a shell asking for completions (argcomplete): answers, exits
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        # commands that compile rules take --progress / --quiet (inputs.add_progress); the
        # others (serve, fmt, ...) show none
        with progress.reporting(getattr(args, "progress", False)):
            code: int = args.fn(args)
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
