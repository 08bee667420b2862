"""``grantlog explore [RULES...] [--model M] [--facts F | --store URL] [--port P]
[--no-open]``: the explorer on http://127.0.0.1:P/ (docs/explorer.md). Starlette and uvicorn
are imported when the command runs, not when the parser is built."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from grantlog.cli.inputs import HELP_FACTS, HELP_STORE, add_model

HOST = "127.0.0.1"


def add_parser(sub: Any) -> None:
    sp = sub.add_parser("explore", help="a local web page to edit rules, ask, and see proofs as "
                        "graphs (docs/explorer.md)",
                        description="start the explorer on 127.0.0.1: a web page with the rules "
                        "and their diagnostics as you type, the facts, an ask bar, proofs and "
                        "why-nots as graphs, and pinned checks that re-run on every edit "
                        "(docs/explorer.md); offline, nothing leaves the machine")
    sp.add_argument("files", nargs="*", metavar="FILE",
                    help="rule files (or directories) the page edits; without them, the "
                    "--model's file")
    add_model(sp)
    src = sp.add_mutually_exclusive_group()
    src.add_argument("--facts", "-f", action="append", metavar="FILE", help=HELP_FACTS)
    src.add_argument("--store", "-s", metavar="URL", help=HELP_STORE)
    sp.add_argument("--port", type=int, default=8383,
                    help="the port on 127.0.0.1 to listen on (8383; 0: any free port)")
    sp.add_argument("--no-open", action="store_true",
                    help="do not open the page in a browser")
    sp.add_argument("--log", metavar="FILE",
                    help="a decision log (`grantlog serve --decision-log FILE`) whose checks "
                    "the what-if pane replays under the draft rules")
    sp.set_defaults(fn=cmd_explore)


def cmd_explore(a: argparse.Namespace) -> int:
    import socket
    import threading
    import webbrowser

    import uvicorn

    from .app import create_app
    from .workspace import Workspace

    ws = Workspace.open(a.files, a.model, a.facts or [], a.store)
    ws.log = a.log
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, a.port))
    except OSError as e:
        from grantlog.grammar.diagnostics import GrantlogError, Span, error

        raise GrantlogError([error("cannot-listen", f"cannot listen on {HOST}:{a.port} "
                                   f"({e.strerror})", Span("<command line>", 0, 0, 0, 0),
                                   "choose another --port (0: any free one)")]) from None
    url = f"http://{HOST}:{sock.getsockname()[1]}/"
    sys.stderr.write(f"grantlog explore: {url} (Ctrl-C stops)\n")
    sys.stderr.flush()
    if not a.no_open:
        threading.Timer(0.5, webbrowser.open, (url,)).start()
    server = uvicorn.Server(uvicorn.Config(create_app(ws), log_level="warning",
                                           lifespan="off"))
    try:
        server.run(sockets=[sock])
    finally:
        ws.close()
    return 0
