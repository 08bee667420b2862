"""The parser, built from each command group's ``add_parser``, and the entry point."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from grantlog.grammar.diagnostics import GrantlogError

from . import authoring, diff, interop, listing, plan, rules
from .inputs import EXIT_INTERNAL, EXIT_OK, EXIT_USER

DESCRIPTION = "The ``grantlog`` command line."


def build_parser() -> argparse.ArgumentParser:
    from grantlog.service.cli import add_parser as add_serve_parser
    from grantlog.service.replay import add_parser as add_logs_parser
    from grantlog.spark_bridge.cli import add_parser as add_spark_parser
    from grantlog.store.cli import add_parser as add_store_parser

    p = argparse.ArgumentParser(prog="grantlog", description=DESCRIPTION)
    p.add_argument("--version", action="version", version="grantlog 0.1.0")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (rules.add_parser, authoring.add_parser, listing.add_parser,
                interop.add_parser, add_spark_parser, add_store_parser, add_serve_parser,
                add_logs_parser, diff.add_parser, plan.add_parser):
        add(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "spark":  # its own argument parser (grantlog.spark_bridge.cli)
        from grantlog.spark_bridge.cli import main as spark_main

        return spark_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
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
