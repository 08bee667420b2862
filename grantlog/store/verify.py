"""``grantlog store verify``: is a store what its change log says it is?

The change log is the store's history: every fact a transaction added (+1) or removed (-1).
Replayed from the log's start — the empty store, or the *checkpoint* compaction keeps of the
facts at the log's horizon — it gives the facts each table must hold. Verifying compares the
two without holding them in memory, through an order-independent digest: each fact hashes to
64 bits (BLAKE2b of its relation and values) and a set of facts is the count and the sum of
its hashes modulo 2**64, so that adding a fact adds its hash and removing it subtracts it:

* a table: the digest of its rows;
* the log: per relation, the checkpoint's digest plus the signed hashes of its log rows;
  per revision, the signed hashes of its log rows, compared with the checksum recorded when
  the transaction committed (``grantlog_revisions.digest``) and with its counts (``added``,
  ``removed``);
* the head, the revisions and the log agree: every revision after the horizon has its row,
  none above the head, every log row belongs to one.

A changed byte in a fact, a deleted or an added row, a changed log row: each changes a
digest (a random change goes unnoticed with probability 2**-64; this is a checksum against
accidents, not a signature: whoever can write the database can rewrite the checksums too).
Where a relation's table and its log disagree and the log is whole (never compacted), the
relation's log is replayed row by row to name the facts that differ. SQLite's own structure
is checked too (``PRAGMA quick_check``).

Everything is read in one read transaction (a consistent view: writers go on meanwhile) and
streamed; memory stays small but for the row-by-row replay of a relation that disagrees.
"""

from __future__ import annotations

import time
from typing import Any

from grantlog.engine.core import ir
from grantlog.grammar.diagnostics import GrantlogError

from .base import Store
from .digest import MASK, Problem, Report, add_log, decode, facts_text, hex64


def _show(rel: str, row: tuple[Any, ...]) -> str:
    text = ir.show_atom(rel, row)
    return text.encode("ascii", "backslashreplace").decode("ascii") \
        if any(0xD800 <= ord(c) <= 0xDFFF for c in text) else text


def verify_store(st: Store, limit: int = 20) -> Report:
    """Check ``st`` (its tables as recorded in ``grantlog_relations``) against its log.
    The database failing to read its own pages (SQLite: "database disk image is malformed")
    is a problem found, not an error; an unreachable or locked store is an error."""
    t0 = time.perf_counter()
    tolerant = False
    while True:
        problems: list[Problem] = []
        notes: list[str] = []
        try:
            with st._cursor() as cur, st._verifying(tolerant):
                st._begin_read(cur)
                try:
                    return _verify(st, cur, problems, notes, limit, t0)
                finally:
                    st._rollback(cur)
        except GrantlogError as exc:
            d = exc.diagnostics[0] if exc.diagnostics else None
            if d is None or d.code != "store-error":
                raise
            if "decode" in d.message and not tolerant:  # text that is not UTF-8: again,
                tolerant = True                            # keeping the bad bytes
                continue
            return Report(st._shown(), st.dialect, -1, -1, [Problem(
                "database", f"the database cannot be read: {d.message}")], 0, 0, 0, 0, 0,
                False, [], time.perf_counter() - t0)


