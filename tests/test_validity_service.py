"""Expiring and scheduled grants through the decision service (issue #28, item 6): a real
`grantlog serve` over a SQLite store; the Python client writes a grant valid for a moment
(the write endpoint's ``timed`` groups) and the watch stream reports its loss when it expires,
without any read or write in between (the service's clock thread: grantlog/service/clock.py);
``now`` on the check endpoint and the client answers at another moment."""

from __future__ import annotations

import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from httpserver import serve, stop

import grantlog
from grantlog.client import Client

ROOT = Path(__file__).resolve().parents[1]
RULES_TEXT = """
rel member(user: string, group: string).
rel grant(group: string, res: string).
allowed(U, "read", R) :- member(U, G), grant(G, R).
grant(eng, t1).
"""


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("valid-serve")
    rules = tmp / "rules.gl"
    rules.write_text(RULES_TEXT)
    store = f"sqlite:///{tmp / 'facts.db'}"
    grantlog.Reasoner(grantlog.compile(None, paths=[str(rules)]), store=store,
                      create=True).close()
    proc, u = serve(tmp, str(rules), "--store", store, "--watch", "allowed",
                    "--allow-unauthenticated-writes")
    yield u
    stop(proc)


def test_watch_reports_the_loss_when_a_grant_expires(url: str) -> None:
    c = Client(url)
    events: queue.Queue[dict[str, object]] = queue.Queue()

    def follow() -> None:
        for n, e in enumerate(c.watch(relation="allowed")):
            events.put(e)
            if n == 1:  # the gain and the loss: close the stream
                break

    threading.Thread(target=follow, daemon=True).start()
    time.sleep(0.5)  # the stream is open
    until = time.time() + 1.5
    c.insert("member", [("ann", "eng")], valid_until=until)
    gained = events.get(timeout=10)
    assert gained["gained"] == [["ann", "read", "t1"]] and "at" not in gained
    assert c.check("ann", "read", "t1").allowed
    lost = events.get(timeout=10)  # no request in between: the service's clock moved
    assert lost["lost"] == [["ann", "read", "t1"]] and lost["gained"] == []
    assert lost["revision"] == gained["revision"]  # passing an edge is no transaction
    assert str(lost["at"]).startswith(time.strftime("%Y-%m-%dT", time.gmtime(until)))
    assert time.time() >= until
    assert not c.check("ann", "read", "t1").allowed


def test_now_answers_at_another_moment(url: str, tmp_path: Path) -> None:
    c = Client(url)
    start = time.time() + 3600
    c.insert("member", [("bea", "eng")], valid_from=start, valid_until=start + 60)
    assert not c.check("bea", "read", "t1").allowed
    assert c.check("bea", "read", "t1", now=start + 1).allowed
    assert not c.check("bea", "read", "t1", now=start + 60).allowed
    got = httpx.post(url + "/v1/check", json={"subject": "bea", "operation": "read",
                                              "resource": "t1", "now": start + 30})
    assert got.status_code == 200 and got.json()["allowed"] is True
    assert "bea" in c.who("read", "t1", now=start + 1)
    assert "bea" not in c.who("read", "t1")
    bad = httpx.post(url + "/v1/check", json={"subject": "bea", "operation": "read",
                                              "resource": "t1", "now": True})
    assert bad.status_code == 422
    wrong = httpx.post(url + "/v1/write", json={"timed": [
        {"relation": "member", "rows": [["x", "eng"]], "valid_from": "2030-01-01",
         "valid_until": "2029-01-01"}]})
    assert wrong.status_code == 422 and "empty-validity" in wrong.text


def test_the_java_client_writes_an_expiring_grant_and_sees_it_expire(
        url: str, tmp_path: Path) -> None:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("no `javac`/`java` on PATH: the Java client needs a JDK 17")
    out = tmp_path / "classes"
    src = sorted(str(p) for p in (ROOT / "examples" / "java").rglob("*.java"))
    built = subprocess.run(["javac", "--release", "17", "-Xlint:all", "-Werror", "-d", str(out),
                            *src], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr

    def java(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(["java", "-cp", str(out), "io.grantlog.Probe", url, "",
                                 *args], stdout=subprocess.PIPE, text=True)

    head = httpx.get(url + "/v1/policy").json()["revision"]
    watching = java("watch2", str(head), "allowed")
    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 4))
    written = java("writevalid", "member", "-", until, "cat", "eng")
    assert written.communicate(timeout=60)[0].startswith("revision ")
    later = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 60))
    (line,) = java("checkat", "cat", "read", "t1", later).communicate(timeout=60)[0] \
        .splitlines()
    assert line.startswith("DENY")
    lines = watching.communicate(timeout=60)[0].splitlines()
    assert lines[0].endswith("gained 1 lost 0")
    assert lines[1].endswith(f"gained 0 lost 1 at {until[:-1]}.000000Z")
