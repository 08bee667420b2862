"""Shared test setup: hypothesis profiles and golden-file helpers.

Goldens: set ``GRANTLOG_UPDATE_GOLDENS=1`` to rewrite expected files, then review the diff.
Hypothesis: ``HYPOTHESIS_PROFILE=ci`` (set by .ci/run) or ``dev`` (default).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", max_examples=150, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_DIR = ROOT / "tests" / "golden"
UPDATE = os.environ.get("GRANTLOG_UPDATE_GOLDENS") == "1"


def check_golden(name: str, actual: str) -> None:
    """Compare ``actual`` with tests/golden/<name>; rewrite it when updating goldens."""
    path = GOLDEN_DIR / name
    if UPDATE or not path.exists():
        if not UPDATE and os.environ.get("CI"):
            pytest.fail(f"golden file {path} is missing (run with GRANTLOG_UPDATE_GOLDENS=1)")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"output differs from golden {path}"


@pytest.fixture
def golden() -> object:
    return check_golden
