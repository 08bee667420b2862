"""Write the man pages of the command line, generated from its parser with argparse-manpage:
docs/man/grantlog.1 (every command) and docs/man/grantlog-COMMAND.1 for each command
(``grantlog-store-load.1`` for ``grantlog store load``). ``--check``: fail if any is stale.

Read them with ``man docs/man/grantlog.1``; a package installs them under ``share/man/man1``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

MAN = Path(__file__).resolve().parent.parent / "docs" / "man"


def pages() -> dict[str, str]:
    """Each page's file name and its text."""
    os.environ["COLUMNS"] = "80"  # argparse wraps help to the terminal: the same everywhere
    from argparse_manpage.manpage import Manpage

    from grantlog.cli.main import build_parser
    from grantlog.cli.parser import walk

    version = _version()
    out: dict[str, str] = {}
    for path, parser in walk(build_parser()):
        page = Manpage(parser, {"project_name": "grantlog", "version": version,
                                "manual_title": "grantlog manual"})
        page.date = ""  # no build date: the pages change only when the parser does
        page.prog = "-".join(["grantlog", *path])  # git's convention: grantlog-store-load(1)
        page.description = (parser.description or "") \
            if path else "a Datalog policy reasoner for data-platform authorization"
        out[page.prog + ".1"] = str(page)
    return out


def _version() -> str:
    from importlib.metadata import version

    return version("grantlog")


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale: list[Path] = []
    want = pages()
    MAN.mkdir(parents=True, exist_ok=True)
    for name, text in sorted(want.items()):
        out = MAN / name
        if out.exists() and out.read_text(encoding="utf-8") == text:
            continue
        stale.append(out)
        if not check:
            out.write_text(text, encoding="utf-8")
    for old in sorted(MAN.glob("*.1")):
        if old.name not in want:  # a command that is gone
            stale.append(old)
            if not check:
                old.unlink()
    for f in stale:
        print(("stale: " if check else "wrote ") + str(f))
    if check and stale:
        print("run `python tools/gen_man.py` to regenerate docs/man", file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
