"""Proofs as graphs: an explanation (``Explanation.to_dict()``: the why-proof or the why-not
tree) as Cytoscape elements, nodes and edges, drawn by the page with the dagre layout.

Facts are boxes (base facts green, derived facts blue), each rule that derived one is a small
round node joining its premises; in a why-not tree the failed premises are red and say why
(``fails``, ``missing``, ``blocked``, ``false``, ...), the ones that hold green. A sub-proof of
the hierarchy's closure (the relations the hierarchy analysis finds as its closure or strict
closure: engine/core/hierarchy_roles.py, from the model's structure) is folded into one
``under`` node, however long the chain of parents below it. Shared sub-proofs are drawn once."""

from __future__ import annotations

from typing import Any

from grantlog.engine.core.hierarchy_roles import hierarchy_roles

#: the most nodes one graph draws (the rest is one "more" node)
MAX_NODES = 300
#: a why-not node's kind -> (class, the word shown under its fact)
WHY_NOT = {
    "fails": ("failed", "fails"), "missing": ("failed", "missing base fact"),
    "blocked": ("failed", "blocked by a negation"), "false": ("failed", "comparison false"),
    "no-rule": ("failed", "no rule matches"), "holds": ("holds", "holds"),
    "unchecked": ("note", "not reached"), "unexpanded": ("note", "fails (not expanded)"),
    "seen": ("note", "explained above"), "cycle": ("note", "recursive"),
    "limit": ("note", "not expanded (size limit)"), "more": ("note", ""),
}


def folded_relations(program: Any) -> frozenset[str]:
    """The relations whose sub-proofs fold into one ``under`` node: the hierarchy's closure
    and strict closure, as the model's ``@hierarchy`` roles and rules make them."""
    roles = hierarchy_roles(program)
    return frozenset(r for r in (roles.closure, roles.strict) if r)


def relation_of(fact: str) -> str:
    return fact.split("(", 1)[0].strip()


def _short(text: str, width: int = 48) -> str:
    """A label wrapped at argument boundaries, lines of at most ``width`` characters."""
    lines: list[str] = []
    line = ""
    for part in text.split(", "):
        if line and len(line) + len(part) + 2 > width:
            lines.append(line + ",")
            line = "  " + part
        else:
            line = f"{line}, {part}" if line else part
    lines.append(line)
    return "\n".join(lines[:4]) + ("\n…" if len(lines) > 4 else "")


