"""Rule files shipped with grantlog (package data): the seed models and their prelude."""

from __future__ import annotations

from pathlib import Path


def rules_dir() -> Path:
    """The directory holding the shipped `.gl` files; it is on every import search path."""
    return Path(__file__).resolve().parent
