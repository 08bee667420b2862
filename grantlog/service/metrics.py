"""Prometheus metrics of one worker: decisions by result, request latency by endpoint,
the revision and the lag behind the store, store errors."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

#: latency buckets (seconds): checks take tens of microseconds, lists up to seconds
BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
           1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.decisions = Counter("grantlog_decisions", "decisions by result",
                                 ["result"], registry=self.registry)
        self.latency = Histogram("grantlog_request_seconds", "request latency by endpoint",
                                 ["endpoint"], buckets=BUCKETS, registry=self.registry)
        self.revision = Gauge("grantlog_revision", "the revision this worker has applied",
                              registry=self.registry)
        self.lag = Gauge("grantlog_revision_lag", "revisions the store is ahead of this "
                         "worker (at the last readiness check)", registry=self.registry)
        self.store_errors = Counter("grantlog_store_errors", "store failures seen",
                                    registry=self.registry)
        self.policy_changes = Counter("grantlog_policy_changes", "policies this worker "
                                      "switched to", registry=self.registry)
        self.policy_errors = Counter("grantlog_policy_errors", "policies this worker failed "
                                     "to compile or load (it kept the old one)",
                                     registry=self.registry)
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
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
