""""Did you mean": the known name closest to a misspelled one, for every diagnostic.

One helper (unknown relations, backends, constants in facts and in questions) on rapidfuzz:
``fuzz.ratio`` is difflib's ``SequenceMatcher.ratio`` measure (twice the matched characters
over both lengths, on the longest common subsequence) computed in C, with difflib's
``get_close_matches`` cutoff (0.6). ``process.extractOne`` raises its cutoff to the best score
found so far, so a suggestion over a million names costs tens of milliseconds, not the
quadratic pass difflib makes per misspelling. Ties go to the smallest name (stable across runs).

>>> closest("load_tabel", ["load_table", "drop_table", "read"])
'load_table'
>>> closest("zzz", ["load_table"]) is None
True
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from typing import Any

from rapidfuzz import fuzz, process

#: the lowest similarity (0-100) a suggestion may have: difflib's default 0.6
CUTOFF = 60.0
#: up to this many candidates are sorted first, so that a tie goes to the smallest name;
#: more are compared in their own order (a dict's keys: insertion order)
SORTED_UP_TO = 50_000


def closest(word: object, candidates: Iterable[object], cutoff: float = CUTOFF) -> str | None:
    """The string among ``candidates`` closest to ``word`` (similarity ≥ ``cutoff``), other
    than ``word`` itself, if any; candidates that are not strings are skipped."""
    if not isinstance(word, str) or not word:
        return None
    sized = hasattr(candidates, "__len__")
    if not sized or len(candidates) <= SORTED_UP_TO:  # type: ignore[arg-type]
        return _best(word, sorted(_strings(word, candidates)), cutoff)
    try:
        got = _best(word, candidates, cutoff)
    except TypeError:  # a value that is not a string (an integer): compare the strings only
        return _best(word, list(_strings(word, candidates)), cutoff)
    if got == word:
        return _best(word, list(_strings(word, candidates)), cutoff)
    return got


def _strings(word: str, candidates: Iterable[object]) -> Iterable[str]:
    return (c for c in candidates if isinstance(c, str) and c and c != word)


def _best(word: str, names: Iterable[Any], cutoff: float) -> str | None:
    got = process.extractOne(word, names, scorer=fuzz.ratio, processor=None,
                             score_cutoff=cutoff)
    return None if got is None else str(got[0])


def did_you_mean(word: object, candidates: Iterable[object] | Names) -> str | None:
    """``"did you mean `x`?"`` for :func:`closest` (or :meth:`Names.closest`), else None."""
    close = (candidates.closest(word) if isinstance(candidates, Names)
             else closest(word, candidates))
    return f"did you mean `{close}`?" if close is not None else None


#: from this many names on, :class:`Names` looks among the names that share trigrams first
INDEXED_FROM = 2_000
#: a trigram in more names than this says little (``per``, ``_ta``): not looked up
COMMON = 64
#: how many of the names sharing the most trigrams are compared
SHORTLIST = 48


class Names:
    """A fixed set of names asked for many suggestions (every unknown relation of a file):
    sorted once, not per question. Over :data:`INDEXED_FROM` names or more, a trigram index
    picks the :data:`SHORTLIST` names sharing the most uncommon trigrams with the word and
    the closest of those is the answer (so 8,000 misspellings against 16,000 names take
    about a second, not minutes); only when none of them is close enough are the names of a
    length that can reach the cutoff compared (a match of ratio r needs the lengths within
    a factor 2/r - 1). Ties go to the smallest name, as in :func:`closest`.

    >>> Names(["load_table", "drop_table"]).closest("drop_tabel")
    'drop_table'
    """

    def __init__(self, names: Iterable[object]) -> None:
        self.names = sorted({n for n in names if isinstance(n, str) and n})
        self._known = frozenset(self.names)
        self._grams: dict[str, list[int]] | None = None
        self._by_len: list[tuple[int, str]] = []

    def closest(self, word: object, cutoff: float = CUTOFF) -> str | None:
        if not isinstance(word, str) or not word:
            return None
        if len(self.names) < INDEXED_FROM:
            names = self.names
            if word in self._known:
                names = [n for n in names if n != word]
            return _best(word, names, cutoff)
        if self._grams is None:
            self._index()
        assert self._grams is not None
        counts: dict[int, int] = {}
        for g in _trigrams(word):
            for i in self._grams.get(g, ()):
                counts[i] = counts.get(i, 0) + 1
        short = sorted(counts, key=lambda i: (-counts[i], i))[:SHORTLIST]
        got = self._pick(word, (self.names[i] for i in sorted(short)), cutoff)
        if got is not None:
            return got
        lo = bisect.bisect_left(self._by_len, (math.floor(len(word) * cutoff / (200 - cutoff)),))
        hi = bisect.bisect_right(self._by_len, (math.ceil(len(word) * (200 / cutoff - 1)) + 1,))
        return self._pick(word, (n for _, n in self._by_len[lo:hi]), cutoff)

    def _pick(self, word: str, names: Iterable[str], cutoff: float) -> str | None:
        found = process.extract(word, [n for n in names if n != word], scorer=fuzz.ratio,
                                processor=None, score_cutoff=cutoff, limit=None)
        if not found:
            return None
        top = max(score for _, score, _ in found)
        return min(str(n) for n, score, _ in found if score == top)

    def _index(self) -> None:
        grams: dict[str, list[int]] = {}
        for i, name in enumerate(self.names):
            for g in _trigrams(name):
                posting = grams.setdefault(g, [])
                if len(posting) <= COMMON:
                    posting.append(i)
        self._grams = {g: ix for g, ix in grams.items() if len(ix) <= COMMON}
        self._by_len = sorted((len(n), n) for n in self.names)


def _trigrams(name: str) -> set[str]:
    padded = f"^{name}$"
    return {padded[i:i + 3] for i in range(len(padded) - 2)}
