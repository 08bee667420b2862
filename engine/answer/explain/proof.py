"""The nodes of why-proofs and why-not trees (:class:`Proof`), rendered as text and JSON."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ...core import ir

#: node kinds of why-proofs
WHY_KINDS = ("rule", "fact", "absent", "comparison", "goal", "truncated")
#: node kinds of why-not trees
WHY_NOT_KINDS = ("fails", "alternative", "holds", "missing", "blocked", "false", "unchecked",
                 "no-rule", "more", "seen", "cycle", "limit", "unexpanded")
#: the reasons of the node kinds whose reason does not depend on the node
FIXED_REASONS = {
    "absent": "no such fact",
    "comparison": "holds",
    "holds": "holds",
    "goal": "goal",
    "blocked": "blocked: the negated fact holds",
    "false": "fails",
    "unchecked": "not reached",
    "no-rule": "does not hold: no rule head matches",
    "seen": "does not hold (explained above)",
    "cycle": "does not hold (recursive: needs itself, explained above)",
    "limit": "does not hold (not expanded: depth or size limit)",
}


@dataclass
class Proof:
    """One node of a why-proof or a why-not tree.

    Why-proofs: ``rule`` (a rule instance), ``fact`` (a base fact), ``absent`` (a negated
    literal that holds), ``comparison`` (one that holds), ``goal`` (a conjunctive goal),
    ``truncated``.

    Why-not trees: ``fails`` (a goal or sub-goal that does not hold; ``free`` names its unbound
    variables; children are its ``alternative`` rules), ``alternative`` (a rule that could
    derive it; children are its body literals in plan order), ``holds`` (a literal satisfied
    by the chosen binding), ``missing`` (a base fact that does not exist), ``blocked`` (a
    negated literal whose atom holds; the child is that atom's why-proof), ``false`` (a
    comparison that fails), ``unchecked`` (a literal not reached), ``no-rule`` (a derived
    relation none of whose rule heads match), ``more`` (``count`` alternatives not shown),
    ``seen`` (explained above), ``cycle`` (recursive sub-goal), ``limit`` (not expanded: size
    limit), ``unexpanded`` (a derived literal that fails after an earlier failing one).

    ``rel`` and ``row`` give the fact of the node when it is one ground atom.
    """

    text: str
    kind: str
    rule: ir.Rule | None = None
    bindings: dict[str, ir.Value] = field(default_factory=dict)
    origin: str | None = None
    children: list[Proof] = field(default_factory=list)
    rel: str | None = None
    row: ir.Row | None = None
    free: tuple[str, ...] = ()
    count: int = 0

    def reason(self) -> str:
        """Why the node's text holds or fails, in words (the part after ``<-``)."""
        k = self.kind
        if k in ("rule", "alternative") and self.rule is not None:
            return f"rule {self.rule.summary}"
        if k == "fact":
            return f"fact ({self.origin})"
        if k == "fails":
            if self.free:
                return f"does not hold for any {', '.join(self.free)}"
            return "does not hold" if self.row is not None or self.rel is None else (
                "does not hold for any value")
        if k == "missing":
            if self.free:
                return f"no base fact for any {', '.join(self.free)}"
            return "missing base fact" if self.row is not None else "no base fact matches"
        if k == "unexpanded":
            some = f" for any {', '.join(self.free)}" if self.free else ""
            return f"does not hold{some} either (not expanded)"
        return FIXED_REASONS.get(k, "...")

    def label(self) -> str:
        if self.kind == "more":
            return self.text
        if self.kind == "alternative":
            return f"via {self.reason()}"
        return f"{self.text}  <- {self.reason()}"

    def render(self) -> str:
        lines = [self.label()]
        self._render_children(lines, "")
        return "\n".join(lines)

    def _render_children(self, lines: list[str], prefix: str) -> None:
        for i, c in enumerate(self.children):
            last = i == len(self.children) - 1
            lines.append(f"{prefix}{'└── ' if last else '├── '}{c.label()}")
            c._render_children(lines, prefix + ("    " if last else "│   "))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"fact": self.text, "kind": self.kind}
        if self.rel is not None and self.row is not None and self.kind in WHY_NOT_KINDS:
            d["relation"] = self.rel
            d["args"] = list(self.row)
        if self.free:
            d["free"] = list(self.free)
        if self.rule is not None:
            d["rule"] = self.rule.name
            d["doc"] = self.rule.doc_line
            d["at"] = str(self.rule.span)
            d["bindings"] = dict(sorted(self.bindings.items()))
        if self.origin is not None:
            d["origin"] = self.origin
        if self.kind == "more":
            d["count"] = self.count
        if self.children:
            d["children"] = [c.to_dict() for c in self.children]
        return d

    def rule_names(self) -> list[str]:
        """Every rule in the tree, breadth first, once each."""
        out: list[str] = []
        stack = [self]
        while stack:
            n = stack.pop(0)
            if n.rule is not None and n.rule.name not in out:
                out.append(n.rule.name)
            stack.extend(n.children)
        return out

    def reasons(self) -> list[str]:
        """The deciding rule, then the derived premises' rules one level below, once each."""
        if self.kind != "rule" or self.rule is None:
            return []
        out = [self.rule.name]
        for c in self.children:
            if c.kind == "rule" and c.rule is not None and c.rule.name not in out:
                out.append(c.rule.name)
        return out

    def walk(self) -> Iterator[Proof]:
        """Every node once (shared sub-proofs once), depth first."""
        seen: set[int] = set()
        stack = [self]
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            yield n
            stack.extend(reversed(n.children))
