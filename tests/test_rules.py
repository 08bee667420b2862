"""Every `test` block of every shipped and example rule file runs under pytest too."""

from __future__ import annotations

from pathlib import Path

import pytest
from grantlog.engine.answer.testing import run_test

import grantlog

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(
    [*(ROOT / "rules").rglob("*.gl"), *(ROOT / "examples").rglob("*.gl")],
    key=lambda p: str(p),
)


def _cases() -> list[object]:
    out: list[object] = []
    for f in FILES:
        program = grantlog.compile(paths=[f])
        for case in program.tests:
            if Path(case.file).resolve() == f.resolve():
                rel = f.relative_to(ROOT)
                out.append(pytest.param(program, case, id=f"{rel}::{case.name}"))
    return out


@pytest.mark.parametrize(("program", "case"), _cases())
def test_rule_file_test_block(program: object, case: object) -> None:
    res = run_test(program, case)  # type: ignore[arg-type]
    assert res.passed, "\n".join(f"{f.span}: {f.message}" for f in res.failures)


def test_shipped_rule_files_compile_without_warnings() -> None:
    for f in (ROOT / "rules").rglob("*.gl"):
        assert grantlog.compile(paths=[f], strict=True).warnings == [], f
