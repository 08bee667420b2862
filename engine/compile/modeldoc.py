"""Reference pages for the shipped models, generated from the rule files (docs/models/)."""

from __future__ import annotations

from pathlib import Path

from ..core import ir
from .compiler import compile_program


def _operations(program: ir.Program) -> list[str]:
    """Operation names: constants in the operation position of decision-rule heads, and the
    values of base-fact columns named `operation`, `op` or `api` in the model's own file."""
    ops: set[str] = set()
    for rule in program.rules_for(program.decision):
        if len(rule.head.args) == 3 and isinstance(rule.head.args[1], ir.Const):
            ops.add(str(rule.head.args[1].value))
    for f in program.facts:
        rel = program.relations[f.rel]
        for col, v in zip(rel.columns, f.row, strict=True):
            if col in ("operation", "op", "api") and isinstance(v, str):
                ops.add(v)
    return sorted(ops)


def _cols(rel: ir.Relation) -> str:
    parts = [f"{c}: {t}" if t else c for c, t in zip(rel.columns, rel.types, strict=True)]
    return f"{rel.name}({', '.join(parts)})"


def model_page(path: Path, name: str) -> str:
    program = compile_program(None, [path])
    text = path.read_text(encoding="utf-8")
    title = text.split("\n", 1)[0].lstrip("/ ").strip()
    derived = program.derived
    lines = [f"# `{name}` — {title}", "",
             f"Generated from `rules/{path.name}` by `python tools/gen_model_docs.py`; do not "
             "edit by hand.", ""]
    lines += ["## Operations", "", f"Decision relation: `{program.decision}`.", ""]
    lines += [", ".join(f"`{o}`" for o in _operations(program)) or "(none found)", ""]
    lines += ["## Base relations (the facts you supply)", "", "| relation | meaning |", "|---|---|"]
    for rel in sorted(program.relations.values(), key=lambda r: r.name):
        if rel.name not in derived and rel.declared:
            doc = " ".join(rel.doc).replace("|", "\\|")
            lines.append(f"| `{_cols(rel)}` | {doc} |")
    lines += ["", "## Derived relations", "", "| relation | meaning | evaluation |",
              "|---|---|---|"]
    for rel in sorted(program.relations.values(), key=lambda r: r.name):
        if rel.name in derived:
            doc = " ".join(rel.doc).replace("|", "\\|")
            how = "on demand" if rel.name in program.virtual else "materialized"
            lines.append(f"| `{_cols(rel)}` | {doc} | {how} |")
    lines += ["", "## Rules", "", "| rule | derives | doc | at |", "|---|---|---|---|"]
    for rule in program.rules:
        doc = (rule.doc_line or "").replace("|", "\\|")
        at = f"{Path(rule.span.file).name}:{rule.span.line}"
        lines.append(f"| `{rule.name}` | `{rule.head.rel}` | {doc} | {at} |")
    return "\n".join(lines) + "\n"
