"""Access reviews: what a subject may do, who may use a resource, or what a role's holders may
do through it — each entry with its path (the base facts of its proof, less the hierarchy's
own: the grants and memberships that give it) and, over a store's history, what changed
since a revision or a date (gained, lost, by which transaction and author).

Built from the other questions: a query of the decision relation with the reviewed argument
bound (the current entries), ``explain`` (the paths: a proof's ``fact`` leaves) and the
timelines of engine/answer/timelines.py (the changes). A subject's or a resource's changes are
the decision rows with that argument evaluated over revision intervals (engine/answer/timed.py
``decided``: no replay; validity intervals too), where the store has a temporal table; a
role's too (:func:`role_timeline`: its holders' rows over the period, then their decisions;
with validity intervals on the axis of commits and moments, whether a change went through the
role read at its moment); anything else replays the log (``keyed``). A
path at a past revision (an entry lost since) is explained by point reads at that revision
(engine/answer/timed_proofs.py; the paths at one revision and moment over one view with one
prover: :func:`past_paths`), not by a reasoner rebuilt for it, just before the loss
(``timed.before``: at a validity edge, the revision in force a moment before it, the facts'
intervals read then). A role is read from the model's
structure: its holding relations are the binary relations with a column named ``role`` (the
prelude's ``holds(principal, role)``), those that rules derive when there are any; a model
with none has no roles (``no-roles``). A role's entries are the decisions of its holders
whose proof goes through a fact naming the role. The current entries are under the reviewing
reasoner's own program, the history under the store's policies (:func:`policies`, which the
review reports).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from ..core import arguments, ir
from ..core.hierarchy_roles import hierarchy_roles
from . import through, timed
from .history import Edge, Interval
from .spans import SHIFT
from .timelines import AccessTimeline, Key, _over, keyed, pattern

Reasoner = Any
#: the version of :meth:`Review.to_dict`'s layout (docs/history.md describes it)
SCHEMA = "grantlog-review/1"
KINDS = ("subject", "resource", "role")
#: an entry's change since the review's ``since``
CHANGES = ("gained", "lost", "unchanged", "transient")
_API = Span("<api>", 0, 0, 0, 0)


@dataclass(frozen=True)
class Event:
    """An entry gained or lost at a transaction (or a validity edge)."""

    gained: bool
    edge: Edge

    def to_dict(self) -> dict[str, Any]:
        return {"change": "gained" if self.gained else "lost", **self.edge.to_dict()}


@dataclass(frozen=True)
class Entry:
    """One (subject, operation, resource) the review covers: ``change`` is ``gained`` (not
    held at ``since``, held now), ``lost`` (held then, not now), ``unchanged``,
    ``transient`` (gained and lost again since), or ``""``
    (no ``since``); ``path``: the base facts of its proof (now, or just before it was lost);
    ``events``: its gains and losses since, in order."""

    subject: ir.Value
    operation: ir.Value
    resource: ir.Value
    change: str
    path: tuple[str, ...]
    events: tuple[Event, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "operation": self.operation,
                "resource": self.resource, "change": self.change, "path": list(self.path),
                "events": [e.to_dict() for e in self.events]}


@dataclass(frozen=True)
class Review:
    """The review of ``of`` (a subject, a resource or a role: ``kind``) at ``revision``;
    ``since``: the revision the changes are counted from (None: the current state only);
    ``holders``: a role's holders."""

    kind: str
    of: str
    revision: int
    since: int | None
    entries: tuple[Entry, ...]
    holders: tuple[ir.Value, ...] = ()
    timeline: AccessTimeline | None = field(default=None, compare=False)
    #: the policies it was evaluated under, by digest (:func:`policies`)
    policies: dict[str, Any] = field(default_factory=dict)

    @property
    def current(self) -> list[Entry]:
        return [e for e in self.entries if e.change != "lost"]

    def changes(self) -> list[tuple[Entry, Event]]:
        """Every gain and loss since ``since``, in order."""
        out = [(e, v) for e in self.entries for v in e.events]
        out.sort(key=lambda ev: (ev[1].edge.revision, ev[1].edge.committed_at or 0.0,
                                 not ev[1].gained,
                                 ir.row_key((ev[0].subject, ev[0].operation,
                                             ev[0].resource))))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "kind": self.kind, "of": self.of, "revision": self.revision,
            "since": self.since,
            **({"holders": list(self.holders)} if self.kind == "role" else {}),
            "policies": self.policies,
            "entries": [e.to_dict() for e in self.entries],
            "changes": [{"subject": e.subject, "operation": e.operation,
                         "resource": e.resource, **v.to_dict()} for e, v in self.changes()],
            "counts": {c: sum(1 for e in self.entries if e.change == c) for c in CHANGES}
            if self.since is not None else {"entries": len(self.entries)},
        }


