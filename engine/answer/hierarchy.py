"""The hierarchy (the relations declared ``@hierarchy(...)`` or recognised:
engine/core/hierarchy_roles.py) as data filters read it: where the resources a condition admits
are (``seeds``), all of them found by walking down from there (``enumerate_admitted``;
output-sensitive in a tree), conditions simplified with the hierarchy (``rollup``), and each
object's chain from the root (``under_chains``, for SQL over a path column).
"""

from __future__ import annotations

from itertools import repeat
from operator import is_not, itemgetter
from typing import Any

from ..core import ir
from ..core.hierarchy_roles import HierarchyRoles, hierarchy_roles
from ..core.index import stored_get, stored_many
from .conditions import FALSE, TRUE, Cond, Test, compile_cond, conj, disj, mentioned, neg
from .sweep import Sweep


class Hierarchy:
    """The hierarchy read from a view's stored indexes: the relations playing the roles
    ``edge`` (parent, child; or child, parent when ``upward``) and ``type`` (object, type; or
    one unary relation per type, ``kinds``) (engine/core/hierarchy_roles.py; ``roles``: the
    view's program's when not given)."""

    def __init__(self, ctx: Any, roles: HierarchyRoles | None = None,
                 cache: dict[Any, Any] | None = None) -> None:
        roles = roles or hierarchy_roles(ctx.plans.program)
        edge = roles.need("edge", "the hierarchy's walk")
        self._type = roles.need("type", "the hierarchy's walk")
        par, kid = roles.down
        #: the edge's rows by parent (a child at ``_kid``) and by child (a parent at ``_par``)
        self._down_ix = ctx.base_index(edge, (par,))
        self._down = stored_get(self._down_ix)
        self._up_ix = ctx.base_index(edge, (kid,))
        self._up = stored_get(self._up_ix)
        self._kid, self._par = kid, par
        #: the unary type relations (when types are not one binary relation)
        self._kinds = roles.kinds if roles.type is None else ()
        #: what outlives this view while the hierarchy stands (the reasoner's; see ``upper``)
        self.cache: dict[Any, Any] = {} if cache is None else cache
        self._types = (stored_get(ctx.base_index(self._type, (0,))) if not self._kinds
                       else kinds_get(ctx, self._kinds, self.cache))
        self._by_type: Any = None  # the type relation's (1,) index, built when first asked
        self._above: dict[Any, frozenset[Any]] = {}
        self._chains: dict[Any, tuple[Any, ...]] = {}
        self._strict_m: dict[Any, frozenset[Any]] = {}
        self._below: dict[tuple[Any, Any], bool] = {}
        #: every object has at most one parent and one type (the indexes say so as they
        #: stand): subtrees are disjoint and a walk down knows each node's ancestors
        self.tree = self._up[1] and self._types[1]
        self._ctx = ctx
        self._sweep: Sweep | None = None

    def of_type(self, t: Any) -> list[Any]:
        """Every object of type ``t``."""
        if self._kinds:
            return [row[0] for row in self._ctx.F[t]] if t in self._kinds else []
        if self._by_type is None:
            self._by_type = stored_get(self._ctx.base_index(self._type, (1,)))
        return [row[0] for row in self._rows(self._by_type, t)]

    def upper(self, v: Any, t: Any) -> frozenset[Any]:
        """``v`` and what lies under it with no ``t``-object at or above it (in a tree; the
        walk stops at ``t``-objects). Kept in ``cache`` (the reasoner's, while the hierarchy
        stands): the same few objects above a level are asked by every user's filter."""
        key = ("upper", v, t)
        got = self.cache.get(key)
        if got is None:
            types_get = self._types[0]
            down_get, one_child = self._down
            kid = self._kid
            out: set[Any] = set()
            todo = [v]
            while todo and len(out) <= UPPER_MAX:
                x = todo.pop()
                out.add(x)
                bucket = down_get(x)
                if bucket is None:
                    continue
                for row in ((bucket,) if one_child else bucket):
                    trow = types_get(row[kid])
                    if trow is None or trow[1] != t:
                        todo.append(row[kid])
            got = self.cache[key] = frozenset(out)
        return got

    def sweep(self) -> Sweep:
        """The tree's levels read a level at a time (engine/answer/sweep.py)."""
        if self._sweep is None:
            self._sweep = Sweep(self._ctx, self._down_ix, self._up_ix, self._par, self._kid,
                                self._type, self._kinds, self._types, self.cache)
        return self._sweep

    def kinds(self) -> list[Any]:
        """Every type an object has."""
        if self._kinds:
            return list(self._kinds)
        return list(self._ctx.base_index(self._type, (1,)))

    @staticmethod
    def _rows(got: tuple[Any, bool], key: Any) -> Any:
        get, unique = got
        b = get(key)
        return () if b is None else (b,) if unique else b

    def types(self, x: Any) -> set[Any]:
        if self._kinds and not self._types[1]:  # an object may be of several
            return {k for k in self._kinds if (x,) in self._ctx.F[k]}
        return {row[1] for row in self._rows(self._types, x)}

    def parents(self, x: Any) -> list[Any]:
        par = self._par
        return [row[par] for row in self._rows(self._up, x)]

    def parents_of(self, xs: list[Any]) -> list[list[Any]]:
        """:meth:`parents` of each of ``xs``, read together (engine/core/index.py
        ``stored_many``: no Python call per object on a store's sorted index)."""
        par, unique = self._par, self._up[1]
        got = stored_many(self._up_ix)(xs)
        if unique:
            return [[] if row is None else [row[par]] for row in got]
        return [[] if b is None else [row[par] for row in b] for b in got]

    def parent_set(self, xs: list[Any]) -> set[Any]:
        """The parents of ``xs`` in a tree (:attr:`tree`: one row each at most), read
        together and at C speed."""
        return set(map(itemgetter(self._par), filter(None, stored_many(self._up_ix)(xs))))

    def child_count(self, x: Any) -> int:
        return len(self._rows(self._down, x))

    def children(self, x: Any) -> list[Any]:
        kid = self._kid
        return [row[kid] for row in self._rows(self._down, x)]

    def above(self, x: Any) -> frozenset[Any]:
        """``closure(A, x)``: every strict ancestor, and ``x`` if it has a type
        (kept: a filter asks the same objects many times)."""
        got = self._above.get(x)
        if got is None:
            strict = self._strict(x) if self.tree else None
            if strict is None:  # a graph, or a cycle of parents
                got = frozenset(self._walk_up(x))
            else:
                got = strict | {x} if self._rows(self._types, x) else strict
            self._above[x] = got
        return got

    def strict(self, x: Any) -> frozenset[Any]:
        """``x``'s strict ancestors (kept)."""
        got = self._strict(x) if self.tree else None
        return got if got is not None else self.above(x) - {x}

    def below_level(self, x: Any, t: Any) -> bool:
        """Whether an object of type ``t`` lies strictly above ``x`` (kept)."""
        key = (x, t)
        got = self._below.get(key)
        if got is None:
            types_get = self._types[0]
            got = self._below[key] = any(
                (row := types_get(y)) is not None and row[1] == t for y in self.strict(x)) \
                if self._types[1] else any(t in self.types(y) for y in self.strict(x))
        return got

    def _strict(self, x: Any) -> frozenset[Any] | None:
        """In a tree, ``x``'s strict ancestors: its parent's and the parent (each kept, for
        the siblings); None on a cycle of parents."""
        memo = self._strict_m
        path: list[Any] = []
        seen: set[Any] = set()
        y = x
        while y not in memo:
            if y in seen:
                return None
            seen.add(y)
            path.append(y)
            ps = self.parents(y)
            if not ps:  # a root
                memo[y] = frozenset()
                path.pop()
                break
            y = ps[0]
        acc = memo[y]
        for node in reversed(path):  # y is node's parent
            acc = memo[node] = acc | {y}
            y = node
        return memo[x]

    def chain(self, x: Any) -> tuple[Any, ...]:
        """In a tree: the ids from the root down to ``x`` (kept, like :meth:`above`; cut
        at 10,000 on a cycle of parents)."""
        got = self._chains.get(x)
        if got is None:
            path, y = [x], x
            while (up := self.parents(y)) and len(path) <= 10_000:
                y = up[0]
                if y in self._chains:
                    got = self._chains[y] + tuple(reversed(path))
                    break
                path.append(y)
            else:
                got = tuple(reversed(path))
            self._chains[x] = got
        return got

    def _walk_up(self, x: Any) -> set[Any]:
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


