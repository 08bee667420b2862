"""Column kinds, input specifications, and input checks (all before any evaluation job runs).

A relation's columns are named by its declaration (``program.relations[rel].columns``;
``c0, c1, ...`` for undeclared relations). Each column has a *kind* (see encoding.py):

* declared ``string`` / ``int`` columns are that kind;
* an untyped or ``any`` column gets the kind of the values that can reach it, found by a
  fixpoint over the program (facts, input column types, head constants, and the columns a head
  variable is bound from): only strings -> ``string``, only integers -> ``int``, both -> ``any``
  (fact syntax), nothing at all -> ``string``.

The kinds depend only on the program and the input *schemas*, never on the data, so the output
schema of every relation is known before a job runs.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any, Literal

from grantlog.engine.core import ir
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error

Kind = Literal["string", "int", "any"]
FORMATS = ("parquet", "csv", "json")
_FORMAT_ALIASES = {"parquet": "parquet", "pq": "parquet", "csv": "csv", "json": "json",
                   "jsonl": "json", "ndjson": "json"}


def _type_of(v: ir.Value) -> str:
    return "int" if isinstance(v, int) else "string"


def column_kinds(
    program: ir.Program, input_types: Mapping[str, Sequence[str | None]] | None = None
) -> dict[str, tuple[Kind, ...]]:
    """The kind of every column of every relation (see the module doc).

    ``input_types`` maps a relation to the type (``"string"``/``"int"``) each of its columns
    has in the input DataFrame.
    """
    seen: dict[str, list[set[str]]] = {
        name: [set() for _ in range(r.arity)] for name, r in program.relations.items()}
    for name, r in program.relations.items():
        for i, t in enumerate(r.types):
            if t in ("string", "int"):
                seen[name][i].add(t)
    for f in program.facts:
        for i, v in enumerate(f.row):
            seen[f.rel][i].add(_type_of(v))
    for rel, types in (input_types or {}).items():
        for i, t in enumerate(types):
            if t is not None:
                seen[rel][i].add(t)
    changed = True
    while changed:
        changed = False
        for rule in program.rules:
            var_types = _var_types(rule, seen)
            for i, arg in enumerate(rule.head.args):
                got = {_type_of(arg.value)} if isinstance(arg, ir.Const) else (
                    var_types.get(arg.name) or set())
                if not got <= seen[rule.head.rel][i]:
                    seen[rule.head.rel][i] |= got
                    changed = True
    out: dict[str, tuple[Kind, ...]] = {}
    for name, cols in seen.items():
        kinds: list[Kind] = []
        for s in cols:
            kinds.append("any" if len(s) > 1 else "int" if s == {"int"} else "string")
        out[name] = tuple(kinds)
    return out


def _var_types(rule: ir.Rule, seen: dict[str, list[set[str]]]) -> dict[str, set[str]]:
    """The types a variable's values can have: the intersection over the columns it is read
    from (it equals a value of each), then through ``=`` comparisons."""
    known: dict[str, set[str]] = {}
    for lit in rule.body:
        if isinstance(lit, ir.Atom):
            for i, t in enumerate(lit.args):
                if isinstance(t, ir.Var):
                    col = seen[lit.rel][i]
                    known[t.name] = known[t.name] & col if t.name in known else set(col)
    changed = True
    while changed:
        changed = False
        for lit in rule.body:
            if not (isinstance(lit, ir.Cmp) and lit.op == "="):
                continue
            for a, b in ((lit.left, lit.right), (lit.right, lit.left)):
                if not isinstance(a, ir.Var):
                    continue
                other = {_type_of(b.value)} if isinstance(b, ir.Const) else known.get(b.name)
                if other is None:
                    continue
                new = known[a.name] & other if a.name in known else set(other)
                if new != known.get(a.name):
                    known[a.name] = new
                    changed = True
    return known


# ---------------------------------------------------------------------------------------------
# input specifications


@dataclass(frozen=True)
class InputSpec:
    """Where a base relation's rows come from: a file or directory in some format."""

    rel: str
    path: str
    format: str
    #: the file's column names in order (CSV without header, or renaming); None: the
    #: relation's own column names
    columns: tuple[str, ...] | None = None
    header: bool | None = None
    options: dict[str, str] = field(default_factory=dict)


