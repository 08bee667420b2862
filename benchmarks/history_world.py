"""A Gravitino-shaped store with a long history (issue 28's scale benchmarks).

:func:`build` writes a SQLite (or PostgreSQL) store of rules/gravitino.gl's world at
``tables`` tables (benchmarks/gravitino_workload.py, revision 1, a bulk load) followed by
``transactions`` transactions of history, seeded, in a realistic mix:

======================  =====  ==================================================================
kind                    share  change
======================  =====  ==================================================================
grant                   30%    a role gets a privilege (ALLOW, 5% DENY) on a table, schema or
                               catalog
revoke                  20%    a privilege row is removed
join                    14%    a user joins a group
leave                   10%    a user leaves a group
create table            15%    ``entity``, ``contains`` (and 30%: ``owner``) of a new table
drop table              10%    a table's facts gone, with the grants on it
focus                    1%    the focus role's SELECT_TABLE on the focus table granted or
                               revoked (so that one (subject, resource) has a timeline)
======================  =====  ==================================================================

Each transaction carries an author, a reason and a commit time (one second apart, ending
now). The history is written in bulk (grantlog/store/temporal.py ``append_history``: the
same log rows, transaction rows and tables as one write per transaction, in one database
transaction), then folded into the temporal table as ``grantlog store checkpoint --every
EVERY`` would have (checkpoints at every multiple of ``every``).

A built store is reused when its sidecar (``<path>.world.json``) records the same
parameters: :func:`build` returns at once.

API (helper scripts import it: keep it stable)::

    w = history_world.build("/tmp/h.db", tables=100_000, transactions=100_000, seed=1,
                            every=1000)
    w.url, w.head, w.program, w.workload, w.focus_user, w.focus_table, w.seconds
    w.sample_checks(rng, k)  # k (subject, operation, resource, revision) at random revisions
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gravitino_workload as gw
from grantlog.engine.core.journal import Meta

import grantlog
from grantlog.store import open_store, temporal

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules" / "gravitino.gl"
#: the transaction mix (kind, share): see the module docstring
MIX = (("grant", 0.30), ("revoke", 0.20), ("join", 0.14), ("leave", 0.10),
       ("create", 0.15), ("drop", 0.10), ("focus", 0.01))
FOCUS_ROLE = "m1/role/focus"
FOCUS_GROUP = "g_focus"
AUTHORS = ("alice.admin", "bob.admin", "hr-sync", "terraform", "carol.sec")


@dataclass
class World:
    """A built store: where it is, its head, what it was built from."""

    path: str
    url: str
    tables: int
    transactions: int
    seed: int
    every: int
    head: int
    focus_user: str
    focus_table: str
    #: the workload's users (benchmarks/gravitino_workload.py; 1,000 by default)
    users: int = gw.N_USERS
    #: seconds per build step (empty for a reused store)
    seconds: dict[str, float] = field(default_factory=dict)
    #: the facts of revision 1, by relation (counts)
    loaded: dict[str, int] = field(default_factory=dict)
    #: seconds per build step when it was built (a reused store's too)
    built: dict[str, float] = field(default_factory=dict)
    _workload: Any = field(default=None, repr=False)
    _program: Any = field(default=None, repr=False)

    @property
    def program(self) -> Any:
        if self._program is None:
            self._program = grantlog.compile(paths=[str(RULES)])
        return self._program

    @property
    def workload(self) -> gw.Workload:
        """The world of revision 1 (regenerated from the seed)."""
        if self._workload is None:
            self._workload = gw.generate(self.tables, seed=self.seed, n_users=self.users)
        return self._workload

    def sample_checks(self, rng: random.Random, k: int, low: int = 1,
                      high: int | None = None) -> list[tuple[str, str, str, int]]:
        """``k`` checks (subject, operation, resource, revision) at random revisions in
        ``[low, high]`` (default: the whole history), half on the focus pair."""
        w = self.workload
        s = gw.Sampler(w, rng.randrange(1 << 30))
        hi = self.head if high is None else high
        out = []
        for i in range(k):
            rev = rng.randint(low, hi)
            if i % 2:
                out.append((self.focus_user, "select_table", self.focus_table, rev))
            else:
                subj, op, res = s.one()
                out.append((subj, op, res, rev))
        return out


def _meta_path(path: str) -> Path:
    return Path(path + ".world.json")


def build(path: str | os.PathLike[str], tables: int, transactions: int, *, seed: int = 1,
          every: int = 1000, url: str | None = None, reuse: bool = True,
          log: Any = None, expiring: float = 0.0, users: int = gw.N_USERS) -> World:
    """Build (or reuse) the store at ``path`` (a SQLite file; ``url``: another store, e.g.
    PostgreSQL, with ``path`` naming only the sidecar). ``log``: a print-like function for
    progress (None: quiet). ``expiring``: the share of the history's grants written with a
    validity interval (:func:`_expiring`). ``users``: the workload's users (at least 2; a
    whole-platform review's rows grow with users x objects: spark_review_bench.py)."""
    path = str(path)
    url = url or f"sqlite:///{os.path.abspath(path)}"
    say = log or (lambda *a: None)
    params = {"tables": tables, "transactions": transactions, "seed": seed, "every": every,
              "url": url, **({"expiring": expiring} if expiring else {}),
              **({"users": users} if users != gw.N_USERS else {})}
    side = _meta_path(path)
    if reuse and side.exists() and (url != f"sqlite:///{os.path.abspath(path)}"
                                    or os.path.exists(path)):
        got = json.loads(side.read_text())
        if {k: got.get(k) for k in params} == params:
            return World(path=path, **{k: got[k] for k in (
                "url", "tables", "transactions", "seed", "every", "head", "focus_user",
                "focus_table")}, users=users, loaded=got.get("loaded", {}),
                built=got.get("seconds", {}))
    if url.startswith("sqlite:") and os.path.exists(path):
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    w = gw.generate(tables, seed=seed, n_users=users)
    program = grantlog.compile(paths=[str(RULES)])
    facts = {rel: list(rows) for rel, rows in w.facts.items()}
    rng = random.Random(seed * 7919 + 1)
    focus_user = next(u for u, _ in facts["member"] if u != w.users[0])
    focus_table = w.tables[len(w.tables) // 3]
    # the focus: a group the focus user is in, holding a role that uses the table's schema
    # and catalog; its SELECT_TABLE on the table comes and goes with the "focus" kind
    schema = w.parent[focus_table]
    catalog = w.parent[schema]
    facts["member"].append((focus_user, FOCUS_GROUP))
    facts["metalake_group"].append((FOCUS_GROUP, gw.METALAKE))
    facts["role_of"].append((FOCUS_GROUP, FOCUS_ROLE))
    facts["privilege"] += [(FOCUS_ROLE, "use_catalog", catalog, "allow"),
                           (FOCUS_ROLE, "use_schema", schema, "allow")]
    seconds["generate"] = time.perf_counter() - t0
    say(f"generated {sum(len(v) for v in facts.values()):,} facts in {seconds['generate']:.1f}s")

    t0 = time.perf_counter()
    st = open_store(url, program, create=True)
    try:
        with st.writing(Meta(author="loader", reason="initial load")) as wr:
            for rel, rows in facts.items():
                wr.load(rel, rows)
        seconds["load"] = time.perf_counter() - t0
        say(f"loaded revision 1 in {seconds['load']:.1f}s")
        t0 = time.perf_counter()
        changes = list(_history(w, facts, rng, transactions, focus_table))
        if expiring:
            changes = _expiring(changes, expiring, random.Random(seed * 31 + 7))
        seconds["simulate"] = time.perf_counter() - t0
        say(f"simulated {len(changes):,} transactions in {seconds['simulate']:.1f}s")
        t0 = time.perf_counter()
        head = temporal.append_history(st, changes)
        del changes
        if expiring:  # the load's commit before the history's (times grow with revisions,
            _load_first(st)  # as validity intervals' moments are placed among the commits)
        seconds["append"] = time.perf_counter() - t0
        say(f"appended up to revision {head:,} in {seconds['append']:.1f}s")
        t0 = time.perf_counter()
        if every:
            st.checkpoint(every=every)  # folds up to the head...
        seconds["checkpoint"] = time.perf_counter() - t0
        say(f"checkpoint in {seconds['checkpoint']:.1f}s")
    finally:
        st.close()
    world = World(path=path, url=url, tables=tables, transactions=transactions, seed=seed,
                  every=every, head=head, focus_user=focus_user, focus_table=focus_table,
                  users=users, seconds=seconds, loaded={k: len(v) for k, v in facts.items()},
                  built=seconds)
    world._workload = w
    world._program = program
    side.write_text(json.dumps({**params, **{k: v for k, v in asdict(world).items()
                                             if not k.startswith("_")}}, indent=1))
    return world


class _Pool:
    """A list with O(1) random choice, add and remove (swap with the last)."""

    def __init__(self, items: Any = ()) -> None:
        self.items: list[Any] = list(items)
        self.at = {x: i for i, x in enumerate(self.items)}

    def __contains__(self, x: Any) -> bool:
        return x in self.at

    def __len__(self) -> int:
        return len(self.items)

    def add(self, x: Any) -> None:
        if x not in self.at:
            self.at[x] = len(self.items)
            self.items.append(x)

    def remove(self, x: Any) -> None:
        i = self.at.pop(x)
        last = self.items.pop()
        if i < len(self.items):
            self.items[i] = last
            self.at[last] = i

    def choice(self, rng: random.Random) -> Any:
        return self.items[rng.randrange(len(self.items))]


def _history(w: gw.Workload, facts: dict[str, list[tuple[str, ...]]], rng: random.Random,
             n: int, focus_table: str) -> Any:
    """``n`` transactions (added, removed, committed_at, meta), each a net change."""
    privs = _Pool(facts["privilege"])
    members = _Pool(facts["member"])
    by_obj: dict[str, set[tuple[str, ...]]] = {}
    for p in facts["privilege"]:
        by_obj.setdefault(p[2], set()).add(p)
    tables = _Pool(t for t in w.tables if t != focus_table)
    parent = dict(w.parent)
    owners = {o: u for o, u in facts["owner"]}
    schemas, catalogs = w.schemas, w.catalogs
    roles = [r for r in w.roles if r not in w.platform_roles]
    kinds = [k for k, _ in MIX]
    weights = [s for _, s in MIX]
    start = time.time() - n
    focus = (FOCUS_ROLE, "select_table", focus_table, "allow")
    created = 0
    for i in range(n):
        kind = rng.choices(kinds, weights)[0]
        added: dict[str, list[tuple[str, ...]]] = {}
        removed: dict[str, list[tuple[str, ...]]] = {}
        if kind == "grant":
            x = rng.random()
            obj = tables.choice(rng) if x < 0.6 else rng.choice(schemas) if x < 0.9 \
                else rng.choice(catalogs)
            priv = rng.choice(("select_table", "modify_table")) if x < 0.6 else \
                rng.choice(("select_table", "modify_table", "use_schema", "create_table"))
            row = (rng.choice(roles), priv, obj, "deny" if rng.random() < 0.05 else "allow")
            if row not in privs:
                privs.add(row)
                by_obj.setdefault(obj, set()).add(row)
                added["privilege"] = [row]
        elif kind == "revoke" and len(privs) > 1:
            row = privs.choice(rng)
            if row != focus and row[0] != FOCUS_ROLE:
                privs.remove(row)
                by_obj[row[2]].discard(row)
                removed["privilege"] = [row]
        elif kind == "join":
            row = (rng.choice(w.users), rng.choice(w.groups))
            if row not in members:
                members.add(row)
                added["member"] = [row]
        elif kind == "leave":
            row = members.choice(rng)
            if row[1] != "g_focus":
                members.remove(row)
                removed["member"] = [row]
        elif kind == "create":
            sch = rng.choice(schemas)
            t = f"{sch}.n{created:07d}"
            created += 1
            tables.add(t)
            parent[t] = sch
            added["entity"] = [(t, "table")]
            added["contains"] = [(sch, t)]
            if rng.random() < 0.3:
                owners[t] = rng.choice(w.users)
                added["owner"] = [(t, owners[t])]
        elif kind == "drop" and len(tables) > 1:
            t = tables.choice(rng)
            tables.remove(t)
            removed["entity"] = [(t, "table")]
            removed["contains"] = [(parent.pop(t), t)]
            if t in owners:
                removed["owner"] = [(t, owners.pop(t))]
            gone = by_obj.pop(t, set())
            if gone:
                for p in gone:
                    privs.remove(p)
                removed["privilege"] = sorted(gone)
        elif kind == "focus":
            if focus in privs:
                privs.remove(focus)
                by_obj[focus_table].discard(focus)
                removed["privilege"] = [focus]
            else:
                privs.add(focus)
                by_obj.setdefault(focus_table, set()).add(focus)
                added["privilege"] = [focus]
        if not added and not removed:  # nothing to change (a duplicate): a no-op grant
            row = (rng.choice(roles), "use_schema", rng.choice(schemas), "allow")
            if row in privs:
                privs.remove(row)
                by_obj[row[2]].discard(row)
                removed["privilege"] = [row]
            else:
                privs.add(row)
                by_obj.setdefault(row[2], set()).add(row)
                added["privilege"] = [row]
        yield (added, removed, start + i,
               Meta(author=AUTHORS[i % len(AUTHORS)], reason=kind, ticket=None))


def _load_first(st: Any) -> None:
    """Revision 1's commit time (the bulk load's, now) a second before the history's first
    (which ends now)."""
    with st._cursor() as cur:
        cur.execute("UPDATE grantlog_revisions SET committed_at = (SELECT MIN(committed_at) "
                    "FROM grantlog_revisions WHERE revision > 1) - 1 WHERE revision = 1")
        st._commit(cur)


def _expiring(changes: list[Any], share: float, rng: random.Random) -> list[Any]:
    """``changes`` with ``share`` of the grants (the "grant" kind's privilege rows) written
    with a validity interval instead (engine/answer/validity.py: a ``@valid`` row, not the
    privilege row): two thirds expiring (``valid_until`` up to a fifth of the history after
    the commit), one third scheduled (``valid_from`` as far ahead, half of them expiring
    too); a later revoke or drop of such a grant removes its ``@valid`` row."""
    from grantlog.engine.answer import validity
    from grantlog.engine.core.results import VALID
    from grantlog.engine.core.times import INF

    span = max(10.0, 0.2 * len(changes))
    timed: dict[tuple[str, ...], tuple[str, ...]] = {}
    out = []
    for added, removed, at, meta in changes:
        gone = removed.get("privilege")
        if gone and any(p in timed for p in gone):
            removed = {**removed, "privilege": [p for p in gone if p not in timed],
                       VALID: [timed.pop(p) for p in gone if p in timed]}
        new = added.get("privilege")
        if new and meta.reason == "grant" and rng.random() < share:
            (p,) = new
            lo, hi = -INF, at + 0.5 + rng.randrange(int(span))
            if rng.random() < 1 / 3:  # scheduled (and half of these end too)
                lo = hi
                hi = lo + 0.5 + rng.randrange(int(span)) if rng.random() < 0.5 \
                    else INF
            timed[p] = validity.encode("privilege", p, (lo, hi))
            added = {**{k: v for k, v in added.items() if k != "privilege"},
                     VALID: [timed[p]]}
        out.append(({k: v for k, v in added.items() if v},
                    {k: v for k, v in removed.items() if v}, at, meta))
    return out


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("path")
    ap.add_argument("--tables", type=int, default=10_000)
    ap.add_argument("--transactions", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--every", type=int, default=1000)
    ap.add_argument("--users", type=int, default=gw.N_USERS)
    ap.add_argument("--expiring", type=float, default=0.0,
                    help="the share of the history's grants written with a validity "
                    "interval (expiring and scheduled: _expiring)")
    ap.add_argument("--fresh", action="store_true", help="rebuild even if it exists")
    a = ap.parse_args()
    for name in ("tables", "transactions", "users", "every"):
        if getattr(a, name) < 1:
            ap.error(f"--{name} must be at least 1, not {getattr(a, name)}")
    if not 0 <= a.expiring <= 1:
        ap.error(f"--expiring must be a share in [0, 1], not {a.expiring}")
    world = build(a.path, a.tables, a.transactions, seed=a.seed, every=a.every,
                  reuse=not a.fresh, log=print, users=a.users, expiring=a.expiring)
    print(f"head {world.head:,}; focus {world.focus_user} on {world.focus_table}")


if __name__ == "__main__":
    main()
