"""Writing rules: ``test``, ``fmt``, ``lint``, ``lsp`` (the language server) and ``models``."""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import Any

from grantlog.engine import compile_program
from grantlog.engine.answer.testing import Coverage, run_tests
from grantlog.engine.compile.lint import lint
from grantlog.engine.compile.loader import expand_paths, read_source
from grantlog.grammar import format_text
from grantlog.grammar.diagnostics import GrantlogError, error, plural, render_all
from grantlog.rules import models

from .inputs import (
    COMMAND_LINE,
    EXIT_NO,
    EXIT_OK,
    EXIT_USER,
    HELP_FACTS,
    add_command,
    add_json,
    add_model,
    out,
    read_stdin,
    rule_files,
)


def _test_paths(a: argparse.Namespace) -> list[str]:
    """The files ``test`` runs: ``--model``'s file and its tests (``NAME_test.gl`` beside it,
    when shipped), then PATHs."""
    paths = rule_files(a, a.paths)
    if a.model:
        tests = Path(paths[0]).with_name(f"{a.model}_test.gl")
        if tests.is_file():
            paths.insert(1, str(tests))
    return paths


def cmd_test(a: argparse.Namespace) -> int:
    files, diags = expand_paths(_test_paths(a), allow_empty=True)
    if diags:
        raise GrantlogError(diags)
    passed = failed = 0
    errors: list[GrantlogError] = []
    report: list[dict[str, Any]] = []
    cov = Coverage() if a.coverage else None
    for f in files:
        try:
            program = compile_program(None, [f], strict=a.strict)
        except GrantlogError as err:
            errors.append(err)
            continue
        for res in run_tests(program, {f}, cov):
            report.append({"name": res.name, "file": res.file, "line": res.span.line,
                           "passed": res.passed,
                           "failures": [{"at": str(x.span), "message": x.message}
                                        for x in res.failures]})
            if res.passed:
                passed += 1
                if not a.json and a.verbose:
                    out(f"PASS {res.name} ({res.span})")
            else:
                failed += 1
                if not a.json:
                    out(f"FAIL {res.name} ({res.span})")
                    for x in res.failures:
                        out(f"  {x.span}: {x.message}")
    for problem in errors:
        sys.stderr.write(str(problem) + "\n")
    broken = f"{plural(len(errors), 'rule file')} did not compile"
    if a.json:
        payload: dict[str, Any] = {"passed": passed, "failed": failed, "tests": report}
        if errors:
            payload["errors"] = [d.to_dict() for e in errors for d in e.diagnostics]
        if cov is not None:
            payload["coverage"] = cov.to_dict()
        out(json.dumps(payload, indent=2))
    elif errors and not report:  # nothing ran: the compile errors above are the answer
        sys.stderr.write(f"grantlog test: {broken}: no test ran\n")
    else:
        if cov is not None:
            out(cov.render())
        out(f"{passed} passed, {failed} failed" + (f"; {broken}" if errors else ""))
    if errors:
        return EXIT_USER
    return EXIT_NO if failed else EXIT_OK


def cmd_fmt(a: argparse.Namespace) -> int:
    if a.paths == ["-"]:
        sys.stdout.write(format_text(read_stdin(), "<stdin>"))
        return EXIT_OK
    files, diags = expand_paths(a.paths, allow_empty=True)
    if diags:
        raise GrantlogError(diags)
    changed = 0
    errors: list[GrantlogError] = []
    for f in files:
        text, unreadable = read_source(f)
        if unreadable is not None:
            errors.append(GrantlogError([unreadable]))
            continue
        try:
            new = format_text(text, f)
        except GrantlogError as err:
            errors.append(err)
            continue
        if new == text:
            continue
        changed += 1
        if a.check:
            out(f"would reformat {f}")
            if a.diff:
                sys.stdout.writelines(difflib.unified_diff(
                    text.splitlines(True), new.splitlines(True), f, f"{f} (formatted)"))
        else:
            Path(f).write_text(new, encoding="utf-8")
            out(f"reformatted {f}")
    for problem in errors:
        sys.stderr.write(str(problem) + "\n")
    if errors:
        return EXIT_USER
    return EXIT_NO if a.check and changed else EXIT_OK


def cmd_lint(a: argparse.Namespace) -> int:
    diags, sources = lint(rule_files(a, a.paths, facts=False), strict=a.strict,
                          facts=a.facts or ())
    if a.json:
        out(json.dumps([d.to_dict() for d in diags], indent=2))
    elif diags:
        sys.stderr.write(render_all(diags, sources, limit=1000) + "\n")
    if any(d.severity == "error" for d in diags):
        return EXIT_USER
    return EXIT_NO if diags else EXIT_OK


def cmd_lsp(a: argparse.Namespace) -> int:
    try:
        from grantlog.lsp.server import main as lsp_main
    except ImportError as exc:
        raise GrantlogError([error("missing-dependency", f"the language server needs its extra "
                                   f"({exc})", COMMAND_LINE,
                                   "install it with `pip install 'grantlog[lsp]'`")]) from None
    return lsp_main()


def cmd_models(a: argparse.Namespace) -> int:
    ms = models()
    if a.json:
        out(json.dumps([{"name": m.name, "title": m.title, "path": str(m.path)} for m in ms],
                       indent=2))
        return EXIT_OK
    width = max((len(m.name) for m in ms), default=0)
    for m in ms:
        out(f"{m.name:<{width}}  {m.title}")
    return EXIT_OK


def add_parser(sub: Any) -> None:
    sp = add_command(sub, "test", "run the `test` blocks of rule files", json=True)
    sp.add_argument("paths", nargs="*", metavar="PATH",
                    help="rule files or directories (their .gl files) whose tests run")
    add_model(sp, "also run a shipped model's tests (its file's and NAME_test.gl's; see "
              "`grantlog models`)")
    sp.add_argument("-v", "--verbose", action="store_true", help="list passing tests too")
    sp.add_argument("--coverage", action="store_true",
                    help="report which rules no test exercised")
    sp.set_defaults(fn=cmd_test)

    sp = add_command(sub, "fmt", "format rule files in place (`-` formats stdin to stdout)",
                     progress=False)
    sp.add_argument("paths", nargs="+", metavar="PATH",
                    help="rule files or directories (their .gl files); `-`: stdin")
    sp.add_argument("--check", action="store_true", help="only report files that would change")
    sp.add_argument("--diff", action="store_true", help="with --check, print a unified diff")
    sp.set_defaults(fn=cmd_fmt)

    sp = add_command(sub, "lint", "report errors, warnings and style findings", json=True)
    sp.add_argument("paths", nargs="*", metavar="PATH",
                    help="rule files or directories (their .gl files) to lint")
    add_model(sp, "also lint a shipped model (see `grantlog models`)")
    sp.add_argument("--facts", "-f", action="append", metavar="FILE",
                    help=HELP_FACTS + "; linted with each PATH (e.g. `unknown-constant`: "
                    "a constant no rule matches)")
    sp.set_defaults(fn=cmd_lint)

    sp = sub.add_parser("lsp", help="the language server for .gl files, over stdio "
                        "(docs/editor.md)")
    sp.set_defaults(fn=cmd_lsp)

    sp = sub.add_parser("models", help="list the shipped models")
    add_json(sp)
    sp.set_defaults(fn=cmd_models)
