"""The ask bar's server side: a question in words (``check S O R``, ``list S O [TYPE]``,
``who O R``, or any goal such as ``allowed(U, load_table, T)``) answered by the public
reasoner, with the explanation's graph for a check or a goal."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from grantlog.engine.answer.vocabulary import to_json
from grantlog.engine.core.ir import show_atom
from grantlog.grammar.diagnostics import GrantlogError, Span, error

from . import proofs

QUESTION = Span("<question>", 0, 0, 0, 0)
FORMS = "`check SUBJECT OPERATION RESOURCE`, `list SUBJECT OPERATION [TYPE]`, " \
    "`who OPERATION RESOURCE`, or a goal such as `allowed(U, load_table, T)`"
#: the most rows an answer shows (the page says how many more there are)
SHOWN = 500


@dataclass(frozen=True)
class Question:
    """A parsed question: ``kind`` check, list, who or goal; ``args`` its words (a goal's
    text for ``goal``)."""

    kind: str
    args: tuple[str, ...]

    @property
    def text(self) -> str:
        if self.kind == "goal":
            return self.args[0]
        return " ".join([self.kind, *(shlex.quote(a) for a in self.args)])


def parse(text: str) -> Question:
    """The question ``text`` asks; ``bad-question`` when it is none of the forms."""
    text = text.strip()
    if not text:
        raise _bad("the question is empty")
    word = text.split(None, 1)[0]
    if word in ("check", "list", "who"):
        try:
            words = tuple(shlex.split(text)[1:])
        except ValueError as e:
            raise _bad(f"`{text}` does not split into words ({e})") from None
        arity = {"check": (3, 3), "list": (2, 3), "who": (2, 2)}[word]
        if not arity[0] <= len(words) <= arity[1]:
            raise _bad(f"`{word}` takes {'/'.join(str(n) for n in sorted(set(arity)))} "
                       f"words, got {len(words)}")
        return Question(word, words)
    if word in ("explain", "why") and "(" in text:
        text = text.split(None, 1)[1]
    if "(" not in text:
        raise _bad(f"`{text}` is not a question")
    return Question("goal", (text.rstrip(". "),))


def _bad(message: str) -> GrantlogError:
    return GrantlogError([error("bad-question", message, QUESTION, f"ask {FORMS}")])


def answer(r: Any, q: Question, graph: bool = True) -> dict[str, Any]:
    """The answer to ``q`` from reasoner ``r`` as the page shows it: ``summary`` (one line),
    ``value`` (what pins compare: a bool or a sorted list), ``rows`` (at most :data:`SHOWN`),
    and with ``graph`` the proof or why-not graph (check and goal)."""
    out: dict[str, Any] = {"question": q.text, "kind": q.kind}
    goal: str | None = None
    if q.kind == "check":
        d = r.check(*q.args)
        goal = show_atom(r.program.decision, tuple(q.args))
        out.update(value=d.allowed, summary=("ALLOW" if d.allowed else "DENY") + f" {goal}",
                   reasons=list(d.reasons), warnings=to_json(d.warnings))
    elif q.kind in ("list", "who"):
        found = r.list(*q.args) if q.kind == "list" else r.who(*q.args)
        values = [str(v) for v in found]
        out.update(value=values, summary=f"{len(values)} {_plural(q.kind, len(values))}",
                   rows=values[:SHOWN], more=max(0, len(values) - SHOWN),
                   warnings=to_json(found.warnings))
    else:
        goal = q.args[0]
        found = r.query(goal)
        rows = [{k: str(v) for k, v in b.items()} for b in found]
        value = sorted(",".join(f"{k}={v}" for k, v in sorted(b.items())) for b in rows)
        holds = bool(found)
        out.update(value=value, summary=(f"{len(rows)} answer{'s' if len(rows) != 1 else ''}"
                                         if rows and rows[0] else
                                         ("true" if holds else "false")),
                   rows=rows[:SHOWN], more=max(0, len(rows) - SHOWN),
                   warnings=to_json(found.warnings))
    if graph and goal is not None:
        ex = r.explain(goal)
        out["graph"] = proofs.graph(ex.to_dict(), proofs.folded_relations(r.program))
    return out


def _plural(kind: str, n: int) -> str:
    word = "resource" if kind == "list" else "subject"
    return word if n == 1 else word + "s"
