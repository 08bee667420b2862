"""``grantlog logs replay LOG... --rules NEW``: re-decide logged requests under other rules.

A what-if on real traffic: each logged check (from ``grantlog serve --decision-log``) is
decided again under the new rules, over the facts of ``--store`` (its current revision) and
``--facts`` files, and every decision that would change is printed with its proof under the
new rules (the ALLOW's proof, or the DENY's why-not tree). Masked entries cannot be replayed
and are counted, as are the entries that are not decisions (reads, OPA lookups). A torn last
line of a log (the writer stopped mid-line) is skipped with a warning; any other line that is
not an entry is an error. Exit codes as ``grantlog diff``: 0 nothing would change, 1 something
would, 2 a user error.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from grantlog.cli.inputs import (
    HELP_STRICT,
    add_inputs,
    add_json,
    compile_rules,
    reasoner,
    rule_files,
)
from grantlog.engine.core import ir
from grantlog.grammar.diagnostics import GrantlogError, Span, error, render_all, warning

from . import MASK


def add_parser(sub: Any) -> None:
    sp = sub.add_parser("logs", help="decision logs of `grantlog serve`",
                        description="decision logs of `grantlog serve`")
    lsub = sp.add_subparsers(dest="logs_command", required=True, metavar="COMMAND")
    rp = lsub.add_parser("replay", help="re-decide logged requests under other rules and show "
                         "the decisions that would change, with proofs",
                         description="re-decide the checks of decision logs under other rules "
                         "(--model, --rules, --facts) over the facts of --store and show the "
                         "decisions that would change, with proofs; exit 1 if any would")
    rp.add_argument("logs", nargs="+", metavar="LOG",
                    help="decision logs written by `grantlog serve --decision-log`")
    add_inputs(rp, files="option")
    rp.add_argument("--no-proofs", action="store_true",
                    help="list the changed decisions without proofs")
    add_json(rp)
    rp.add_argument("--strict", action="store_true", help=HELP_STRICT)
    rp.set_defaults(fn=cmd_replay)


def entries(paths: list[str]) -> list[tuple[str, int, dict[str, Any]]]:
    """The entries of the logs, in order. A torn last line (not JSON and no newline at the
    end: the writer stopped mid-line, on a full disk or a crash) is skipped with a warning on
    stderr; any other line that is not an entry is an error."""
    out = []
    for path in paths:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise GrantlogError([error("file-not-found", f"cannot read `{path}`: "
                                       f"{(exc.strerror or str(exc)).lower()}",
                                       Span(path, 0, 0, 0, 0))]) from None
        lines = data.split(b"\n")
        torn = lines.pop() if lines else b""  # after the last newline: b"" or a torn line
        if torn.strip(b" \t\r\0"):
            lines.append(torn)
        for no, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
            except ValueError:
                if no == len(lines) and raw is torn:
                    sys.stderr.write(render_all([warning(
                        "torn-log-line", f"the last line is torn ({len(raw)} bytes, no newline "
                        "at the end: the writer stopped mid-line); skipped",
                        Span(path, no, 1, no, 2))]) + "\n")
                    continue
                raise GrantlogError([error("bad-log", "not a decision log line (JSON)",
                                           Span(path, no, 1, no, 2))]) from None
            if not isinstance(entry, dict) or not isinstance(entry.get("input"), dict):
                raise GrantlogError([error("bad-log", "a decision log line has an `input`",
                                           Span(path, no, 1, no, 2))])
            out.append((path, no, entry))
    return out


def replay(logged: list[tuple[str, int, dict[str, Any]]], r: Any, proofs: bool = True,
           ) -> tuple[list[dict[str, Any]], int, int, int]:
    """Re-decide the logged checks of ``logged`` (:func:`entries`) with reasoner ``r``:
    (the entries whose decision would change, each ``{at, goal, was, now, logged_revision,
    logged_policy, request_id}`` with its ``explanation`` under ``r`` when ``proofs``; how many
    were replayed; how many were masked; how many were not decisions)."""
    changed: list[dict[str, Any]] = []
    masked = replayed = other = 0
    for path, no, e in logged:
        inp = e["input"]
        result = e.get("result")
        if not isinstance(result, dict) or not isinstance(result.get("allowed"), bool):
            other += 1  # a read's answer (list, who, ...) or an OPA lookup: no decision
            continue
        triple = tuple(inp.get(k) for k in ("subject", "operation", "resource"))
        if MASK in triple or not all(isinstance(x, str) for x in triple):
            masked += 1
            continue
        replayed += 1
        s, o, res = triple
        assert isinstance(s, str) and isinstance(o, str) and isinstance(res, str)
        was = result["allowed"]
        d = r.check(s, o, res)
        if d.allowed == was:
            continue
        goal = ir.show_atom(r.program.decision, (s, o, res))
        item: dict[str, Any] = {"at": f"{path}:{no}", "goal": goal, "was": was,
                                "now": d.allowed, "logged_revision": e.get("revision"),
                                "logged_policy": e.get("policy"),
                                "request_id": e.get("request_id")}
        if proofs:
            item["explanation"] = r.explain(goal)
        changed.append(item)
    return changed, replayed, masked, other


def cmd_replay(a: argparse.Namespace) -> int:

    program = compile_rules(rule_files(a, a.rules), a.strict)
    logged = entries(a.logs)
    r = reasoner(a, program)
    try:
        changed, replayed, masked, other = replay(logged, r, proofs=not a.no_proofs)
        revision = r.revision
    finally:
        r.close()
    if a.json:
        out = [{k: (v.to_dict() if k == "explanation" else v) for k, v in c.items()}
               for c in changed]
        sys.stdout.write(json.dumps({"replayed": replayed, "masked": masked,
                                     "not_decisions": other, "changed": out,
                                     "revision": revision}, indent=2) + "\n")
    else:
        for c in changed:
            verdict = f"{'ALLOW' if c['was'] else 'DENY'} -> {'ALLOW' if c['now'] else 'DENY'}"
            sys.stdout.write(f"{verdict} {c['goal']}  ({c['at']}, request {c['request_id']}, "
                             f"logged at revision {c['logged_revision']})\n")
            if "explanation" in c:
                sys.stdout.write(c["explanation"].render() + "\n")
        sys.stdout.write(f"{replayed} replayed, {len(changed)} would change"
                         + (f", {masked} masked (not replayed)" if masked else "")
                         + (f", {other} reads or lookups (not decisions)" if other else "")
                         + f" (facts at revision {revision})\n")
    return 1 if changed else 0
