"""Asking the rules: ``eval``, ``query``, ``explain`` and ``check``."""

from __future__ import annotations

import argparse
import gc
import json
import re
import sys
from collections.abc import Collection, Iterator, Mapping
from contextlib import nullcontext
from typing import Any

from grantlog.engine.answer.vocabulary import to_json
from grantlog.engine.compile.restrict import restrict
from grantlog.engine.core import progress
from grantlog.engine.core.ir import Row, joined_keys, show_atom, show_value
from grantlog.engine.core.ir import sorted_rows as ir_sorted_rows
from grantlog.grammar.diagnostics import GrantlogError, Span, error
from grantlog.grammar.facts import collector_paused
from grantlog.reasoner import Reasoner

from .history import add_at, at
from .inputs import EXIT_NO, EXIT_OK, add_command, compile_rules, load, out, rule_files
from .typos import warn

#: rows written to stdout at a time by ``eval`` (the progress bar advances per chunk)
CHUNK = 10_000


def cmd_eval(a: argparse.Namespace) -> int:
    # the collector off: the command reads, copies, sorts and prints millions of rows once
    # and ends (a collection would walk every row to find no cycle: a fifth of the hmmer-like
    # case's CPU time, benchmarks/fact_bench.py). When the command is the whole process
    # (grantlog/cli/main.py sets ``ends_process``), what it made is frozen before the
    # collector comes back on: else its first collection walks every row made while it was
    # off (~0.5 s of the hmmer-like case)
    with collector_paused():
        code = _eval(a)
        if getattr(a, "ends_process", False):
            gc.freeze()
        return code


def _eval(a: argparse.Namespace) -> int:
    rows = relation_rows(a, a.relation) if a.relation else load(a, a.files).all_views()
    # a bar over the output only when it goes to a file or a pipe, not between its lines
    writing = nullcontext(progress.nothing) if sys.stdout.isatty() else \
        progress.task("writing", sum(map(len, rows.values())), "row")
    with writing as advance:
        if a.json:
            for piece in json_pieces(rows, advance):
                sys.stdout.write(piece)
            sys.stdout.write("\n")
            return EXIT_OK
        for rel, rs in rows.items():
            out(f"// {rel}: {len(rs)} row{'s' if len(rs) != 1 else ''}")
            ordered = ir_sorted_rows(rs)
            for i in range(0, len(ordered), CHUNK):
                chunk = ordered[i:i + CHUNK]
                sys.stdout.write("".join(f"{show_atom(rel, row)}.\n" for row in chunk))
                advance(len(chunk))
    return EXIT_OK


#: the text between two values of a row in ``json.dumps(..., indent=2)``'s output of
#: relations (``{rel: [[value, ...], ...]}``), and an encoder that writes just that
#: between the values of a list (C-accelerated, unlike ``indent``: the pure-Python encoder)
_BETWEEN = ",\n      "
_ROWS = json.JSONEncoder(ensure_ascii=False, separators=(_BETWEEN, ": "))


def json_relations(rows: Mapping[str, Collection[Row]],
                   advance: progress.Advance = progress.nothing) -> str:
    """``json.dumps({rel: sorted rows}, indent=2, ensure_ascii=False)``, the same text, in
    a fifth of the time (:func:`json_pieces`)."""
    return "".join(json_pieces(rows, advance))


def json_pieces(rows: Mapping[str, Collection[Row]],
                advance: progress.Advance = progress.nothing) -> Iterator[str]:
    """:func:`json_relations`' text in pieces, a relation's as it is made (``eval --json``
    writes each: the whole text, 50 MB on the hmmer-like case, is never copied). Each
    relation's rows are encoded in one call of the C encoder with the separator the
    indented text has between a row's values, which then also stands between the rows
    (``],`` + separator + ``[``: a value's encoding holds no raw newline, so only rows are
    separated so) and is replaced there by the indented rows' brackets. Rows of strings
    are sorted and encoded as their NUL-joined keys (ir.joined_keys), not made into rows
    again; when no value needs an escape, not encoded at all (:func:`_plain_rows`)."""
    if not rows:
        yield "{}"
        return
    yield "{"
    for i, (rel, rs) in enumerate(rows.items()):
        yield f"{',' if i else ''}\n  {json.dumps(rel, ensure_ascii=False)}: "
        yield from _relation_text(list(rs))
        advance(len(rs))
    yield "\n}"


