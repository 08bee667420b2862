"""Bulk evaluation of compiled grantlog programs on Apache Spark (``grantlog[spark]``).

>>> import grantlog                                           # doctest: +SKIP
>>> from grantlog import spark_bridge
>>> program = grantlog.compile(paths=["rules/gravitino.gl", "examples/gravitino/facts.gl"])
>>> out = spark_bridge.evaluate(program, spark, {"member": members_df})
>>> spark_bridge.rows(out["allowed"])                         # a set of tuples, as in memory

The program is the one the in-memory engine runs (same IR, same join plans); see
spark_bridge/README.md for types, strategies and limits. PySpark is imported when a function of this
package runs, never by ``import grantlog`` or ``import grantlog.spark_bridge``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grantlog.engine.core.ir import Program, Row

from .evaluator import run
from .schema import InputSpec, load_mapping, parse_input_arg


def evaluate(program: Program, spark: Any, inputs: Mapping[str, Any] | None = None,
             **options: Any) -> dict[str, Any]:
    """Evaluate ``program`` on ``spark``: one DataFrame per relation (base and derived).
    ``inputs`` and the keyword ``options`` (``with_reasons``, ``closure``, ``goal``,
    ``where``, ...) are :func:`run`'s."""
    return run(program, spark, inputs, **options).relations


def read_inputs(
    spark: Any, program: Program, specs: list[InputSpec] | Mapping[str, Any] | str
) -> dict[str, Any]:
    """Input DataFrames from specs, a mapping ``rel -> {path, format, columns}`` or a mapping
    file (JSON/TOML); every problem with every input is reported together: ``bad-input`` for
    a file that does not fit its relation, ``bad-fact`` at ``file:line`` for a malformed row."""
    from grantlog.grammar.diagnostics import GrantlogError

    from . import rowcheck, schema

    if not isinstance(specs, list):
        specs = load_mapping(specs)
    out: dict[str, Any] = {}
    diags = []
    for spec in specs:
        where = spec.path
        try:
            df = schema.read_spec(spark, program, spec)
        except GrantlogError:
            raise
        except Exception as e:  # AnalysisException: path not found, unreadable file
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            diags.append(schema._bad(where, f"cannot read the input for `{spec.rel}` "
                                            f"({where}): {first}"))
            continue
        found = schema.check_input(program, spec.rel, df, where)
        if not found or spec.format == "json":  # malformed rows at file:line (rowcheck.py)
            found = rowcheck.check_rows(spark, program, spec, df) or found
        if found:
            diags += found
            continue
        df._grantlog_source = where
        out[spec.rel] = df
    if diags:
        raise GrantlogError(diags)
    return out


def rows(df: Any) -> set[Row]:
    """The rows of an output DataFrame as grantlog values (``any`` columns parsed back);
    collects to the driver, so for tests and small results."""
    from . import encoding

    parse = [f.metadata.get(encoding.META_KIND) == "any" for f in df.schema.fields]
    out: set[Row] = set()
    for r in df.collect():
        out.add(tuple(encoding.parse_shown(x) if p else x
                      for x, p in zip(r, parse, strict=True)))
    return out


__all__ = ["InputSpec", "collect", "evaluate", "load_mapping", "parse_input_arg", "read_inputs",
           "rows", "run"]


def collect(
    relations: Mapping[str, Any], names: list[str] | None = None
) -> dict[str, set[Row]]:
    """The rows of several output DataFrames in one Spark job: relation name -> set of rows.

    Every value travels in fact syntax, so integers and strings stay distinct whatever the
    column kinds. Collects to the driver: for tests and small results.
    """
    from pyspark.sql import functions as F

    from . import encoding

    names = sorted(relations) if names is None else names
    parts = []
    for name in names:
        df = relations[name]
        vals = []
        for f in df.schema.fields:
            c = F.col(f"`{f.name}`")
            if f.metadata.get(encoding.META_KIND) == "any":
                vals.append(c)
            elif f.dataType.simpleString() == "string":
                vals.append(encoding.shown_col(encoding.encode_string_col(c)))
            else:
                vals.append(c.cast("string"))
        arr = F.array(*vals) if vals else F.array().cast("array<string>")
        parts.append(df.select(F.lit(name).alias("rel"), arr.alias("row")))
    out: dict[str, set[Row]] = {n: set() for n in names}
    if not parts:
        return out
    u = parts[0]
    for p in parts[1:]:
        u = u.unionByName(p)
    for r in u.collect():
        out[r["rel"]].add(tuple(encoding.parse_shown(x) for x in r["row"]))
    return out
