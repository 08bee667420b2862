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


def did_you_mean(word: object, candidates: Iterable[object]) -> str | None:
    """``"did you mean `x`?"`` for :func:`closest`, else None."""
    close = closest(word, candidates)
    return f"did you mean `{close}`?" if close is not None else None
