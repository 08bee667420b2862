"""The evaluators behind ``grantlog.Reasoner(program, backend=NAME)``: one registry.

Each backend is named by where its reasoner class is (``module:attribute``, the module
relative to the engine package), imported on first use, so that an optional dependency
(pyDatalog) is needed only by whoever asks for its backend. A backend's reasoner is built as
``cls(program, watch)`` and answers the same questions as the in-memory one (what it cannot
answer faithfully it refuses with ``unsupported-feature``).

The Spark bridge (spark_bridge/) is a batch evaluator over DataFrames, not a reasoner: it is
not a backend here. The remote client (``grantlog.Client``) talks to a service, which holds
the program itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from . import ir
from .suggest import closest

MEMORY = "memory"


@dataclass(frozen=True)
class Backend:
    #: ``module:attribute``, the module relative to the engine package
    target: str
    #: the optional dependency it needs, as named in ``pip install 'grantlog[extra]'``
    extra: str | None = None
    #: how errors name the backend and its dependency
    label: str = ""
    requires: str = ""


BACKENDS: dict[str, Backend] = {
    MEMORY: Backend("answer.reasoner:Reasoner"),
    "pydatalog": Backend("backends.pydatalog:PyDatalogReasoner", "pydatalog", "pyDatalog",
                         "pyDatalog"),
}

_ENGINE = __name__.rsplit(".", 2)[0]  # grantlog.engine
_resolved: dict[str, Any] = {}


def resolve(name: str) -> Any:
    """The reasoner class of backend ``name`` (``unknown-backend`` with a suggestion; a
    backend whose dependency is not installed: ``missing-dependency``)."""
    got = _resolved.get(name)
    if got is not None:
        return got
    spec = BACKENDS.get(name)
    if spec is None:
        close = closest(name, BACKENDS)
        raise GrantlogError([error(
            "unknown-backend", f"backend `{name}` does not exist", Span("<api>", 0, 0, 0, 0),
            f"did you mean `{close}`?" if close else
            "backends: " + ", ".join(f"`{b}`" for b in BACKENDS))])
    module, _, attr = spec.target.partition(":")
    try:  # an optional dependency, imported on first use
        got = getattr(importlib.import_module(f"{_ENGINE}.{module}"), attr)
    except ImportError as exc:
        if spec.extra is None:
            raise
        raise GrantlogError([error(
            "missing-dependency",
            f"the {spec.label} backend needs {spec.requires} ({exc})",
            Span("<api>", 0, 0, 0, 0),
            f"install it with `pip install 'grantlog[{spec.extra}]'`")]) from exc
    _resolved[name] = got
    return got


def create(name: str, program: ir.Program, watch: Iterable[str] | str = ()) -> Any:
    """A reasoner of backend ``name`` over ``program``."""
    return resolve(name)(program, watch)


__all__ = ["BACKENDS", "MEMORY", "Backend", "create", "resolve"]
