"""``grantlog lint``: the compiler's warnings plus style findings that never block compilation."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence

from grantlog.grammar import ast
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, sort_diagnostics, warning

from ..core import ir
from .checks import Unit, all_atoms, body_atoms, lit_vars, run_checks
from .columns import ANY, ColumnAnalysis
from .loader import expand_paths, load
from .lower import lower
from .materialize import analyse


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


#: `// lint: allow CODE[, CODE...]` at the end of a warning's line, or alone on the line
#: above it, hides the warning
_ALLOW = re.compile(r"//\s*lint:\s*allow\s+([a-z][a-z-]*(?:\s*,\s*[a-z][a-z-]*)*)")


def _allowed(d: Diagnostic, sources: dict[str, str]) -> bool:
    """A lint warning the author marked as intended (a deliberate negative test)."""
    if d.severity != "warning" or d.span.line < 1:
        return False
    lines = sources.get(d.span.file, "").splitlines()
    for n, alone in ((d.span.line - 1, False), (d.span.line - 2, True)):
        if not 0 <= n < len(lines):
            continue
        m = _ALLOW.search(lines[n])
        if m is None or (alone and lines[n][:m.start()].strip()):
            continue
        if d.code in {c.strip() for c in m.group(1).split(",")}:
            return True
    return False


#: at most this many expected constants are named in an `unknown-constant` help
_SHOWN = 8


def _names(values: frozenset[ir.Value]) -> str:
    shown = sorted(values, key=ir.value_key)
    text = ", ".join(f"`{ir.show_value(v)}`" for v in shown[:_SHOWN])
    return text + (f" and {len(shown) - _SHOWN} more" if len(shown) > _SHOWN else "")


def _consts(atom: ast.Atom) -> list[tuple[int, ast.Const]]:
    return [(i, t) for i, t in enumerate(atom.args) if isinstance(t, ast.Const)]


def _unknown(a: ColumnAnalysis, what: str, atom: ast.Atom, i: int, c: ast.Const,
             known: frozenset[ir.Value], program: ir.Program, named: dict[object, str]
             ) -> Diagnostic:
    rel = program.relations.get(atom.rel)
    col = (f"`{rel.columns[i]}`" if rel is not None and rel.declared and i < len(rel.columns)
           else f"{i + 1}")
    shown = ir.show_value(c.value)
    key = (what, atom.rel, i)
    close = a.suggest(c.value, known, key)
    there = named.get(key)
    if there is None:
        there = named[key] = (f"the rules {what} {_names(known)} there" if known
                              else f"the rules {what} none")
    hint = f"did you mean `{close}`? ({there})" if close else there
    verb = "matches" if what == "match" else "puts"
    return warning("unknown-constant",
                   f"no rule {verb} `{shown}` in column {col} of `{atom.rel}`", c.span, hint)


def _unknown_constants(u: Unit, program: ir.Program, data_files: Sequence[str]
                       ) -> list[Diagnostic]:
    """unknown-constant: a constant of a fact that no rule can match in its column (the
    rules only compare that column with other constants), or of an `expect` goal that no rule
    or rule-file fact can put in its column. The typo class of `load_tabel`."""
    a = ColumnAnalysis(program, data_files)
    out: list[Diagnostic] = []
    named: dict[object, str] = {}

    def fact(atom: ast.Atom) -> None:
        for i, c in _consts(atom):
            if atom.rel not in program.relations:
                continue
            known = a.accepts(atom.rel, i)
            if known is not ANY and c.value not in known:
                out.append(_unknown(a, "match", atom, i, c, known, program, named))

    for clause in u.clauses():
        if clause.is_fact:
            fact(clause.head)
    for t in u.tests():
        mentioned: set[ir.Value] = set()
        for it in t.items:
            if isinstance(it, ast.Clause):
                fact(it.head)
                mentioned.update(k.value for _, k in _consts(it.head))
        for it in t.items:
            if not isinstance(it, ast.Expect):
                continue
            for atom, _ in body_atoms(it.body):
                if atom.rel not in program.relations:
                    continue
                for i, k in _consts(atom):
                    made = a.produces(atom.rel, i)
                    if made is not ANY and k.value not in made and k.value not in mentioned:
                        out.append(_unknown(a, "put", atom, i, k, made, program, named))
    return out


def lint(paths: Sequence[str], strict: bool = False, facts: Sequence[str] = (),
         texts: Mapping[str, str] | None = None) -> tuple[list[Diagnostic], dict[str, str]]:
    """All diagnostics for the files, each file linted as its own program (with its imports
    and the ``facts`` files, whose findings are reported too). ``texts``: files read from
    memory instead of the disk (an editor's unsaved buffers), by path.

    Findings inside imported files are reported when those files are linted themselves.
    """
    given = {os.path.normpath(k) for k in texts or {}}
    on_disk = [p for p in paths if os.path.normpath(p) not in given]
    files, problems = expand_paths(on_disk)
    files = [p for p in paths if os.path.normpath(p) in given] + files
    data, more = expand_paths(list(facts))
    if problems or more:
        raise GrantlogError(problems + more)
    diags: list[Diagnostic] = []
    seen: set[tuple[str, str, str]] = set()
    sources: dict[str, str] = {}
    for f in files:
        loaded = load(None, [f, *[d for d in data if d != f]], "<input>", files=texts)
        sources.update(loaded.sources)
        if any(d.severity == "error" for d in loaded.diagnostics):
            diags += loaded.diagnostics
            continue
        u = Unit(loaded.modules, strict=strict)
        run_checks(u)
        found = loaded.diagnostics + u.diagnostics + _singletons(u) + _unused(u)
        if not any(d.severity == "error" for d in found):
            program = lower(u, loaded.sources, loaded.roots)
            if not analyse(program):
                found += _unknown_constants(u, program, data)
        for d in found:
            if d.span.file != f and d.span.file not in data and d.severity != "error":
                continue
            if _allowed(d, loaded.sources):
                continue
            key = (d.code, str(d.span), d.message)
            if key not in seen:
                seen.add(key)
                diags.append(d)
    return sort_diagnostics(diags), sources
