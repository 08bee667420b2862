"""``grantlog store``: create, load, dump, inspect and compact a store.

::

    grantlog store init STORE (--model NAME | --rules FILE)
    grantlog store load STORE DATA... (--model NAME | --rules FILE) [-r REL] [--create]
                        [--author NAME] [--reason TEXT] [--ticket ID]
    grantlog store dump STORE (--model ... | --rules ...) -o OUT [--format gl|csv|jsonl|parquet]
    grantlog store log STORE [--since REV] [--limit N] [--derived REL --model/--rules ...]
    grantlog store stats STORE
    grantlog store compact STORE (--keep N | --keep AGE | --keep-revision R)
    grantlog store checkpoint STORE [--every N]
    grantlog store verify STORE [--limit N]

``--rules FILE`` names one rule file and may be repeated (``--rules a.gl --rules b.gl``);
``--model``, ``--rules`` and ``--json`` mean what they mean in every command
(grantlog/cli/inputs.py).

``init`` creates a store (every other command refuses a store that does not exist,
``store-not-found``: a misspelt URL must not become a new, empty store; ``load --create``
creates one too). ``load`` writes every fact of the data files (`.gl`, `.csv`, `.jsonl`,
`.parquet`, or directories of them) as one transaction; ``dump`` writes the stored facts
(an OUT named for a format is one file: ``x.gl``/``x.jsonl`` every relation, ``x.csv``/
``x.parquet`` the only one; else one file per relation in the directory OUT; Parquet is what
``grantlog spark run --input REL=OUT/REL.parquet`` reads). ``log`` shows each transaction's
time and, when its writer gave them, its author, reason and ticket; ``log --derived allowed``
replays each transaction and shows who gained and lost which permission. ``verify`` checks
the tables against the change log and each revision's log rows against its checksum
(grantlog/store/verify.py): exit 0 when the store is sound, 1 when something is wrong (the
report names the relation, the revision and the facts), 2 when the store cannot be opened or the
command is wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from grantlog.cli.history import add_meta, meta
from grantlog.cli.inputs import (
    HELP_STRICT,
    add_inputs,
    add_json,
    add_progress,
    compile_rules,
    rule_files,
)
from grantlog.engine.core import ir, progress
from grantlog.engine.core.journal import VALID
from grantlog.grammar.diagnostics import GrantlogError, Span, error, plural

from . import history, ingest, open_store, warm
from .records import Revision
from .verify import verify_store


def add_parser(sub: Any) -> None:
    sp = sub.add_parser("store", help="create, load, dump, inspect and compact a fact store",
                        description=__doc__.split("\n")[0] if __doc__ else None)
    ssub = sp.add_subparsers(dest="store_command", required=True, metavar="COMMAND")

    def add(name: str, help: str, rules: bool | None) -> argparse.ArgumentParser:
        """A store command; ``rules``: it reads the rules the store serves (``--model``,
        ``--rules FILE`` repeatable: grantlog/cli/inputs.py), needed unless False."""
        p = ssub.add_parser(name, help=help, description=help)
        p.add_argument("store", metavar="STORE",
                       help="sqlite:///path.db, sqlite:////abs/path.db or postgresql://...")
        if rules is not None:
            add_inputs(p, files="option", facts=False, store=False)
            p.add_argument("--strict", action="store_true", help=HELP_STRICT)
        add_json(p)
        assert isinstance(p, argparse.ArgumentParser)
        return p

    p = add("init", "create a store for rule files (or check an existing one fits them)", True)
    p.set_defaults(fn=cmd_init)
    p = add("load", "load fact files (.gl, .csv, .jsonl, .parquet) as one transaction", True)
    p.add_argument("data", nargs="+", metavar="DATA",
                   help="fact files (.gl, .csv, .jsonl, .parquet) or directories of them")
    p.add_argument("--relation", "-r", metavar="REL", help="the relation of CSV/JSONL/Parquet "
                   "files not named after one")
    p.add_argument("--create", action="store_true",
                   help="create the store if it does not exist (else: store-not-found)")
    add_progress(p, "show progress bars (reading the files, writing the facts) on stderr even "
                 "when stderr is not a terminal (default: only on a terminal)")
    add_meta(p)
    p.set_defaults(fn=cmd_load)
    p = add("dump", "write the stored facts to .gl, CSV, JSON Lines or Parquet", True)
    p.add_argument("--output", "-o", required=True, metavar="OUT",
                   help="a file named for its format (.gl or .jsonl: every relation; .csv or "
                   ".parquet: the one relation with facts), else a directory: one file per "
                   "relation")
    p.add_argument("--format", choices=ingest.FORMATS, default=None,
                   help="default: OUT's suffix (.gl, .csv, .jsonl, .parquet), else parquet")
    p.set_defaults(fn=cmd_dump)
    p = add("log", "the change log: each transaction's facts, and its derived changes", False)
    p.add_argument("--since", type=int, default=None, metavar="REV",
                   help="transactions after REV (default: the oldest kept)")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="show at most N transactions")
    p.add_argument("--derived", metavar="REL",
                   help="also the rows of REL (e.g. allowed) each transaction added/removed "
                   "(needs the rules: --model or --rules)")
    p.set_defaults(fn=cmd_log)
    p = add("stats", "sizes: facts per relation, the change log, bytes", None)
    p.set_defaults(fn=cmd_stats)
    p = add("compact", "drop the change log older than what --keep or --keep-revision keeps",
            None)
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--keep", metavar="N|AGE", help="keep the change log of the last N "
                     "transactions, or of the last AGE (a duration: 400d, 12h, 30m, 90s)")
    how.add_argument("--keep-revision", "--before", dest="keep_revision", type=int,
                     metavar="R", help="keep revision R and every later one (R becomes the "
                     "oldest revision as-of answers reach)")
    p.set_defaults(fn=cmd_compact)
    p = add("checkpoint", "fold the change log into the checkpoint (fast as-of answers) and "
            "snapshot the big relations (fast open)", None)
    p.add_argument("--every", type=int, metavar="N", help="from now on, fold it after every N "
                   "revisions too (0: stop)")
    p.set_defaults(fn=cmd_checkpoint)
    p = add("verify", "check the tables against the change log (exit 1: corrupt)", None)
    p.add_argument("--limit", type=int, default=20, metavar="N",
                   help="show at most N facts or rows of each problem (default 20)")
    p.set_defaults(fn=cmd_verify)


def _program(a: argparse.Namespace, required: bool = True) -> ir.Program | None:
    """The program of ``--model`` and ``--rules`` (None when neither and not ``required``)."""
    if not required and not (a.model or a.rules):
        return None
    return compile_rules(rule_files(a, a.rules), a.strict)


def _out(a: argparse.Namespace, payload: Any, text: str) -> None:
    sys.stdout.write((json.dumps(payload, indent=2, ensure_ascii=False) if a.json else text)
                     + "\n")


def cmd_init(a: argparse.Namespace) -> int:
    program = _program(a)
    assert program is not None
    st = open_store(a.store, program, create=True)
    try:
        tables = sorted(st.tables)
        rev, _ = st.head()
    finally:
        st.close()
    _out(a, {"store": a.store, "revision": rev, "relations": tables},
         f"store {a.store} at revision {rev}: {plural(len(tables), 'relation')} "
         f"({', '.join(tables)})")
    return 0


def cmd_load(a: argparse.Namespace) -> int:
    program = _program(a)
    assert program is not None
    t0 = time.perf_counter()
    data = ingest.read(a.data, program, a.relation)
    t1 = time.perf_counter()
    n = sum(map(len, data.values()))
    sys.stderr.write(f"read {plural(n, 'fact')} in {t1 - t0:.2f} s\n")
    st = open_store(a.store, program, create=a.create)
    try:
        new: dict[str, int] = {}
        for rel in sorted(data):  # before the bar, not through it
            sys.stderr.write(f"  {rel}: {plural(len(data[rel]), 'row')}\n")
        with st.writing(meta(a)) as w, progress.task("storing", n, "fact") as advance:

            def stored(rel: str) -> list[ir.Row]:
                t = st.tables.get(rel)
                return [] if t is None else st._fetch_all(w.cur, t)

            data = ingest.unstored(data, stored(VALID), stored)  # no second interval
            for rel in sorted(data):
                new[rel] = w.load(rel, data[rel])
                advance(len(data[rel]), postfix=rel)
        rev = w.committed
        warm.after_load(st, program, sum(new.values()))  # measured once per load
    finally:
        st.close()
    t2 = time.perf_counter()
    added = sum(new.values())
    _out(a, {"revision": rev, "read": n, "added": added, "by_relation": new,
             "seconds": round(t2 - t0, 3)},
         f"loaded {plural(added, 'new fact')} of {n:,} read in {t2 - t0:.2f} s "
         + (f"as revision {rev}" if rev is not None else "(nothing new: no revision)"))
    return 0


def cmd_dump(a: argparse.Namespace) -> int:
    program = _program(a)
    assert program is not None
    fmt = a.format or ingest.dump_format(a.output)
    st = open_store(a.store, program, create=False)
    try:
        rev, rows = st.snapshot()
    finally:
        st.close()
    written = ingest.dump({r: v for r, v in rows.items() if v}, program, a.output, fmt)
    n = sum(map(len, rows.values()))
    _out(a, {"revision": rev, "facts": n, "files": written},
         f"dumped {plural(n, 'fact')} at revision {rev} to {', '.join(written) or a.output}")
    return 0


def cmd_stats(a: argparse.Namespace) -> int:
    st = open_store(a.store, create=False)
    try:
        st.attach()
        s = st.stats()
    finally:
        st.close()
    lines = [f"store {s['store']} ({s['dialect']}), revision {s['revision']}, "
             f"log kept after revision {s['horizon']}"]
    for rel, n in s["facts"].items():
        lines.append(f"  {rel:<24} {n:>12,} {'fact' if n == 1 else 'facts'}")
    lines.append(f"  {'(total)':<24} {s['total_facts']:>12,} facts")
    lines.append(f"  change log: {plural(s['log_rows'], 'row')} over "
                 f"{plural(s['log_transactions'], 'transaction')}")
    if s["bytes"] is not None:
        lines.append(f"  on disk: {s['bytes'] / 2**20:.1f} MiB")
    _out(a, s, "\n".join(lines))
    return 0


def cmd_compact(a: argparse.Namespace) -> int:
    st = open_store(a.store, create=False)
    try:
        st.attach()
        if a.keep_revision is not None:
            removed = st.compact(before_revision=a.keep_revision)
        elif a.keep.isdigit():
            removed = st.compact(int(a.keep))
        else:
            removed = st.compact(before_time=time.time() - duration(a.keep))
        rev, hor = st.head()
    finally:
        st.close()
    _out(a, {"removed_log_rows": removed, "revision": rev, "horizon": hor},
         f"removed {plural(removed, 'log row')}; the log now starts after revision {hor}")
    return 0


def cmd_checkpoint(a: argparse.Namespace) -> int:
    if a.every is not None and a.every < 0:
        raise GrantlogError([error("bad-option", "--every must be at least 0",
                                   Span("<command line>", 0, 0, 0, 0))])
    st = open_store(a.store, create=False)
    try:
        st.attach()
        at = st.checkpoint(a.every)
    finally:
        st.close()
    every = "" if not a.every else f"; again every {plural(a.every, 'revision')}"
    _out(a, {"checkpoint": at, "every": a.every}, f"checkpoint at revision {at}{every}")
    return 0


#: seconds per unit of a ``--keep`` duration
UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def duration(text: str) -> float:
    """A ``--keep`` age (``400d``, ``12h``, ``30m``, ``90s``, ``1.5d``) in seconds."""
    number, unit = text[:-1], text[-1:]
    try:
        seconds = float(number) * UNITS[unit]
    except (KeyError, ValueError):
        seconds = -1.0
    if not seconds >= 0:
        raise GrantlogError([error("bad-option", f"--keep `{text}` is neither a number of "
                                   "transactions nor a duration",
                                   Span("<command line>", 0, 0, 0, 0),
                                   "give a count (`--keep 1000`) or an age with a unit d, h, m "
                                   "or s (`--keep 400d`)")])
    return seconds


def cmd_verify(a: argparse.Namespace) -> int:
    if a.limit < 0:
        raise GrantlogError([error("bad-option", "--limit must be at least 0",
                                   Span("<command line>", 0, 0, 0, 0))])
    st = open_store(a.store, create=False)
    try:
        st.attach()
        report = verify_store(st, a.limit)
    finally:
        st.close()
    _out(a, report.to_dict(), report.render())
    return 0 if report.ok else 1


def cmd_log(a: argparse.Namespace) -> int:
    program = _program(a, required=a.derived is not None)
    st = open_store(a.store, create=False)
    try:
        if program is not None:
            st.open(program)
        else:
            st.attach()
        now: tuple[int, dict[str, list[ir.Row]]] | None = None
        if a.derived is not None:  # first: the replay undoes the log back from these facts
            now = st.snapshot()
        rev, hor = st.head()
        if now is not None:
            rev = now[0]  # a transaction committed since the snapshot is not shown
        since = hor if a.since is None else a.since
        txs = [t for t in st.since(since) if t.revision <= rev]
        committed = {c.revision: c for c in history.transactions(st, since)}
    finally:
        st.close()
    derived: dict[int, Any] = {}
    if a.derived is not None and program is not None and now is not None:
        derived = _replay(program, now, txs, since, a.derived, a.limit)
    if a.limit is not None:
        txs = txs[:a.limit]
    out: list[dict[str, Any]] = []
    lines: list[str] = []
    for tx in txs:
        c = committed.get(tx.revision)
        at = c.committed_at if c is not None else 0.0
        who = {k: getattr(c, k, None) for k in ("author", "reason", "ticket")}
        entry: dict[str, Any] = {
            "revision": tx.revision, "committed_at": at, **who,
            "added": {r: sorted([list(x) for x in v], key=ir.row_key)
                      for r, v in sorted(tx.added.items())},
            "removed": {r: sorted([list(x) for x in v], key=ir.row_key)
                        for r, v in sorted(tx.removed.items())}}
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) if at else "?"
        by = "".join(f", {k} {v}" for k, v in (("by", who["author"]), ("ticket", who["ticket"]))
                     if v is not None) + (f": {who['reason']}" if who["reason"] else "")
        lines.append(f"revision {tx.revision} at {when} UTC: +{_count(tx.added)} "
                     f"-{_count(tx.removed)} facts{by}")
        for rel in sorted(tx.removed):
            lines += [f"  -{ir.show_atom(rel, r)}" for r in sorted(tx.removed[rel],
                                                                  key=ir.row_key)][:50]
        for rel in sorted(tx.added):
            lines += [f"  +{ir.show_atom(rel, r)}" for r in sorted(tx.added[rel],
                                                                  key=ir.row_key)][:50]
        if tx.revision in derived:
            gained, lost = derived[tx.revision]
            entry["derived"] = {"relation": a.derived,
                                "gained": [list(x) for x in gained],
                                "lost": [list(x) for x in lost]}
            lines.append(f"  {a.derived}: {len(gained)} gained, {len(lost)} lost")
            lines += [f"    -{ir.show_atom(a.derived, r)}" for r in lost]
            lines += [f"    +{ir.show_atom(a.derived, r)}" for r in gained]
        out.append(entry)
    if not txs:
        lines.append(f"no transactions after revision {since} (the store is at {rev})")
    _out(a, {"revision": rev, "horizon": hor, "transactions": out}, "\n".join(lines))
    return 0


def _count(d: dict[str, set[ir.Row]]) -> int:
    return sum(map(len, d.values()))


def _replay(program: ir.Program, now: tuple[int, dict[str, list[ir.Row]]],
            txs: list[Revision], since: int, rel: str, limit: int | None = None,
            ) -> dict[int, tuple[list[ir.Row], list[ir.Row]]]:
    """Each transaction's gained and lost rows of ``rel``: the facts at ``since`` (the current
    ones with the later transactions undone), then each transaction applied with ``rel``
    watched."""
    from grantlog.engine import Reasoner

    _rev, rows = now
    state = {r: set(v) for r, v in rows.items()}
    later = [t for t in txs if t.revision > since]
    # undo every transaction after `since` (the log may hold more than those shown)
    for t in reversed(later):
        for r, v in t.added.items():
            state.setdefault(r, set()).difference_update(v)
        for r, v in t.removed.items():
            state.setdefault(r, set()).update(v)
    reasoner = Reasoner(program, watch=[rel] if rel in program.virtual else ())
    reasoner.seed(state, since)
    out: dict[int, tuple[list[ir.Row], list[ir.Row]]] = {}
    for t in later[:limit]:
        with reasoner.transaction() as tx:
            for r, v in t.removed.items():
                tx.retract(r, v)
            for r, v in t.added.items():
                tx.insert(r, v)
        out[t.revision] = (sorted(tx.changes.gained(rel), key=ir.row_key),
                           sorted(tx.changes.lost(rel), key=ir.row_key))
    return out
