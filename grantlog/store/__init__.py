"""Durable base facts: a store (SQLite or PostgreSQL) with revisions and a change log.

>>> import grantlog                                        # doctest: +SKIP
>>> r = grantlog.Reasoner(program, store="sqlite:///facts.db", create=True)  # doctest: +SKIP
>>> r.insert("member", [("alice", "eng")]).revision         # written, then visible
1

Layers: :mod:`.schema` (tables of a program), :mod:`.base` (what both stores share: the head,
the log, write transactions), :mod:`.sqlite` and :mod:`.postgres` (the dialects),
:mod:`.digest` and :mod:`.verify` (checksums, and checking a store against its change log),
:mod:`.journal` (a store as the journal a reasoner writes through: engine/core/journal.py),
:mod:`.follow` (a thread that has a reasoner follow other processes' transactions),
:mod:`.ingest` (fast loading of fact files, CSV, JSON Lines, Parquet). The engine never
imports this package.
"""

from __future__ import annotations

import os
import time

from grantlog.engine.core import ir
from grantlog.grammar.diagnostics import GrantlogError

from .base import Store
from .digest import Report
from .records import Revision, StoredPolicy, not_found, store_error
from .verify import verify_store
from .writer import Writer


def open_store(url: str, program: ir.Program | None = None, create: bool = False,
               verify: bool = False) -> Store:
    """Open the store at ``url`` (``sqlite:///path.db``, ``postgresql://...``). With
    ``program``, add the tables of its new relations, or refuse the store if it does not fit
    (``store-schema-mismatch``).

    A store that does not exist (no SQLite file; a PostgreSQL database without grantlog's
    tables) is refused with ``store-not-found`` — a misspelt URL must not answer from a new,
    empty store — unless ``create`` (``grantlog store init``, ``--create``): then it is
    created (with ``program``'s tables). A refused SQLite store leaves no file behind.

    ``verify`` (or ``verify=1`` in the URL's query string, which works wherever a store URL
    is given: ``grantlog serve --store``, ``check --store``, ``Reasoner(store=...)``): check
    the store against its change log before using it (grantlog/store/verify.py); a store found
    corrupt is refused with ``store-corrupt``."""
    url, asked = verify_option(url)
    verify = verify or asked
    if url.startswith("sqlite:"):
        from .sqlite import SqliteStore

        st: Store = SqliteStore(url, create=create)
    elif url.startswith(("postgresql:", "postgres:")):
        from .postgres import PostgresStore

        st = PostgresStore(url, create=create)
    elif url.endswith((".db", ".sqlite", ".sqlite3")) and "://" not in url:
        from .sqlite import SqliteStore

        st = SqliteStore("sqlite:///" + os.path.abspath(url), create=create)
    else:
        raise store_error("bad-store-url", f"`{url}` is not a store URL", url,
                          "use sqlite:///path/facts.db or postgresql://user@host/db")
    try:
        if not create and not st.exists():
            raise not_found(st._shown(), f"`{st._shown()}` holds no grantlog store")
        if program is not None:
            st.open(program)
        elif create:
            st.create()
        if verify:
            if program is None:  # a database that is no store: `store-unavailable`
                st.attach()
            check(st)
    except GrantlogError:
        st.close()
        raise
    return st


#: stores this process found sound: the revision and when (a service opens its store several
#: times as it starts — the policy, the reasoner, the policy watcher — and one check is enough)
_VERIFIED: dict[str, tuple[int, float]] = {}
#: how long a verification stands for the same revision (seconds)
VERIFIED_FOR = 60.0


def check(st: Store) -> None:
    """Verify ``st`` and refuse it if it is corrupt (``store-corrupt``). A store this process
    found sound at the same revision less than :data:`VERIFIED_FOR` seconds ago is not read
    again."""
    revision, _ = st.head()
    seen = _VERIFIED.get(st.url)
    if seen is not None and seen[0] == revision and time.monotonic() - seen[1] < VERIFIED_FOR:
        return
    report = verify_store(st)
    if report.ok:
        _VERIFIED[st.url] = (report.revision, time.monotonic())
    else:
        raise store_error(
            "store-corrupt", f"the store does not match its change log: {report.summary()}",
            st._shown(), "`grantlog store verify STORE` reports every problem; restore the "
            "store from a backup, or dump its facts and load them into a new one")


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def verify_option(url: str) -> tuple[str, bool]:
    """``url`` without its ``verify=`` option (PostgreSQL would refuse an option it does not
    know), and whether it asked for verification."""
    base, sep, query = url.partition("?")
    if not sep:
        return url, False
    kept, asked = [], False
    for part in query.split("&"):
        key, _, value = part.partition("=")
        if key != "verify":
            kept.append(part)
            continue
        if value.lower() not in _TRUE + _FALSE:
            raise store_error("bad-store-url", f"`verify={value}` is not one of "
                              f"{', '.join(_TRUE + _FALSE)}", base,
                              "write verify=1 to check the store when it is opened")
        asked = value.lower() in _TRUE
    return base + ("?" + "&".join(kept) if kept else ""), asked


__all__ = ["Report", "Revision", "Store", "StoredPolicy", "Writer", "check", "open_store",
           "verify_option"]
