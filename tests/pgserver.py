"""A throwaway PostgreSQL server for the tests and benchmarks, from the machine's binaries.

``initdb`` on a temporary directory, ``pg_ctl start`` on 127.0.0.1 and a free port, ``pg_ctl
stop`` at the end. PostgreSQL refuses to run as root, so as root the server runs as the
``postgres`` user (which the Debian packages create). :func:`find_bin` says where the binaries
are, or None (the PostgreSQL tests then skip and say so).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from urllib.parse import quote


def find_bin() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl``: $PG_BIN, PATH, then Debian's layout."""
    env = os.environ.get("PG_BIN")
    if env and (Path(env) / "initdb").exists():
        return Path(env)
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(d) / "initdb").exists() and (Path(d) / "pg_ctl").exists():
            return Path(d)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    """``with PgServer() as pg: pg.url`` — a server for the block's duration."""

    def __init__(self, durable: bool = False) -> None:
        bindir = find_bin()
        if bindir is None:
            raise RuntimeError("no PostgreSQL server binaries (initdb, pg_ctl) on this machine")
        self.bin = bindir
        #: fsync on (benchmarks measure real commits); off for the tests' speed
        self.durable = durable
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="grantlog-pg-"))
        self.user: str | None = None
        if os.geteuid() == 0:  # initdb refuses root
            self.user = "postgres"
            pw = pwd.getpwnam(self.user)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.data = self.dir / "data"
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        subprocess.run([str(a) for a in args], check=True, user=self.user,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=self.dir)

    def start(self) -> PgServer:
        self._run(self.bin / "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "-E", "UTF8", "--no-sync")
        opts = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir} "
                "-c max_connections=200 -c shared_buffers=256MB")
        if not self.durable:
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(self.bin / "pg_ctl", "-D", str(self.data), "-o", opts,
                  "-l", str(self.dir / "log"), "-w", "-t", "60", "start")
        return self

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._run(self.bin / "pg_ctl", "-D", str(self.data), "-m", "immediate", "-w",
                      "stop")
        shutil.rmtree(self.dir, ignore_errors=True)

    @classmethod
    def attach(cls, url: str) -> PgServer:
        """The server another process started and stops (a split test run's controller):
        ``url`` and ``schema_url`` only."""
        server = cls.__new__(cls)
        server.url = url
        return server

    def schema_url(self, name: str | None = None) -> str:
        """A URL whose tables go to a new schema of their own (a fresh, empty store)."""
        import psycopg

        name = name or "s" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        return f"{self.url}?options={quote('-csearch_path=' + name)}"

    def __enter__(self) -> PgServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
