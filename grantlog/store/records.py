"""What the stores and their callers share below :class:`grantlog.store.base.Store`: the
store's errors, rows as the change log keeps them (JSON arrays), a logged transaction
(:class:`Revision`), an installed policy (:class:`StoredPolicy`) and the follower's wake-up
(:class:`Listener`)."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass

from grantlog.engine.core import ir
from grantlog.engine.core.results import Delta
from grantlog.grammar.diagnostics import GrantlogError, Span, error


def policy_conflict(expected: str, current: str, where: str) -> GrantlogError:
    """A policy replacement whose ``if_hash`` is not the current policy's hash."""
    return GrantlogError([error("policy-conflict", f"the policy is `{current}`, not "
                                f"`{expected}` (`if_hash`): someone replaced it meanwhile",
                                Span(where, 0, 0, 0, 0),
                                "read it again (GET /v1/policy) and retry")])


def store_error(code: str, message: str, url: str, help: str | None = None) -> GrantlogError:
    return GrantlogError([error(code, message, Span(url, 0, 0, 0, 0), help)])


def not_found(url: str, message: str) -> GrantlogError:
    """``store-not-found``: a store opened to read that nobody created (a misspelt URL)."""
    return store_error("store-not-found", message, url,
                       f"create it with `grantlog store init {url} --rules FILE` (or "
                       "--model NAME), or pass --create (`create=True` in the API)")


def q(name: str) -> str:
    """A quoted SQL identifier (column names like ``user`` or ``group`` are keywords)."""
    return '"' + name.replace('"', '""') + '"'


def encode_row(row: ir.Row) -> str:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


def decode_row(text: str) -> ir.Row:
    return tuple(json.loads(text))


@dataclass(frozen=True)
class Revision:
    """One committed transaction as the log has it: the facts it added and removed."""

    revision: int
    added: Delta
    removed: Delta

    def __len__(self) -> int:
        return sum(map(len, self.added.values())) + sum(map(len, self.removed.values()))


def group(entries: Iterable[tuple[int, str, int, str]]) -> list[Revision]:
    """Log rows (revision, relation, sign, row), ordered by revision, as transactions."""
    out: list[Revision] = []
    for rev, rel, sign, text in entries:
        if not out or out[-1].revision != rev:
            out.append(Revision(rev, {}, {}))
        side = out[-1].added if sign > 0 else out[-1].removed
        side.setdefault(rel, set()).add(decode_row(text))
    return out


@dataclass(frozen=True)
class StoredPolicy:
    """A policy installed in a store: its rule files' texts, as compiled when it was set."""

    serial: int
    hash: str
    #: the rule files named on the command line or uploaded (imports are among ``sources``)
    roots: list[str]
    sources: dict[str, str]
    set_at: float
    #: the store's revision when it was installed
    revision: int


class Listener(ABC):
    """Wakes a follower when another connection may have committed."""

    @abstractmethod
    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds; True when something may have been committed."""

    @abstractmethod
    def close(self) -> None: ...
