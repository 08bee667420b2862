"""The decision log (grantlog/service/decisionlog.py) when writes fail and when several
processes share it, and `grantlog logs replay` on a torn log.

Writes fail for real: a subprocess under a small ``RLIMIT_FSIZE`` (SIGXFSZ ignored, so a write
past the limit writes what fits and then fails with EFBIG, as on a full disk), or stdout on
/dev/full. Two real processes (two threads each) write through many rotations and every entry
is counted across all the files."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from grantlog.grammar.diagnostics import GrantlogError

from grantlog.service.decisionlog import FAILED, DecisionLog

ROOT = Path(__file__).resolve().parent.parent
RULES = str(ROOT / "rules" / "gravitino.gl")
FACTS = str(ROOT / "examples" / "gravitino" / "facts.gl")
LINUX = sys.platform.startswith("linux")

#: a subprocess: log ENTRIES checks with the file size limited to LIMIT bytes, report what it
#: saw, lift the limit, let ready() write what was kept, log 10 more, report again
FULL_DISK = r"""
import json, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
from grantlog.service.decisionlog import DecisionLog
from grantlog.grammar.diagnostics import GrantlogError
path, limit, n, required = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
kw = {"required": True, "retry_after": 0.2} if required else {}
d = DecisionLog(path, max_bytes=10**9, **kw)
seen = []
d.on_failure = lambda: seen.append(1)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
raised = []
def check(i):
    try:
        d.log("check", f"r{i}", {"subject": f"user{i}", "operation": "load_table",
                                 "resource": "m1.lakehouse.sales.orders"},
              {"allowed": i % 2 == 0, "reasons": ["x"], "revision": 1}, 0.0, 1)
    except GrantlogError as exc:
        raised.append(exc.diagnostics[0].code)
for i in range(n):
    check(i)
with open(path, "rb") as f:
    data = f.read()
report = {"failures": getattr(d, "failures", None), "seen": len(seen),
          "healthy": getattr(d, "healthy", None), "raised": raised,
          "ready_full": d.ready() if hasattr(d, "ready") else None,
          "ends_whole": data.endswith(b"\n"), "size": len(data)}
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
if required:
    import time; time.sleep(0.3)
report["ready_after"] = d.ready() if hasattr(d, "ready") else None
for i in range(n, n + 10):
    check(i)
report["healthy_after"] = getattr(d, "healthy", None)
report["raised_after"] = len(raised)
d.close()
print(json.dumps(report))
"""


def _run(script: str, *args: Any, stdout: Any = subprocess.PIPE,
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], text=True,
                          stdout=stdout, stderr=subprocess.PIPE, timeout=120, cwd=ROOT)


def _full_disk(tmp_path: Path, required: bool,
               ) -> tuple[Path, subprocess.CompletedProcess[str], dict[str, Any]]:
    """300 decisions logged to a file limited to 20 kB (the log, the run, its report)."""
    log = tmp_path / "decisions.jsonl"
    got = _run(FULL_DISK, log, 20_000, 300, int(required))
    assert got.returncode == 0, got.stderr
    return log, got, json.loads(got.stdout)


def _ids(*paths: Path) -> list[str]:
    out = []
    for p in paths:
        for line in p.read_bytes().split(b"\n")[:-1]:
            out.append(json.loads(line)["request_id"])
    return out


@pytest.mark.skipif(not LINUX, reason="RLIMIT_FSIZE and SIGXFSZ as on Linux")
def test_a_full_disk_is_counted_kept_and_written_when_it_recovers(tmp_path: Path) -> None:
    log, got, r = _full_disk(tmp_path, required=False)
    # every entry is in the file, in order, once the log takes writes again: none was lost
    assert _ids(log) == [f"r{i}" for i in range(310)], got.stderr
    # while it failed: counted (once per entry), unhealthy, not ready, no torn line in the file
    assert r["ends_whole"] and r["size"] <= 20_000
    sizes = [len(x) + 1 for x in log.read_bytes().split(b"\n")[:-1]]
    fitted = next(k for k in range(310) if sum(sizes[:k]) == r["size"])
    assert r["failures"] == r["seen"] == 300 - fitted and fitted > 20
    assert r["healthy"] is False and r["ready_full"] is False and r["raised"] == []
    assert r["ready_after"] is True and r["healthy_after"] is True
    # one warning when it starts failing, one when it recovers: not a traceback per entry
    assert "Traceback" not in got.stderr
    assert got.stderr.count("failed: file too large") == 1
    assert got.stderr.count("takes writes again") == 1


@pytest.mark.skipif(not LINUX, reason="RLIMIT_FSIZE and SIGXFSZ as on Linux")
def test_a_required_log_fails_the_decision_instead(tmp_path: Path) -> None:
    log, _, r = _full_disk(tmp_path, required=True)
    ids = _ids(log)
    # the decisions that could not be logged failed (raised), and nothing was kept for later
    assert r["raised"] == [FAILED] * r["failures"] and r["failures"] == 300 - (len(ids) - 10)
    assert r["failures"] > 200 and r["healthy"] is False and r["ready_full"] is False
    # ready again after retry_after, for the next decisions to try: they are logged
    assert r["ready_after"] is True and r["healthy_after"] is True and r["raised_after"] == \
        r["failures"]
    assert ids[-10:] == [f"r{i}" for i in range(300, 310)]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_stdout_that_takes_no_writes_is_counted() -> None:
    script = r"""