#: a row's first column
_first = itemgetter(0)


def kinds_get(ctx: Any, kinds: tuple[str, ...],
              cache: dict[Any, Any]) -> tuple[Any, bool]:
    """Types as unary relations read like a binary type relation's index on the object:
    ``get(x)`` is ``(x, kind)`` for the (first) kind holding ``x``, or None; and whether no
    object is of two kinds (found over all but the largest kind, so the tables of a
    million-table platform are not read, and kept in ``cache`` while the hierarchy
    stands)."""
    order = sorted(kinds, key=lambda k: -len(ctx.F[k]))  # the most objects first
    indexes = [ctx.base_index(k, (0,)) for k in order]
    gets = [(k, stored_get(ix)[0]) for k, ix in zip(order, indexes, strict=True)]
    one = cache.get(("kinds", kinds))
    if one is None:  # each kind's objects looked up in the others' indexes, many at a time
        manys = list(map(stored_many, indexes))
        one = True
        for i, k in enumerate(order[1:], 1):
            objs = list(map(_first, ctx.F[k]))
            if any(any(map(is_not, many(objs), repeat(None)))
                   for j, many in enumerate(manys) if j != i):
                one = False
                break
        cache[("kinds", kinds)] = one
    if len(gets) == 1:
        (k0, g0), = gets
        return (lambda x: None if g0(x) is None else (x, k0)), one
    if len(gets) == 2:
        (k0, g0), (k1, g1) = gets
        return (lambda x: (x, k0) if g0(x) is not None else
                (x, k1) if g1(x) is not None else None), one

    def get(x: Any) -> tuple[Any, str] | None:
        for k, g in gets:
            if g(x) is not None:
                return (x, k)
        return None
    return get, one


