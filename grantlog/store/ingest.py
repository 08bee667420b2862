"""Fast loading and dumping of base facts: `.gl` fact files, CSV, JSON Lines and Parquet.

* ``.gl``: lines that are one plain ground fact are read with a regular expression
  (grammar/facts.py); the other lines go through the full parser, and must hold facts only
  (rules and declarations belong in the rule files: ``not-a-fact``). Every bad fact is reported
  with ``file:line:col`` and a caret.
* CSV (``<relation>.csv``, or ``relation=``): one row per fact, an optional header naming the
  relation's columns; values of ``int`` columns are integers, every other value a string.
* JSON Lines (``.jsonl``/``.ndjson``): a JSON array per line (the relation from the file
  name), or ``{"relation": R, "row": [...]}``, or an object with the relation's column names
  (and ``"relation"`` when the file name does not say it). JSON keeps strings and integers
  apart.
* Parquet (``.parquet``, needs ``pyarrow``: ``pip install 'grantlog[parquet]'``): columns
  named as the relation's columns (else taken in order).

A directory stands for the files in it. Each row is checked against the program's relations
(arity, declared types): ``bad-fact`` names the file and line (or row); a fact of a relation
that rules derive is refused (``derived-relation``) unless the rules mark it ``@writable``.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import itertools
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from grantlog.engine.answer import validity
from grantlog.engine.core import ir, progress
from grantlog.engine.core.journal import VALID
from grantlog.engine.core.suggest import closest
from grantlog.engine.core.times import interval, validity_derived
from grantlog.grammar import ast
from grantlog.grammar.diagnostics import (
    Diagnostic,
    GrantlogError,
    Span,
    display_path,
    error,
    plural,
)
from grantlog.grammar.facts import FactTable, read_facts

Rows = dict[str, list[ir.Row]]
#: diagnostics reported at most (then one saying how many more)
MAX_ERRORS = 20
FORMATS = ("gl", "csv", "jsonl", "parquet")
COMMAND_LINE = Span("<command line>", 0, 0, 0, 0)
#: the store's table of validity intervals as a relation (one file of a dump's directory)
VALID_RELATION = ir.Relation(VALID, 4, ("relation", "fact", "valid_from", "valid_until"),
                             ("string",) * 4)
_NAMES = {"gl": "`.gl`", "csv": "CSV", "jsonl": "JSON Lines", "parquet": "Parquet"}


class _Errors:
    def __init__(self) -> None:
        self.diags: list[Diagnostic] = []
        self.more = 0
        self.sources: dict[str, str] = {}

    def add(self, d: Diagnostic) -> None:
        if len(self.diags) < MAX_ERRORS:
            self.diags.append(d)
        else:
            self.more += 1

    def raise_if_any(self) -> None:
        if self.diags:
            diags = list(self.diags)
            if self.more:
                last = diags[-1]
                diags.append(error("too-many-errors", f"{self.more} more errors not shown",
                                   last.span))
            raise GrantlogError(diags, self.sources)


def _problem(program: ir.Program, rel: str, row: tuple[Any, ...]) -> str | None:
    r = program.relations.get(rel)
    if r is None:
        close = closest(rel, program.relations)
        return f"relation `{rel}` does not exist in the rules" + (
            f" (did you mean `{close}`?)" if close else "")
    if len(row) != r.arity:
        return f"`{rel}` takes {plural(r.arity, 'value')}, got {len(row)}"
    for i, v in enumerate(row):  # column by column, as a reader meets them
        if not isinstance(v, str | int) or isinstance(v, bool):
            return f"values must be strings or integers, got {v!r}"
        problem = ir.column_problem(r, row[i:i + 1], i)
        if problem:
            return problem
    return None


def _bad(program: ir.Program, rel: str, row: tuple[Any, ...], span: Span) -> Diagnostic | None:
    """What is wrong with a fact read at ``span``: a relation writes may not give facts of
    (``derived-relation``), else ``bad-fact`` (:func:`_problem`); None when nothing."""
    if rel == VALID:  # an interval as the store keeps it (a dump's `@valid` file)
        try:
            validity.checked(program, row)
        except GrantlogError as exc:
            return dataclasses.replace(exc.diagnostics[0], span=span)
        return None
    refused = program.write_refusal(rel, span)
    if refused:
        return refused
    problem = _problem(program, rel, row)
    return error("bad-fact", problem, span) if problem else None


# -- .gl ----------------------------------------------------------------------------------------

def read_gl(path: str, program: ir.Program, text: str | None = None) -> Rows:
    """The facts of a `.gl` fact file: plain fact lines through the fast reader
    (grammar/facts.py ``read_facts``, as the compiler reads them), checked a relation at a
    time; the other lines parsed, and facts only."""
    if text is None:
        text = _read_text(path)
    out: Rows = {}
    errs = _Errors()
    errs.sources[path] = text
    try:
        with progress.task(f"reading {display_path(path)}", total=len(text),
                           unit="B") as advance:
            mod, table = read_facts(text, path, advance)
    except GrantlogError as exc:
        for d in exc.diagnostics:
            errs.add(d)
        errs.raise_if_any()
        raise
    # bad facts as (line, col, how to report it): the first MAX_ERRORS in file order shown
    bad: list[tuple[int, int, Callable[[], Diagnostic]]] = []
    for rel, rows in table.rows.items():
        nos = table.lines[rel]
        r = program.relations.get(rel)
        if r is not None and rel not in program.read_only and ir.rows_problem(r, rows) is None:
            out.setdefault(rel, []).extend(rows)
            continue
        # refused, or of no relation: every fact of it (a diagnostic made only for those shown)
        fixed = r is None or rel in program.read_only
        mine = out.setdefault(rel, [])
        for i, row in enumerate(rows):
            if not fixed and _problem(program, rel, row) is None:
                mine.append(row)
            else:
                bad.append((nos[i], 0, functools.partial(_table_bad, program, table, rel, i)))
        if not mine:
            del out[rel]
    for st in mod.statements:
        if isinstance(st, ast.Clause) and st.is_fact and all(
                isinstance(a, ast.Const) for a in st.head.args):
            row = tuple(a.value for a in st.head.args if isinstance(a, ast.Const))
            found = _bad(program, st.head.rel, row, st.head.span)
            rel, timed = st.head.rel, st.valid_from or st.valid_until
            if not found and timed:  # `fact from "T" until "T".`: a row of VALID
                got = _timed(program, rel, row, st.valid_from and st.valid_from.value,
                             st.valid_until and st.valid_until.value, st.span)
                found, rel, row = (got, rel, row) if isinstance(got, Diagnostic) \
                    else (None, VALID, got)
            if found:
                bad.append((st.span.line, st.span.col, functools.partial(_same, found)))
            else:
                out.setdefault(rel, []).append(row)
        else:
            wrong = error("not-a-fact", "a fact file holds ground facts only", st.span,
                          "rules, declarations, imports and tests belong in the rule files")
            bad.append((st.span.line, st.span.col, functools.partial(_same, wrong)))
    bad.sort(key=lambda b: (b[0], b[1]))
    for _, _, make in bad[:MAX_ERRORS + 1]:
        errs.add(make())
    errs.more += max(0, len(bad) - MAX_ERRORS - 1)
    errs.raise_if_any()
    return out


def _same(d: Diagnostic) -> Diagnostic:
    return d


def _timed(program: ir.Program, rel: str, row: ir.Row, valid_from: object,
           valid_until: object, span: Span) -> ir.Row | Diagnostic:
    """The :data:`VALID` row of ``rel(row)`` valid from ``valid_from`` until ``valid_until``
    (a fact already checked), or why it cannot be (``validity-derived``, ``empty-validity``,
    ``bad-argument``)."""
    if rel in program.derived:
        return validity_derived(rel, span)
    try:
        iv = interval(valid_from, valid_until, span)
    except GrantlogError as exc:
        return dataclasses.replace(exc.diagnostics[0], span=span)
    return validity.encode(rel, row, iv)


def _table_bad(program: ir.Program, table: FactTable, rel: str, i: int) -> Diagnostic:
    row = table.rows[rel][i]
    span = table.atom_span(rel, i)
    span = Span(span.file, span.line, span.col, span.line, span.col + len(rel))
    return _bad(program, rel, row, span) or error("bad-fact", "bad fact", span)


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")  # a byte-order mark is dropped
    except UnicodeDecodeError as e:
        raise GrantlogError([error("bad-encoding", f"`{path}` is not UTF-8 text (byte {e.start})",
                                   Span(path, 0, 0, 0, 0))]) from None
    except OSError as e:
        raise GrantlogError([error("file-not-found",
                                   f"cannot read `{path}`: {(e.strerror or str(e)).lower()}",
                                   Span(path, 0, 0, 0, 0))]) from None


# -- CSV, JSON Lines, Parquet -----------------------------------------------------------------

def _relation_for(path: str, program: ir.Program, relation: str | None) -> ir.Relation:
    rel = relation or Path(path).name.split(".", 1)[0]
    r = program.relations.get(rel)
    if rel == VALID:  # the intervals, as the store keeps them (a dump's `@valid` file)
        return VALID_RELATION
    if r is None:
        raise GrantlogError([error(
            "unknown-relation", f"relation `{rel}` does not exist in the rules",
            Span(path, 0, 0, 0, 0),
            "name the file after a relation (member.csv) or pass the relation")])
    refused = program.write_refusal(rel, Span(path, 0, 0, 0, 0))
    if refused:
        raise GrantlogError([refused])
    return r


def read_csv(path: str, program: ir.Program, relation: str | None = None) -> Rows:
    r = _relation_for(path, program, relation)
    ints = [i for i, t in enumerate(r.types) if t == "int"]
    errs = _Errors()
    rows: list[ir.Row] = []
    try:
        f = open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115 (a BOM is dropped)
    except OSError as e:
        raise GrantlogError([error("file-not-found",
                                   f"cannot read `{path}`: {(e.strerror or str(e)).lower()}",
                                   Span(path, 0, 0, 0, 0))]) from None
    with f:
        reader = csv.reader(f)
        first = next(reader, None)
        if first is None:
            return {r.name: []}
        data: Iterable[list[str]] = reader
        if tuple(first) != r.columns:
            data = itertools.chain([first], reader)
        n = r.arity
        if not ints:
            for row in data:
                if len(row) != n:
                    errs.add(error("bad-fact",
                                   f"`{r.name}` takes {plural(n, 'value')}, got {len(row)}",
                                   Span(path, reader.line_num, 1, reader.line_num, 2)))
                    continue
                rows.append(tuple(row))
        else:
            for row in data:
                try:
                    if len(row) != n:
                        raise ValueError(f"`{r.name}` takes {plural(n, 'value')}, got {len(row)}")
                    vals: list[Any] = list(row)
                    for i in ints:
                        vals[i] = int(vals[i])
                    rows.append(tuple(vals))
                except ValueError as exc:
                    msg = str(exc) if "takes" in str(exc) else \
                        f"an integer column of `{r.name}` holds a non-integer ({exc})"
                    errs.add(error("bad-fact", msg,
                                   Span(path, reader.line_num, 1, reader.line_num, 2)))
    errs.raise_if_any()
    return {r.name: rows}


def read_jsonl(path: str, program: ir.Program, relation: str | None = None) -> Rows:
    named = relation or Path(path).name.split(".", 1)[0]
    out: Rows = {}
    errs = _Errors()
    text = _read_text(path)
    for no, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as exc:
            errs.add(error("bad-fact", f"not JSON: {exc}", Span(path, no, 1, no, 2)))
            continue
        rel = named
        bounds = None
        if isinstance(obj, dict):
            rel = obj.get("relation", named)
            if "valid_from" in obj or "valid_until" in obj:  # a fact with an interval
                bounds = (obj.pop("valid_from", None), obj.pop("valid_until", None))
            if "row" in obj:
                obj = obj["row"]
            else:
                r = program.relations.get(rel)
                if r is None:
                    errs.add(error("bad-fact", f"relation `{rel}` does not exist in the rules",
                                   Span(path, no, 1, no, 2)))
                    continue
                missing = [c for c in r.columns if c not in obj]
                if missing:
                    errs.add(error("bad-fact", f"no value for column `{missing[0]}` of "
                                   f"`{rel}`", Span(path, no, 1, no, 2)))
                    continue
                obj = [obj[c] for c in r.columns]
        if not isinstance(obj, list):
            errs.add(error("bad-fact", "a line must be a JSON array or object",
                           Span(path, no, 1, no, 2)))
            continue
        row = tuple(obj)
        bad = _bad(program, rel, row, Span(path, no, 1, no, 2))
        if not bad and bounds is not None:
            got = _timed(program, rel, row, *bounds, Span(path, no, 1, no, 2))
            bad, rel, row = (got, rel, row) if isinstance(got, Diagnostic) else (None, VALID, got)
        if bad:
            errs.add(bad)
            continue
        out.setdefault(rel, []).append(row)
    errs.raise_if_any()
    return out


def _pyarrow() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise GrantlogError([error(
            "missing-dependency", f"Parquet files need pyarrow ({exc})", Span("<api>", 0, 0, 0, 0),
            "install it with `pip install 'grantlog[parquet]'`")]) from None
    return pq


def read_parquet(path: str, program: ir.Program, relation: str | None = None) -> Rows:
    pq = _pyarrow()
    r = _relation_for(path, program, relation)
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise GrantlogError([error("bad-fact", f"cannot read `{path}` as Parquet: {exc}",
                                   Span(path, 0, 0, 0, 0))]) from None
    names = table.column_names
    if len(names) != r.arity:
        raise GrantlogError([error("bad-fact", f"`{r.name}` takes "
                                   f"{plural(r.arity, 'column')}, the file has {len(names)}",
                                   Span(path, 0, 0, 0, 0))])
    order = [names.index(c) for c in r.columns] if set(r.columns) <= set(names) \
        else list(range(r.arity))
    cols = [table.column(i).to_pylist() for i in order]
    rows: list[ir.Row] = list(zip(*cols, strict=True)) if cols else []
    for i, (typ, col) in enumerate(zip(r.types, cols, strict=True)):
        want = int if typ == "int" else str if typ == "string" else None
        bad = next((v for v in col if not isinstance(v, str | int) or isinstance(v, bool)
                    or (want is not None and not isinstance(v, want))), None) \
            if col else None
        if bad is not None or (col and any(v is None for v in col)):
            raise GrantlogError([error(
                "bad-fact", f"column `{r.columns[i]}` of `{r.name}` holds {bad!r}",
                Span(path, 0, 0, 0, 0), "values must be strings or integers as declared")])
    return {r.name: rows}


def file_format(path: str) -> str:
    name = Path(path).name.lower()
    for suffix, fmt in ((".gl", "gl"), (".csv", "csv"), (".jsonl", "jsonl"),
                        (".ndjson", "jsonl"), (".parquet", "parquet")):
        if name.endswith(suffix):
            return fmt
    raise GrantlogError([error("unknown-format", f"cannot tell the format of `{path}`",
                               Span(path, 0, 0, 0, 0),
                               "name it .gl, .csv, .jsonl or .parquet")])


def read(paths: Iterable[str], program: ir.Program, relation: str | None = None) -> Rows:
    """Facts from files of any supported format (directories: the files in them)."""
    out: Rows = {}
    for path in _expand(paths):
        fmt = file_format(path)
        got = {"gl": lambda p: read_gl(p, program), "csv": lambda p: read_csv(p, program, relation),
               "jsonl": lambda p: read_jsonl(p, program, relation),
               "parquet": lambda p: read_parquet(p, program, relation)}[fmt](path)
        if fmt in ("csv", "parquet") and got.get(VALID):  # a dump's `@valid` file
            errs = _Errors()
            for i, row in enumerate(got[VALID], 1):
                if (d := _bad(program, VALID, row, Span(path, i, 1, i, 2))) is not None:
                    errs.add(d)
            errs.raise_if_any()
        for rel, rows in got.items():
            if rel in out:
                out[rel].extend(rows)
            else:
                out[rel] = rows
    return out


def unstored(data: Rows, stored_valid: Iterable[ir.Row],
             stored: Callable[[str], Iterable[ir.Row]]) -> Rows:
    """``data`` (what :func:`read` read) less the facts the store already holds in any form,
    permanent or with an interval (``stored_valid``: its :data:`VALID` rows; ``stored(rel)``:
    its rows of ``rel``), so that a load adds only new facts and never a second interval of
    one fact. A fact the data gives twice with different intervals (or with and without one)
    is ``bad-fact``."""
    timed: dict[tuple[str, ir.Row], ir.Row] = {}
    for vrow in data.get(VALID, ()):
        rel, row, _ = validity.decode(vrow)
        seen = timed.setdefault((rel, row), vrow)
        plain = rel in data and row in set(data[rel])
        if plain or validity.decode(seen)[2] != validity.decode(vrow)[2]:
            raise GrantlogError([error(
                "bad-fact", f"`{ir.show_atom(rel, row)}` is given "
                + ("with and without a validity interval" if plain else "with two validity "
                   "intervals"), COMMAND_LINE, "give each fact once: with its interval, or "
                "without one (valid at every moment)")])
    held = {(rel, row) for rel, row, _ in map(validity.decode, stored_valid)}
    if not timed and not held:
        return data
    out = {rel: [row for row in rows if (rel, row) not in held]
           for rel, rows in data.items() if rel != VALID}
    permanent = {rel: set(stored(rel)) for rel in {rel for rel, _ in timed}}
    new = [vrow for (rel, row), vrow in timed.items()
           if (rel, row) not in held and row not in permanent[rel]]
    if new:
        out[VALID] = new
    return out


def _expand(paths: Iterable[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(str(f) for f in Path(p).iterdir()
                          if f.is_file() and f.suffix.lower() in
                          (".gl", ".csv", ".jsonl", ".ndjson", ".parquet"))
        elif not os.path.exists(p):
            raise GrantlogError([error("file-not-found", f"cannot read `{p}`: no such file",
                                       Span(p, 0, 0, 0, 0))])
        else:
            out.append(p)
    return out


# -- dumping ------------------------------------------------------------------------------------

def dump_format(out: str) -> str:
    """The format a dump to ``out`` is written in by default: its suffix's (`facts.gl`,
    `member.csv`, `all.jsonl`), else Parquet (a directory)."""
    return _named_format(out) or "parquet"


def _named_format(out: str) -> str | None:
    try:
        return file_format(out)
    except GrantlogError:
        return None


def dump(rows: Rows, program: ir.Program, out: str, fmt: str) -> list[str]:
    """Write base facts: ``gl`` one file (``out``); ``out`` named as a file of the format
    (`all.jsonl`, `member.csv`, `member.parquet`): that one file (every relation in JSON
    Lines, as ``{"relation": R, "row": [...]}``; CSV and Parquet hold one relation, so a store
    with facts of more is an error); else one file per relation in the directory ``out``.
    Returns the files written."""
    if fmt not in FORMATS:
        raise GrantlogError([error("unknown-format", f"no format `{fmt}`", COMMAND_LINE,
                                   "formats: " + ", ".join(FORMATS))])
    named = None if os.path.isdir(out) else _named_format(out)
    if fmt == "gl" or named is not None:
        if named is not None and named != fmt:
            raise GrantlogError([error(
                "bad-option", f"`{out}` names a {_NAMES[named]} file, but the format is {fmt}",
                COMMAND_LINE, "name the output after the format, or drop --format")])
        return [_dump_file(rows, program, out, fmt)]
    os.makedirs(out, exist_ok=True)
    written = []
    for rel in sorted(rows):
        path = os.path.join(out, f"{rel}.{fmt}")
        r = VALID_RELATION if rel == VALID else program.relations[rel]
        _write(rel, sorted(rows[rel], key=ir.row_key), r, path, fmt)
        written.append(path)
    return written


def _timed_facts(rows: Rows) -> list[tuple[str, ir.Row, str, str]]:
    """The facts with a validity interval of a snapshot's :data:`VALID` rows: (relation,
    row, valid_from, valid_until), the bounds as the store keeps them (``""``: unbounded)."""
    out = []
    for vrow in rows.get(VALID, ()):
        rel, row, _ = validity.decode(vrow)
        out.append((rel, row, str(vrow[2]), str(vrow[3])))
    return sorted(out, key=lambda f: (f[0], ir.row_key(f[1])))


def _dump_file(rows: Rows, program: ir.Program, out: str, fmt: str) -> str:
    """Every relation into the one file ``out`` (gl, jsonl), or the only one (csv, parquet)."""
    timed = _timed_facts(rows)  # written as facts with their interval (gl, jsonl)
    if fmt == "gl":
        lines = [ir.show_atom(rel, row) + ".\n" for rel in sorted(rows) if rel != VALID
                 for row in sorted(rows[rel], key=ir.row_key)]
        lines += [ir.show_atom(rel, row) + (f' from "{lo}"' if lo else "")
                  + (f' until "{hi}"' if hi else "") + ".\n" for rel, row, lo, hi in timed]
        Path(out).write_text("".join(lines), encoding="utf-8")
    elif fmt == "jsonl":
        with open(out, "w", encoding="utf-8") as f:
            for rel in sorted(rows):
                for row in sorted(rows[rel], key=ir.row_key) if rel != VALID else ():
                    f.write(json.dumps({"relation": rel, "row": list(row)},
                                       ensure_ascii=False) + "\n")
            for rel, row, lo, hi in timed:
                bounds = {**({"valid_from": lo} if lo else {}),
                          **({"valid_until": hi} if hi else {})}
                f.write(json.dumps({"relation": rel, "row": list(row), **bounds},
                                   ensure_ascii=False) + "\n")
    elif len(rows) > 1:
        stem = Path(out).stem
        raise GrantlogError([error(
            "bad-option", f"a {_NAMES[fmt]} file holds one relation; the store has facts of "
            f"{plural(len(rows), 'relation')} ({', '.join(sorted(rows))})", COMMAND_LINE,
            f"give a directory (`-o {stem}/`: one file per relation), or a `.gl` or `.jsonl` "
            "file")])
    elif rows:
        rel = next(iter(rows))
        _write(rel, sorted(rows[rel], key=ir.row_key), program.relations[rel], out, fmt)
    else:
        Path(out).write_text("", encoding="utf-8")  # no facts: an empty file
    return out


def _write(rel: str, data: list[ir.Row], r: ir.Relation, path: str, fmt: str) -> None:
    """One relation's rows as a CSV (a header of column names), JSON Lines or Parquet file."""
    if fmt == "csv":
        with open(path, "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f)
            w.writerow(r.columns)
            w.writerows(data)
    elif fmt == "jsonl":
        with open(path, "w", encoding="utf-8") as f:
            for row in data:
                f.write(json.dumps(list(row), ensure_ascii=False) + "\n")
    else:
        import pyarrow as pa

        pq = _pyarrow()
        cols: list[Any] = (list(zip(*data, strict=True)) if data
                           else [[] for _ in r.columns])
        arrays = []
        for typ, col in zip(r.types, cols, strict=True):
            kind = pa.int64() if typ == "int" else pa.string()
            if typ not in ("int", "string") and any(isinstance(v, int) for v in col):
                raise GrantlogError([error(
                    "unsupported-feature", f"`{rel}` has an untyped column holding "
                    "integers; Parquet columns have one type", Span(path, 0, 0, 0, 0),
                    "declare the column's type, or dump as jsonl")])
            arrays.append(pa.array(list(col), type=kind))
        pq.write_table(pa.table(arrays, names=list(r.columns)), path)