def holding_relations(program: ir.Program) -> list[tuple[str, int]]:
    """The model's role holding relations and the column of the role in each: binary
    relations with a column named ``role`` (the derived ones when there are any)."""
    found = [(rel.name, rel.columns.index("role")) for rel in program.relations.values()
             if rel.arity == 2 and rel.columns.count("role") == 1]
    derived = [f for f in found if f[0] in program.derived]
    return sorted(derived or found)


def role_holders(r: Reasoner, role: str) -> list[ir.Value]:
    """The principals holding ``role`` (``no-roles`` when the model has no roles)."""
    rels = holding_relations(r.program)
    if not rels:
        raise GrantlogError([error(
            "no-roles", "this model has no roles: no relation holds a principal's `role`",
            _API, "declare the holding relation with a column named `role`, as the "
            "prelude's `holds(principal, role)`; or review a --subject or a --resource")])
    out: set[ir.Value] = set()
    for rel, col in rels:
        args: list[ir.Var | ir.Value] = [role, role]
        args[1 - col] = ir.Var("P")
        out |= {b["P"] for b in r.query(pattern(rel, tuple(args)))}
    return sorted(out, key=ir.value_key)


def _decisions(r: Reasoner, subject: ir.Value | None, resource: ir.Value | None) -> set[Key]:
    """The decision rows with the subject or the resource bound."""
    s, o, x = ir.Var("S"), ir.Var("O"), ir.Var("R")
    atom = (s if subject is None else subject, o, x if resource is None else resource)
    return {(subject if subject is not None else b["S"], b["O"],
             resource if resource is not None else b["R"])
            for b in r.query(pattern(r.program.decision, atom))}


def _path(r: Reasoner, key: Key, at: int | None = None,
          then: float | None = None) -> tuple[list[str], set[ir.Value]]:
    """The base facts of ``key``'s proof at ``r`` (``at``: at that past revision, under the
    policy in force then; ``then``: at that moment, validity intervals read then) and the
    values they name."""
    if at is None:
        program = r.program
        ex = r.explain(ir.show_atom(program.decision, key))
    else:
        journal = r.journal
        assert journal is not None
        program = journal.policy_at(at) or r.program
        ex = timed.explain_at(r, at, ir.show_atom(program.decision, key), then)
    return path_facts(program, ex)


def path_facts(program: ir.Program, ex: Any) -> tuple[list[str], set[ir.Value]]:
    """The base facts of an explanation's proof (none where it does not hold), less the
    hierarchy's, and the values they name."""
    if not ex.holds or ex.proof is None:
        return [], set()
    return _leaves(hierarchy_roles(program).stored, ex.proof)


def _leaves(tree: Any, proof: Any) -> tuple[list[str], set[ir.Value]]:
    """A proof's ``fact`` leaves less those of the relations in ``tree`` (where the objects
    sit: not a grant), and the values all of them name."""
    facts: dict[str, None] = {}
    values: set[ir.Value] = set()
    for n in proof.walk():
        if n.kind == "fact" and n.row is not None:
            values.update(n.row)
            if n.rel not in tree:
                facts[n.text] = None
    return sorted(facts), values


#: :func:`_path` at past revisions: per (revision, moment), per key
_Past = dict[tuple[int, float | None], dict[Key, tuple[list[str], set[ir.Value]]]]


