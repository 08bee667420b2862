"""``grantlog lint``: the compiler's warnings plus style findings that never block compilation."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from grantlog.grammar import ast
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, warning

from .checks import Unit, all_atoms, body_atoms, lit_vars, run_checks
from .loader import load


def _singletons(u: Unit) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for c in u.clauses():
        if c.is_fact:
            continue
        occurrences: list[ast.Var] = []
        for lit in (c.head, *c.body):
            occurrences += lit_vars(lit)
        counts = Counter(v.name for v in occurrences)
        for v in occurrences:
            if counts[v.name] == 1 and not v.name.startswith("_"):
                out.append(warning("singleton-variable",
                                   f"variable `{v.name}` appears only once in this rule", v.span,
                                   f"write `_` (or `_{v.name}`) if the value does not matter"))
    return out


def _unused(u: Unit) -> list[Diagnostic]:
    used = {a.rel for a in all_atoms(u)}
    for c in u.clauses():
        for a, _ in body_atoms(c.body):
            used.add(a.rel)
    return [warning("unused-relation", f"relation `{name}` is declared but never used", d.span)
            for name, d in u.decls.items() if name not in used]


def lint(paths: Sequence[str], strict: bool = False) -> tuple[list[Diagnostic], dict[str, str]]:
    """All diagnostics for the files (errors included); raises only when nothing could load."""
    loaded = load(None, list(paths), "<input>")
    if any(d.severity == "error" for d in loaded.diagnostics):
        raise GrantlogError(loaded.diagnostics, loaded.sources)
    u = Unit(loaded.modules, strict=strict)
    run_checks(u)
    diags = loaded.diagnostics + u.diagnostics + _singletons(u) + _unused(u)
    roots = set(loaded.roots)
    return [d for d in diags if d.span.file in roots or d.severity == "error"], loaded.sources
