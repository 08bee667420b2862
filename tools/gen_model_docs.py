"""Write docs/models/<model>.md for every shipped model (`--check`: fail if any is stale)."""

from __future__ import annotations

import sys
from pathlib import Path

from grantlog.engine.compile.modeldoc import model_page
from grantlog.rules import models

DOCS = Path(__file__).resolve().parent.parent / "docs" / "models"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    DOCS.mkdir(parents=True, exist_ok=True)
    for m in models():
        page = model_page(m.path, m.name)
        out = DOCS / f"{m.name}.md"
        if out.exists() and out.read_text(encoding="utf-8") == page:
            continue
        stale.append(out)
        if not check:
            out.write_text(page, encoding="utf-8")
    for f in stale:
        print(("stale: " if check else "wrote ") + str(f))
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
