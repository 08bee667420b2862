"""Rule files shipped with grantlog (package data): the seed models and their prelude.

A *model* is a shipped `.gl` file other than the prelude and the `*_test.gl` files; its first
line is a comment ``// Title — summary``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def rules_dir() -> Path:
    """The directory holding the shipped `.gl` files; it is on every import search path."""
    return Path(__file__).resolve().parent


@dataclass(frozen=True)
class Model:
    name: str
    path: Path
    title: str


def models() -> list[Model]:
    """The shipped models, sorted by name."""
    out = []
    for f in sorted(rules_dir().glob("*.gl")):
        if f.stem == "prelude" or f.stem.endswith("_test"):
            continue
        first = f.read_text(encoding="utf-8").split("\n", 1)[0]
        title = first[2:].strip() if first.startswith("//") else f.stem
        out.append(Model(f.stem, f, title))
    return out


def model_path(name: str) -> Path | None:
    """The file of the shipped model called ``name`` (None when there is none)."""
    for m in models():
        if m.name == name:
            return m.path
    return None
