"""Prometheus metrics: decisions by result, request latency by endpoint, the revision and the
lag behind the store, store errors, policy changes, decision log failures.

With several workers, ``grantlog serve`` gives them a shared directory
(``$PROMETHEUS_MULTIPROC_DIR``, prometheus_client's multiprocess mode) before they start: every
worker writes its values there, and ``/metrics`` on any worker answers for all of them
(counters and histograms summed, the revision and lag gauges per live worker, labelled by
``pid``). A worker that starts removes the gauges of workers that are gone (a worker killed
and replaced). With one worker the values stay in the process.
"""

from __future__ import annotations

import glob
import os
import re
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

#: latency buckets (seconds): checks take tens of microseconds, lists up to seconds
BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
           1.0, 2.5, 5.0, 10.0)
#: the environment variable of prometheus_client's multiprocess mode
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def shared_dir() -> str | None:
    """The multiprocess directory, when this process is one of several workers."""
    return os.environ.get(MULTIPROC_ENV) or None


def _sweep(path: str) -> None:
    """Remove the live gauges of processes that no longer exist."""
    from prometheus_client import multiprocess

    for f in glob.glob(os.path.join(path, "gauge_live*_*.db")):
        m = re.search(r"_(\d+)\.db$", f)
        if m is None:
            continue
        pid = int(m.group(1))
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            multiprocess.mark_process_dead(pid, path)  # type: ignore[no-untyped-call]
        except PermissionError:
            pass  # alive, another user's


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.shared = shared_dir()
        if self.shared is not None:
            _sweep(self.shared)
        self.decisions = Counter("grantlog_decisions", "decisions by result",
                                 ["result"], registry=self.registry)
        self.latency = Histogram("grantlog_request_seconds", "request latency by endpoint",
                                 ["endpoint"], buckets=BUCKETS, registry=self.registry)
        self.revision = Gauge("grantlog_revision", "the revision this worker has applied",
                              registry=self.registry, multiprocess_mode="liveall")
        self.lag = Gauge("grantlog_revision_lag", "revisions the store is ahead of this "
                         "worker (at the last readiness check)", registry=self.registry,
                         multiprocess_mode="liveall")
        self.store_errors = Counter("grantlog_store_errors", "store failures seen",
                                    registry=self.registry)
        self.policy_changes = Counter("grantlog_policy_changes", "policies this worker "
                                      "switched to", registry=self.registry)
        self.policy_errors = Counter("grantlog_policy_errors", "policies this worker failed "
                                     "to compile or load (it kept the old one)",
                                     registry=self.registry)
        self.decision_log_failures = Counter(
            "grantlog_decision_log_failures", "decision log entries that could not be written "
            "when logged (kept for later, or the decision failed with --decision-log-required)",
            registry=self.registry)
        self.decision_log_dropped = Counter(
            "grantlog_decision_log_dropped", "decision log entries kept after a failed write "
            "and dropped for good (too many waited)", registry=self.registry)
        #: the labelled children, bound once (``labels()`` takes a lock and a dict lookup on
        #: every call, and checks are the hot path)
        self.decided = {result: self.decisions.labels(result)
                        for result in ("allow", "deny", "error")}
        self._latency: dict[str, Any] = {}

    def latency_of(self, endpoint: str) -> Any:
        """The latency histogram of one endpoint."""
        child = self._latency.get(endpoint)
        if child is None:
            child = self._latency[endpoint] = self.latency.labels(endpoint)
        return child

    def render(self) -> tuple[bytes, str]:
        if self.shared is None:
            return generate_latest(self.registry), CONTENT_TYPE_LATEST
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, self.shared)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
