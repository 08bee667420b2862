"""The prelude's hierarchy as data filters read it: where the resources a condition admits
are (``seeds``), all of them found by walking down from there (``enumerate_admitted``;
output-sensitive in a tree), conditions simplified with the hierarchy (``rollup``), and each
object's chain from the root (``under_chains``, for SQL over a path column).
"""

from __future__ import annotations

from typing import Any

from . import ir
from .conditions import Cond, Test, compile_cond, conj, disj, mentioned, neg


class Hierarchy:
    """The prelude's hierarchy read from a view's stored indexes (``contains``, ``entity``)."""

    def __init__(self, ctx: Any) -> None:
        from .database import stored_get

        self._down = stored_get(ctx.base_index("contains", (0,)))
        self._up = stored_get(ctx.base_index("contains", (1,)))
        self._types = stored_get(ctx.base_index("entity", (0,)))
        #: every object has at most one parent and one type (the indexes say so as they
        #: stand): subtrees are disjoint and a walk down knows each node's ancestors
        self.tree = self._up[1] and self._types[1]
        self._ctx = ctx

    def kinds(self) -> list[Any]:
        """Every type an object has."""
        return list(self._ctx.base_index("entity", (1,)))

    @staticmethod
    def _rows(got: tuple[Any, bool], key: Any) -> Any:
        get, unique = got
        b = get(key)
        return () if b is None else (b,) if unique else b

    def types(self, x: Any) -> set[Any]:
        return {row[1] for row in self._rows(self._types, x)}

    def parents(self, x: Any) -> list[Any]:
        return [row[0] for row in self._rows(self._up, x)]

    def child_count(self, x: Any) -> int:
        return len(self._rows(self._down, x))

    def children(self, x: Any) -> list[Any]:
        return [row[1] for row in self._rows(self._down, x)]

    def above(self, x: Any) -> set[Any]:
        """``ancestor_or_self(A, x)``: every strict ancestor, and ``x`` if it is an entity."""
        out = {x} if self._rows(self._types, x) else set()
        todo = self.parents(x)
        seen: set[Any] = set()
        while todo:
            p = todo.pop()
            if p in seen:
                continue
            seen.add(p)
            out.add(p)
            todo.extend(self.parents(p))
        return out


def seeds(c: Cond, h: Hierarchy) -> list[tuple[str, Any]] | None:
    """Where the resources ``c`` admits can be found: ``("is", v)`` or ``("under", a)``
    entries (a resource the condition admits is one of them or below one), or None when the
    condition does not bound them (a negation, a type alone)."""
    tag = c[0]
    if tag == "false":
        return []
    if tag == "is":
        return [("is", c[1])]
    if tag == "in":
        return [("is", v) for v in sorted(c[1], key=ir.value_key)]
    if tag == "under":
        return [("under", c[1])]
    if tag == "parent":
        return [("is", x) for x in h.children(c[1])]
    if tag == "or":
        out: list[tuple[str, Any]] = []
        for q in c[1]:
            got = seeds(q, h)
            if got is None:
                return None
            out += got
        return out
    if tag == "and":
        options = [s for s in (seeds(q, h) for q in c[1]) if s is not None]
        if len(options) < 2:
            return options[0] if options else None
        if h.tree:  # every option's subtrees hold the resource: their intersection
            out = options[0]
            for o in options[1:]:
                out = _meet(out, o, h)
            return out
        # the narrowest: the one whose walk visits the fewest resources (a named resource
        # counts one)
        cap = 1024  # each option walked up to a bound that grows until one fits in it
        while True:
            sizes = [_walk_size(o, h, cap) for o in options]
            i = min(range(len(options)), key=sizes.__getitem__)
            if sizes[i] <= cap or cap > 1 << 40:
                return options[i]
            cap *= 8
    return None


def _meet(s1: list[tuple[str, Any]], s2: list[tuple[str, Any]], h: Hierarchy,
          ) -> list[tuple[str, Any]]:
    """Seeds of the resources both ``s1`` and ``s2`` hold, in a tree: two subtrees meet in
    the deeper one when one holds the other, and not at all otherwise."""
    def kept(mine: list[tuple[str, Any]], theirs: list[tuple[str, Any]],
             ) -> list[tuple[str, Any]]:
        unders = {v for k, v in theirs if k == "under"}
        named = {v for k, v in theirs if k == "is"}
        return [(k, v) for k, v in mine
                if (k == "is" and v in named) or not unders.isdisjoint(h.above(v) | {v})]
    return list(dict.fromkeys(kept(s1, s2) + kept(s2, s1)))


