"""Asking the rules: ``eval``, ``query``, ``explain`` and ``check``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from grantlog.engine.core.ir import row_key, show_atom, show_value

from .inputs import EXIT_NO, EXIT_OK, EXIT_USER, add_command, load, out


def cmd_eval(a: argparse.Namespace) -> int:
    r = load(a, a.files)
    rows = r.all_rows()
    if a.json:
        out(json.dumps({k: sorted([list(x) for x in v], key=row_key) for k, v in rows.items()},
                       indent=2, ensure_ascii=False))
        return EXIT_OK
    for rel, rs in rows.items():
        if a.relation and rel not in a.relation:
            continue
        out(f"// {rel}: {len(rs)} row{'s' if len(rs) != 1 else ''}")
        for row in sorted(rs, key=row_key):
            out(show_atom(rel, row) + ".")
    return EXIT_OK


def cmd_query(a: argparse.Namespace) -> int:
    *files, goal = a.args
    r = load(a, files)
    answers = r.query(goal)
    if a.json:
        out(json.dumps(answers, indent=2, ensure_ascii=False))
    elif not answers:
        out("no")
    else:
        for ans in answers:
            out(", ".join(f"{k} = {show_value(v)}" for k, v in ans.items()) if ans else "yes")
    return EXIT_OK if answers else EXIT_NO


def cmd_explain(a: argparse.Namespace) -> int:
    *files, goal = a.args
    r = load(a, files)
    ex = r.explain(goal)
    render = {"text": ex.render, "json": ex.to_json, "dot": ex.to_dot,
              "mermaid": ex.to_mermaid}[a.format]
    out(render())
    return EXIT_OK if ex.holds else EXIT_NO


def cmd_check(a: argparse.Namespace) -> int:
    if len(a.args) < 3:  # a usage error: exit 2, like argparse's own
        sys.stderr.write("grantlog check: usage: grantlog check [--model M] [--facts F] "
                         "FILE... SUBJECT OPERATION RESOURCE\n")
        return EXIT_USER
    *files, subject, operation, resource = a.args
    r = load(a, files)
    d = r.check(subject, operation, resource)
    goal = show_atom(r.program.decision, (subject, operation, resource))
    if a.json:
        payload: dict[str, Any] = {"goal": goal, "allowed": d.allowed, "reasons": list(d.reasons)}
        if a.explain:
            payload["explanation"] = r.explain(goal).to_dict()
        out(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        verdict = "ALLOW" if d.allowed else "DENY"
        why = f" (by {', '.join(d.reasons)})" if d.reasons else ""
        out(f"{verdict} {goal}{why}")
        if a.explain:
            out(r.explain(goal).render())
    return EXIT_OK if d.allowed else EXIT_NO


def add_parser(sub: Any) -> None:
    sp = add_command(sub, "eval", "evaluate rule files and print every relation", inputs=True)
    sp.add_argument("files", nargs="*", metavar="FILE")
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--relation", "-r", action="append", help="print only this relation")
    sp.set_defaults(fn=cmd_eval)

    sp = add_command(sub, "query", "print every answer to a goal, e.g. 'allowed(U, read, t1)'",
                     inputs=True, args="FILE... GOAL")
    sp.set_defaults(fn=cmd_query)

    sp = add_command(sub, "explain", "explain why a goal holds (a proof tree) or why it does "
                     "not (a why-not tree: each rule that could derive it and the literals "
                     "that fail)", inputs=True)
    sp.add_argument("args", nargs="+", metavar="FILE... GOAL")
    sp.add_argument("--format", choices=["text", "json", "dot", "mermaid"], default="text",
                    help="text (a tree, the default), json, Graphviz dot, or a Mermaid "
                    "flowchart")
    sp.add_argument("--json", action="store_const", const="json", dest="format",
                    help="same as --format json")
    sp.set_defaults(fn=cmd_explain)

    sp = add_command(sub, "check", "decide allowed(SUBJECT, OPERATION, RESOURCE)", inputs=True)
    sp.add_argument("args", nargs="+", metavar="FILE... SUBJECT OPERATION RESOURCE")
    sp.add_argument("--explain", action="store_true",
                    help="print the proof (ALLOW) or the why-not tree (DENY)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_check)