class NoLift(Exception):
    """A condition on a level's object that :func:`lift` cannot turn into one on the
    resource (the caller evaluates the level's objects one by one instead)."""


#: objects above a level that :func:`lift` lists by name at most (past it: no lift)
UPPER_MAX = 20_000


def unnested(t: Any, h: Hierarchy) -> bool:
    """Whether no object of type ``t`` lies below another (each resource then has at most
    one ``t``-ancestor-or-self). Each object's ancestors are walked up to those found
    already with no ``t``-object at or above them: the schemas of a catalog ask it once.
    In a tree (:attr:`Hierarchy.tree`), the ancestors of them all are read first a level at
    a time (the levels above a million tables' 7,000 schemas: ~1 ms, against ~10 ms one
    schema at a time); only when one of them is a ``t``-object (nested, or a cycle) are
    they walked one by one."""
    xs = h.of_type(t)
    if h.tree:
        objects, above, level = set(xs), set[Any](), xs
        while level:
            found = h.parent_set(level) - above
            if not found.isdisjoint(objects):
                break
            above |= found
            level = list(found)
        else:
            return True
    clear: set[Any] = set()  # objects with no t-object at or above them
    for x, ups in zip(xs, h.parents_of(xs), strict=True):
        seen = {x}
        todo = [p for p in ups if p not in clear]
        cycle = False  # x is its own ancestor
        while todo:
            p = todo.pop()
            if p in seen:
                cycle = cycle or p == x
                continue
            seen.add(p)
            if t in h.types(p):
                return False
            todo.extend(q for q in h.parents(p) if q not in clear)
        if not cycle:  # x, a t-object, is above none of them: they are clear of one
            seen.discard(x)
            clear |= seen
    return True