def _walk_size(seed: list[tuple[str, Any]], h: Hierarchy, cap: int | None) -> int:
    """How many resources a walk from ``seed`` visits (stopping past ``cap``)."""
    n = 0
    seen: set[Any] = set()
    todo = [(v, k == "under") for k, v in seed]
    while todo:
        x, down = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        n += 1
        if cap is not None and n > cap:
            return n
        if down:
            todo.extend((c, True) for c in h.children(x))
    return n


def enumerate_admitted(c: Cond, h: Hierarchy) -> list[Any] | None:
    """Every resource ``c`` admits, found by walking down from its seeds (each resource
    visited once, its ancestors carried down the walk), or None when ``c`` does not bound
    them. In a tree, without duplicates."""
    found = seeds(c, h)
    if found is None:
        return None
    test = compile_cond(c)
    if h.tree:
        return _walk_tree(c, test, found, h)
    out: list[Any] = []
    seen: set[Any] = set()
    # the subtrees first: a node seen in one had its subtree walked, a named one did not
    for kind, v in sorted(found, key=lambda s: s[0] != "under"):
        if v in seen:
            continue
        above = h.above(v)
        if kind == "is":
            seen.add(v)
            if test(v, above, h.types(v), h.parents(v)):
                out.append(v)
            continue
        # walk down; a node with one parent inherits its ancestors from the walk
        stack = [(v, above)]
        while stack:
            x, a = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            types = h.types(x)
            parents = h.parents(x)
            if test(x, a, types, parents):
                out.append(x)
            for child in h.children(x):
                if child in seen:
                    continue
                if len(h.parents(child)) == 1:  # its ancestors: x and x's, and itself
                    ca = a | {x, child} if h.types(child) else a | {x}
                else:
                    ca = h.above(child)
                stack.append((child, ca))
    return out


class _Other:
    """A resource the condition does not name (stands for every such resource)."""


def _walk_tree(c: Cond, test: Test, found: list[tuple[str, Any]], h: Hierarchy) -> list[Any]:
    """:func:`enumerate_admitted` in a tree, set-at-a-time below the objects the condition
    names. Below a node ``x`` with no named object under it, whether a resource is admitted
    depends only on its type (and, for ``x``'s children, on having ``x`` as parent): the
    condition is decided once per type there, and the subtree is collected without deciding
    each resource; a subtree where no type passes is not walked at all. Nodes with a named
    object below them (a handful per named object) are decided one by one."""
    named = mentioned(c)
    busy: set[Any] = set()  # strict ancestors of a named object
    for v in named:
        busy |= h.above(v) - {v}
    types_get = h._types[0]
    down_get, one_child = h._down  # one_child: the index holds each parent's only row
    kinds = h.kinds()
    other = _Other()
    out: list[Any] = []
    # the seeds' subtrees, without those inside another seed's
    unders = {v for k, v in found if k == "under"}
    starts: dict[Any, bool] = {}
    for k, v in found:
        starts[v] = starts.get(v, False) or k == "under"
    top = [(v, down) for v, down in starts.items() if unders.isdisjoint(h.above(v) - {v})]

    def type_of(x: Any) -> frozenset[Any]:
        row = types_get(x)
        return frozenset() if row is None else frozenset((row[1],))

    for v, down in top:
        a = h.above(v)
        if test(v, a, type_of(v), h.parents(v)):
            out.append(v)
        if not down:
            continue
        stack = [(v, a | {v})]  # a node, and its descendants' ancestors among the named
        while stack:
            x, ax = stack.pop()
            bucket = down_get(x)
            if bucket is None:
                continue
            kids = [bucket[1]] if one_child else [row[1] for row in bucket]
            if x in busy:  # a named object below: each child decided with its own name
                px = (x,)
                for y in kids:
                    ty = type_of(y)
                    ay = ax | {y} if ty else ax
                    if test(y, ay, ty, px):
                        out.append(y)
                    stack.append((y, ax | {y}))
                continue
            # nothing named below x: by type, for x's children and for deeper descendants
            near = {t for t in kinds if test(other, ax, frozenset((t,)), (x,))}
            far = {t for t in kinds if test(other, ax, frozenset((t,)), (other,))}
            untyped_near = test(other, ax, frozenset(), (x,))
            untyped_far = test(other, ax, frozenset(), (other,))
            if not (near or far or untyped_near or untyped_far):
                continue  # nothing below x is admitted
            _collect(kids, near, untyped_near, far, untyped_far, types_get, down_get,
                     one_child, out)
    return out


