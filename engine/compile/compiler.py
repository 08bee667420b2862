"""The compile pipeline: load → parse → checks → lowering → IR program."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from grantlog.grammar import ast
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error, plural
from grantlog.grammar.parser import parse_goal

from ..core import ir
from ..core.hierarchy_roles import hierarchy_problems
from ..core.suggest import did_you_mean
from .checks import Unit, bind_vars, check_body, run_checks
from .loader import load
from .lower import lower, lower_body
from .materialize import analyse


def compile_program(
    text: str | None = None,
    paths: Sequence[str | Path] = (),
    filename: str = "<input>",
    strict: bool = False,
    search_path: Sequence[Path] | None = None,
    files: Mapping[str, str] | None = None,
    disk: bool = True,
) -> ir.Program:
    """Compile rule text and/or files into a checked :class:`ir.Program`.

    ``files`` holds texts by path, read instead of the disk (uploaded policies, editor
    buffers); with ``disk=False`` nothing else is read but the shipped models.

    Raises :class:`GrantlogError` carrying every error found (and the warnings); on success the
    warnings are in ``program.warnings``.
    """
    if text is None and not paths:
        raise GrantlogError([error("no-input", "nothing to compile: give rule text or paths",
                                   _nowhere())])
    loaded = load(text, [str(p) for p in paths], filename,
                  list(search_path) if search_path is not None else None, files, disk,
                  rows=True)
    if any(d.severity == "error" for d in loaded.diagnostics):
        raise GrantlogError(loaded.diagnostics, loaded.sources)
    unit = Unit(loaded.modules, strict=strict, tables=loaded.tables)
    run_checks(unit)
    diags = loaded.diagnostics + unit.diagnostics
    if any(d.severity == "error" for d in diags):
        raise GrantlogError(diags, loaded.sources)
    program = lower(unit, loaded.sources, loaded.roots)
    bad = analyse(program) + hierarchy_problems(program)
    if bad:
        raise GrantlogError(diags + bad, loaded.sources)
    program.warnings = [d for d in diags if d.severity == "warning"]
    return program


def _nowhere() -> Span:
    return Span("<input>", 0, 0, 0, 0)


def compile_goal(program: ir.Program, text: str) -> tuple[tuple[ir.Lit, ...], list[str]]:
    """Parse and check a goal against the program; returns its body and its named variables."""
    file = "<goal>"
    sources = {file: text}
    body = parse_goal(text, file)
    diags: list[Diagnostic] = []
    unit = Unit([], diagnostics=diags)
    for lit in body:
        atom = lit.atom if isinstance(lit, ast.Negation) else lit
        if not isinstance(atom, ast.Atom):
            continue
        rel = program.relations.get(atom.rel)
        if rel is None:
            diags.append(error("unknown-relation", f"relation `{atom.rel}` does not exist",
                               atom.span, did_you_mean(atom.rel, program.relations)))
        elif rel.arity != len(atom.args):
            diags.append(error("arity-mismatch",
                               f"`{atom.rel}` takes {plural(rel.arity, 'argument')} but is given "
                               f"{len(atom.args)} here", atom.span))
    check_body(unit, body, bind_vars(body))
    if diags:
        raise GrantlogError(diags, sources)
    names: list[str] = []
    for lit in body:
        for t in _terms(lit):
            if isinstance(t, ast.Var) and not t.anonymous and t.name not in names:
                names.append(t.name)
    return lower_body(body), names


def _terms(lit: ast.Literal) -> list[ast.Term]:
    if isinstance(lit, ast.Atom):
        return list(lit.args)
    if isinstance(lit, ast.Negation):
        return list(lit.atom.args)
    return [lit.left, lit.right]