def past_paths(r: Reasoner, want: dict[tuple[int, float | None], set[Key]],
                done: _Past) -> _Past:
    """:func:`_path` ``(r, key, at, then)`` of each key of ``want[(at, then)]`` not in
    ``done`` yet (added to it, which is returned): the keys of one revision and moment in
    order, :data:`PROVED_TOGETHER` at a time over one view with one prover
    (timed.py ``explain_each_at``), not a view and a prover each."""
    journal = r.journal
    assert journal is not None or not want
    for (at, then), keys in sorted(want.items(), key=lambda w: (w[0][0], w[0][1] or 0.0)):
        got = done.setdefault((at, then), {})
        todo = sorted(keys - got.keys(), key=ir.row_key)
        program = journal.policy_at(at) or r.program
        for i in range(0, len(todo), PROVED_TOGETHER):
            part = todo[i:i + PROVED_TOGETHER]
            goals = [ir.show_atom(program.decision, k) for k in part]
            for k, ex in zip(part, timed.explain_each_at(r, at, goals, then), strict=True):
                got[k] = path_facts(program, ex)
    return done


#: the entries proven with one prover (its proofs of shared premises kept between them)
PROVED_TOGETHER = 1000


def _paths(r: Reasoner, keys: set[Key]) -> dict[Key, tuple[list[str], set[ir.Value]]]:
    """:func:`_path` of each key now, the keys in order, :data:`PROVED_TOGETHER` at a time
    with one prover: a proof depends only on the row (the lowest instance, the smallest
    binding), so a premise's proof kept from an earlier entry is the one it would get."""
    program = r.program
    tree = hierarchy_roles(program).stored
    out: dict[Key, tuple[list[str], set[ir.Value]]] = {}
    ordered = sorted(keys, key=ir.row_key)
    for i in range(0, len(ordered), PROVED_TOGETHER):
        with r._read():
            ctx = r._context()
            prover = r.prover(ctx)
            held = ctx.F[program.decision]
            for k in ordered[i:i + PROVED_TOGETHER]:
                out[k] = _leaves(tree, prover.prove(program.decision, k)) if k in held \
                    else ([], set())
    return out


