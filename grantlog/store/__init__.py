"""Durable base facts: a store (SQLite or PostgreSQL) with revisions and a change log.

>>> import grantlog                                        # doctest: +SKIP
>>> r = grantlog.Reasoner(program, store="sqlite:///facts.db")
>>> r.insert("member", [("alice", "eng")]).revision         # written, then visible
1

Layers: :mod:`.schema` (tables of a program), :mod:`.base` (what both stores share: the head,
the log, write transactions), :mod:`.sqlite` and :mod:`.postgres` (the dialects),
:mod:`.reasoner` (a Reasoner that writes through a store and follows its log),
:mod:`.ingest` (fast loading of fact files, CSV, JSON Lines, Parquet). The engine never
imports this package.
"""

from __future__ import annotations

import os

from grantlog.engine import ir
from grantlog.grammar.diagnostics import GrantlogError

from .base import Revision, Store, StoredPolicy, Writer, store_error


def open_store(url: str, program: ir.Program | None = None, create: bool = True) -> Store:
    """Open the store at ``url`` (``sqlite:///path.db``, ``postgresql://...``). With
    ``program``, create its tables (``create``) or check that the store fits it."""
    if url.startswith("sqlite:"):
        from .sqlite import SqliteStore

        st: Store = SqliteStore(url, create=create)
    elif url.startswith(("postgresql:", "postgres:")):
        from .postgres import PostgresStore

        st = PostgresStore(url)
    elif url.endswith((".db", ".sqlite", ".sqlite3")) and "://" not in url:
        from .sqlite import SqliteStore

        st = SqliteStore("sqlite:///" + os.path.abspath(url), create=create)
    else:
        raise store_error("bad-store-url", f"`{url}` is not a store URL", url,
                          "use sqlite:///path/facts.db or postgresql://user@host/db")
    if program is not None:
        try:
            st.open(program)
        except GrantlogError:
            st.close()
            raise
    return st


__all__ = ["Revision", "Store", "StoredPolicy", "Writer", "open_store"]
