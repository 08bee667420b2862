"""What-if: ``diff`` (the facts of a relation gained and lost between two rule or fact sets)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from grantlog.engine import compile_program
from grantlog.engine.answer.whatif import diff_programs
from grantlog.engine.core import progress
from grantlog.engine.core.ir import Program
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, error, render_all

from .inputs import (
    COMMAND_LINE,
    EXIT_NO,
    EXIT_OK,
    add_command,
    add_json,
    add_model,
    out,
    rule_files,
)


def cmd_diff(a: argparse.Namespace) -> int:
    nowhere = COMMAND_LINE
    if not (a.before or a.after or a.facts_before or a.facts_after):
        raise GrantlogError([error(
            "no-input", "nothing to compare", nowhere,
            "give --before FILE... --after FILE..., or RULES... with --facts-before F... "
            "and/or --facts-after F...")])
    shared = rule_files(a, a.files) if a.model or a.files or a.facts else []
    sides: list[Program] = []
    shown: list[Diagnostic] = []
    for name, files, facts in (("before", a.before, a.facts_before),
                               ("after", a.after, a.facts_after)):
        paths = shared + list(files or []) + list(facts or [])
        if not paths:
            raise GrantlogError([error("no-input", f"no rule files for the {name} side", nowhere,
                                       "name rule files for both sides (or --model), or "
                                       f"this side's with --{name}")])
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
    with progress.task("comparing"):  # evaluates both sides: it may take long
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
    sp.add_argument("files", nargs="*", metavar="FILE", help="rule files of both sides")
    add_model(sp, "a shipped model, on both sides (see `grantlog models`)")
    sp.add_argument("--facts", "-f", action="append", metavar="FILE",
                    help="a file of facts (or rules) on both sides; repeatable")
    for side in ("before", "after"):
        sp.add_argument(f"--{side}", action="extend", nargs="+", metavar="FILE",
                        help=f"rule and fact files of the {side} side only")
        sp.add_argument(f"--facts-{side}", action="extend", nargs="+", metavar="FILE",
                        help=f"fact files of the {side} side only")
    sp.add_argument("--store", "-s", metavar="URL",
                    help="the base facts of this store, on both sides (sqlite:///facts.db, "
                    "postgresql://...)")
    sp.add_argument("--relation", "-r", default="allowed", metavar="REL",
                    help="the relation to compare (default: allowed)")
    add_json(sp)
    sp.add_argument("--no-proofs", action="store_true", help="list the facts without proofs")
    sp.set_defaults(fn=cmd_diff)