def role_timeline(r: Reasoner, of: str, holders: list[ir.Value],
                   since: object, also: Iterable[Key] = ()) -> AccessTimeline | None:
    """A role's timeline over revision intervals (None where that path does not apply: the
    replay's then): the role's holding rows over the period (``timed.decided`` of each
    holding relation with the role bound), then the decisions of the principals the replay
    follows (``keyed`` above: the holders now, at ``since`` and at each policy installed
    since, each from the first of these revisions it held the role at) in one evaluation
    over revision intervals — only those derivable through the role at some revision of the
    period (through.py ``keys_over``: no other can have a change through it) and ``also``
    — each principal's intervals from that revision on (one that
    held across it opens there, as the replay's new policy opens it). With validity
    intervals the spans are of points of commits and moments (engine/answer/spans.py; a
    revision's commit is ``revision << SHIFT``), up to the clock, and where the candidates
    through the role are not found over them (through.py) every decision of the followed
    principals is evaluated."""
    rels = holding_relations(r.program)
    held = []
    for rel, col in rels:
        d = timed.decided(r, (col,), (of,), since, rel=rel)
        if d is None:
            return None
        held.append((d, col))
    first, last = held[0][0].first, held[0][0].last
    axis = held[0][0].start >= 0  # validity intervals: spans of points of commits and moments

    def pos(t: int) -> int:  # revision ``t``'s commit as a point of the spans
        return t << SHIFT if axis else t

    journal = r.journal
    swaps = sorted(p for p in journal.policy_revisions() if first < p <= last)
    if any(holding_relations(journal.policy_at(p) or r.program) != rels
           for p in (first, *swaps)):
        return None  # other holding relations under another policy: the replay's
    when: dict[ir.Value, int] = dict.fromkeys(holders, first)
    for d, col in held:
        for row, spans in d.rows.items():
            t = next((t for t in (first, *swaps)
                      if any(lo <= pos(t) < hi for lo, hi in spans)), None)
            if t is not None and t < when.get(row[1 - col], last + 1):
                when[row[1 - col]] = t
    of_: dict[str, ir.Value] = {"kind": "role", "of": of}
    names = ("subject", "operation", "resource")
    if not when:
        return AccessTimeline(of_, names, first, last, {})
    # only the decisions derivable through the role at some revision (through.py)
    found = through.keys_over(r, of, first, last)
    if found is not None:
        # and ``also`` (the entries now: under the reasoner's own program, which need not
        # be the store's, whether each held at ``since`` is read here)
        keys = sorted((k for k in found | set(also) if k[0] in when), key=ir.row_key)
        if not keys:
            return AccessTimeline(of_, names, first, last, {})
        d = timed.decided(r, (0, 1, 2), keys[0], first, last, more=tuple(keys[1:]))
    elif axis:  # (validity intervals: every decision of the followed principals, to the clock)
        ps = sorted(when, key=ir.value_key)
        d = timed.decided(r, (0,), (ps[0],), first, None, more=tuple((p,) for p in ps[1:]))
    else:
        return None
    if d is None or (d.start >= 0) != axis or (d.first, d.last) != (first, last):
        return None
    opened = {c.revision: Edge(c.revision, c.committed_at, c.author, c.reason, c.ticket)
              for t in set(when.values()) - {first} for c in journal.transactions(t - 1, t)}
    out: dict[Key, list[Interval]] = {}
    for row, spans in d.rows.items():
        t = when[row[0]]
        ivs = [i if lo >= pos(t) else Interval(opened.get(t, Edge(t)), i.end, False)
               for (lo, hi), i in zip(spans, d.intervals(row), strict=True) if hi > pos(t)]
        if ivs:
            out[tuple(row)] = ivs
    return AccessTimeline(of_, names, first, last, out)


