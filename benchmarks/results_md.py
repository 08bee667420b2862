"""benchmarks/RESULTS.md: replace one section (from its ``## `` heading to the next) with a
benchmark's new table, or append it."""

from __future__ import annotations

from pathlib import Path

PATH = Path(__file__).resolve().parent / "RESULTS.md"


def replace_section(heading: str, text: str, path: Path = PATH) -> None:
    old = path.read_text(encoding="utf-8")
    if heading in old:
        start = old.index(heading)
        nxt = old.find("\n## ", start + len(heading))
        old = old[:start] + (old[nxt + 1:] if nxt >= 0 else "")
    path.write_text(old.rstrip("\n") + "\n\n" + text, encoding="utf-8")
