"""Pinned checks: questions pinned to the page, re-run whenever the rules or facts change
(every edit that compiles); a pin whose answer differs from its previous one is marked flipped,
and a pinned list or who says which values it gained and lost."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from grantlog.grammar.diagnostics import GrantlogError, error

from . import ask

#: the most questions pinned at once
MAX_PINS = 50


@dataclass
class Pin:
    id: int
    question: ask.Question
    summary: str = ""
    value: Any = None
    previous: Any = None
    flipped: bool = False
    error: str | None = None
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def run(self, r: Any) -> None:
        """Answer again; flipped when the answer changed since the last run."""
        try:
            a = ask.answer(r, self.question, graph=False)
        except GrantlogError as e:
            self.error = "; ".join(d.message for d in e.diagnostics)
            return
        self.error = None
        self.previous, self.value, self.summary = self.value, a["value"], a["summary"]
        self.flipped = self.previous is not None and self.previous != self.value
        if self.flipped and isinstance(self.value, list):
            before, after = set(self.previous), set(self.value)
            self.added, self.removed = sorted(after - before), sorted(before - after)
        else:
            self.added, self.removed = [], []

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "question": self.question.text, "summary": self.summary,
                "value": self.value, "flipped": self.flipped, "error": self.error,
                "added": self.added[:50], "removed": self.removed[:50]}


class Pins:
    def __init__(self) -> None:
        self.pins: dict[int, Pin] = {}
        self._ids = itertools.count(1)

    def add(self, r: Any, text: str) -> Pin:
        """Pin the question ``text`` (``bad-question`` when it is none)."""
        q = ask.parse(text)
        if len(self.pins) >= MAX_PINS:
            raise GrantlogError([error("bad-question", f"at most {MAX_PINS} questions "
                                           "can be pinned", ask.QUESTION,
                                           "unpin one first")])
        pin = Pin(next(self._ids), q)
        pin.run(r)
        self.pins[pin.id] = pin
        return pin

    def remove(self, pin_id: int) -> bool:
        return self.pins.pop(pin_id, None) is not None

    def rerun(self, r: Any) -> None:
        for p in self.pins.values():
            p.run(r)

    def to_list(self) -> list[dict[str, Any]]:
        return [p.to_dict() for p in self.pins.values()]
