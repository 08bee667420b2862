"""Suggested changes: the smallest sets of base facts whose insertion (or retraction) would make
a goal that does not hold hold (a DENY become an ALLOW), each checked by running it.

How candidates are found (engine/answer/abduction.py; from the program's rules, never from
relation names): the goal's body is solved *abductively*. Each positive literal either matches
rows that exist (binding its variables: "a role alice holds") or is assumed; an assumed
literal of a base relation is a fact to insert, one of a derived relation is expanded through
each of its rules (depth bounded). A negated literal whose atom holds (the DENY that won, the
override that fired) is repaired by retracting one base fact of the atom's why-proof, for each
row that blocks it. Variables that no existing row binds get a fresh constant named after
their column (``new_role``). The search deepens by size: every candidate of one fact first,
then two, up to :attr:`Bounds.size`.

How candidates are checked: each is applied to a throwaway copy of the reasoner (the same
program over the same base facts, in memory: the what-if of engine/answer/whatif.py, one
transaction per candidate, undone after) and kept only when the goal then holds; a kept one
is shrunk until removing any one of its facts no longer flips the goal (so none is larger
than needed). Suggestions are ordered by size (fewest facts first), then by how many of their
facts move the hierarchy (an edge of the declared or recognised hierarchy: moving a table
under a schema bob owns) or flip a global switch (a 0-ary fact), fewest first (a grant, a
membership or an ownership is the change an administrator means), then by fresh constants
(fewest: they stay closest to the existing constants), then by how many of the goal's own
constants they name (most first), then by reach (the fewest derived rows of materialized
relations changed), then by text.

The search is bounded (:class:`Bounds`: facts per suggestion, rule expansions, rows tried per
literal, candidates run, search steps, seconds); a result cut short by a bound says which
(:attr:`Suggestions.cut_short`).
"""

from __future__ import annotations

import json
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..core import ir
from ..core.facts import Facts
from ..core.terms import lit_terms
from .abduction import (
    Bounds,
    Candidate,
    Cut,
    Edit,
    Item,
    Repair,
    Search,
    State,
    hierarchy_moves,
    leaves,
)
from .query import Goals
from .reasoner import Reasoner

__all__ = ["Bounds", "Edit", "Repair", "Suggestion", "Suggestions", "Trial", "suggest"]


@dataclass(frozen=True)
class Suggestion:
    """A change that flips the goal (checked): its facts, the rule (the why-not tree's branch)
    it completes, the premises it repairs, where its constants come from, and its reach."""

    edits: tuple[Edit, ...]
    rule: str | None
    repairs: tuple[Repair, ...]
    #: constants taken from existing facts: (constant, the fact it was found in)
    found: tuple[tuple[str, str], ...] = ()
    #: fresh constants: (constant, the column it fills)
    fresh: tuple[tuple[str, str], ...] = ()
    #: derived rows of materialized relations the change gains or loses
    reach: int = 0
    #: the goal's constants its facts name (more: a change about this very question)
    near: int = 0
    #: its facts that move the hierarchy (edges) or flip a global switch (a 0-ary fact)
    moves: int = 0

    @property
    def size(self) -> int:
        return len(self.edits)

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.size, self.moves, len(self.fresh), -self.near, self.reach,
                [e.fact for e in self.edits])

    @property
    def sentence(self) -> str:
        """The change in words: what to add and remove, and where its constants come from."""
        parts = [f"{'add' if e.op == 'insert' else 'remove'} `{e.fact}`" for e in self.edits]
        text = " and ".join(parts)
        notes = [f"`{c}` as in `{f}`" for c, f in self.found]
        notes += [f"`{c}` a new {col}" for c, col in self.fresh]
        blocked = [r.fact for r in self.repairs if r.kind == "blocked"]
        if blocked:
            notes.append("so that " + ", ".join(f"`{b}` holds" for b in blocked))
        if self.rule:
            notes.append(f"by rule `{self.rule}`")
        return text + (f" ({'; '.join(notes)})" if notes else "")

    def to_dict(self) -> dict[str, Any]:
        return {"sentence": self.sentence, "size": self.size,
                "edits": [e.to_dict() for e in self.edits], "rule": self.rule,
                "repairs": [r.to_dict() for r in self.repairs],
                "found": [{"constant": c, "fact": f} for c, f in self.found],
                "fresh": [{"constant": c, "column": col} for c, col in self.fresh],
                "reach": self.reach}


