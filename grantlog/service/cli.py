"""``grantlog serve [RULES...] [--store URL] [--host H] [--port P] [--workers N] [--tokens F]``.

With a store, RULES are installed in it as its policy when the server starts (workers and
restarted workers read the store's newest policy, which ``PUT /v1/policy`` replaces); without
RULES the store's newest policy is served."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from typing import Any

from grantlog.cli.inputs import HELP_FACTS, HELP_STRICT, add_json, add_model
from grantlog.grammar.diagnostics import GrantlogError, Span, error, plural

#: the limits reads and connections run under, each a positive number: (flag, type, default,
#: metavar, help)
LIMITS: tuple[tuple[str, type, float, str, str], ...] = (
    ("--read-deadline", float, 30.0, "SECONDS",
     "cancel a read (list, who, query, explain, filter, rows) that takes longer, answering "
     "504 (default 30)"),
    ("--read-memory", int, 2048, "MIB",
     "what one read may allocate beyond the worker's shared memory; more is answered 422 "
     "too-large (default 2048)"),
    ("--readers", int, 2, "N",
     "reads answered at once per worker, each in a forked snapshot (default 2)"),
    ("--read-cpu", float, 0.25, "SHARE",
     "the share of a CPU a running read may use, 0.05 to 1 (default 0.25: reads take longer, "
     "checks keep their latency on a machine with no core to spare)"),
    ("--max-rows", int, 1_000_000, "N",
     "answers an unpaged list, who or query may return; more is 422 too-large (page with "
     "limit and cursor; default 1000000)"),
    ("--header-timeout", float, 10.0, "SECONDS",
     "close a connection whose request headers take longer (default 10)"),
)


def add_parser(sub: Any) -> None:
    sp = sub.add_parser("serve", help="the decision service over HTTP/JSON (docs/service.md)",
                        description="serve decisions over HTTP/JSON (docs/service.md)")
    sp.add_argument("files", nargs="*", metavar="FILE",
                    help="rule files (or directories); with --store, optional: the store's "
                    "policy (installed by an earlier start or PUT /v1/policy) is served")
    add_model(sp)
    sp.add_argument("--facts", "-f", action="append", metavar="FILE", help=HELP_FACTS)
    sp.add_argument("--store", "-s", metavar="URL",
                    help="the facts' store (needed with more than one worker)")
    sp.add_argument("--create", action="store_true",
                    help="create the --store if it does not exist (else: store-not-found)")
    sp.add_argument("--host", default="127.0.0.1", help="the address to bind (127.0.0.1)")
    sp.add_argument("--port", type=int, default=8181, help="the port to listen on (8181)")
    sp.add_argument("--workers", type=int, default=1,
                    help="worker processes; they share the store and follow its log")
    sp.add_argument("--tokens", metavar="FILE",
                    help="bearer tokens: one `TOKEN SCOPE[,SCOPE...]` per line "
                    "(scopes: check, write, admin); also $GRANTLOG_TOKENS")
    sp.add_argument("--allow-unauthenticated-writes", action="store_true",
                    help="without --tokens, accept writes from anyone (local development)")
    sp.add_argument("--max-body", type=int, default=8 * 2**20, metavar="BYTES",
                    help="refuse a request body larger than this, 413 (default 8 MiB)")
    sp.add_argument("--max-batch", type=int, default=10_000, metavar="N",
                    help="the most checks one batch request may hold (default 10000)")
    sp.add_argument("--ssl-certfile", metavar="FILE", help="serve HTTPS with this certificate")
    sp.add_argument("--ssl-keyfile", metavar="FILE",
                    help="the private key of --ssl-certfile")
    sp.add_argument("--watch", action="append", metavar="REL",
                    help="a relation whose changes /v1/watch streams and /v1/write reports, "
                    "e.g. allowed (repeatable; default: none, because every write then "
                    "computes the relation's changes)")
    sp.add_argument("--decision-log", metavar="PATH",
                    help="log every decision as a JSON line to PATH (rotated by size) or - "
                    "(stdout)")
    sp.add_argument("--decision-log-sample", type=float, default=1.0, metavar="RATE",
                    help="the share of decisions logged (0..1, default 1)")
    sp.add_argument("--decision-log-mask", action="append", metavar="FIELD",
                    help="a field written as *** (e.g. input.subject); repeatable")
    sp.add_argument("--decision-log-max-bytes", type=int, default=100 * 2**20,
                    metavar="BYTES", help="rotate the log file at this size (5 kept)")
    sp.add_argument("--decision-log-required", action="store_true",
                    help="a decision whose log entry cannot be written fails (503); without "
                    "it the decision is answered, the entry waits in memory and /readyz "
                    "says 503 until the log takes writes again")
    sp.add_argument("--opa", action="append", metavar="MAPPING",
                    help="answer OPA's Data API (POST /v1/data/...) for a platform's plugin: "
                    "a shipped mapping (trino, polaris) or a mapping file (docs/opa.md); "
                    "repeatable")
    sp.add_argument("--ui", action="store_true",
                    help="also serve the explorer at /ui, behind the same tokens (one worker; "
                    "prints a one-time sign-in link: docs/explorer.md)")
    sp.add_argument("--ui-host", action="append", metavar="NAME",
                    help="a Host name the /ui page is opened by, besides the loopback ones "
                    "and --host (repeatable; no other is answered: no DNS rebinding)")
    for flag, kind, default, metavar, help in LIMITS:
        sp.add_argument(flag, type=kind, default=default, metavar=metavar, help=help)
    sp.add_argument("--strict", action="store_true", help=HELP_STRICT)
    add_json(sp, "also announce the start on stderr as a JSON line (rule files, policy, "
             "workers, url), for scripts")
    sp.add_argument("--log-level", default="warning",
                    choices=["critical", "error", "warning", "info", "debug", "trace"],
                    help="the server's log level (default warning)")
    sp.set_defaults(fn=cmd_serve)


def cmd_serve(a: argparse.Namespace) -> int:
    try:
        import uvicorn

        from .app import CONFIG_ENV, Config, check_watched, create_app
        from .metrics import MULTIPROC_ENV
    except ImportError as exc:
        raise GrantlogError([error("missing-dependency", f"the service needs its extra ({exc})",
                                   Span("<command line>", 0, 0, 0, 0),
                                   "install it with `pip install 'grantlog[service]'`")]) \
            from None
    from grantlog.cli.inputs import COMMAND_LINE, rule_files

    from . import policy

    here = COMMAND_LINE
    rules = rule_files(a, a.files) if a.files or a.model or a.facts or not a.store else []
    if a.workers < 1:
        raise GrantlogError([error("bad-option", "--workers must be at least 1", here)])
    if a.workers > 1 and not a.store:
        raise GrantlogError([error(
            "bad-option", "several workers need a store to share facts", here,
            "add --store sqlite:///facts.db (or postgresql://...), or use one worker")])
    config = Config(rules=rules, store=a.store, create=a.create, tokens=a.tokens,
                    allow_unauthenticated_writes=a.allow_unauthenticated_writes,
                    strict=a.strict, max_body=a.max_body, max_batch=a.max_batch,
                    watch=a.watch or [], decision_log=a.decision_log,
                    decision_log_sample=a.decision_log_sample,
                    decision_log_mask=a.decision_log_mask,
                    decision_log_max_bytes=a.decision_log_max_bytes,
                    decision_log_required=a.decision_log_required, opa=a.opa or [],
                    read_deadline=a.read_deadline, read_memory=a.read_memory * 2**20,
                    readers=a.readers, max_rows=a.max_rows, read_cpu=a.read_cpu,
                    ui=a.ui, ui_bind=a.host, ui_hosts=a.ui_host or [])
    if a.ui and a.workers > 1:
        raise GrantlogError([error("bad-option", "--ui serves from one worker (its sign-ins "
                                   "live in the worker's memory)", here,
                                   "drop --workers, or serve the page from a one-worker "
                                   "server of the same store")])
    for flag, *_ in LIMITS:
        if not getattr(a, flag[2:].replace("-", "_")) > 0:
            raise GrantlogError([error("bad-option", f"{flag} must be positive", here)])
    if not 0.0 <= a.decision_log_sample <= 1.0:
        raise GrantlogError([error("bad-option", "--decision-log-sample is a share from 0 to 1",
                                   here)])
    _check_listen(a.host, a.port)  # a port in use is exit 2, before anything says "listening"
    ssl: dict[str, Any] = {"ssl_certfile": a.ssl_certfile, "ssl_keyfile": a.ssl_keyfile} \
        if a.ssl_certfile else {}
    from . import auth, protocol

    # a tokens file without a token is refused here, before any worker starts
    auth.load(a.tokens, a.allow_unauthenticated_writes, warn=lambda m: sys.stderr.write(m + "\n"))
    os.environ[protocol.ENV] = str(a.header_timeout)  # read by the workers too
    if a.workers == 1:
        app = create_app(config)  # errors in the rules or the store surface here, exit 2
        program = app.state.service.program
        sys.stderr.write(f"grantlog serve: {plural(len(program.files), 'rule file')}, policy "
                         f"{program.digest}, listening on "
                         f"http{'s' if ssl else ''}://{a.host}:{a.port}\n")
        _announce(a, program, 1, ssl)
        if a.ui:
            _ui_link(app, a, ssl)
        uvicorn.run(app, host=a.host, port=a.port, log_level=a.log_level,
                    access_log=False, http=protocol.PATH, **ssl)
        return 0
    # install the rules in the store (or find its policy) before starting the workers, which
    # read the store's newest policy: errors in the rules or the store surface here, exit 2
    program, _ = policy.initial(rules, a.store, True, a.strict, a.create)
    check_watched(program, config.watch or [], "<command line>")
    config.install = False
    os.environ[CONFIG_ENV] = config.to_env()
    shared = None
    if not os.environ.get(MULTIPROC_ENV):  # the workers' metrics, summed by /metrics
        shared = tempfile.mkdtemp(prefix="grantlog-metrics-")
        os.environ[MULTIPROC_ENV] = shared
    sys.stderr.write(f"grantlog serve: {a.workers} workers, policy {program.digest}, on "
                     f"http{'s' if ssl else ''}://{a.host}:{a.port}\n")
    _announce(a, program, a.workers, ssl)
    try:
        uvicorn.run("grantlog.service.app:from_env", factory=True, host=a.host, port=a.port,
                    workers=a.workers, log_level=a.log_level, access_log=False,
                    http=protocol.PATH, **ssl)
    finally:
        if shared is not None:
            shutil.rmtree(shared, ignore_errors=True)
    return 0


def _announce(a: argparse.Namespace, program: Any, workers: int, ssl: dict[str, Any]) -> None:
    """With ``--json``, the start said again as one JSON line on stderr, for scripts:
    ``{"serving": {"rule_files", "policy", "workers", "url"}}``."""
    import json

    if a.json:
        url = f"http{'s' if ssl else ''}://{a.host}:{a.port}"
        sys.stderr.write(json.dumps({"serving": {"rule_files": len(program.files),
                                                 "policy": program.digest,
                                                 "workers": workers, "url": url}}) + "\n")
        sys.stderr.flush()


def _ui_link(app: Any, a: argparse.Namespace, ssl: dict[str, Any]) -> None:
    """Where the page is: with tokens, a one-time sign-in link (the ``check`` scope: to view
    and ask; its code is in the fragment, which no request carries)."""
    gate = app.state.ui
    host = "127.0.0.1" if a.host in ("0.0.0.0", "::") else a.host
    host = f"[{host}]" if ":" in host else host
    url = f"http{'s' if ssl else ''}://{host}:{a.port}/ui/"
    if gate.sessions.tokens.enabled:
        code = gate.sessions.link(frozenset({"check"}))
        url = f"{url}login#{code}"
        sys.stderr.write(f"grantlog serve: the explorer: {url} (one use, within 10 minutes, "
                         "to view and ask; to edit, sign in with an admin token at /ui/login)"
                         "\n")
    else:
        sys.stderr.write(f"grantlog serve: the explorer: {url} (no tokens: open for viewing; "
                         "editing needs --tokens)\n")
    sys.stderr.flush()


def _check_listen(host: str, port: int) -> None:
    """``cannot-listen`` when ``host:port`` cannot be bound as uvicorn binds it (a port in
    use, a privileged port, an address not of this machine), before the rules are loaded."""
    import errno
    import socket

    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    why = None
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            sock.bind((host, port))
        except OSError as exc:
            why = ("the port is in use" if exc.errno == errno.EADDRINUSE
                   else "permission denied" if exc.errno == errno.EACCES
                   else (exc.strerror or str(exc)).lower())
    if why is not None:
        where = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
        raise GrantlogError([error(
            "cannot-listen", f"cannot listen on `{where}`: {why}",
            Span("<command line>", 0, 0, 0, 0),
            "stop the other server, or choose another port with --port (or address with --host)")])
