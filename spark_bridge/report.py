"""What a Spark run reports: :class:`SparkResult` (the relations' DataFrames and each
stratum's :class:`StratumReport`), returned by spark_bridge/evaluator.py's ``run``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grantlog.engine.core import ir
from grantlog.engine.plan.magic import Demand
from grantlog.grammar.diagnostics import NO_SPAN, GrantlogError, error

from . import schema


@dataclass
class StratumReport:
    index: int
    relations: tuple[str, ...]
    strategy: str  # "rules" (lazy), "rules+checkpoint", "semi-naive", "doubling", "graphframes"
    iterations: int = 0
    rows: int | None = None  # None when the stratum stayed lazy
    seconds: float = 0.0


@dataclass
class SparkResult:
    """What :func:`run` returns: external DataFrames per relation, and what happened."""

    relations: dict[str, Any]
    kinds: dict[str, tuple[schema.Kind, ...]]
    strata: list[StratumReport] = field(default_factory=list)
    plans: list[str] = field(default_factory=list)
    #: the demand rewrite a goal was answered with (engine/plan/magic.py), else None
    demand: Demand | None = None


def iteration_limit(st: ir.Stratum, n: int) -> Exception:
    """``iteration-limit``: the stratum ``st`` ran ``n`` rounds without converging"""
    rels = ", ".join(f"`{r}`" for r in st.relations)
    return GrantlogError([error(
        "iteration-limit", f"stratum {st.index} ({rels}) did not converge within {n} iterations",
        NO_SPAN, help="raise `max_iterations` (CLI: --max-iterations)")])