def _relation_text(listed: list[Row]) -> list[str]:
    """The indented JSON text of a relation's rows, sorted, in pieces."""
    keys = joined_keys(listed) if listed and listed[0] else None
    if keys is not None:
        keys.sort()
        plain = _plain_rows(keys)
        if plain is not None:
            return plain
        if "\\" not in "".join(keys):
            # rows of strings: their NUL-joined keys sorted and encoded, each NUL
            # (`\u0000`: no value holds a backslash) then the text between two values,
            # `", "` between keys the text between two rows
            return ["[\n    [\n      ", _ROWS.encode(keys)[1:-1].replace(
                '"' + _BETWEEN + '"', '"\n    ],\n    [\n      "').replace(
                "\\u0000", '"' + _BETWEEN + '"'), "\n    ]\n  ]"]
    if not listed:
        return ["[]"]
    if not listed[0]:  # rows of no values
        return ["[\n" + ",\n".join("    []" for _ in listed) + "\n  ]"]
    return ["[\n    [\n      ", _ROWS.encode(ir_sorted_rows(listed))[2:-2].replace(
        "]" + _BETWEEN + "[", "\n    ],\n    [\n      "), "\n    ]\n  ]"]


#: what stands between two rows, and between two values, in the indented text of a
#: relation's rows (the values being JSON strings)
_ROW_GAP = '"\n    ],\n    [\n      "'
#: a character the JSON encoder escapes, other than those the joined rows hold (NUL
#: between values; `"` and a newline in the row gaps: counted instead)
_ESCAPED = re.compile(r'[\x01-\x09\x0b-\x1f\\]').search


def _plain_rows(keys: list[str]) -> list[str] | None:
    """The indented text of rows of strings given as their sorted NUL-joined keys
    (ir.joined_keys), in pieces, when no value needs an escape in JSON: each value is then
    its own encoding between quotes, and the text is one join and one replace, no encoder
    (a tenth less printing time on the hmmer-like case's 929k rows). None when some value
    holds a quote, a backslash or a control character."""
    body = _ROW_GAP.join(keys)
    n = len(keys) - 1  # row gaps: each holds two quotes and three newlines
    if body.count('"') != 2 * n or body.count("\n") != 3 * n or _ESCAPED(body):
        return None
    # (no value holds NUL: ir.joined_keys)
    return ['[\n    [\n      "', body.replace("\x00", '",\n      "'), '"\n    ]\n  ]']


def relation_rows(a: argparse.Namespace, names: list[str]) -> dict[str, set[Row]]:
    """The rows of the relations ``names`` (``eval -r``), sorted by name: an unknown name is
    ``unknown-relation``; only their dependency cone is evaluated (engine/compile/restrict.py),
    over the cone's facts of the rule files and of ``--store``."""
    program = compile_rules(rule_files(a, a.files), a.strict)
    part = restrict(program, names)
    r = Reasoner(part)
    if a.store:  # the whole program opens the store (as every command: its schema checked)
        from grantlog.store import open_store

        st = open_store(a.store, program, create=a.create)
        try:
            rev, stored = st.snapshot([rel for rel in part.relations if rel in st.tables])
        finally:
            st.close()
        r.seed({rel: rs for rel, rs in stored.items() if rs}, rev)
    return {rel: r.rows(rel) for rel in sorted(set(names))}


def cmd_query(a: argparse.Namespace) -> int:
    files, goal = a.files, a.goal
    r = load(a, files)
    with progress.task("answering"):  # the first read evaluates and plans: it may take long
        answers = r.query(goal, **at(a))
    if a.json:
        out(json.dumps(answers, indent=2, ensure_ascii=False))
    elif not answers:
        out("no")
    else:
        for ans in answers:
            out(", ".join(f"{k} = {show_value(v)}" for k, v in ans.items()) if ans else "yes")
    return EXIT_OK if answers else EXIT_NO


