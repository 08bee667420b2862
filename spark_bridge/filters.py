"""A data filter (``Reasoner.filter``, engine/answer/residual.py) as a PySpark ``Column`` over a
DataFrame of resources laid out as grantlog/filters.py's :class:`~grantlog.filters.Layout`
says: ``df.where(to_column(f, layout))`` keeps the resources the filter admits.

The hierarchy is read from the path column (Spark SQL has no recursive queries): every
``under`` of a disjunction becomes one ``arrays_overlap`` of the path's ids with the objects
named, so a user's thousands of grants are one expression, not a chain of ORs. A condition
the layout cannot express is refused with ``filter-layout``.
"""

from __future__ import annotations

from typing import Any

from grantlog.engine.answer.conditions import Cond
from grantlog.engine.answer.residual import Residual

from grantlog.filters import Layout, layout_error


def to_column(residual: Residual | Cond, layout: Layout) -> Any:
    """The filter (or a condition: ``from_json`` of a stored one) as a Column (imports
    pyspark lazily: `grantlog[spark]`)."""
    from pyspark.sql import functions as F

    def col(name: str | None, what: str) -> Any:
        if name is None:
            raise layout_error(f"the filter needs the resource's {what}; the layout has no "
                               f"`{what}` column")
        return F.col(name)

    def path_ids() -> Any:
        if layout.path is None:
            raise layout_error("Spark has no recursive queries: give the layout a `path` "
                               "column for filters over the hierarchy")
        return F.split(F.col(layout.path), _regex(layout.path_separator))

    def build(c: Cond) -> Any:
        tag = c[0]
        if tag in ("true", "false"):
            return F.lit(tag == "true")
        if tag == "is":
            return F.col(layout.id) == F.lit(c[1])
        if tag == "in":
            return F.col(layout.id).isin(sorted(c[1], key=str))
        if tag == "type":
            return col(layout.type, "type") == F.lit(c[1])
        if tag == "parent":
            return col(layout.parent, "parent") == F.lit(c[1])
        if tag == "under":
            return F.array_contains(path_ids(), F.lit(c[1]))
        if tag == "not":
            return ~build(c[1])
        parts = list(c[1])
        if tag == "and":
            out = build(parts[0])
            for p in parts[1:]:
                out = out & build(p)
            return out
        unders = [p[1] for p in parts if p[0] == "under"]
        rest = [p for p in parts if p[0] != "under"]
        terms = []
        if unders:
            terms.append(F.arrays_overlap(path_ids(), F.array(*[F.lit(a) for a in unders])))
        terms += [build(p) for p in rest]
        out = terms[0]
        for t in terms[1:]:
            out = out | t
        return out

    return build(residual.cond if isinstance(residual, Residual) else residual)


def _regex(sep: str) -> str:
    import re

    return re.escape(sep)


#: the columns of the DataFrame :func:`bulk_filters` returns
BULK_SCHEMA = ("subject string, operation string, type string, revision long, "
               "condition string, error string")


def bulk_filters(program: Any, spark: Any, facts: dict[str, list[tuple[Any, ...]]],
                 subjects: list[Any], operation: str, type: str | None = None,
                 partitions: int | None = None) -> Any:
    """The filters of many subjects at once, as a DataFrame (:data:`BULK_SCHEMA`): one row
    per subject with its filter's condition as JSON (``Residual.to_dict()["condition"]``), or
    the reason it has none (``filter-unsupported``) in ``error``. An access review stores
    these instead of every (subject, resource) pair and joins them with the catalog later
    (:func:`to_column` turns a condition back into a Column).

    The subjects are spread over ``partitions`` Spark tasks (default: the cluster's
    parallelism); each task compiles the program from its source texts and loads the facts
    (the program's own and ``facts``, the rows of its inputs by relation, broadcast once),
    as the in-memory engine does, then partially evaluates the decision for each of its
    subjects."""
    import json

    shipped = spark.sparkContext.broadcast((dict(program.sources), facts))
    sc = spark.sparkContext
    n = max(1, min(len(subjects), partitions or sc.defaultParallelism))

    def task(chunk: Any) -> Any:
        from grantlog.engine import Reasoner, compile_program
        from grantlog.grammar import GrantlogError

        todo = list(chunk)
        if not todo:
            return
        files, given = shipped.value
        r = Reasoner(compile_program(paths=sorted(files), files=files, disk=False))
        with r.transaction() as tx:
            for rel, rows in given.items():
                tx.insert(rel, rows)
        for s in todo:
            try:
                f = r.filter(s, operation, type)
            except GrantlogError as err:
                yield (str(s), operation, type, r.revision, None, err.diagnostics[0].render())
                continue
            yield (str(s), operation, type, f.revision,
                   json.dumps(f.to_dict()["condition"], sort_keys=True), None)

    rdd = sc.parallelize(list(subjects), n).mapPartitions(task)
    return spark.createDataFrame(rdd, BULK_SCHEMA)

