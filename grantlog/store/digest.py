"""The checksums of a store's facts and change log, and what a verification reports
(grantlog/store/verify.py explains the method; grantlog/store/base.py keeps the checksums as
transactions commit).

Each fact hashes to 64 bits (BLAKE2b of its relation and values) and a set of facts is the
count and the sum of its hashes modulo 2**64, so that adding a fact adds its hash and
removing it subtracts it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

_fast_loads: Callable[[Any], Any]
try:  # the service's extra: ~5x faster than json for the log's rows
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover
    _fast_loads = json.loads

MASK = (1 << 64) - 1
_blake = hashlib.blake2b
_from_bytes = int.from_bytes


def _mixed(row: Iterable[Any]) -> str:
    return "\x00".join(v if type(v) is str else "\x01" + str(v) for v in row)


def row_hash(rel: str, row: Iterable[Any]) -> int:
    """A fact's 64-bit hash: its relation and values (strings as they are, integers
    marked), one encoding whatever the store or the Python version."""
    try:
        text = rel + "\x02" + "\x00".join(row)
    except TypeError:
        text = rel + "\x02" + _mixed(row)
    return _from_bytes(_blake(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                       "little")


def digest(rel: str, rows: Iterable[Iterable[Any]]) -> tuple[int, int]:
    """(count, sum of the hashes mod 2**64) of ``rows`` (:func:`row_hash`, inlined: this is
    the loop a verification spends its time in)."""
    n = s = 0
    pre = rel + "\x02"
    blake, from_bytes = _blake, _from_bytes
    for row in rows:
        n += 1
        try:
            text = pre + "\x00".join(row)
        except TypeError:
            text = pre + _mixed(row)
        s += from_bytes(blake(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                        "little")
    return n, s & MASK


def add_log(rows: Iterable[tuple[Any, ...]], per_rel: dict[str, list[int]],
            per_rev: dict[int, list[int]] | None = None,
            bad: list[tuple[Any, ...]] | None = None) -> int:
    """Add log rows (revision, relation, sign, row as JSON) to ``per_rel`` (relation ->
    [signed count, signed digest]) and ``per_rev`` (revision -> [added, removed, signed
    digest]); rows that cannot be read go to ``bad``. Returns how many rows were read."""
    blake, from_bytes, loads = _blake, _from_bytes, _fast_loads
    n = 0
    for rev, rel, sign, text in rows:
        n += 1
        h: int | None = None
        try:  # the common case inlined (row_hash of a row of strings)
            got = loads(text)
            if type(got) is list:
                h = from_bytes(blake((rel + "\x02" + "\x00".join(got)).encode(
                    "utf-8", "surrogatepass"), digest_size=8).digest(), "little")
        except (ValueError, TypeError):
            row = decode(text)
            h = row_hash(rel, row) if row is not None else None
        if h is None or not (sign == 1 or sign == -1):
            if bad is not None:
                bad.append((rev, rel, sign, text))
            continue
        if per_rev is not None:
            r = per_rev.get(rev)
            if r is None:
                r = per_rev[rev] = [0, 0, 0]
            if sign > 0:
                r[0] += 1
                r[2] += h
            else:
                r[1] += 1
                r[2] -= h
        c = per_rel.get(rel)
        if c is None:
            c = per_rel[rel] = [0, 0]
        c[0] += sign
        c[1] += sign * h
    return n


def hex64(value: int) -> str:
    return f"{value & MASK:016x}"


def decode(text: Any) -> tuple[Any, ...] | None:
    """A log row's JSON text as a tuple (None: it cannot be read)."""
    try:
        got = _fast_loads(text)
    except (ValueError, TypeError):
        try:  # orjson refuses what json reads (lone surrogates, integers past 64 bits)
            got = json.loads(text)
        except (ValueError, TypeError):
            return None
    return tuple(got) if isinstance(got, list) else None


@dataclass
class Problem:
    """One thing found wrong."""

    #: ``table`` (a table and the log disagree), ``log`` (a revision's log rows and its
    #: record disagree), ``head`` (the head, the revisions and the log disagree),
    #: ``database`` (the database's own structure), ``unreadable`` (a row that cannot be read)
    kind: str
    message: str
    relation: str | None = None
    revision: int | None = None
    #: facts the table holds that the log does not give (shown as ``rel(...)``)
    only_in_table: list[str] = field(default_factory=list)
    #: facts the log gives that the table does not hold
    only_in_log: list[str] = field(default_factory=list)


@dataclass
class Report:
    store: str
    dialect: str
    revision: int
    horizon: int
    problems: list[Problem]
    facts: int
    tables: int
    log_rows: int
    revisions: int
    #: revisions with a checksum recorded when they committed (the others: written before
    #: checksums were kept, or bulk loads above grantlog/store/base.py's
    #: :data:`CHECKSUM_LOAD_MAX` facts)
    checksummed: int
    #: whether the tables could be checked against the log (False: compacted before a
    #: checkpoint was kept)
    tables_checked: bool
    notes: list[str]
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"ok": self.ok}

    def render(self) -> str:
        at = f"at revision {self.revision}" if self.revision >= 0 else "(unreadable)"
        head = (f"store {self.store} ({self.dialect}) {at}: "
                + ("OK" if self.ok else f"CORRUPT ({len(self.problems)} "
                   f"problem{'s' if len(self.problems) != 1 else ''})"))
        lines = [head]
        for p in self.problems:
            where = (p.relation and f"`{p.relation}`") or (
                f"revision {p.revision}" if p.revision is not None else p.kind)
            lines.append(f"  {where}: {p.message}")
            lines += [f"    only in the table: {x}" for x in p.only_in_table]
            lines += [f"    only in the log:   {x}" for x in p.only_in_log]
        lines += [f"  note: {n}" for n in self.notes]
        against = "against " + (f"the checkpoint at revision {self.horizon} and "
                                if self.horizon > 0 else "")
        lines.append(f"checked {facts_text(self.facts)} in {self.tables} tables "
                     + (against if self.tables_checked else "and ")
                     + f"{self.log_rows:,} log rows of {self.revisions:,} "
                     f"revision{'s' if self.revisions != 1 else ''} "
                     f"({self.checksummed:,} with checksums) in {self.seconds:.2f} s")
        return "\n".join(lines)

    def summary(self, most: int = 3) -> str:
        shown = "; ".join((f"`{p.relation}`: " if p.relation else
                           f"revision {p.revision}: " if p.revision is not None else "")
                          + p.message for p in self.problems[:most])
        more = len(self.problems) - most
        return shown + (f"; and {more} more" if more > 0 else "")


def facts_text(n: int) -> str:
    return f"{n:,} fact{'s' if n != 1 else ''}"