class _Builder:
    def __init__(self, fold: frozenset[str]) -> None:
        self.fold = fold
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[dict[str, Any]] = []
        self.ids: dict[tuple[Any, ...], str] = {}
        self.edge_keys: set[tuple[str, str]] = set()
        self.truncated = 0

    def node(self, key: tuple[Any, ...], cls: str, label: str, **detail: Any) -> tuple[str,
                                                                                      bool]:
        """The node's id and whether it is new (a shared sub-proof is drawn once)."""
        if key in self.ids:
            return self.ids[key], False
        nid = f"n{len(self.ids)}"
        self.ids[key] = nid
        self.nodes.append({"data": {"id": nid, "label": label, "cls": cls,
                                    **{k: v for k, v in detail.items() if v or v == 0}}})
        return nid, True

    def edge(self, a: str, b: str, label: str = "") -> None:
        if (a, b) in self.edge_keys:
            return
        self.edge_keys.add((a, b))
        data = {"id": f"e{len(self.edges)}", "source": a, "target": b}
        if label:
            data["label"] = label
        self.edges.append({"data": data})

    def full(self) -> bool:
        return len(self.nodes) >= MAX_NODES

    # ---- why ---------------------------------------------------------------------------

    def why(self, n: dict[str, Any], depth: int = 0) -> str:
        """The node of proof ``n`` (``depth``: the derived facts above it, which the page
        uses to show the top of a large proof first)."""
        fact = n["fact"]
        if relation_of(fact) in self.fold:
            steps = _leaves(n)
            nid, _ = self.node(("under", fact), "under", _short(_under_label(n, True)),
                               fact=fact, steps=steps, depth=depth)
            return nid
        if n["kind"] == "fact":
            return self.node(("fact", fact), "fact", _short(fact), fact=fact,
                             origin=n.get("origin"), depth=depth)[0]
        if n["kind"] != "rule":
            return self.node(("note", fact), "note", _short(fact), fact=fact, depth=depth)[0]
        rule = n.get("rule") or "rule"
        detail = {"doc": n.get("doc"), "at": n.get("at"), "bindings": _bindings(n)}
        kids = n.get("children", [])
        # a rule joining several premises is a node of its own; a rule with one premise is
        # the label of the edge to it (half the nodes, the same proof)
        join = len(kids) > 1
        nid, new = self.node(("derived", fact), "derived",
                             _short(fact) + ("" if join else f"\nby {rule}"), fact=fact,
                             rule=rule, depth=depth, **({} if join else detail))
        if not new:
            return nid
        src = nid
        if join:
            src, _ = self.node(("rule", fact, rule), "rule", rule, depth=depth, **detail)
            self.edge(nid, src)
        for c in kids:
            if self.full():
                self.truncated += 1
                continue
            self.edge(src, self.why(c, depth + 1))
        return nid

    # ---- why not -----------------------------------------------------------------------

    def why_not(self, n: dict[str, Any], path: str, depth: int = 0) -> str:
        fact, kind = n["fact"], n["kind"]
        if kind == "alternative":
            rid, _ = self.node(("alt", path), "rule", "via " + (n.get("rule") or "rule"),
                               doc=n.get("doc"), at=n.get("at"), bindings=_bindings(n),
                               depth=depth)
            for i, c in enumerate(n.get("children", [])):
                if self.full():
                    self.truncated += 1
                    continue
                self.edge(rid, self.why_not(c, f"{path}.{i}", depth + 1))
            return rid
        cls, word = WHY_NOT.get(kind, ("note", kind))
        if relation_of(fact) in self.fold and kind in ("fails", "holds", "missing"):
            nid, _ = self.node(("under", kind, fact), cls if kind != "holds" else "under",
                               _short(_under_label(n, kind == "holds")), fact=fact,
                               why=word, kind=kind, depth=depth)
            return nid
        label = fact if kind == "more" else f"{_short(fact)}\n[{word}]"
        nid, new = self.node((kind, fact, path if kind == "fails" else ""), cls, label,
                             fact=fact, why=word, kind=kind, depth=depth)
        if new:
            for i, c in enumerate(n.get("children", [])):
                if self.full():
                    self.truncated += 1
                    continue
                self.edge(nid, self.why_not(c, f"{path}.{i}", depth))
        return nid


def _bindings(n: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in (n.get("bindings") or {}).items())


def _args(fact: str) -> list[str]:
    inner = fact.split("(", 1)[1].rsplit(")", 1)[0] if "(" in fact else ""
    return [a.strip() for a in inner.split(",")]


def _under_label(n: dict[str, Any], holds: bool) -> str:
    """``X under A`` (the closure's columns are ancestor, object) and how many steps."""
    args = n.get("args") or _args(n["fact"])
    anc, obj = (str(args[0]), str(args[-1])) if len(args) >= 2 else (n["fact"], "")
    steps = _leaves(n)
    says = "under" if holds else "not under"
    more = f" ({steps} step{'s' if steps != 1 else ''})" if holds and steps > 1 else ""
    return f"{obj}\n{says} {anc}{more}"


def _leaves(n: dict[str, Any]) -> int:
    """The base facts a folded sub-proof rests on (its hierarchy steps)."""
    kids = n.get("children", [])
    if not kids:
        return 1 if n.get("kind") == "fact" else 0
    return sum(_leaves(c) for c in kids)


def graph(explanation: dict[str, Any], fold: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The explanation as ``{holds, goal, nodes, edges, truncated}`` (Cytoscape's element
    JSON); the root node is ``n0``."""
    b = _Builder(fold)
    if explanation.get("holds") and explanation.get("proof"):
        b.why(explanation["proof"])
    elif explanation.get("why_not"):
        b.why_not(explanation["why_not"], "0")
    else:
        b.node(("goal",), "failed", _short(explanation["goal"]) + "\n[does not hold]")
    if b.truncated:
        more, _ = b.node(("more",), "note", f"{b.truncated} more not drawn")
        b.edge("n0", more)
    return {"holds": bool(explanation.get("holds")), "goal": explanation["goal"],
            "nodes": b.nodes, "edges": b.edges, "truncated": b.truncated}