def _format_for(path: str, given: str | None, where: str) -> str:
    if given:
        fmt = _FORMAT_ALIASES.get(given.lower())
        if fmt is None:
            raise GrantlogError([_bad(where, f"unknown input format `{given}`",
                                      help="formats: parquet, csv, json (JSON Lines)")])
        return fmt
    suffix = Path(path).suffix.lower().lstrip(".")
    return _FORMAT_ALIASES.get(suffix, "parquet")


def parse_input_arg(arg: str) -> InputSpec:
    """``REL=PATH[:FORMAT]`` (the CLI's ``--input``); the format defaults from the extension
    (a directory or an unknown extension is Parquet)."""
    rel, sep, rest = arg.partition("=")
    if not sep or not rel or not rest:
        raise GrantlogError([_bad(arg, f"`{arg}` is not `REL=PATH[:FORMAT]`")])
    path, fmt = rest, None
    head, colon, tail = rest.rpartition(":")
    if colon and tail.lower() in _FORMAT_ALIASES:
        path, fmt = head, tail
    return InputSpec(rel.strip(), path, _format_for(path, fmt, arg))


def load_mapping(source: str | Path | Mapping[str, Any]) -> list[InputSpec]:
    """Input specs from a mapping ``relation -> {path, format?, columns?, header?, options?}``
    (a dict, or a ``.json`` / ``.toml`` file; relative paths are relative to the file)."""
    base = Path(".")
    where = "<mapping>"
    if isinstance(source, Mapping):
        data: Mapping[str, Any] = source
    else:
        p = Path(source)
        where = str(p)
        base = p.parent
        try:
            raw = p.read_bytes()
            data = tomllib.loads(raw.decode()) if p.suffix == ".toml" else json.loads(raw)
        except (OSError, ValueError) as e:
            raise GrantlogError([_bad(where, f"cannot read the input mapping: {e}")]) from e
        except RecursionError as e:
            raise GrantlogError([_bad(where, "cannot read the input mapping: nested too "
                                      "deeply")]) from e
    if not isinstance(data, Mapping):
        raise GrantlogError([_bad(where, "the input mapping must be an object: relation -> "
                                  "{path, format?, columns?, header?, options?}")])
    specs = []
    for rel, entry in data.items():
        if isinstance(entry, str):
            entry = {"path": entry}
        if not isinstance(entry, Mapping) or not isinstance(entry.get("path"), str | PathLike):
            raise GrantlogError([_bad(where, f"entry `{rel}` needs a `path` (a string)")])
        problem = _entry_problem(entry)
        if problem:
            raise GrantlogError([_bad(where, f"entry `{rel}`: {problem}")])
        path = str(entry["path"])
        if not ("://" in path or Path(path).is_absolute()):
            path = str(base / path)
        cols = entry.get("columns")
        specs.append(InputSpec(
            rel, path, _format_for(path, entry.get("format"), where),
            tuple(cols) if cols is not None else None,
            entry.get("header"), {str(k): str(v) for k, v in entry.get("options", {}).items()}))
    return specs


def _entry_problem(entry: Mapping[str, Any]) -> str | None:
    """What is wrong with the types of a mapping entry's optional keys, if anything."""
    fmt, cols, header = entry.get("format"), entry.get("columns"), entry.get("header")
    options = entry.get("options", {})
    if fmt is not None and not isinstance(fmt, str):
        return "`format` must be a string"
    if cols is not None and not (isinstance(cols, list | tuple)
                                 and all(isinstance(c, str) for c in cols)):
        return "`columns` must be a list of strings"
    if header is not None and not isinstance(header, bool):
        return "`header` must be true or false"
    if not (isinstance(options, Mapping)
            and all(isinstance(v, str | int | float | bool) for v in options.values())):
        return "`options` must map option names to strings, numbers or booleans"
    return None


def _bad(where: str, message: str, help: str | None = None) -> Diagnostic:
    return error("bad-input", message, Span(where, 0, 0, 0, 0), help)


# ---------------------------------------------------------------------------------------------
# reading and checking