def _collect(kids: list[Any], near: set[Any], untyped_near: bool, far: set[Any],
             untyped_far: bool, types_get: Any, down_get: Any, one_child: bool,
             out: list[Any]) -> None:
    """The admitted descendants of a node (``kids`` its children) with nothing named below
    it: children whose type is in ``near``, deeper ones whose type is in ``far``."""
    level, ok, untyped = kids, near, untyped_near
    while level:
        deeper: list[Any] = []
        for y in level:
            row = types_get(y)
            if (untyped if row is None else row[1] in ok):
                out.append(y)
            bucket = down_get(y)
            if bucket is not None:
                if one_child:
                    deeper.append(bucket[1])
                else:
                    deeper.extend(row[1] for row in bucket)
        level, ok, untyped = deeper, far, untyped_far


def under_chains(c: Cond, h: Hierarchy) -> dict[Any, tuple[Any, ...]]:
    """In a tree: for each object ``c`` is "under", the ids from the root down to it."""
    if not h.tree:
        return {}
    out: dict[Any, tuple[Any, ...]] = {}

    def walk(c: Cond) -> None:
        tag = c[0]
        if tag in ("and", "or"):
            for p in c[1]:
                walk(p)
        elif tag == "not":
            walk(c[1])
        elif tag == "under" and c[1] not in out:
            chain, x = [c[1]], c[1]
            while (up := h.parents(x)) and len(chain) <= 10_000:
                x = up[0]
                chain.append(x)
            out[c[1]] = tuple(reversed(chain))
    walk(c)
    return out


def rollup(c: Cond, h: Hierarchy, kind: Any = None) -> Cond:
    """``c`` with every set of ``under``s that names all the children of an object ``p``
    replaced by one ``under p`` (again, up the tree), where that is exact: ``p`` has no
    type (it is not under itself), or the resource has another type (``kind``, from a
    ``type`` the condition requires around it). A user who may use every schema of a
    catalog gets one term for the catalog, not one per schema. In a tree only."""
    tag = c[0]
    if tag == "and":
        types = [p[1] for p in c[1] if p[0] == "type"]
        inner = types[0] if len(types) == 1 else kind
        parts = [rollup(p, h, inner) for p in c[1]]
        # "under a" beside a part that admits only resources under a says nothing more
        # (every filter of a user of metalake m1 is "under m1")
        found = [seeds(p, h) for p in parts]  # each part's, once
        kept = list(range(len(parts)))
        for i, p in enumerate(parts):
            region = _region(p)
            if region is not None and any(
                    j != i and (s := found[j]) and all(_covers(region, k, v, h) for k, v in s)
                    for j in kept):
                kept.remove(i)
        return conj([parts[i] for i in kept])
    if tag == "not":
        return neg(rollup(c[1], h, kind))
    if tag != "or":
        return c
    parts = [rollup(p, h, kind) for p in c[1]]
    unders = {p[1] for p in parts if p[0] == "under"}
    rolled = set(unders)
    below: dict[Any, set[Any]] = {}  # parent -> its children among the unders
    todo = list(unders)
    while todo:
        u = todo.pop()
        for p in h.parents(u):
            kids = below.setdefault(p, set())
            kids.add(u)
            if p in rolled or len(kids) != h.child_count(p):
                continue
            ptypes = h.types(p)
            if ptypes and (kind is None or kind in ptypes):
                continue  # p itself would be admitted: not the same condition
            rolled -= kids  # every child of p: p's subtree, p aside
            rolled.add(p)
            todo.append(p)
    if rolled == unders:
        return disj(parts)
    return disj([p for p in parts if p[0] != "under"] + [("under", u) for u in sorted(
        rolled, key=ir.value_key)])


def _region(c: Cond) -> tuple[set[Any], set[Any]] | None:
    """``c`` as the objects it admits everything under and the ones it admits by name, when
    it is an ``under``, an ``is`` or a disjunction of them."""
    parts = c[1] if c[0] == "or" else (c,)
    if not all(p[0] in ("under", "is") for p in parts):
        return None
    return {p[1] for p in parts if p[0] == "under"}, {p[1] for p in parts if p[0] == "is"}


def _covers(region: tuple[set[Any], set[Any]], kind: str, v: Any, h: Hierarchy) -> bool:
    """Whether every resource seed ``(kind, v)`` stands for is in ``region``."""
    unders, names = region
    return (kind == "is" and v in names) or (kind == "under" and v in unders) or \
        not unders.isdisjoint(h.above(v))
