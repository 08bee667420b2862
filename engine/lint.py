"""``grantlog lint``: the compiler's warnings plus style findings that never block compilation."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from grantlog.grammar import ast
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, sort_diagnostics, warning

from .checks import Unit, all_atoms, body_atoms, lit_vars, run_checks
from .loader import expand_paths, load


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
    """All diagnostics for the files, each file linted as its own program (with its imports).

    Findings inside imported files are reported when those files are linted themselves.
    """
    files, problems = expand_paths(list(paths))
    if problems:
        raise GrantlogError(problems)
    diags: list[Diagnostic] = []
    sources: dict[str, str] = {}
    for f in files:
        loaded = load(None, [f], "<input>")
        sources.update(loaded.sources)
        if any(d.severity == "error" for d in loaded.diagnostics):
            diags += loaded.diagnostics
            continue
        u = Unit(loaded.modules, strict=strict)
        run_checks(u)
        found = loaded.diagnostics + u.diagnostics + _singletons(u) + _unused(u)
        diags += [d for d in found if d.span.file == f or d.severity == "error"]
    return sort_diagnostics(diags), sources
