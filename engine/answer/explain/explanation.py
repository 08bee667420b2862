"""The answer to ``explain``: a why-proof or a why-not tree, in every rendering."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...core import ir
from .proof import Proof
from .render import to_dot, to_mermaid


@dataclass
class Explanation:
    """The answer to ``explain``: the why-proof of the first answer when the goal holds, the
    why-not tree when it has no answer."""

    goal: str
    holds: bool
    bindings: dict[str, ir.Value]
    proof: Proof | None
    why_not: Proof | None = None

    @property
    def tree(self) -> Proof | None:
        return self.proof if self.holds else self.why_not

    def render(self) -> str:
        tree = self.tree
        if tree is None:
            return f"{self.goal}: does not hold"
        return tree.render()

    def to_dict(self) -> dict[str, Any]:
        return {
            "goal": self.goal,
            "holds": self.holds,
            "bindings": self.bindings,
            "proof": self.proof.to_dict() if self.proof else None,
            "why_not": self.why_not.to_dict() if self.why_not else None,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def to_dot(self) -> str:
        """Graphviz DOT (``dot -Tsvg``): shared sub-proofs are drawn once."""
        return to_dot(self.tree or Proof(self.goal, "fails"))

    def to_mermaid(self) -> str:
        """A Mermaid flowchart: shared sub-proofs are drawn once."""
        return to_mermaid(self.tree or Proof(self.goal, "fails"))
