"""Why-proofs and why-not trees as Graphviz DOT and Mermaid (shared sub-proofs drawn once)."""

from __future__ import annotations

import textwrap

from .proof import Proof

#: node kind -> style class
_CLASS = {
    "rule": "holds", "fact": "fact", "absent": "holds", "comparison": "holds", "goal": "holds",
    "holds": "holds", "fails": "fails", "no-rule": "fails", "false": "fails",
    "unexpanded": "fails",
    "missing": "missing", "blocked": "blocked", "alternative": "alternative",
}
#: style class -> (fill, border)
_COLORS = {
    "holds": ("#e8f5e9", "#2e7d32"),
    "fact": ("#c8e6c9", "#1b5e20"),
    "fails": ("#fdecea", "#c62828"),
    "missing": ("#fff3e0", "#e65100"),
    "blocked": ("#f3e5f5", "#6a1b9a"),
    "alternative": ("#fffde7", "#9e9d24"),
    "note": ("#ffffff", "#757575"),
}
_WRAP = 60


def _lines(node: Proof) -> list[str]:
    """A node's label as lines: its fact (or rule), then the reason, wrapped."""
    if node.kind == "more":
        return [node.text]
    head = f"via {node.reason()}" if node.kind == "alternative" else node.text
    first = textwrap.wrap(head, _WRAP, break_long_words=False, break_on_hyphens=False) or [""]
    if node.kind == "alternative":
        return first
    return first + textwrap.wrap(node.reason(), _WRAP, break_long_words=False,
                                 break_on_hyphens=False)


def _graph(root: Proof) -> tuple[list[Proof], dict[int, str], list[tuple[str, str]]]:
    nodes = list(root.walk())
    ids = {id(n): f"n{i}" for i, n in enumerate(nodes)}
    edges: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for n in nodes:
        for c in n.children:
            e = (ids[id(n)], ids[id(c)])
            if e not in seen:
                seen.add(e)
                edges.append(e)
    return nodes, ids, edges


def _dot_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")


def to_dot(root: Proof) -> str:
    """A why-proof or why-not tree as a Graphviz digraph (node labels escaped for DOT)."""
    nodes, ids, edges = _graph(root)
    out = ["digraph explanation {",
           '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
           '  edge [color="#616161"];']
    for n in nodes:
        cls = _CLASS.get(n.kind, "note")
        fill, line = _COLORS[cls]
        label = "\\n".join(_dot_escape(x) for x in _lines(n))
        dashed = ', style="rounded,filled,dashed"' if cls == "note" else ""
        out.append(f'  {ids[id(n)]} [label="{label}", fillcolor="{fill}", color="{line}"'
                   f'{dashed}];')
    out += [f"  {a} -> {b};" for a, b in edges]
    out.append("}")
    return "\n".join(out) + "\n"


def _mermaid_escape(s: str) -> str:
    """Text for a quoted Mermaid label: characters Mermaid or its HTML labels would read are
    written as entity codes (``#34;``)."""
    return "".join(f"#{ord(ch)};" if ch in '"#<>&`|{}[]\\' or ord(ch) < 32 else ch for ch in s)


def to_mermaid(root: Proof) -> str:
    """A why-proof or why-not tree as a Mermaid flowchart (labels escaped as entity codes)."""
    nodes, ids, edges = _graph(root)
    out = ["flowchart TD"]
    used: list[str] = []
    for n in nodes:
        cls = _CLASS.get(n.kind, "note")
        if cls not in used:
            used.append(cls)
        label = "<br/>".join(_mermaid_escape(x) for x in _lines(n))
        out.append(f'  {ids[id(n)]}["{label}"]:::{cls}')
    out += [f"  {a} --> {b}" for a, b in edges]
    for cls in used:
        fill, line = _COLORS[cls]
        dash = ",stroke-dasharray:4 3" if cls == "note" else ""
        out.append(f"  classDef {cls} fill:{fill},stroke:{line},color:#000{dash}")
    return "\n".join(out) + "\n"
