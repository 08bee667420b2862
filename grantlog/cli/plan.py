"""``grantlog plan GOAL``: the plan a query runs (engine/answer/plan.py)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from grantlog.engine.answer.plan import describe

from .inputs import EXIT_OK, add_command, load, out


def cmd_plan(a: argparse.Namespace) -> int:
    files, goal = a.files, a.goal
    report = describe(load(a, files), goal)
    out(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) if a.json
        else "\n".join(report.lines()))
    return EXIT_OK


def add_parser(sub: Any) -> None:
    sp = add_command(sub, "plan", "the plan a query of GOAL runs: the goal's join order, how "
                     "each derived relation it reaches is answered (materialized, or on demand: "
                     "rules, tabled, a closure walk), the indexes read and the statistics the "
                     "order was chosen by", inputs=True, args=("GOAL",), json=True)
    sp.set_defaults(fn=cmd_plan)