import json, sys
from grantlog.service.decisionlog import DecisionLog
d = DecisionLog("-")
for i in range(5):
    d.log("check", f"r{i}", {"subject": "a", "operation": "b", "resource": "c"},
          {"allowed": True, "reasons": []}, 0.0, 1)
sys.stderr.write("REPORT " + json.dumps({"failures": getattr(d, "failures", None),
                                         "healthy": getattr(d, "healthy", None)}) + "\n")
"""
    with open("/dev/full", "wb") as full:
        got = _run(script, stdout=full)
    assert got.returncode == 0, got.stderr
    report = json.loads(got.stderr.split("REPORT ")[1])
    assert report == {"failures": 5, "healthy": False}
    assert "Traceback" not in got.stderr and "no space left on device" in got.stderr


#: a subprocess: wait for GO, then log N entries from two threads, rotating at 8 KiB
WRITER = r"""
import os, sys, threading, time
from grantlog.service.decisionlog import DecisionLog
path, go, name, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
d = DecisionLog(path, max_bytes=8192, backups=500)
while not os.path.exists(go):
    time.sleep(0.001)
def run(t):
    for i in range(n):
        d.log("check", f"{name}-{t}-{i}", {"subject": "u" * (i % 40), "operation": "o",
                                            "resource": "r"},
              {"allowed": True, "reasons": ["x"]}, 0.0, 1)