@dataclass(frozen=True)
class Suggestions:
    """The answer to ``suggest``: for a goal that does not hold, the changes that would make
    it hold, smallest first; ``cut_short``: the bound that stopped the search early (None:
    it ran to the end within :class:`Bounds`); ``tried``: candidates run."""

    goal: str
    holds: bool
    suggestions: tuple[Suggestion, ...]
    tried: int = 0
    cut_short: str | None = None

    def __iter__(self) -> Iterator[Suggestion]:
        return iter(self.suggestions)

    def __len__(self) -> int:
        return len(self.suggestions)

    def render(self) -> str:
        if self.holds:
            return f"{self.goal}: holds (nothing to suggest)"
        lines = [f"changes that would make {self.goal} hold:"] if self.suggestions else [
            f"no change of at most the search's size makes {self.goal} hold"]
        for i, s in enumerate(self.suggestions, 1):
            lines.append(f"  {i}. {s.sentence}")
        if self.cut_short:
            lines.append(f"  (search cut short: {self.cut_short} limit reached)")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"goal": self.goal, "holds": self.holds,
                "suggestions": [s.to_dict() for s in self.suggestions],
                "tried": self.tried, "cut_short": self.cut_short}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)


# ---- checking candidates on a copy ----------------------------------------------------------

class Trial:
    """A throwaway copy of a reasoner (the same program over the same base facts, in memory)
    on which changes are tried and undone: does the goal hold with them?"""

    def __init__(self, reasoner: Reasoner) -> None:
        program = reasoner.program
        base = reasoner.base_facts()
        given = {rel: set(rows) for rel, rows in Facts.of(program.facts).by_relation().items()}
        self.copy = Reasoner(program)
        extra = {rel: [r for r in rows if r not in given.get(rel, ())]
                 for rel, rows in base.items()}
        self.copy.seed({rel: rows for rel, rows in extra.items() if rows}, 0)
        gone = {rel: [r for r in rows if r not in base.get(rel, ())]
                for rel, rows in given.items()}
        if any(gone.values()):
            with self.copy.transaction() as tx:
                for rel, rows in gone.items():
                    if rows:
                        tx.retract(rel, rows)
        self.runs = 0
        #: the reasoner's revision and stored rows the copy has
        self.state = _state(reasoner)

    @classmethod
    def of(cls, reasoner: Reasoner) -> Trial:
        """The copy kept for ``reasoner`` while its revision stays (made again after a
        change): a copy plans its lookups once, not once per question."""
        got = _TRIALS.get(reasoner)
        if got is None or got.state != _state(reasoner):
            got = _TRIALS[reasoner] = cls(reasoner)
        return got

    def still(self, rel: str, row: ir.Row,
              gone: frozenset[tuple[str, ir.Row]]) -> list[tuple[str, ir.Row]] | None:
        """None when ``rel(row)`` no longer holds with the base facts ``gone`` retracted;
        else the base facts of a proof it still has (the copy is put back after)."""
        c = self.copy
        with c.transaction() as tx:
            for r, rw in gone:
                tx.retract(r, [rw])
        try:
            ctx = c.view()
            if not ctx.lookup(rel, tuple(range(len(row))), row):
                return None
            return leaves(c.prover(ctx).prove(rel, row))
        finally:
            with c.transaction() as undo:
                for r, rw in gone:
                    undo.insert(r, [rw])

    def flips(self, goal: str, edits: tuple[Edit, ...]) -> tuple[bool, int]:
        """Whether ``goal`` holds with ``edits`` applied, and how many derived rows (of
        materialized relations) they change; the copy is put back after."""
        self.runs += 1
        c = self.copy
        try:
            with c.transaction() as tx:
                for e in edits:
                    (tx.insert if e.op == "insert" else tx.retract)(e.rel, [e.row])
        except Exception:  # a fact the relation's types refuse: not a candidate
            return False, 0
        try:
            holds = c.ask(goal)
            reach = sum(len(ch.added) + len(ch.removed)
                        for ch in tx.changes.derived.values())
        finally:
            with c.transaction() as undo:
                for e in edits:
                    (undo.retract if e.op == "insert" else undo.insert)(e.rel, [e.row])
        return holds, reach


def _state(reasoner: Reasoner) -> tuple[int, int]:
    """What tells a reasoner's facts changed: its revision, and the rows it stores (facts
    seeded at the same revision)."""
    return reasoner.revision, reasoner.database().rows