def _verify(st: Store, cur: Any, problems: list[Problem], notes: list[str], limit: int,
            t0: float) -> Report:
    head_cols = st._columns(cur, "grantlog_head")
    cur.execute("SELECT revision, horizon" + (", checkpoint" if "checkpoint" in head_cols
                                               else "") + " FROM grantlog_head WHERE id = 1")
    got = cur.fetchone()
    if got is None:
        problems.append(Problem("head", "the store has no head row"))
        got = (0, 0, None)
    revision, horizon = int(got[0]), int(got[1])
    checkpoint = (int(got[2]) if got[2] is not None else None) if len(got) > 2 else (
        0 if horizon == 0 else None)
    cur.execute("SELECT relation, spec FROM grantlog_relations")
    tables = {rel: st._parse_spec(spec) for rel, spec in cur.fetchall()}

    # -- the revisions' records ------------------------------------------------------------
    has_digest = "digest" in st._columns(cur, "grantlog_revisions")
    records: dict[int, tuple[int, int, str | None]] = {}
    for rec in st._stream(cur, "SELECT revision, added, removed"
                          + (", digest" if has_digest else "") + " FROM grantlog_revisions"):
        records[int(rec[0])] = (int(rec[1]), int(rec[2]), rec[3] if has_digest else None)

    # -- the log ------------------------------------------------------------------------------
    per_rev: dict[int, list[int]] = {}  # revision -> [added, removed, digest]
    per_rel: dict[str, list[int]] = {}  # relation -> [count, digest]
    bad: list[tuple[Any, ...]] = []
    log_rows = add_log(st._stream(cur, "SELECT revision, relation, sign, row FROM grantlog_log"),
                       per_rel, per_rev, bad)
    unreadable = len(bad)
    for rev, rel, sign, text in bad[:limit]:
        problems.append(Problem("unreadable", f"a log row of `{rel}` cannot be read: sign "
                                f"{sign}, row {str(text)[:200]!r}", rel, int(rev)))
    if unreadable > limit:
        problems.append(Problem("unreadable", f"{unreadable - limit} more log rows cannot be "
                                "read"))

    # -- head, revisions and log agree ------------------------------------------------------
    missing = [v for v in range(horizon + 1, revision + 1) if v not in records]
    if missing:
        problems.append(Problem(
            "head", f"{len(missing)} revision{'s' if len(missing) != 1 else ''} after the "
            f"horizon ({horizon}) up to the head ({revision}) have no record: "
            + ", ".join(map(str, missing[:limit])) + ("..." if len(missing) > limit else "")))
    beyond = sorted(v for v in {*records, *per_rev} if v > revision)
    if beyond:
        problems.append(Problem(
            "head", f"revisions above the head ({revision}) are recorded or logged: "
            + ", ".join(map(str, beyond[:limit]))))
    below = sorted(v for v in per_rev if v <= horizon)
    if below:
        problems.append(Problem(
            "head", f"the log holds rows of revisions at or below its horizon ({horizon}): "
            + ", ".join(map(str, below[:limit]))))
    checksummed = 0
    for v in sorted(set(records) | set(per_rev)):
        if v > revision or v <= horizon:
            continue
        added, removed, want = records.get(v, (None, None, None))
        a, rm, s = per_rev.get(v, [0, 0, 0])
        if added is None:
            problems.append(Problem("log", f"{a + rm} log rows but no record of the "
                                    "revision", revision=v))
            continue
        if (a, rm) != (added, removed):
            problems.append(Problem(
                "log", f"the log has {a} added and {rm} removed facts; the revision recorded "
                f"{added} and {removed}", revision=v))
        elif want is not None and hex64(s) != want:
            problems.append(Problem(
                "log", "its log rows do not match the checksum recorded when it committed "
                "(a log row was changed)", revision=v))
        checksummed += want is not None
    if has_digest and checksummed < len(records):
        n = len(records) - checksummed
        notes.append(f"{n:,} revision{'s' if n != 1 else ''} without a checksum (bulk loads, or "
                     "written before checksums were kept): their log rows are checked by "
                     "their counts and against the tables")

    # -- the tables against the log -----------------------------------------------------------
    base: dict[str, tuple[int, int]] = {}
    tables_checked = checkpoint is not None and checkpoint == horizon
    if tables_checked and horizon > 0:
        cur.execute("SELECT relation, rows, digest FROM grantlog_checkpoint")
        base = {rel: (int(n), int(d, 16)) for rel, n, d in cur.fetchall()}
    elif not tables_checked:
        notes.append(f"the change log was compacted up to revision {horizon} before a "
                     "checkpoint was kept: the tables cannot be checked against it (run "
                     "`grantlog store compact` once to take one from the tables as they are)")
    facts = 0
    for rel in sorted(set(tables) | set(per_rel) | set(base)):
        cols = tables.get(rel)
        if cols is not None:
            n, s = st._table_digest(cur, rel, cols[0])
            facts += n
        else:
            n, s = 0, 0
        if not tables_checked:
            continue
        b = base.get(rel, (0, 0))
        c = per_rel.get(rel, [0, 0])
        want_n, want_s = b[0] + c[0], (b[1] + c[1]) & MASK
        if (n, s) == (want_n, want_s):
            continue
        what = (f"the table holds {facts_text(n)}, the log gives {want_n:,}" if n != want_n else
                f"the table holds as many facts as the log gives ({n:,}), but not the same "
                "ones")
        p = Problem("table", what + (" (the relation has no table)" if cols is None else ""),
                    rel)
        if horizon == 0:  # the whole log is there: name the facts
            _rows_that_differ(st, cur, rel, cols[0] if cols else None, p, limit)
        else:
            p.message += (f"; the log before revision {horizon} was compacted, so which facts "
                          "differ cannot be told")
        problems.append(p)
    problems += [Problem("database", m) for m in st._structure_check(cur, limit)]
    return Report(st._shown(), st.dialect, revision,
                  horizon, problems, facts, len(tables), log_rows, len(records), checksummed,
                  tables_checked, notes, time.perf_counter() - t0)


def _rows_that_differ(st: Store, cur: Any, rel: str, columns: tuple[str, ...] | None,
                      p: Problem, limit: int) -> None:
    """The facts of ``rel`` in its table and not in its replayed log, and the other way."""
    net: dict[tuple[Any, ...], int] = {}
    for sign, text in st._log_of(cur, rel):
        row = decode(text)
        if row is not None:
            net[row] = net.get(row, 0) + int(sign)
    replayed = {row for row, n in net.items() if n > 0}
    twice = [row for row, n in net.items() if n not in (0, 1)]
    held = set(st._table_rows(cur, rel, columns)) if columns is not None else set()
    key = ir.row_key
    p.only_in_table = [_show(rel, r) for r in sorted(held - replayed, key=_safe_key(key))[:limit]]
    p.only_in_log = [_show(rel, r) for r in sorted(replayed - held, key=_safe_key(key))[:limit]]
    if twice:
        p.message += f"; the log adds {len(twice)} facts twice without removing them"


def _safe_key(key: Any) -> Any:
    def k(row: tuple[Any, ...]) -> Any:
        try:
            return (0, key(row))
        except TypeError:
            return (1, repr(row))
    return k


class VerifiedStore(Store):
    """A store that can check itself against its change log (the SQLite and PostgreSQL
    stores are)."""

    def verify(self, limit: int = 20) -> Report:
        """Check the tables against the change log, and each revision's log rows against the
        checksum recorded when it committed: a :class:`Report` whose ``problems`` say which
        relation, revision and facts are wrong (``limit`` facts or rows of each at most).
        Reads the tables as ``grantlog_relations`` records them, so it needs no rules."""
        return verify_store(self, limit)