def spark_type_name(dtype: Any) -> str | None:
    """``"string"`` / ``"int"`` for the Spark types an input column may have, else None."""
    from pyspark.sql import types as T

    if isinstance(dtype, T.StringType):
        return "string"
    if isinstance(dtype, T.ByteType | T.ShortType | T.IntegerType | T.LongType):
        return "int"
    return None


def csv_header(spec: InputSpec) -> bool:
    """Whether a CSV input's first line is a header (default: unless ``columns`` name them)."""
    return spec.header if spec.header is not None else spec.columns is None


def read_spec(spark: Any, program: ir.Program, spec: InputSpec) -> Any:
    """A DataFrame for an input spec (not checked yet; reading a schema may touch the files)."""
    from pyspark.sql import types as T

    rel = program.relations.get(spec.rel)
    reader = spark.read.options(**spec.options)
    if spec.format == "csv":
        names = list(spec.columns) if spec.columns is not None else (
            list(rel.columns) if rel else [])
        types = list(rel.types) if rel and len(names) == rel.arity else [None] * len(names)
        schema = T.StructType([
            T.StructField(n, T.LongType() if t == "int" else T.StringType())
            for n, t in zip(names, types, strict=True)])
        header = csv_header(spec)
        if header and spec.columns is None:
            # the header names the columns: check them (reads the first line) before typing
            found = reader.option("header", True).csv(spec.path).columns
            if sorted(found) != sorted(names):
                return reader.option("header", True).csv(spec.path)  # reported by check_input
            names = found
            by_name = dict(zip(rel.columns, rel.types, strict=True)) if rel else {}
            types = [by_name.get(n) for n in names]
            schema = T.StructType([
                T.StructField(n, T.LongType() if t == "int" else T.StringType())
                for n, t in zip(names, types, strict=True)])
        df = (reader.schema(schema).option("header", header).option("mode", "FAILFAST")
              .csv(spec.path))
    elif spec.format == "json":
        df = reader.json(spec.path)
    else:
        df = reader.parquet(spec.path)
    if spec.columns is not None and spec.format != "csv":
        if len(spec.columns) != len(df.columns):
            return df  # reported by check_input
        df = df.toDF(*spec.columns)
    return df


def check_input(
    program: ir.Program, rel: str, df: Any, where: str
) -> list[Diagnostic]:
    """Problems with an input DataFrame for ``rel`` (``where`` names the file or source)."""
    r = program.relations.get(rel)
    if r is None:
        known = ", ".join(sorted(program.relations)) or "none"
        return [_bad(where, f"input for unknown relation `{rel}`",
                     help=f"relations of the program: {known}")]
    refused = program.write_refusal(rel, Span(where, 0, 0, 0, 0), "an input gives facts of")
    if refused:  # as every write of facts: rules derive it and it is not `@writable`
        return [refused]
    out: list[Diagnostic] = []
    fields = {f.name: f for f in df.schema.fields}
    if len(fields) != r.arity:
        out.append(_bad(where, f"input for `{rel}` ({where}) has {len(fields)} columns "
                               f"({', '.join(fields) or 'none'}); `{rel}` has {r.arity} "
                               f"({', '.join(r.columns) or 'none'})"))
    for name, t in zip(r.columns, r.types, strict=True):
        f = fields.get(name)
        if f is None:
            if len(fields) == r.arity:
                out.append(_bad(where, f"input for `{rel}` ({where}) has no column `{name}` "
                                       f"(it has {', '.join(fields)})"))
            continue
        got = spark_type_name(f.dataType)
        if got is None or (t in ("string", "int") and got != t):
            want = t if t in ("string", "int") else "string or integer"
            out.append(_bad(where, f"column `{name}` of the input for `{rel}` ({where}) has "
                                   f"type {f.dataType.simpleString()}, expected {want}"))
    return out


def check_inputs(program: ir.Program, inputs: Mapping[str, Any]) -> None:
    """:func:`check_input` of every input, reported together (``bad-input``), before any job"""
    diags = []
    for rel, df in inputs.items():
        where = getattr(df, "_grantlog_source", None) or f"<DataFrame for {rel}>"
        diags += check_input(program, rel, df, where)
    if diags:
        raise GrantlogError(diags)