def review(r: Reasoner, subject: str | None = None, resource: str | None = None,
           role: str | None = None, since: object = None) -> Review:
    """The review of exactly one of ``subject``, ``resource``, ``role``; ``since`` (a
    revision or a time, as ``timeline`` takes them; needs a store): what changed since."""
    given = [(k, v) for k, v in zip(KINDS, (subject, resource, role), strict=True)
             if v is not None]
    if len(given) != 1:
        raise GrantlogError([error("bad-argument", "review exactly one of `subject`, "
                                   "`resource`, `role`", _API,
                                   "pass one of them")])
    kind, of = given[0]
    arguments.constant(kind, of)
    holders: list[ir.Value] = role_holders(r, of) if kind == "role" else []
    if kind == "role":  # only the holders' decisions derivable through the role
        held = set(holders)
        now = {k for k in through.found(r, of) if k[0] in held}
    else:
        now = _decisions(r, subject, resource)
    paths: dict[Key, list[str]] = {}
    keep: set[Key] = set()
    for k, (facts, values) in _paths(r, now).items():
        paths[k] = facts
        if kind != "role" or of in values:
            keep.add(k)
    timeline = None
    events: dict[Key, list[Event]] = {}
    before: set[Key] = set()
    first: int | None = None
    past: _Past = {}
    if since is not None:
        who = set(holders)

        def start(live: Reasoner) -> set[Key]:
            if kind == "role":
                who.update(role_holders(live, of))
                return {k for h in who for k in _decisions(live, h, None)}
            return _decisions(live, subject, resource)

        def select(row: ir.Row) -> Key | None:
            if kind == "subject":
                return row if row[0] == subject else None
            if kind == "resource":
                return row if row[2] == resource else None
            return row if row[0] in who else None

        names = ("subject", "operation", "resource")
        # a subject's or a resource's decisions over revision intervals; else the replay
        over = None if kind == "role" else timed.decided(
            r, (0,) if kind == "subject" else (2,), (of,), since)
        timeline = role_timeline(r, of, holders, since, now) if kind == "role" else None \
            if over is None else _over(over, {"kind": kind, "of": of}, names, tuple)
        if timeline is None:
            timeline = keyed(r, {"kind": kind, "of": of}, names, since, None, start, select)
        first = timeline.first
        # held at ``since`` (``at(first)`` would also count one lost, or gained, where time
        # passed a validity bound at that revision)
        before = {k for k, ivs in timeline.intervals.items() if ivs and ivs[0].held_before}
        changes = timeline.changes()
        # through the role: its proof names it then (validity intervals read at that
        # moment: just after a gain, just before a loss), the paths at one revision and
        # moment proven together (:func:`past_paths`)
        moments = [((c.edge.revision, c.edge.committed_at) if c.gained
                    else timed.before(c.edge)) if kind == "role" else (0, None)
                   for c in changes]
        at_first = next((i.start.committed_at for ivs in timeline.intervals.values()
                         for i in ivs[:1] if i.held_before), None)  # first's moment
        want: dict[tuple[int, float | None], set[Key]] = {}
        if kind == "role":
            for c, m in zip(changes, moments, strict=True):
                if m[0] >= 0:
                    want.setdefault(m, set()).add(c.key)
            want.setdefault((first, at_first), set()).update(before)
        past = past_paths(r, want, past)
        for c, (at, then) in zip(changes, moments, strict=True):
            if kind == "role" and (at < 0 or of not in past[(at, then)][c.key][1]):
                continue
            events.setdefault(c.key, []).append(Event(c.gained, c.edge))
        if kind == "role":  # held through the role then (it may hold another way now)
            keep |= {k for k in before if of in past[(first, at_first)][k][1]}
            for k in sorted((keep | events.keys()) - now, key=ir.row_key):
                if k[0] in holders and r.query(pattern(r.program.decision, k)):
                    now.add(k)  # a holder's decision now, not through the role
                    paths[k] = _path(r, k)[0]
    entries = []
    lost: dict[Key, tuple[int, float | None]] = {}  # where a path is read before a loss
    for k in (keep | events.keys()) - now if since is not None else ():
        gone = [e for e in events.get(k, ()) if not e.gained]
        was, then = timed.before(gone[-1].edge) if gone else (first, None)
        if was is not None and was >= 0:
            lost[k] = (was, then)
    by: dict[tuple[int, float | None], set[Key]] = {}
    for k, m in lost.items():
        by.setdefault(m, set()).add(k)
    past_paths(r, by, past)
    for k in sorted(keep | events.keys(), key=ir.row_key):
        if since is None:
            change = ""
        elif k in now:
            change = "unchanged" if k in before else "gained"
        elif k in before:
            change = "lost"
        else:
            change = "transient"  # gained and lost again since
        path = paths[k] if k in now else past[lost[k]][k][0] if k in lost else []
        entries.append(Entry(k[0], k[1], k[2], change, tuple(path),
                             tuple(events.get(k, ()))))
    return Review(kind, of, int(r.revision), first, tuple(entries), tuple(holders), timeline,
                  policies(r, first))


def policies(r: Reasoner, first: int | None) -> dict[str, Any]:
    """Which policy a review used, by digest. ``now``: the current entries and their paths
    are the reviewing reasoner's, under its own program — whatever the store has installed
    (``stored``: the store's policy in force at its head; None without one), so a reasoner
    opened with rules not installed yet reviews "now" under them. ``past`` (with ``since``:
    ``first`` its revision): the changes, what held at ``since`` and the paths before a loss
    are the store's history, each revision under the policy in force then (the store's
    installed policies, as as-of answers take them; the reasoner's own where the store kept
    none): from ``first`` and from each installation after it, that policy."""
    out: dict[str, Any] = {"now": r.program.digest}
    journal = r.journal
    if journal is None:
        return out
    head = int(r.revision)
    stored = journal.policy_at(head)
    out["stored"] = None if stored is None else stored.digest
    if first is not None:
        cuts = [first, *sorted(p for p in journal.policy_revisions() if first < p <= head)]
        out["past"] = [{"from": rev, "policy": (journal.policy_at(rev) or r.program).digest}
                       for rev in cuts]
    return out
