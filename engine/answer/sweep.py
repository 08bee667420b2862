"""The wide part of a walk down a tree (engine/answer/hierarchy.py ``enumerate_admitted``):
below the objects a condition names, whether an object is admitted depends on its type only,
so a whole level is decided at once. A level of a million tables is read with no Python call
per table (``map``/``compress``/``filterfalse`` over the stored indexes), and, where the
hierarchy allows it, without reading each table's type row or asking it for children: the few
objects to leave out are found from the type relation's side, and the objects with children
from the edge's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import suppress
from itertools import chain, compress, filterfalse, repeat
from operator import is_not, itemgetter, not_, or_
from typing import Any

from ..core.index import index_keys, more_keys, stored_get, stored_many

#: a type row's type column, and the row read for an object without a type
_second = itemgetter(1)
_UNTYPED = (None, None)


class Sweep:
    """A tree's levels read from a view's stored indexes: the edge's index by parent
    (``down``, a child at ``kid``) and by child (``up``, a parent at ``par``), and the types:
    one binary relation ``type_rel`` (object, type), or unary relations ``kinds``; ``cache``
    outlives the view while the hierarchy stands (the reasoner's)."""

    def __init__(self, ctx: Any, down_ix: Any, up_ix: Any, par: int, kid: int,
                 type_rel: str, kinds: tuple[str, ...], types: tuple[Any, bool],
                 cache: dict[Any, Any]) -> None:
        self._ctx, self._down_ix, self._up_ix = ctx, down_ix, up_ix
        self._down, self._up = stored_get(down_ix), stored_get(up_ix)
        #: the same read for a whole level at once (engine/core/index.py ``stored_many``)
        self._down_many, self._up_many = stored_many(down_ix), stored_many(up_ix)
        self._types_many = (None if kinds else
                            stored_many(ctx.base_index(type_rel, (0,))))
        self._par, self._kid = par, kid
        self._type, self._kinds, self._types = type_rel, kinds, types
        self.cache = cache

    def collect(self, kids: list[Any], near: set[Any], untyped_near: bool, far: set[Any],
                untyped_far: bool, out: list[Any]) -> None:
        """The admitted descendants of a node (``kids`` its children) with nothing named
        below it: children whose type is in ``near`` (untyped ones: ``untyped_near``),
        deeper ones whose type is in ``far``; a level at a time, each node's children in
        value order (:func:`in_order`)."""
        one_child = self._down[1]  # each parent's only row
        down_many = self._down_many
        child = itemgetter(self._kid)  # a child's column in an edge row

        def ordered(bucket: Iterable[Any]) -> list[Any]:
            return in_order(list(map(child, bucket)))

        level, ok, untyped = in_order(kids), near, untyped_near
        above: list[Any] | None = None  # the level above, when ``level`` is all its children
        while level:
            out.extend(self.admitted(level, ok, untyped, above))
            parents = self.with_children(level, above)
            if parents is not level:  # found from the edge's side: put back in order
                parents = in_order(parents)
            buckets = filter(None, down_many(parents))
            above, level = level, (list(map(child, buckets)) if one_child else
                                   list(chain.from_iterable(map(ordered, buckets))))
            ok, untyped = far, untyped_far

    def admitted(self, level: list[Any], ok: set[Any], untyped: bool,
                 above: list[Any] | None = None) -> Iterable[Any]:
        """The objects of ``level`` whose type is in ``ok`` (and the untyped ones when
        ``untyped``), in order. ``above``: the objects whose children ``level`` is, all of
        them (None: not so)."""
        if not ok and not untyped:
            return ()
        out = self.excluded(len(level), ok, untyped)
        if out is not None:  # a few to leave out: no type read per object
            if above is not None and 2 * len(out) < len(level):
                out = self.among(out, above)  # those of this level: often none
                if not out:
                    return level
            return filterfalse(out.__contains__, level)
        get, one = self._types
        if not self._kinds:
            if not one:
                return [x for x in level if (untyped if (b := get(x)) is None
                                             else not ok.isdisjoint(r[1] for r in b))]
            wanted = ok | {None} if untyped else ok  # an untyped object's type: None
            assert self._types_many is not None
            return compress(level, map(wanted.__contains__, map(
                _second, self._types_many(level, _UNTYPED))))
        gets = self.cache.get(("kind gets", self._kinds))
        if gets is None:
            gets = self.cache[("kind gets", self._kinds)] = {
                k: stored_get(self._ctx.base_index(k, (0,)))[0] for k in self._kinds}

        def some(kinds: Iterable[str]) -> Iterator[bool] | None:
            """Whether each object of ``level`` is of one of ``kinds`` (None: no kind)."""
            got: Iterator[bool] | None = None
            for k in kinds:
                hit = map(is_not, map(gets[k], level), repeat(None))
                got = hit if got is None else map(or_, got, hit)
            return got

        flags = some(k for k in self._kinds if k in ok)
        if untyped:  # of no kind at all
            typed = some(self._kinds)
            none = repeat(True) if typed is None else map(not_, typed)
            flags = none if flags is None else map(or_, flags, none)
        return () if flags is None else compress(level, flags)

    def excluded(self, n: int, ok: set[Any], untyped: bool) -> set[Any] | None:
        """What a level of ``n`` objects loses when only the types in ``ok`` pass (and
        untyped objects when ``untyped``): the objects of the other types and, but for
        ``untyped``, the hierarchy's untyped objects (found over the whole hierarchy: for a
        level about its size only); None when they are not few against ``n``. Kept while
        the hierarchy stands."""
        if not untyped and 4 * n < len(self._up_ix):
            return None
        ctx = self._ctx
        others: dict[Any, Any] = {}  # each other type's rows
        if self._kinds:
            for k in self._kinds:
                if k not in ok:
                    others[k] = ctx.F[k]
        else:
            by_type = ctx.base_index(self._type, (1,))
            get, unique = stored_get(by_type)
            for t in by_type:  # the types
                if t not in ok and (b := get(t)) is not None:
                    others[t] = (b,) if unique else b
        if 4 * sum(map(len, others.values())) > n:
            return None
        key = ("excluded", frozenset(others), untyped)
        got: set[Any] | None = self.cache.get(key)
        if got is None:
            got = {row[0] for rows in others.values() for row in rows}
            if not untyped:
                got |= self._untyped()
            self.cache[key] = got
        return got

    def _untyped(self) -> set[Any]:
        """The objects with a parent and no type (kept while the hierarchy stands)."""
        got: set[Any] | None = self.cache.get(("untyped",))
        if got is None:
            typed = ([self._ctx.base_index(self._type, (0,))] if not self._kinds else
                     sorted((self._ctx.base_index(k, (0,)) for k in self._kinds),
                            key=len, reverse=True))  # the most objects first
            # the objects with a parent but those typed (one set of the first's keys, the
            # others' keys iterated: a store's sorted index makes no dict of its keys)
            got = set(index_keys(self._up_ix))
            for ix in typed:
                got.difference_update(index_keys(ix))
            self.cache[("untyped",)] = got
        return got

    def among(self, objects: set[Any], above: list[Any]) -> set[Any]:
        """Those of ``objects`` whose parent is one of ``above`` (in a tree: the ones in
        the level of ``above``'s children, found without reading that level)."""
        par, parents, xs = self._par, set(above), list(objects)
        return {x for x, row in zip(xs, self._up_many(xs), strict=True)
                if row is not None and row[par] in parents}

    def with_children(self, level: list[Any], above: list[Any] | None) -> list[Any]:
        """The objects of ``level`` that may have children. ``above``: the objects whose
        children ``level`` is, all of them (None: not so); when the objects with children
        are far fewer than ``level``, those found from them (their parent in ``above``): a
        walk over a million tables asks none of them for its children."""
        inner = self._down_ix
        if above is None or more_keys(inner, len(level) // 4):  # 4 * len(inner) > len(level)
            return level
        par, among, qs = self._par, set(above), list(inner)
        return [q for q, row in zip(qs, self._up_many(qs), strict=True)
                if row is not None and row[par] in among]


def in_order(values: list[Any]) -> list[Any]:
    """``values`` sorted (as they are when values of different kinds do not compare). The
    walk visits each node's children so: where names follow the tree (a table named after
    its schema) its answer comes out sorted, and sorting it is one linear pass (a million
    tables: ~30 ms, against 0.2-0.3 s for the children in the edge's row order)."""
    with suppress(TypeError):
        values.sort()
    return values
