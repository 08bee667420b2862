"""Decision logs: every decision (or a sample) as one JSON line.

``{"time", "request_id", "endpoint", "revision", "policy", "input": {subject, operation,
resource}, "result": {allowed, reasons[, error]}, "latency_us"}`` — to a file rotated by size
(``--decision-log PATH``, ``--decision-log-max-bytes``, five old files kept) or to stdout
(``--decision-log -``). ``--decision-log-sample 0.1`` keeps one decision in ten;
``--decision-log-mask input.subject`` (repeatable) writes ``"***"`` instead of a field.
``grantlog logs replay`` (grantlog/service/replay.py) re-decides logged requests under other
rules.
"""

from __future__ import annotations

import logging
import logging.handlers
import random
import sys
import time
import uuid
from typing import Any

import orjson

from . import MASK


class DecisionLog:
    def __init__(self, target: str, sample: float = 1.0, mask: list[str] | None = None,
                 max_bytes: int = 100 * 2**20, policy: str = "") -> None:
        self.sample = sample
        self.policy = policy
        self.mask = [tuple(m.split(".")) for m in mask or []]
        self.logger = logging.getLogger(f"grantlog.decisions.{id(self)}")
        self.logger.propagate = False
        self.logger.setLevel(logging.INFO)
        handler: logging.Handler
        if target == "-":
            handler = logging.StreamHandler(sys.stdout)
        else:
            handler = logging.handlers.RotatingFileHandler(target, maxBytes=max_bytes,
                                                           backupCount=5, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(message)s"))
        self.logger.addHandler(handler)

    @staticmethod
    def request_id(headers: Any) -> str:
        """The caller's ``X-Request-Id``, or a new one."""
        got = headers.get("x-request-id") if headers is not None else None
        return got[:200] if got else uuid.uuid4().hex

    def log(self, endpoint: str, request_id: str, inp: dict[str, Any],
            result: dict[str, Any], started: float, revision: int) -> None:
        if self.sample < 1.0 and random.random() >= self.sample:
            return
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) +
            f".{int(time.time() * 1000) % 1000:03d}Z",
            "request_id": request_id, "endpoint": endpoint, "revision": revision,
            "policy": self.policy, "input": dict(inp),
            "result": {k: v for k, v in result.items() if k != "revision"},
            "latency_us": round((time.perf_counter() - started) * 1e6, 1)}
        for path in self.mask:
            node: Any = entry
            for key in path[:-1]:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, dict) and path[-1] in node:
                node[path[-1]] = MASK
        self.logger.info(orjson.dumps(entry).decode())

    def close(self) -> None:
        for h in list(self.logger.handlers):
            h.close()
            self.logger.removeHandler(h)
