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
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from rapidfuzz import fuzz, process
from rapidfuzz.distance import Indel

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


#: from this many names on, :class:`Names` looks among a shortlist of names first
INDEXED_FROM = 2_000
#: a trigram in more names than this says little (``per``, ``_ta``): not looked up
COMMON = 64
#: how many of the names sharing the most trigrams are compared
SHORTLIST = 48
#: up to this many names, :class:`Names` keeps a trigram index (above it, building one
#: would cost seconds: a million table names); the sorted neighbours are kept at any size
TRIGRAMS_UP_TO = 100_000
#: how many names on each side of the word, in the sorted names and in the sorted reversed
#: names, are compared
NEIGHBOURS = 8
#: names added or removed since the index was built that are looked at one by one before
#: the index is built again: at least this many, or one in 64 of the names
CHANGES_FROM = 1_024
#: the names one character replaced or added away from a word are looked up while the
#: names' characters times the word's length is at most this
EDITS_UP_TO = 2_000


class Names:
    """A set of names asked for many suggestions (every unknown relation of a file, the
    values of a column): sorted once, not per question, and kept up to date by :meth:`add`
    and :meth:`discard`. Over :data:`INDEXED_FROM` names or more, the answer is the closest
    of a shortlist: the :data:`SHORTLIST` names sharing the most uncommon trigrams with the
    word (up to :data:`TRIGRAMS_UP_TO` names), the :data:`NEIGHBOURS` names on each side of
    the word in sorted order and in the sorted order of the reversed names (a typo after a
    shared prefix, or before a shared suffix: ``m1.cat3.sch12.t00417`` among a million
    tables), the names added since the index was built, and, unless one of those is a
    single insertion or deletion away, the names one edit away (:meth:`_one_edit`). Only
    when none of them is close enough are the other names compared, those
    of a length and a set of characters that can
    reach the cutoff (:meth:`_reachable`). So 8,000 misspellings against 16,000 names
    take about a second, not minutes, and a value missing among a million takes
    about a millisecond. Ties go to the smallest name, as in :func:`closest`. Safe to share
    between threads.

    >>> Names(["load_table", "drop_table"]).closest("drop_tabel")
    'drop_table'
    >>> n = Names(["load_table"]); n.add(["read_table"]); n.discard(["load_table"])
    >>> n.closest("load_tabel")
    'read_table'
    >>> n.discard(["read_table"]); n.closest("load_tabel") is None
    True
    """

    def __init__(self, names: Iterable[object]) -> None:
        self._known = {n for n in names if isinstance(n, str) and n}
        self._lock = threading.Lock()
        self._built = False
        self.names: list[str] = []  # sorted, as of the last build
        self._added: set[str] = set()  # since the last build
        self._removed: set[str] = set()  # since the last build (they are in ``names``)
        self._grams: dict[str, list[int]] | None = None
        self._reversed: list[str] = []
        self._chars: set[str] = set()  # the characters of the names (removed ones too)
        self._groups: dict[tuple[int, frozenset[str]], list[str]] | None = None

    def __len__(self) -> int:
        return len(self._known)

    def __contains__(self, name: object) -> bool:
        return name in self._known

    def add(self, names: Iterable[object]) -> None:
        """Names to suggest from now on (non-strings and known names are skipped)."""
        with self._lock:
            for n in names:
                if isinstance(n, str) and n and n not in self._known:
                    self._known.add(n)
                    if n in self._removed:
                        self._removed.discard(n)
                    else:
                        self._added.add(n)
                        self._chars.update(n)
            self._settle()

    def discard(self, names: Iterable[object]) -> None:
        """Names not to suggest any more."""
        with self._lock:
            for n in names:
                if n in self._known:
                    assert isinstance(n, str)
                    self._known.discard(n)
                    if n in self._added:
                        self._added.discard(n)
                    else:
                        self._removed.add(n)
            self._settle()

    def _settle(self) -> None:
        """Many changes since the build: build again on the next question."""
        if len(self._added) + len(self._removed) > max(CHANGES_FROM, len(self._known) >> 6):
            self._built = False

    def closest(self, word: object, cutoff: float = CUTOFF) -> str | None:
        if not isinstance(word, str) or not word:
            return None
        with self._lock:
            if not self._built or (len(self._known) < INDEXED_FROM
                                    and (self._added or self._removed)):
                self._build()
            if len(self._known) < INDEXED_FROM:
                return _best(word, [n for n in self.names if n != word], cutoff)
            short = self._shortlist(word)
            got = self._pick(word, short, cutoff)
            far = 3 if got is None else Indel.distance(word, got)
            if far > 1:  # one edit away may be closer: looked up (:meth:`_one_edit`)
                more = set(self._one_edit(word, far > 2)) - short
                if more:
                    got = self._pick(word, short | more, cutoff)
            if got is not None:
                return got
            return self._pick(word, [*self._reachable(word, cutoff), *self._added], cutoff)

    def _reachable(self, word: str, cutoff: float) -> Iterator[str]:
        """The names that can reach ``cutoff``, by a bound on their groups of one length and
        one set of characters: a name of length m sharing the characters C with the word
        matches at most min(m, the word's characters in C) of them, a ratio of at most twice
        that over both lengths (so a word near nothing is answered from the groups alone,
        not by a pass over a million names)."""
        if self._groups is None:
            groups: dict[tuple[int, frozenset[str]], list[str]] = {}
            for n in self.names:
                groups.setdefault((len(n), frozenset(n)), []).append(n)
            self._groups = groups
        counts: dict[str, int] = {}
        for ch in word:
            counts[ch] = counts.get(ch, 0) + 1
        need = cutoff / 200 * len(word)  # matched >= need + cutoff / 200 * m
        anywhere = sum(k for ch, k in counts.items() if ch in self._chars)
        if anywhere * (1 - cutoff / 200) < need - 1e-9:  # no length m can reach it
            return
        for (m, chars), names in self._groups.items():
            shared = sum(k for ch, k in counts.items() if ch in chars)
            if min(m, shared) >= need + cutoff / 200 * m - 1e-9:
                yield from names

    def _shortlist(self, word: str) -> set[str]:
        names, out = self.names, set(self._added)
        if self._grams is not None:
            counts: dict[int, int] = {}
            for g in _trigrams(word):
                for i in self._grams.get(g, ()):
                    counts[i] = counts.get(i, 0) + 1
            out.update(names[i] for i in sorted(counts, key=lambda i: (-counts[i], i))[:SHORTLIST])
        for sorted_names, key in ((names, word), (self._reversed, word[::-1])):
            at = bisect.bisect_left(sorted_names, key)
            near = sorted_names[max(0, at - NEIGHBOURS):at + NEIGHBOURS + 1]
            out.update(near if sorted_names is names else (n[::-1] for n in near))
        return out

    def _one_edit(self, word: str, wide: bool) -> Iterator[str]:
        """The names one edit from the word (a character dropped, two adjacent ones swapped;
        with ``wide``, one replaced or added, from the names' own characters while they are
        few), by set lookups: a one-character typo anywhere in the word, however many names
        share its prefix and its suffix. Asked only when the shortlist has no name one
        insertion or deletion away (``wide``: none two away either), as a name one edit away
        is at most that."""
        known, n = self._known, len(word)
        tried = [word[:i] + word[i + 1:] for i in range(n)]
        tried += [word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(n - 1)]
        if wide and len(self._chars) * n <= EDITS_UP_TO:
            for c in self._chars:
                tried += [word[:i] + c + word[i + 1:] for i in range(n)]
                tried += [word[:i] + c + word[i:] for i in range(n + 1)]
        return filter(known.__contains__, tried)

    def _pick(self, word: str, names: Iterable[str], cutoff: float) -> str | None:
        removed = self._removed
        found = process.extract(word, [n for n in names if n != word and n not in removed],
                                scorer=fuzz.ratio, processor=None, score_cutoff=cutoff,
                                limit=None)
        if not found:
            return None
        top = max(score for _, score, _ in found)
        return min(str(n) for n, score, _ in found if score == top)

    def _build(self) -> None:
        self.names = sorted(self._known)
        self._added, self._removed = set(), set()
        self._grams, self._groups, self._reversed = None, None, []
        self._built = True
        if len(self.names) < INDEXED_FROM:
            return
        self._reversed = sorted(n[::-1] for n in self.names)
        self._chars = set("".join(self.names))
        if len(self.names) > TRIGRAMS_UP_TO:
            return
        grams: dict[str, list[int]] = {}
        for i, name in enumerate(self.names):
            for g in _trigrams(name):
                posting = grams.setdefault(g, [])
                if len(posting) <= COMMON:
                    posting.append(i)
        self._grams = {g: ix for g, ix in grams.items() if len(ix) <= COMMON}


def _trigrams(name: str) -> set[str]:
    padded = f"^{name}$"
    return {padded[i:i + 3] for i in range(len(padded) - 2)}
