"""The ``grantlog`` command line.

Exit codes: 0 success (for ``check``/``query``: allowed / has answers); 1 a negative answer
(denied, no answers, failing tests, files that ``fmt --check`` would change, lint findings);
2 a user error (bad rule text, bad goal, missing file), reported as diagnostics on stderr;
3 an internal error (a bug in grantlog: please report it).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grantlog.engine import compile_program
from grantlog.engine.answer.testing import Coverage, run_tests
from grantlog.engine.answer.whatif import diff_programs
from grantlog.engine.compile.lint import lint
from grantlog.engine.compile.loader import expand_paths, read_source
from grantlog.engine.core.ir import Program, row_key, show_atom, show_value
from grantlog.grammar import format_text
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error, render_all
from grantlog.reasoner import Reasoner
from grantlog.rules import model_path, models

EXIT_OK, EXIT_NO, EXIT_USER, EXIT_INTERNAL = 0, 1, 2, 3


def _out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _inputs(a: argparse.Namespace, files: Sequence[str]) -> list[str]:
    """Rule files: ``--model NAME`` (a shipped model), the given files, ``--facts`` files."""
    out: list[str] = []
    if getattr(a, "model", None):
        path = model_path(a.model)
        if path is None:
            names = ", ".join(f"`{m.name}`" for m in models()) or "none"
            raise GrantlogError([error("unknown-model", f"no shipped model `{a.model}`",
                                       Span("<command line>", 0, 0, 0, 0),
                                       f"shipped models: {names}")])
        out.append(str(path))
    out += list(files)
    out += list(getattr(a, "facts", None) or [])
    if not out:
        raise GrantlogError([error("no-input", "no rule files given",
                                   Span("<command line>", 0, 0, 0, 0),
                                   "name rule files, or a shipped model with --model")])
    return out


def _compile(paths: Sequence[str], strict: bool) -> Program:
    program = compile_program(None, list(paths), strict=strict)
    if program.warnings:
        sys.stderr.write(render_all(program.warnings, program.sources) + "\n")
    return program


def _reasoner(a: argparse.Namespace, program: Program) -> Reasoner:
    """The program's reasoner, over the facts of ``--store`` too when given (read once: the
    command answers at the store's current revision)."""
    store = getattr(a, "store", None)
    return Reasoner(program, store=store, follow=False) if store else Reasoner(program)


def cmd_eval(a: argparse.Namespace) -> int:
    r = _reasoner(a, _compile(_inputs(a, a.files), a.strict))
    rows = r.all_rows()
    if a.json:
        _out(json.dumps({k: sorted([list(x) for x in v], key=row_key) for k, v in rows.items()},
                        indent=2, ensure_ascii=False))
        return EXIT_OK
    for rel, rs in rows.items():
        if a.relation and rel not in a.relation:
            continue
        _out(f"// {rel}: {len(rs)} row{'s' if len(rs) != 1 else ''}")
        for row in sorted(rs, key=row_key):
            _out(show_atom(rel, row) + ".")
    return EXIT_OK


def cmd_query(a: argparse.Namespace) -> int:
    *files, goal = a.args
    r = _reasoner(a, _compile(_inputs(a, files), a.strict))
    answers = r.query(goal)
    if a.json:
        _out(json.dumps(answers, indent=2, ensure_ascii=False))
    elif not answers:
        _out("no")
    else:
        for ans in answers:
            _out(", ".join(f"{k} = {show_value(v)}" for k, v in ans.items()) if ans else "yes")
    return EXIT_OK if answers else EXIT_NO


def cmd_explain(a: argparse.Namespace) -> int:
    *files, goal = a.args
    r = _reasoner(a, _compile(_inputs(a, files), a.strict))
    ex = r.explain(goal)
    render = {"text": ex.render, "json": ex.to_json, "dot": ex.to_dot,
              "mermaid": ex.to_mermaid}[a.format]
    _out(render())
    return EXIT_OK if ex.holds else EXIT_NO