#: the copies kept per reasoner (:meth:`Trial.of`)
_TRIALS: weakref.WeakKeyDictionary[Reasoner, Trial] = weakref.WeakKeyDictionary()


# ---- the question ---------------------------------------------------------------------------

def suggest(reasoner: Reasoner, goal: str, limit: int = 5, bounds: Bounds | None = None,
            trial: Trial | None = None) -> Suggestions:
    """Changes that would make ``goal`` (rule text, e.g. ``allowed(alice, read, t1)``) hold,
    at most ``limit``, smallest first; see the module docstring. ``trial``: a copy of the
    reasoner to try them on (made here when not given; reuse one across goals of the same
    facts)."""
    bounds = bounds or Bounds()
    start = time.monotonic()
    deadline = start + bounds.seconds
    program = reasoner.program
    g = Goals(program)[goal]
    with reasoner.frozen():
        if reasoner.ask(goal):
            return Suggestions(goal, True, ())
        ctx = reasoner.view()
        search = Search(program, ctx, reasoner.prover(ctx), bounds, deadline)
        trial = trial or Trial.of(reasoner)
        search.still = trial.still
        runs = trial.runs
        kept: dict[frozenset[Edit], Suggestion] = {}
        seen: set[frozenset[Edit]] = set()
        cut: str | None = None
        agenda = tuple(Item(lit, 0) for lit in g.body)
        try:
            for size in range(1, bounds.size + 1):
                search.size = size
                for st in search.solve(agenda, State({})):
                    cand = search.candidate(st)
                    edits = frozenset(cand.edits) if cand is not None else frozenset()
                    if cand is None or edits in seen or any(k <= edits for k in kept):
                        continue  # seen, or holding a smaller suggestion: not the smallest
                    seen.add(edits)
                    if trial.runs - runs >= bounds.candidates:
                        raise Cut("candidates")
                    if time.monotonic() > deadline:
                        raise Cut("time")
                    s = _checked(trial, goal, cand, seen, g.body)
                    got = frozenset(s.edits) if s is not None else edits
                    if s is None or any(k <= got for k in kept):
                        continue  # (shrunk to) one kept already, or one holding it
                    for k in [k for k in kept if got < k]:  # smaller than one kept: it goes
                        del kept[k]
                    kept[got] = s
                    search.kept = list(kept)
                if len(kept) >= limit:
                    break
        except Cut as e:
            cut = str(e.args[0])
    ordered = sorted(kept.values(), key=lambda s: s.key)
    return Suggestions(goal, False, tuple(ordered[:limit]), trial.runs - runs, cut)


def _checked(trial: Trial, goal: str, cand: Candidate, seen: set[frozenset[Edit]],
             goal_lits: tuple[ir.Lit, ...]) -> Suggestion | None:
    """The candidate as a suggestion if it flips the goal, shrunk until no fact of it can be
    left out; None if it does not flip."""
    ok, reach = trial.flips(goal, cand.edits)
    if not ok:
        return None
    edits = cand.edits
    shrunk = True
    while shrunk and len(edits) > 1:
        shrunk = False
        for i in range(len(edits)):
            fewer = edits[:i] + edits[i + 1:]
            seen.add(frozenset(fewer))
            ok, r = trial.flips(goal, fewer)
            if ok:
                edits, reach, shrunk = fewer, r, True
                break
    keep = {v for e in edits for v in map(str, e.row)}
    near = {v for lit in goal_lits for t in lit_terms(lit) if isinstance(t, ir.Const)
            for v in (str(t.value),)}
    program = trial.copy.program
    movers = hierarchy_moves(program)
    moves = sum(1 for e in edits if e.rel in movers or program.relations[e.rel].arity == 0)
    return Suggestion(edits, cand.branch,
                      tuple(r for r in cand.repairs if _touches(r, edits)),
                      tuple(f for f in cand.found if f[0] in keep and f[0] not in near),
                      tuple(f for f in cand.fresh if f[0] in keep), reach,
                      len(near & keep), moves)


def _touches(r: Repair, edits: tuple[Edit, ...]) -> bool:
    """Whether repair ``r`` is still made by ``edits`` (after shrinking): a missing fact
    inserted, a blocked one whose support is retracted, a derived one kept as it was."""
    if r.kind == "missing":
        return any(e.op == "insert" and e.rel == r.rel and e.row == r.row for e in edits)
    if r.kind == "blocked":
        return any(e.op == "retract" for e in edits)
    return True