threads = [threading.Thread(target=run, args=(t,)) for t in range(2)]
for t in threads: t.start()
for t in threads: t.join()
d.close()
"""


@pytest.mark.skipif(not LINUX, reason="flock across processes as on Linux")
def test_two_processes_rotate_without_losing_an_entry(tmp_path: Path) -> None:
    log, go, n = tmp_path / "decisions.jsonl", tmp_path / "go", 1500
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(log), str(go), w, str(n)],
                              cwd=ROOT, stderr=subprocess.PIPE, text=True)
             for w in ("a", "b")]
    time.sleep(1.0)  # both imported and waiting
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "Traceback" not in err
    files = sorted(tmp_path.glob("decisions.jsonl*"), key=lambda p: (len(p.name), p.name))
    files = [f for f in files if not f.name.endswith(".lock")]
    assert len(files) > 50  # it rotated many times, both processes at once
    ids = _ids(*files)
    expected = {f"{w}-{t}-{i}" for w in "ab" for t in range(2) for i in range(n)}
    assert len(ids) == len(expected) and set(ids) == expected  # none lost, none twice
    assert all(f.stat().st_size <= 8192 for f in files)
    # each writer's entries are in order across the files (newest file first)
    order = _ids(*reversed(files))
    for w in "ab":
        for t in range(2):
            mine = [x for x in order if x.startswith(f"{w}-{t}-")]
            assert mine == [f"{w}-{t}-{i}" for i in range(n)]


def test_a_renamed_file_and_a_torn_tail_are_handled(tmp_path: Path) -> None:
    log = tmp_path / "decisions.jsonl"
    d = DecisionLog(str(log))

    def entry(i: int) -> None:
        d.log("check", f"r{i}", {"subject": "a", "operation": "b", "resource": "c"},
              {"allowed": True, "reasons": []}, 0.0, 1)

    entry(0)
    os.rename(log, tmp_path / "old.jsonl")  # logrotate without copytruncate
    entry(1)
    assert _ids(tmp_path / "old.jsonl") == ["r0"] and _ids(log) == ["r1"]
    with open(log, "ab") as f:  # a crash mid-line (another writer, an older version)
        f.write(b'{"time": "2026-01-01T00:00:00.000Z", "request_id": "to')
    entry(2)
    assert _ids(log) == ["r1", "r2"] and d.healthy and d.failures == 0
    d.close()
    # a directory that is not there: refused when the log is opened (at start), not later
    with pytest.raises(GrantlogError, match="cannot open the decision log"):
        DecisionLog(str(tmp_path / "nowhere" / "decisions.jsonl"))


def test_reads_are_logged_with_what_was_asked_and_the_answers_size(tmp_path: Path) -> None:
    log = tmp_path / "decisions.jsonl"
    d = DecisionLog(str(log), mask=["input.subject"], policy="p1")
    t0 = time.perf_counter()
    d.log_read("list", "q1", {"subject": "alice", "operation": "load_table"}, 12, 7, t0,
               next_cursor=True)
    d.log_read("explain", "q2", {"goal": "allowed(alice, load_table, t)"}, 812, 7, t0,
               unit="bytes", holds=True)
    d.close()
    a, b = (json.loads(x) for x in log.read_text().splitlines())
    assert a["endpoint"] == "list" and a["revision"] == 7 and a["policy"] == "p1"
    assert a["input"] == {"subject": "***", "operation": "load_table"}
    assert a["answer"] == {"size": 12, "unit": "answers", "next_cursor": True}
    assert "result" not in a and a["latency_us"] >= 0
    assert b["answer"] == {"size": 812, "unit": "bytes", "holds": True}


def _log_file(path: Path, entries: int, tail: bytes = b"", middle: bytes | None = None) -> None:
    lines = [json.dumps({"time": "t", "request_id": f"r{i}", "endpoint": "check",
                         "revision": 1, "policy": "p",
                         "input": {"subject": "alice", "operation": "load_table",
                                   "resource": "m1.lakehouse.sales.orders"},
                         "result": {"allowed": True, "reasons": []}}).encode()
             for i in range(entries)]
    if middle is not None:
        lines.insert(1, middle)
    lines.append(json.dumps({"time": "t", "request_id": "q", "endpoint": "who",
                             "revision": 1, "policy": "p",
                             "input": {"operation": "load_table", "resource": "x"},
                             "answer": {"size": 3, "unit": "answers"}}).encode())
    path.write_bytes(b"\n".join(lines) + b"\n" + tail)


def test_replay_skips_a_torn_last_line_with_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from grantlog.cli import main

    log = tmp_path / "decisions.jsonl"
    _log_file(log, 3, tail=b'{"time": "t", "request_id": "r3", "input": {"sub')
    assert main(["logs", "replay", str(log), "--rules", RULES, "--facts", FACTS]) == 0
    out, err = capsys.readouterr()
    assert "3 replayed, 0 would change, 1 reads or lookups (not decisions)" in out
    assert f"{log}:5:1: warning[torn-log-line]: the last line is torn" in err
    # a malformed line anywhere else is still an error
    _log_file(log, 3, middle=b'{"time": "t", "request_id": "bad"')
    assert main(["logs", "replay", str(log), "--rules", RULES, "--facts", FACTS]) == 2
    assert f"{log}:2:1: error[bad-log]" in capsys.readouterr().err
    # ... and so is a torn line that a newline ends (something wrote after it)
    _log_file(log, 3, tail=b'{"time": "t", "request_id": "r3", "input": {"sub\n')
    assert main(["logs", "replay", str(log), "--rules", RULES, "--facts", FACTS]) == 2
    assert f"{log}:5:1: error[bad-log]" in capsys.readouterr().err


# -- the service --------------------------------------------------------------------------------

def _serve_limited(tmp: Path, limit: int, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """A server whose files may not grow past ``limit`` bytes (its decision log fills up)."""
    from httpserver import serve

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))

    return serve(tmp, RULES, FACTS, "--decision-log", str(tmp / "decisions.jsonl"), *extra,
                 preexec_fn=limited)


CHECK = {"subject": "alice", "operation": "load_table", "resource": "m1.lakehouse.sales.orders"}


@pytest.mark.skipif(not LINUX, reason="RLIMIT_FSIZE as Linux applies it")
@pytest.mark.parametrize("required", [False, True])
def test_the_service_says_when_its_log_fails(tmp_path: Path, required: bool) -> None:
    from httpserver import stop

    proc, url = _serve_limited(tmp_path, 20_000,
                               *(["--decision-log-required"] if required else []))
    try:
        with httpx.Client(base_url=url, timeout=30) as c:
            assert c.get("/readyz").status_code == 200
            got = [c.post("/v1/check", json=CHECK, headers={"X-Request-Id": f"r{i}"})
                   for i in range(200)]
            failed = [g for g in got if g.status_code != 200]
            if required:
                assert failed and all(g.status_code == 503 and g.json()["error"]["code"]
                                      == FAILED for g in failed)
            else:
                assert not failed
            assert c.get("/readyz").status_code == 503
            metrics = c.get("/metrics").text
            line = next(x for x in metrics.splitlines()
                        if x.startswith("grantlog_decision_log_failures_total"))
            assert float(line.split()[-1]) >= (len(failed) if required else 100)
            # the disk has room again: ready, and (without --decision-log-required) every
            # entry kept meanwhile is written, in order
            _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
            resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, hard))
            deadline = time.monotonic() + 10
            while c.get("/readyz").status_code != 200:
                assert time.monotonic() < deadline
                time.sleep(0.2)
            assert c.post("/v1/check", json=CHECK,
                          headers={"X-Request-Id": "last"}).status_code == 200
    finally:
        stop(proc)
    ids = _ids(tmp_path / "decisions.jsonl")
    ok = [f"r{i}" for i, g in enumerate(got) if g.status_code == 200]
    assert ids == [*ok, "last"]