def lift(c: Cond, t: Any, h: Hierarchy) -> Cond:
    """``c``, a condition on the resource's ``t``-ancestor-or-self ``S`` (the one object of
    type ``t`` at or above it), as a condition on the resource itself: the resource has such
    an ``S`` and ``S`` meets ``c``. Exact in a tree whose ``t``-objects are never nested
    (:func:`unnested`): ``S`` is under ``a`` exactly when the resource is and ``a`` is not
    below a ``t``-object; ``S`` is ``v`` when the resource is under ``v``; a negation of a
    condition on the one ``S`` is the negation of its lifted form. ``NoLift`` when ``c`` says
    what a lift cannot (a cell, an unbounded condition, too many objects above the level)."""

    def go(c: Cond) -> Cond:
        tag = c[0]
        if tag in ("true", "false"):
            return c
        if tag == "type":
            return TRUE if c[1] == t else FALSE
        if tag == "is":
            return ("under", c[1]) if t in h.types(c[1]) else FALSE
        if tag == "in":
            return disj([go(("is", v)) for v in sorted(c[1], key=ir.value_key)])
        if tag == "under":
            return FALSE if h.below_level(c[1], t) else c
        if tag == "parent":
            return disj([("under", x) for x in h.children(c[1]) if t in h.types(x)])
        if tag == "not":
            return neg(go(c[1]))
        if tag == "and":
            return conj([go(p) for p in c[1]])
        if tag == "or":
            return disj([go(p) for p in c[1]])
        raise NoLift(tag)

    body = go(c)
    if body == FALSE:
        return FALSE
    found = seeds(body, h)
    if found is None:
        raise NoLift("unbounded")
    # ... and the resource has a t-ancestor-or-self: what the seeds reach without one is out
    without: set[Any] = set()
    for kind, v in found:
        if t in h.types(v) or h.below_level(v, t):
            continue  # v is of the level or below it: so is everything under it
        if kind == "is":
            without.add(v)
        else:
            without |= h.upper(v, t)
    if len(without) > UPPER_MAX:
        raise NoLift("too many objects above the level")
    if not without:
        return body
    return conj([body, neg(("in", frozenset(without)) if len(without) > 1
                           else ("is", next(iter(without))))])


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
    kid = h._kid  # a child's column in an edge row
    kinds = h.kinds()
    sweep = h.sweep()
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
            kids = [bucket[kid]] if one_child else [row[kid] for row in bucket]
            if x in busy:  # a named object below: the children named or above one are
                # decided each with its own name; the others by type, as below
                px = (x,)
                plain = []
                for y in kids:
                    if y not in named and y not in busy:
                        plain.append(y)
                        continue
                    ty = type_of(y)
                    ay = ax | {y} if ty else ax
                    if test(y, ay, ty, px):
                        out.append(y)
                    stack.append((y, ax | {y}))
                kids = plain
                if not kids:
                    continue
            # nothing named below x (or these children): by type, for x's children and
            # for deeper descendants
            near = {t for t in kinds if test(other, ax, frozenset((t,)), (x,))}
            far = {t for t in kinds if test(other, ax, frozenset((t,)), (other,))}
            untyped_near = test(other, ax, frozenset(), (x,))
            untyped_far = test(other, ax, frozenset(), (other,))
            if not (near or far or untyped_near or untyped_far):
                continue  # nothing below x is admitted
            sweep.collect(kids, near, untyped_near, far, untyped_far, out)
    return out


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
            out[c[1]] = h.chain(c[1])
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
        parts = _meet_unions(parts, h)
        found = [seeds(p, h) for p in parts]  # each part's, once
        kept = list(range(len(parts)))
        for i, p in enumerate(parts):
            region = _region(p)
            if region is not None and any(
                    j != i and (s := found[j]) and all(_covers(region, k, v, h) for k, v in s)
                    for j in kept):
                kept.remove(i)
        kept_parts = [parts[i] for i in kept]
        if inner is not None:  # the resource is of type `inner`: names of another type go
            kept_parts = [_other_types_out(p, inner, h) for p in kept_parts]
        return conj(kept_parts)
    if tag == "not":
        return neg(rollup(c[1], h, kind))
    if tag != "or":
        return c
    parts = [rollup(p, h, kind) for p in c[1]]
    unders = {p[1] for p in parts if p[0] == "under"}
    inside = {u for u in unders if not unders.isdisjoint(h.strict(u))}
    if inside:  # under a and under something below a: under a
        parts = [p for p in parts if not (p[0] == "under" and p[1] in inside)]
        unders -= inside
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


def _meet_unions(parts: list[Cond], h: Hierarchy) -> list[Cond]:
    """The conjuncts that are unions of subtrees and names (``under``/``is`` and their
    disjunctions), replaced by their intersection, one union: in a tree two subtrees meet
    in the deeper one when one holds the other (the usable catalogs beside a user's grants on
    tables become those grants: SQL then reads only their index ranges)."""
    unions = [i for i, p in enumerate(parts) if _region(p) is not None]
    if len(unions) < 2:
        return parts
    unders, names = _region(parts[unions[0]])  # type: ignore[misc]
    for i in unions[1:]:
        u2, n2 = _region(parts[i])  # type: ignore[misc]
        unders, names = (  # a subtree's root counts as in it, typed or not
            {a for a in unders if a in u2 or not u2.isdisjoint(h.strict(a))}
            | {b for b in u2 if b in unders or not unders.isdisjoint(h.strict(b))},
            {v for v in names if v in n2 or not u2.isdisjoint(h.above(v))}
            | {v for v in n2 if not unders.isdisjoint(h.above(v))})
    met = disj([("under", u) for u in sorted(unders, key=ir.value_key)]
               + [("is", v) for v in sorted(names, key=ir.value_key)])
    first = unions[0]
    return [met if i == first else p for i, p in enumerate(parts)
            if i == first or i not in unions]


def _other_types_out(c: Cond, kind: Any, h: Hierarchy) -> Cond:
    """``not is v`` / ``not in vs`` of a resource of type ``kind``, without the ``v`` of
    another type (in a tree an object has one type: the resource is not one of them)."""
    if c[0] != "not" or c[1][0] not in ("is", "in"):
        return c
    names = (c[1][1],) if c[1][0] == "is" else c[1][1]
    left = [v for v in names if not (t := h.types(v)) or kind in t]
    if len(left) == len(names):
        return c
    if not left:
        return TRUE
    return neg(("is", left[0]) if len(left) == 1 else ("in", frozenset(left)))


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
