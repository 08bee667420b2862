"""What-if: ``diff`` (the facts of a relation gained and lost between two rule or fact sets)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from grantlog.engine import compile_program
from grantlog.engine.answer.whatif import diff_programs
from grantlog.engine.core.ir import Program
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, error, render_all

from .inputs import COMMAND_LINE, EXIT_NO, EXIT_OK, add_command, model_file, out


def cmd_diff(a: argparse.Namespace) -> int:
    nowhere = COMMAND_LINE
    if not (a.before or a.after or a.facts_before or a.facts_after):
        raise GrantlogError([error(
            "no-input", "nothing to compare", nowhere,
            "give --before FILE... --after FILE..., or RULES... with --facts-before F... "
            "and/or --facts-after F...")])
    shared: list[str] = [model_file(a.model)] if a.model else []
    shared += a.files
    sides: list[Program] = []
    shown: list[Diagnostic] = []
    for name, files, facts in (("before", a.before, a.facts_before),
                               ("after", a.after, a.facts_after)):
        paths = shared + list(files or []) + list(facts or [])
        if not paths:
            raise GrantlogError([error("no-input", f"no rule files for the {name} side", nowhere,
                                       "shared RULES go before the options, or name the files "
                                       f"with --{name}")])
        program = compile_program(None, paths, strict=a.strict)
        fresh = [w for w in program.warnings if w not in shown]  # shared files warn once
        if fresh:
            sys.stderr.write(render_all(fresh, program.sources) + "\n")
            shown += fresh
        sides.append(program)
    stored: dict[str, list[Any]] | None = None
    if a.store:
        from grantlog.store import open_store

        st = open_store(a.store, create=False)
        try:
            st.attach()
            _, stored = st.snapshot()
        finally:
            st.close()
    result = diff_programs(sides[0], sides[1], a.relation, proofs=not a.no_proofs,
                           facts=stored)
    if a.json:
        out(json.dumps(result.to_dict(proofs=not a.no_proofs), indent=2, ensure_ascii=False))
    else:
        out(result.render(proofs=not a.no_proofs))
    return EXIT_NO if result else EXIT_OK


def add_parser(sub: Any) -> None:
    sp = add_command(sub, "diff", "what-if: the facts of a relation gained and lost between two "
                     "rule sets (--before/--after) or one rule set under two fact sets "
                     "(--facts-before/-after)")
    sp.add_argument("files", nargs="*", metavar="RULES",
                    help="files shared by both sides (put them before the options)")
    sp.add_argument("--model", "-m", help="a shipped model, shared by both sides")
    for side in ("before", "after"):
        sp.add_argument(f"--{side}", action="extend", nargs="+", metavar="FILE",
                        help=f"rule and fact files of the {side} side only")
        sp.add_argument(f"--facts-{side}", action="extend", nargs="+", metavar="FILE",
                        help=f"fact files of the {side} side only")
    sp.add_argument("--store", "-s", metavar="URL",
                    help="the base facts of this store are on both sides")
    sp.add_argument("--relation", "-r", default="allowed",
                    help="the relation to compare (default: allowed)")
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--no-proofs", action="store_true", help="list the facts without proofs")
    sp.set_defaults(fn=cmd_diff)