def cmd_check(a: argparse.Namespace) -> int:
    if len(a.args) < 3:  # a usage error: exit 2, like argparse's own
        sys.stderr.write("grantlog check: usage: grantlog check [--model M] [--facts F] "
                         "FILE... SUBJECT OPERATION RESOURCE\n")
        return EXIT_USER
    *files, subject, operation, resource = a.args
    r = _reasoner(a, _compile(_inputs(a, files), a.strict))
    d = r.check(subject, operation, resource)
    goal = show_atom(r.program.decision, (subject, operation, resource))
    if a.json:
        payload: dict[str, Any] = {"goal": goal, "allowed": d.allowed, "reasons": list(d.reasons)}
        if a.explain:
            payload["explanation"] = r.explain(goal).to_dict()
        _out(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        verdict = "ALLOW" if d.allowed else "DENY"
        why = f" (by {', '.join(d.reasons)})" if d.reasons else ""
        _out(f"{verdict} {goal}{why}")
        if a.explain:
            _out(r.explain(goal).render())
    return EXIT_OK if d.allowed else EXIT_NO


def cmd_test(a: argparse.Namespace) -> int:
    files, diags = expand_paths(a.paths, allow_empty=True)
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
                    _out(f"PASS {res.name} ({res.span})")
            else:
                failed += 1
                if not a.json:
                    _out(f"FAIL {res.name} ({res.span})")
                    for x in res.failures:
                        _out(f"  {x.span}: {x.message}")
    for problem in errors:
        sys.stderr.write(str(problem) + "\n")
    if a.json:
        payload: dict[str, Any] = {"passed": passed, "failed": failed, "tests": report}
        if cov is not None:
            payload["coverage"] = cov.to_dict()
        _out(json.dumps(payload, indent=2))
    else:
        if cov is not None:
            _out(cov.render())
        _out(f"{passed} passed, {failed} failed")
    if errors:
        return EXIT_USER
    return EXIT_NO if failed else EXIT_OK


def cmd_fmt(a: argparse.Namespace) -> int:
    if a.paths == ["-"]:
        sys.stdout.write(format_text(_read_stdin(), "<stdin>"))
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
            _out(f"would reformat {f}")
            if a.diff:
                sys.stdout.writelines(difflib.unified_diff(
                    text.splitlines(True), new.splitlines(True), f, f"{f} (formatted)"))
        else:
            Path(f).write_text(new, encoding="utf-8")
            _out(f"reformatted {f}")
    for problem in errors:
        sys.stderr.write(str(problem) + "\n")
    if errors:
        return EXIT_USER
    return EXIT_NO if a.check and changed else EXIT_OK


def _read_stdin() -> str:
    """stdin as UTF-8 text, like a rule file (`bad-encoding` at the first bad byte)."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream without bytes underneath (tests, embedding)
        return sys.stdin.read()
    raw: bytes = buffer.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise GrantlogError([error("bad-encoding", f"stdin is not UTF-8 text (byte {e.start})",
                                   Span("<stdin>", line, col, line, col + 1),
                                   "rule files are read as UTF-8; convert the input")]) from None


def cmd_lint(a: argparse.Namespace) -> int:
    diags, sources = lint(a.paths, strict=a.strict, facts=a.facts or ())
    if a.json:
        _out(json.dumps([d.to_dict() for d in diags], indent=2))
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
                                   f"({exc})", Span("<command line>", 0, 0, 0, 0),
                                   "install it with `pip install 'grantlog[lsp]'`")]) from None
    return lsp_main()


def cmd_list(a: argparse.Namespace) -> int:
    *files, subject, operation = a.args
    r = _reasoner(a, _compile(_inputs(a, files), a.strict))
    found = r.list(subject, operation, a.type, a.within)
    if a.json:
        _out(json.dumps(found, ensure_ascii=False))
    else:
        for x in found:
            _out(show_value(x))
    return EXIT_OK if found else EXIT_NO


def cmd_filter(a: argparse.Namespace) -> int:
    here = Span("<command line>", 0, 0, 0, 0)
    if a.rows is not None:
        return _row_filter(a, here)
    if len(a.args) < 2:
        raise GrantlogError([error("bad-option", "filter takes FILE... SUBJECT OPERATION",
                                   here)])
    *files, subject, operation = a.args
    r = _reasoner(a, _compile(_inputs(a, files), a.strict))
    f = r.filter(subject, operation, a.type)
    if a.sql is None:
        _out(json.dumps(f.to_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK
    if a.layout is None:
        raise GrantlogError([error("bad-option", "--sql needs --layout FILE (the catalog "
                                   "table's name and columns)", here)])
    try:
        from grantlog.filters import Layout, select_sql, to_sql
    except ImportError as exc:
        raise GrantlogError([error("missing-dependency", f"SQL filters need sqlglot ({exc})",
                                   here, "install it with `pip install 'grantlog[filters]'`")]) \
            from None
    layout = Layout.load(a.layout)
    _out((to_sql if a.where else select_sql)(f, layout, a.sql))
    return EXIT_OK


def _row_filter(a: argparse.Namespace, here: Span) -> int:
    """``grantlog filter --rows TABLE FILE... SUBJECT``: a row filter, as JSON or SQL."""
    if a.layout is not None or a.type is not None:
        raise GrantlogError([error("bad-option", "--rows takes neither --layout nor --type: "
                                   "a row filter is over the table's own columns", here)])
    *files, subject = a.args
    r = _reasoner(a, _compile(_inputs(a, files), a.strict))
    f = r.row_filter(subject, a.rows, a.relation)
    if a.sql is None:
        _out(json.dumps(f.to_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK
    from grantlog.filters import row_filter_sql

    _out(row_filter_sql(f, a.sql))
    return EXIT_OK


def cmd_who(a: argparse.Namespace) -> int:
    *files, operation, resource = a.args
    r = _reasoner(a, _compile(_inputs(a, files), a.strict))
    found = r.who(operation, resource)
    if a.json:
        _out(json.dumps(found, ensure_ascii=False))
    else:
        for x in found:
            _out(show_value(x))
    return EXIT_OK if found else EXIT_NO


def cmd_import(a: argparse.Namespace) -> int:
    from grantlog.interop.gravitino import load_gravitino_dir, to_gl

    facts = load_gravitino_dir(Path(a.dir), a.metalake)
    if a.store:
        from grantlog.store import open_store

        model = model_path("gravitino")
        assert model is not None
        program = compile_program(None, [str(model)])
        st = open_store(a.store, program)
        try:
            with st.writing() as w:
                added = sum(w.load(rel, [tuple(r) for r in rows])
                            for rel, rows in sorted(facts.items()))
        finally:
            st.close()
        n = sum(len(v) for v in facts.values())
        sys.stderr.write(f"stored {added} new facts of {n} in {a.store}"
                         + (f" as revision {w.committed}\n" if w.committed else "\n"))
        if not a.output:
            return EXIT_OK
    text = to_gl(facts)
    if a.output:
        Path(a.output).write_text(text, encoding="utf-8")
        n = sum(len(v) for v in facts.values())
        sys.stderr.write(f"wrote {n} facts to {a.output}\n")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_models(a: argparse.Namespace) -> int:
    ms = models()
    if a.json:
        _out(json.dumps([{"name": m.name, "title": m.title, "path": str(m.path)} for m in ms],
                        indent=2))
        return EXIT_OK
    width = max((len(m.name) for m in ms), default=0)
    for m in ms:
        _out(f"{m.name:<{width}}  {m.title}")
    return EXIT_OK


def cmd_diff(a: argparse.Namespace) -> int:
    nowhere = Span("<command line>", 0, 0, 0, 0)
    if not (a.before or a.after or a.facts_before or a.facts_after):
        raise GrantlogError([error(
            "no-input", "nothing to compare", nowhere,
            "give --before FILE... --after FILE..., or RULES... with --facts-before F... "
            "and/or --facts-after F...")])
    shared: list[str] = []
    if a.model:
        path = model_path(a.model)
        if path is None:
            names = ", ".join(f"`{m.name}`" for m in models()) or "none"
            raise GrantlogError([error("unknown-model", f"no shipped model `{a.model}`",
                                       nowhere, f"shipped models: {names}")])
        shared.append(str(path))
    shared += a.files
    sides: list[Program] = []
    shown: list[Diagnostic] = []
    for name, files, facts in (("before", a.before, a.facts_before),
                               ("after", a.after, a.facts_after)):
        paths = shared + list(files or []) + list(facts or [])
        if not paths:
            raise GrantlogError([error("no-input", f"no rule files for the {name} side", nowhere,
                                       "shared RULES go before the options, or name the files "
                                       f"with --{name}")])
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
    result = diff_programs(sides[0], sides[1], a.relation, proofs=not a.no_proofs,
                           facts=stored)
    if a.json:
        _out(json.dumps(result.to_dict(proofs=not a.no_proofs), indent=2, ensure_ascii=False))
    else:
        _out(result.render(proofs=not a.no_proofs))
    return EXIT_NO if result else EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="grantlog", description=__doc__.split("\n")[0]
                                if __doc__ else None)
    p.add_argument("--version", action="version", version="grantlog 0.1.0")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help: str, inputs: bool = False) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help, description=help)
        sp.add_argument("--strict", action="store_true",
                        help="unknown relations are errors, not warnings")
        if inputs:
            sp.add_argument("--model", "-m", help="a shipped model (see `grantlog models`)")
            sp.add_argument("--facts", "-f", action="append", metavar="FILE",
                            help="a file of facts (or rules) to add; repeatable")
            sp.add_argument("--store", "-s", metavar="URL",
                            help="also the base facts of this store (sqlite:///facts.db, "
                            "postgresql://...; see `grantlog store`)")
        return sp

    sp = add("eval", "evaluate rule files and print every relation", inputs=True)
    sp.add_argument("files", nargs="*", metavar="FILE")
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--relation", "-r", action="append", help="print only this relation")
    sp.set_defaults(fn=cmd_eval)

    sp = add("query", "print every answer to a goal, e.g. 'allowed(U, read, t1)'", inputs=True)
    sp.add_argument("args", nargs="+", metavar="FILE... GOAL")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_query)

    sp = add("explain", "explain why a goal holds (a proof tree) or why it does not (a why-not "
             "tree: each rule that could derive it and the literals that fail)", inputs=True)
    sp.add_argument("args", nargs="+", metavar="FILE... GOAL")
    sp.add_argument("--format", choices=["text", "json", "dot", "mermaid"], default="text",
                    help="text (a tree, the default), json, Graphviz dot, or a Mermaid "
                    "flowchart")
    sp.add_argument("--json", action="store_const", const="json", dest="format",
                    help="same as --format json")
    sp.set_defaults(fn=cmd_explain)

    sp = add("check", "decide allowed(SUBJECT, OPERATION, RESOURCE)", inputs=True)
    sp.add_argument("args", nargs="+", metavar="FILE... SUBJECT OPERATION RESOURCE")
    sp.add_argument("--explain", action="store_true",
                    help="print the proof (ALLOW) or the why-not tree (DENY)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_check)

    sp = add("test", "run the `test` blocks of rule files")
    sp.add_argument("paths", nargs="+", metavar="PATH")
    sp.add_argument("--json", action="store_true")
    sp.add_argument("-v", "--verbose", action="store_true", help="list passing tests too")
    sp.add_argument("--coverage", action="store_true",
                    help="report which rules no test exercised")
    sp.set_defaults(fn=cmd_test)

    sp = add("fmt", "format rule files in place (`-` formats stdin to stdout)")
    sp.add_argument("paths", nargs="+", metavar="PATH")
    sp.add_argument("--check", action="store_true", help="only report files that would change")
    sp.add_argument("--diff", action="store_true", help="with --check, print a unified diff")
    sp.set_defaults(fn=cmd_fmt)

    sp = add("list", "the resources SUBJECT may perform OPERATION on", inputs=True)
    sp.add_argument("args", nargs="+", metavar="FILE... SUBJECT OPERATION")
    sp.add_argument("--type", "-t", help="only resources with entity(resource, TYPE)")
    sp.add_argument("--within", "-w", metavar="CONTAINER",
                    help="only CONTAINER and the resources below it "
                         "(ancestor_or_self(CONTAINER, resource))")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_list)

    sp = add("filter", "the condition a resource must meet for SUBJECT to perform OPERATION "
             "on it: JSON, or SQL over a catalog table (--sql, --layout)", inputs=True)
    sp.add_argument("args", nargs="+", metavar="FILE... SUBJECT OPERATION")
    sp.add_argument("--type", "-t", help="only resources with entity(resource, TYPE)")
    sp.add_argument("--sql", choices=["sqlite", "postgres", "spark", "trino"],
                    help="render the filter as a SQL query in this dialect (needs --layout)")
    sp.add_argument("--layout", metavar="FILE",
                    help="the catalog table: a TOML file (table, id, type, parent, path)")
    sp.add_argument("--where", action="store_true",
                    help="with --sql, print only the WHERE condition")
    sp.add_argument("--rows", metavar="TABLE",
                    help="a row filter instead (FILE... SUBJECT): the condition a row of TABLE "
                    "must meet for RELATION(SUBJECT, TABLE, row); --sql without --layout")
    sp.add_argument("--relation", default="row_visible",
                    help="with --rows, the relation asked (row_visible)")
    sp.set_defaults(fn=cmd_filter)

    sp = add("who", "the subjects that may perform OPERATION on RESOURCE", inputs=True)
    sp.add_argument("args", nargs="+", metavar="FILE... OPERATION RESOURCE")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_who)

    sp = sub.add_parser("import", help="turn another system's export into facts",
                        description="turn another system's export into a .gl fact file")
    isub = sp.add_subparsers(dest="system", required=True, metavar="SYSTEM")
    ip = isub.add_parser("gravitino", help="Apache Gravitino REST JSON (users, groups, roles, "
                         "owners) -> facts for rules/gravitino.gl")
    ip.add_argument("dir", metavar="DIR")
    ip.add_argument("--metalake", default="m1", help="the metalake the files describe")
    ip.add_argument("--output", "-o", help="write the facts here instead of stdout")
    ip.add_argument("--store", "-s", metavar="URL",
                    help="write the facts into this store (one transaction) instead of stdout")
    ip.set_defaults(fn=cmd_import)

    sub.add_parser("spark", help="bulk run on Spark (see `grantlog spark run -h`)",
                   add_help=False)

    from grantlog.service.cli import add_parser as add_serve_parser
    from grantlog.store.cli import add_parser as add_store_parser

    add_store_parser(sub)
    add_serve_parser(sub)

    from grantlog.service.replay import add_parser as add_logs_parser

    add_logs_parser(sub)

    sp = sub.add_parser("lsp", help="the language server for .gl files, over stdio "
                        "(docs/editor.md)")
    sp.set_defaults(fn=cmd_lsp)

    sp = sub.add_parser("models", help="list the shipped models")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_models)

    sp = add("lint", "report errors, warnings and style findings")
    sp.add_argument("paths", nargs="+", metavar="PATH")
    sp.add_argument("--facts", "-f", action="append", metavar="FILE",
                    help="a .gl file of facts to lint with each PATH (e.g. `unknown-constant`: "
                    "a constant no rule matches); repeatable")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_lint)

    sp = add("diff", "what-if: the facts of a relation gained and lost between two rule sets "
             "(--before/--after) or one rule set under two fact sets (--facts-before/-after)")
    sp.add_argument("files", nargs="*", metavar="RULES",
                    help="files shared by both sides (put them before the options)")
    sp.add_argument("--model", "-m", help="a shipped model, shared by both sides")
    for side in ("before", "after"):
        sp.add_argument(f"--{side}", action="extend", nargs="+", metavar="FILE",
                        help=f"rule and fact files of the {side} side only")
        sp.add_argument(f"--facts-{side}", action="extend", nargs="+", metavar="FILE",
                        help=f"fact files of the {side} side only")
    sp.add_argument("--store", "-s", metavar="URL",
                    help="the base facts of this store are on both sides")
    sp.add_argument("--relation", "-r", default="allowed",
                    help="the relation to compare (default: allowed)")
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--no-proofs", action="store_true", help="list the facts without proofs")
    sp.set_defaults(fn=cmd_diff)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "spark":  # its own argument parser (grantlog.spark_bridge.cli)
        from grantlog.spark_bridge.cli import main as spark_main

        return spark_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        code: int = args.fn(args)
        return code
    except GrantlogError as e:
        sys.stderr.write(str(e) + "\n")
        return EXIT_USER
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except RecursionError:
        sys.stderr.write("error: the input nests too deeply to process\n")
        return EXIT_USER
    except Exception:  # a bug in grantlog: say so, with what a bug report needs
        import traceback

        traceback.print_exc()
        sys.stderr.write("grantlog: internal error (a bug in grantlog: please report it with the "
                         "command and input that caused it)\n")
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
