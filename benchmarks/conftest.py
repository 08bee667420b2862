"""Collect ``bench_*.py`` in this folder, so ``pytest benchmarks/`` runs the pytest-benchmark
cases. The normal test run never gets here: ``testpaths`` is ``tests``."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if parent.session.isinitpath(file_path):
        return None  # named on the command line: pytest collects it itself
    if file_path.suffix == ".py" and file_path.name.startswith("bench_"):
        module: pytest.Module = pytest.Module.from_parent(parent, path=file_path)
        return module
    return None
