"""Row checks of file inputs: a malformed row is a ``bad-fact`` at ``file:line``, before any
evaluation job runs (as the in-memory loaders, grantlog/store/ingest.py, report it).

Spark finds the bad rows itself: the file is read once more in ``PERMISSIVE`` mode with a
corrupt-record column (a CSV row with too few or too many values, a non-integer in an integer
column; a JSON line that is not JSON), and at most :data:`MAX_ERRORS` of them are collected
with the file each came from. Spark does not know line numbers, so the line is found
afterwards by reading the file (a local one) line by line until every collected record is
placed; a file Spark reads from elsewhere (``s3a://``, ``hdfs://``) is named without a line,
the record quoted. The happy path costs one extra scan of each CSV input (parsing only, no
shuffle; the evaluation reads the file again), and nothing for JSON, whose schema inference
has already read it; Parquet files carry their schema, checked by :func:`schema.check_input`.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from grantlog.engine.core import ir
from grantlog.grammar.diagnostics import Diagnostic, Span, error, plural

from .schema import InputSpec, csv_header

#: bad rows reported per input (then one diagnostic saying that there may be more)
MAX_ERRORS = 20
CORRUPT = "_corrupt_record"


def check_rows(spark: Any, program: ir.Program, spec: InputSpec, df: Any) -> list[Diagnostic]:
    """``bad-fact`` diagnostics for the malformed rows of a CSV or JSON Lines input (``df``
    is :func:`schema.read_spec`'s DataFrame for ``spec``); [] when every row parses."""
    if spec.format == "csv":
        from pyspark.sql import types as T

        fields = [*df.schema.fields, T.StructField(CORRUPT, T.StringType())]
        probe = (spark.read.options(**spec.options).schema(T.StructType(fields))
                 .option("header", csv_header(spec)).option("mode", "PERMISSIVE")
                 .option("columnNameOfCorruptRecord", CORRUPT).csv(spec.path))
    elif spec.format == "json" and CORRUPT in df.columns:
        probe = df  # schema inference read every line already
    else:
        return []
    from pyspark.sql import functions as F

    # every column, not the corrupt one alone: Spark refuses a query of only that column
    bad = (probe.where(F.col(CORRUPT).isNotNull())
           .select("*", F.col("_metadata.file_path").alias("_grantlog_file"))
           .limit(MAX_ERRORS + 1).collect())
    if not bad:
        return []
    names = [f.name for f in df.schema.fields if f.name != CORRUPT]
    out: list[Diagnostic] = []
    lines = _line_numbers(spec, [(r["_grantlog_file"], r[CORRUPT]) for r in bad[:MAX_ERRORS]])
    for r, (file, line) in zip(bad[:MAX_ERRORS], lines, strict=True):
        record = r[CORRUPT].rstrip("\r\n")
        problem = _problem(program, spec, names, df, record)
        if line == 0:
            problem += f" (the row `{record[:200]}`)"
        out.append(error("bad-fact", problem, Span(file, line, 1 if line else 0,
                                                   line, 2 if line else 0)))
    if len(bad) > MAX_ERRORS:
        last = out[-1].span
        out.append(error("too-many-errors", f"more bad rows than the {MAX_ERRORS} shown", last))
    return out


def _problem(program: ir.Program, spec: InputSpec, names: list[str], df: Any,
             record: str) -> str:
    """What is wrong with one malformed record, in the in-memory loaders' words."""
    rel = spec.rel
    if spec.format == "json":
        return f"not JSON: `{record[:80]}`" if len(record) > 80 else f"not JSON: `{record}`"
    opts = {k.lower(): v for k, v in spec.options.items()}
    sep = opts.get("sep", opts.get("delimiter", ","))
    quote = opts.get("quote", '"') or '"'
    try:
        [values] = list(csv.reader([record], delimiter=sep[:1] or ",", quotechar=quote[:1]))
    except (csv.Error, ValueError):
        values = []
    arity = program.relations[rel].arity
    if len(values) != arity:
        return f"`{rel}` takes {plural(arity, 'value')}, got {len(values)}"
    for name, value in zip(names, values, strict=True):
        if df.schema[name].dataType.simpleString() == "bigint":
            try:
                int(value)
            except ValueError:
                return f"column `{name}` of `{rel}` holds integers, got `{value}`"
    return f"Spark could not read the row as `{rel}`"


def _line_numbers(spec: InputSpec, records: list[tuple[str, str]]) -> list[tuple[str, int]]:
    """(file as shown, line) of each (file URI, record text); line 0 where the file is not
    local or the record is not one line of it."""
    out: list[tuple[str, int]] = []
    by_file: dict[str, dict[str, list[int]]] = {}
    for uri, record in records:
        by_file.setdefault(uri, {}).setdefault(record.rstrip("\r\n"), [])
    for uri, wanted in by_file.items():
        local = _local_path(uri)
        if local is None:
            continue
        count = {text: sum(1 for u, r in records if u == uri and r.rstrip("\r\n") == text)
                 for text in wanted}
        try:
            with open(local, encoding="utf-8", errors="replace", newline="") as f:
                for no, line in enumerate(f, 1):
                    text = line.rstrip("\r\n")
                    got = wanted.get(text)
                    if got is not None and len(got) < count[text]:
                        got.append(no)
                        if all(len(wanted[t]) == count[t] for t in wanted):
                            break
        except OSError:
            continue
    used: dict[tuple[str, str], int] = {}
    for uri, record in records:
        text = record.rstrip("\r\n")
        nos = by_file[uri][text]
        k = used.get((uri, text), 0)
        used[(uri, text)] = k + 1
        out.append((_shown(spec, uri), nos[k] if k < len(nos) else 0))
    return out


def _local_path(uri: str) -> str | None:
    parts = urlsplit(uri)
    if parts.scheme not in ("", "file"):
        return None
    return unquote(parts.path)


def _shown(spec: InputSpec, uri: str) -> str:
    """The file as the user named it: the spec's path when it is that file, else the file
    (inside the spec's directory) as Spark names it, without ``file:``."""
    local = _local_path(uri)
    if local is None:
        return uri
    try:
        if Path(spec.path).resolve() == Path(local).resolve():
            return spec.path
    except OSError:
        pass
    return local
