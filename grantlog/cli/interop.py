"""Other systems' data: ``import gravitino``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from grantlog.engine import compile_program
from grantlog.grammar.diagnostics import plural

from .history import add_meta, meta
from .inputs import EXIT_OK, model_file


def cmd_import(a: argparse.Namespace) -> int:
    from grantlog.interop.gravitino import load_gravitino_dir, to_gl

    facts = load_gravitino_dir(Path(a.dir), a.metalake)
    if a.store:
        from grantlog.store import open_store

        program = compile_program(None, [model_file("gravitino")])
        st = open_store(a.store, program, create=a.create)
        try:
            with st.writing(meta(a)) as w:
                added = sum(w.load(rel, [tuple(r) for r in rows])
                            for rel, rows in sorted(facts.items()))
        finally:
            st.close()
        n = sum(len(v) for v in facts.values())
        sys.stderr.write(f"stored {added} new facts of {n} in {a.store}"
                         + (f" as revision {w.committed}\n" if w.committed else "\n"))
        if not a.output:
            return EXIT_OK
    text = to_gl(facts)
    if a.output:
        Path(a.output).write_text(text, encoding="utf-8")
        n = sum(len(v) for v in facts.values())
        sys.stderr.write(f"wrote {plural(n, 'fact')} to {a.output}\n")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def add_parser(sub: Any) -> None:
    sp = sub.add_parser("import", help="turn another system's export into facts",
                        description="turn another system's export into a .gl fact file")
    isub = sp.add_subparsers(dest="system", required=True, metavar="SYSTEM")
    ip = isub.add_parser("gravitino", help="Apache Gravitino REST JSON (users, groups, roles, "
                         "owners) -> facts for rules/gravitino.gl")
    ip.add_argument("dir", metavar="DIR",
                    help="a directory of Gravitino REST responses (users, groups, roles, "
                    "owners as JSON)")
    ip.add_argument("--metalake", default="m1", help="the metalake the files describe")
    ip.add_argument("--output", "-o", help="write the facts here instead of stdout")
    ip.add_argument("--store", "-s", metavar="URL",
                    help="write the facts into this store (one transaction) instead of stdout")
    ip.add_argument("--create", action="store_true",
                    help="create the --store if it does not exist (else: store-not-found)")
    add_meta(ip)
    ip.set_defaults(fn=cmd_import)
