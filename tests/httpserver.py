"""Starting a real `grantlog serve` subprocess on a free port of 127.0.0.1 (the service tests)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(tmp: Path, *extra: str, env: dict[str, str] | None = None,
          preexec_fn: Callable[[], None] | None = None, ready: str = "/healthz",
          timeout: float = 60, cwd: Path | None = None,
          ) -> tuple[subprocess.Popen[bytes], str]:
    """``grantlog serve --port P *extra``, once it answers ``ready`` (/healthz) within
    ``timeout`` seconds; its stderr goes to a file in ``tmp`` (shown if it dies while
    starting). ``preexec_fn``: run in the server's process before it starts (resource limits,
    say). The benchmarks start their servers here too (benchmarks/harness.py)."""
    port = free_port()
    log = tmp / f"serve-{port}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "grantlog.cli", "serve", "--port", str(port), *extra],
        stdout=subprocess.DEVNULL, stderr=open(log, "wb"),  # noqa: SIM115
        env={**os.environ, "GRANTLOG_TOKENS": "", **(env or {})}, preexec_fn=preexec_fn,
        cwd=cwd)  # ``cwd``: the server's working directory (default: the tests')
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(log.read_text())
        try:
            if httpx.get(url + ready, timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)  # not answering yet, or not ready (a store still loading)
    proc.kill()
    raise RuntimeError("the server did not start")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def workers(pid: int) -> list[int]:
    """A server's worker processes (not multiprocessing's resource tracker), from Linux's
    /proc."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                cmd = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:
                continue
            if b"resource_tracker" not in cmd:
                out.append(int(child))
    return out
