"""What-if: the derived facts of one relation gained and lost between two programs.

``diff_programs(before, after, "allowed")`` evaluates both programs (two rule sets, or one rule
set under two fact sets: a program is rules and facts together) and compares the rows of the
chosen relation. Every gained row carries its proof in the *after* program (why it holds now);
every lost row carries its proof in the *before* program (why it used to hold). A relation that
exists in only one program is empty in the other; one that exists in neither is an
``unknown-relation`` error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from ..core import ir
from ..core.suggest import closest
from .explain import Proof
from .reasoner import Reasoner


@dataclass(frozen=True)
class Difference:
    """One row gained (``+``) or lost (``-``), with the proof of why it holds (or held)."""

    sign: str  # "+" gained, "-" lost
    rel: str
    row: ir.Row
    proof: Proof | None = None

    @property
    def fact(self) -> str:
        return ir.show_atom(self.rel, self.row)

    def render(self, proofs: bool = True) -> str:
        head = f"{self.sign}{self.fact}"
        if not proofs or self.proof is None:
            return head
        tree = "\n".join(f"    {line}" for line in self.proof.render().split("\n"))
        return f"{head}\n{tree}"

    def to_dict(self, proofs: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {"fact": self.fact, "row": list(self.row)}
        if proofs:
            d["proof"] = self.proof.to_dict() if self.proof is not None else None
        return d


@dataclass(frozen=True)
class WhatIf:
    """The rows of ``relation`` gained and lost from *before* to *after*, each sorted."""

    relation: str
    gained: tuple[Difference, ...]
    lost: tuple[Difference, ...]

    def __bool__(self) -> bool:
        """True when there is a difference."""
        return bool(self.gained or self.lost)

    @property
    def summary(self) -> str:
        return f"{len(self.gained)} gained, {len(self.lost)} lost"

    def render(self, proofs: bool = True) -> str:
        """Gained rows (``+fact``) then lost rows (``-fact``), each followed by its proof tree
        indented by four spaces, then the summary line ``N gained, M lost``."""
        parts = [d.render(proofs) for d in self.gained + self.lost]
        sep = "\n\n" if proofs else "\n"
        body = sep.join(parts)
        return f"{body}{sep}{self.summary}" if body else self.summary

    def to_dict(self, proofs: bool = True) -> dict[str, Any]:
        return {
            "relation": self.relation,
            "gained": [d.to_dict(proofs) for d in self.gained],
            "lost": [d.to_dict(proofs) for d in self.lost],
            "counts": {"gained": len(self.gained), "lost": len(self.lost)},
        }


def diff_programs(before: ir.Program, after: ir.Program, relation: str = "allowed",
                  proofs: bool = True,
                  facts: dict[str, list[ir.Row]] | None = None) -> WhatIf:
    """Compare the rows of ``relation`` in two programs; see the module docstring.
    ``facts``: base facts both sides have besides their own (a store's)."""
    in_before = relation in before.relations
    in_after = relation in after.relations
    if not in_before and not in_after:
        known = sorted(set(before.relations) | set(after.relations))
        close = closest(relation, known)
        raise GrantlogError([error(
            "unknown-relation", f"relation `{relation}` exists in neither program",
            Span("<command line>", 0, 0, 0, 0),
            f"did you mean `{close}`?" if close else None)])
    r_before = Reasoner(before)
    r_after = Reasoner(after)
    if facts:
        for r in (r_before, r_after):
            r.seed({rel: rows for rel, rows in facts.items() if rel in r.program.relations}, 0)
    return diff_reasoners(r_before, r_after, relation, proofs)


def diff_reasoners(r_before: Any, r_after: Any, relation: str,
                   proofs: bool = True) -> WhatIf:
    """The rows of ``relation`` gained and lost from reasoner ``r_before`` to ``r_after``
    (each with its proof in the side that holds it when ``proofs``): the comparison of
    :func:`diff_programs`, over reasoners a caller already has (the explorer's served one and
    its draft's). A relation one side's program lacks is empty there."""
    old = r_before.rows(relation) if relation in r_before.program.relations else set()
    new = r_after.rows(relation) if relation in r_after.program.relations else set()
    gained = tuple(_difference("+", relation, row, r_after if proofs else None)
                   for row in sorted(new - old, key=ir.row_key))
    lost = tuple(_difference("-", relation, row, r_before if proofs else None)
                 for row in sorted(old - new, key=ir.row_key))
    return WhatIf(relation, gained, lost)


def _difference(sign: str, rel: str, row: ir.Row, reasoner: Reasoner | None) -> Difference:
    if reasoner is None:
        return Difference(sign, rel, row)
    goal = ir.show_atom(rel, row)
    ex = reasoner.explain(goal)
    if not ex.holds or ex.proof is None:  # the goal text must round-trip to this very row
        raise AssertionError(f"what-if: no proof for {goal}, a row of `{rel}`")
    return Difference(sign, rel, row, ex.proof)