def cmd_explain(a: argparse.Namespace) -> int:
    files, goal = a.files, a.goal
    no_past(a)
    r = load(a, files)
    with progress.task("explaining"):
        ex = r.explain(goal, **at(a))
    if a.suggest and not ex.holds and a.format in ("text", "json"):
        s = suggestions(a, r, goal)
        out(ex.render() + "\n" + s.render() if a.format == "text" else json.dumps(
            {**ex.to_dict(), "suggestions": s.to_dict()}, indent=2, ensure_ascii=False))
        return EXIT_NO
    render = {"text": ex.render, "json": ex.to_json, "dot": ex.to_dot,
              "mermaid": ex.to_mermaid}[a.format]
    out(render())
    return EXIT_OK if ex.holds else EXIT_NO


def suggestions(a: argparse.Namespace, r: Any, goal: str) -> Any:
    """``--suggest``: the changes that would make ``goal`` hold (on the current facts)."""
    with progress.task("suggesting"):
        return r.suggest(goal, limit=a.suggest)


def no_past(a: argparse.Namespace) -> None:
    """``--suggest`` with ``--at``: refused before anything is answered."""
    if a.suggest and at(a):
        raise GrantlogError([error("bad-argument", "`--suggest` answers on the current facts, "
                                   "not as of a past revision", Span("<command line>", 0, 0,
                                                                     0, 0),
                                   "leave out `--at` or `--suggest`")])


def cmd_check(a: argparse.Namespace) -> int:
    files, subject, operation, resource = a.files, a.subject, a.operation, a.resource
    no_past(a)
    r = load(a, files)
    with progress.task("deciding"):
        d = r.check(subject, operation, resource, strict=a.strict, **at(a))
    warn(d.warnings)
    goal = show_atom(r.program.decision, (subject, operation, resource))
    if a.json:
        payload: dict[str, Any] = {"goal": goal, "allowed": d.allowed, "reasons": list(d.reasons)}
        if at(a):
            payload["revision"] = d.revision
        if d.warnings:
            payload["warnings"] = to_json(d.warnings)
        if a.explain:
            payload["explanation"] = r.explain(goal, **at(a)).to_dict()
        if a.suggest and not d.allowed:
            payload["suggestions"] = suggestions(a, r, goal).to_dict()
        out(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        verdict = "ALLOW" if d.allowed else "DENY"
        why = f" (by {', '.join(d.reasons)})" if d.reasons else ""
        when = f" at revision {d.revision}" if at(a) else ""
        out(f"{verdict} {goal}{why}{when}")
        if a.explain:
            out(r.explain(goal, **at(a)).render())
        if a.suggest and not d.allowed:
            out(suggestions(a, r, goal).render())
    return EXIT_OK if d.allowed else EXIT_NO


def add_parser(sub: Any) -> None:
    sp = add_command(sub, "eval", "evaluate rule files and print every relation", inputs=True,
                     json=True)
    sp.add_argument("--relation", "-r", action="append", metavar="REL",
                    help="print only this relation (repeatable)")
    sp.set_defaults(fn=cmd_eval)

    sp = add_command(sub, "query", "print every answer to a goal, e.g. 'allowed(U, read, t1)'",
                     inputs=True, args=("GOAL",), json=True)
    add_at(sp)
    sp.set_defaults(fn=cmd_query)

    sp = add_command(sub, "explain", "explain why a goal holds (a proof tree) or why it does "
                     "not (a why-not tree: each rule that could derive it and the literals "
                     "that fail)", inputs=True, args=("GOAL",))
    sp.add_argument("--format", choices=["text", "json", "dot", "mermaid"], default="text",
                    help="text (a tree, the default), json, Graphviz dot, or a Mermaid "
                    "flowchart")
    sp.add_argument("--json", action="store_const", const="json", dest="format",
                    help="same as --format json")
    add_suggest(sp)
    add_at(sp)
    sp.set_defaults(fn=cmd_explain)

    sp = add_command(sub, "check", "decide allowed(SUBJECT, OPERATION, RESOURCE)", inputs=True,
                     args=("SUBJECT", "OPERATION", "RESOURCE"), json=True)
    sp.add_argument("--explain", action="store_true",
                    help="print the proof (ALLOW) or the why-not tree (DENY)")
    add_suggest(sp)
    add_at(sp)
    sp.set_defaults(fn=cmd_check)


def add_suggest(sp: Any) -> None:
    sp.add_argument("--suggest", type=int, nargs="?", const=5, default=0, metavar="N",
                    help="when it does not hold: the N (default 5) smallest changes of facts "
                    "that would make it hold, each checked by running it")
