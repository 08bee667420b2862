"""Several processes on one store, and writers killed at random moments (SIGKILL): run
against SQLite and PostgreSQL (``store_url``)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import grantlog
from grantlog.store import open_store

HERE = Path(__file__).resolve().parent
WORKER = HERE / "store_worker.py"
RULES = """
rel member(user: string, group: string).
rel level(user: string, n: int).
rel grant(group: string, op: string, res: string).
grant(eng, read, t1).
allowed(U, O, R) :- member(U, G), grant(G, O, R).
busy(U) :- level(U, N), N > 5.
"""


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    path = tmp_path / "rules.gl"
    path.write_text(RULES, encoding="utf-8")
    return path


def _worker(url: str, rules: Path, name: str, count: int, shared: bool = False,
            ) -> subprocess.Popen[str]:
    args = [sys.executable, str(WORKER), url, str(rules), name, str(count)]
    if shared:
        args.append("shared")
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(HERE)})


def _from_scratch(program: grantlog.Program, url: str) -> dict[str, set[tuple[object, ...]]]:
    """Every relation evaluated from scratch in memory over the store's facts."""
    st = open_store(url, program)
    try:
        _, rows = st.snapshot()
    finally:
        st.close()
    r = grantlog.Reasoner(program)
    for rel, rs in rows.items():
        r.insert(rel, rs)
    return r.all_rows()


def test_writers_in_several_processes_never_lose_or_interleave(store_url: str,
                                                               rules: Path) -> None:
    program = grantlog.compile(paths=[str(rules)])
    with grantlog.Reasoner(program, store=store_url) as follower:  # follows as they write
        procs = [_worker(store_url, rules, f"p{k}", 20, shared=True) for k in range(3)]
        revisions: list[int] = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            revisions += [int(line.split()[2]) for line in out.splitlines()
                          if line.startswith("ack")]
        # every transaction changed something and got its own revision, in one sequence
        assert sorted(revisions) == list(range(1, 61))
        follower.wait_for(60, timeout=30)
        st = follower.store.stats()
        assert st["revision"] == 60 and st["log_transactions"] == 60
        assert st["facts"]["member"] - 60 in (0, 1) and st["facts"]["level"] == 60
        expected = _from_scratch(program, store_url)
        assert follower.all_rows() == expected
    with grantlog.Reasoner(program, store=store_url, follow=False) as reopened:
        assert reopened.all_rows() == expected


def test_a_writer_killed_at_random_moments_loses_only_the_unacknowledged(
        store_url: str, rules: Path) -> None:
    program = grantlog.compile(paths=[str(rules)])
    rng = random.Random(7)
    acked: set[int] = set()
    for round_ in range(10):
        name = f"k{round_}"
        p = _worker(store_url, rules, name, 10_000)
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready"
        lines: list[str] = []
        reader = threading.Thread(target=lines.extend, args=(p.stdout,), daemon=True)
        reader.start()
        time.sleep(rng.uniform(0.05, 0.6))
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        reader.join(timeout=30)
        mine = {int(line.split()[1]) for line in lines if line.startswith("ack")}
        print(f"round {round_}: {len(mine)} acknowledged before the kill")
        st = open_store(store_url, program)
        try:
            _, rows = st.snapshot()
        finally:
            st.close()
        stored = {int(u.rsplit("-", 1)[1]) for u, _ in rows["member"] if u.startswith(name + "-")}
        levels = {int(u.rsplit("-", 1)[1]) for u, _ in rows["level"]
                  if u.startswith(name + "-")}
        assert stored == levels, "half a transaction is stored"
        assert mine <= stored, "an acknowledged transaction was lost"
        assert len(stored - mine) <= 1, "more than the one transaction in flight"
        assert stored == set(range(len(stored))), "transactions stored out of order"
        acked |= {hash((name, i)) for i in mine}
        with grantlog.Reasoner(program, store=store_url, follow=False) as reopened:
            assert reopened.all_rows() == _from_scratch(program, store_url)
    assert acked, "no round acknowledged a transaction before the kill"
