"""``PUT /v1/policy`` on a live `grantlog serve`: a policy is compiled and checked before it
serves, a broken one never replaces a working one, every worker (and a worker restarted after a
SIGKILL) serves the newest policy in the store, and a restart serves it too."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from grantlog.engine.compile.compiler import compile_program
from grantlog.grammar.diagnostics import GrantlogError
from httpserver import serve, stop, workers

import grantlog

ROOT = Path(__file__).resolve().parent.parent
POLICY = (ROOT / "examples" / "demo" / "policy.gl").read_text()
FACTS = str(ROOT / "examples" / "demo" / "facts.gl")
ADMIN = "admin-token-0123456789"
WRITER = "writer-token-0123456789"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
#: a second file: members of `admins` may do anything on any object
ADMINS = ('import "policy.gl".\n\n/// Members of admins may do anything.\n'
          "admin_all: allowed(U, Op, O) :- member(U, admins), contains(_, O), needs(Op, _).\n")
V2 = {"policy.gl": POLICY, "admins.gl": ADMINS}
DAVE = {"subject": "dave", "operation": "drop_table", "resource": "m1.c1.s1.t1"}


def _store(tmp: Path) -> str:
    from grantlog.cli import main

    store = f"sqlite:///{tmp / 'facts.db'}"
    rules = tmp / "policy.gl"
    rules.write_text(POLICY)
    assert main(["store", "load", store, FACTS, "--rules", str(rules), "--create"]) == 0
    (tmp / "tokens").write_text(f"{ADMIN} check,write,admin\n{WRITER} check,write\n")
    return store


def _client(url: str, token: str = ADMIN) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def _hash(files: dict[str, str]) -> str:
    d = Path("/nonexistent")
    return compile_program(None, sorted(files), files=files, disk=False,
                           search_path=[d]).digest


def test_a_policy_is_checked_first_and_a_broken_one_never_serves(tmp_path: Path) -> None:
    store = _store(tmp_path)
    proc, url = serve(tmp_path, str(tmp_path / "policy.gl"), "--store", store, "--tokens",
                      str(tmp_path / "tokens"), "--watch", "allowed")
    try:
        with _client(url) as c, _client(url, WRITER) as w:
            before = c.get("/v1/policy").json()
            assert before["files"] == [str(tmp_path / "policy.gl")] and before["serial"] == 1
            assert w.post("/v1/write", json={"insert": {"member": [["dave", "admins"]]}}) \
                .status_code == 200
            assert c.post("/v1/check", json=DAVE).json()["allowed"] is False

            # a syntax error: 422 with file:line:col, and the old policy keeps serving
            broken = {"policy.gl": POLICY + "\nbroken(X :- y.\n"}
            got = c.put("/v1/policy", json={"files": broken})
            assert got.status_code == 422, got.text
            err = got.json()["error"]
            line = POLICY.count("\n") + 2
            d = err["diagnostics"][0]
            assert (d["file"], d["line"], d["code"]) == ("policy.gl", line, "syntax-error")
            assert f"policy.gl:{line}:" in err["rendered"] and "^" in err["rendered"]
            # a rule that does not check (an unsafe variable) and an unknown import
            for files, code in (
                    ({"policy.gl": POLICY + "\nbad: allowed(U, O, X) :- member(U, O).\n"},
                     "unsafe-variable"),
                    ({"a.gl": 'import "../etc/secret.gl".\n'}, "import-not-found"),
                    ({"policy.gl": POLICY.replace("rel member(user: string",
                                                  "rel member(person: string")},
                     "store-schema-mismatch")):
                got = c.put("/v1/policy", json={"files": files})
                assert got.status_code == 422, got.text
                assert got.json()["error"]["diagnostics"][0]["code"] == code
            for body in ({}, {"files": {"/etc/x.gl": ""}}, {"files": {"a.txt": ""}},
                         {"files": {"a.gl": 1}}, {"files": {"a.gl": ""}, "roots": ["b.gl"]}):
                got = c.put("/v1/policy", json=body)
                assert got.status_code == 422 and got.json()["error"]["code"] == "bad-request"
            assert c.get("/v1/policy").json()["hash"] == before["hash"]
            assert c.post("/v1/check", json=DAVE).json()["allowed"] is False

            # the admin scope is needed; if_hash makes it a compare-and-set
            assert w.put("/v1/policy", json={"files": V2}).status_code == 403
            stale = c.put("/v1/policy", json={"files": V2, "if_hash": "0" * 16})
            assert stale.status_code == 409
            assert stale.json()["error"]["code"] == "policy-conflict"

            with c.stream("GET", "/v1/watch", params={"format": "ndjson"}) as feed:
                got = c.put("/v1/policy", json={"files": V2, "if_hash": before["hash"]})
                assert got.status_code == 200, got.text
                body = got.json()
                assert body["previous"] == before["hash"] and body["serial"] == 2
                assert body["hash"] == _hash(V2)
                lines = feed.iter_lines()
                event = next(x for x in lines if x.strip())
                assert '"policy"' in event and body["hash"] in event
            now = c.get("/v1/policy", params={"sources": "true"}).json()
            assert now["hash"] == body["hash"] and now["sources"]["admins.gl"] == ADMINS
            assert sorted(now["files"]) == ["admins.gl", "policy.gl"]
            # the new rule decides, over the facts written before the change
            got = c.post("/v1/check", json=DAVE).json()
            assert got["allowed"] is True and got["reasons"] == ["admin_all"]
            ex = c.post("/v1/explain", json={"goal": 'allowed(dave, drop_table, '
                                             '"m1.c1.s1.t1")', "format": "text"}).json()
            assert "rule admin_all: Members of admins" in ex["explanation"]
            metrics = c.get("/metrics").text
            assert "grantlog_policy_changes_total 1.0" in metrics
    finally:
        stop(proc)

    # a restart without rules serves the store's newest policy; with rules, installs them
    proc, url = serve(tmp_path, "--store", store)
    try:
        with _client(url) as c:
            assert c.get("/v1/policy").json()["hash"] == _hash(V2)
            assert c.post("/v1/check", json=DAVE).json()["allowed"] is True
    finally:
        stop(proc)
    proc, url = serve(tmp_path, str(tmp_path / "policy.gl"), "--store", store)
    try:
        with _client(url) as c:
            got = c.get("/v1/policy").json()
            assert got["hash"] == before["hash"] and got["serial"] == 3
            assert c.post("/v1/check", json=DAVE).json()["allowed"] is False
    finally:
        stop(proc)


def test_without_a_store_the_written_facts_move_to_the_new_policy(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text(f"{ADMIN} check,write,admin\n")
    proc, url = serve(tmp_path, str(ROOT / "examples" / "demo" / "policy.gl"), FACTS,
                      "--tokens", str(tmp_path / "tokens"))
    try:
        with _client(url) as c:
            assert c.post("/v1/write", json={"insert": {"member": [["dave", "admins"]],
                                                        "contains": [["m1", "m2"]]}}) \
                .status_code == 200
            # the facts file was a rule file here: without it the new policy has no `needs`
            got = c.put("/v1/policy", json={"files": {
                **V2, "facts.gl": Path(FACTS).read_text()}})
            assert got.status_code == 200, got.text
            assert c.post("/v1/check", json=DAVE).json()["allowed"] is True
            rows = c.get("/v1/relations/contains").json()["rows"]
            assert ["m1", "m2"] in rows
            # a relation whose columns change while it has written facts is refused
            got = c.put("/v1/policy", json={"files": {
                "policy.gl": POLICY.replace("rel member(user: string",
                                            "rel member(person: string")}})
            assert got.status_code == 422
            assert got.json()["error"]["code"] == "policy-schema-mismatch"
        # the Python client: paths named relative to their folder, errors rendered here
        (tmp_path / "v3").mkdir()
        (tmp_path / "v3" / "policy.gl").write_text(POLICY)
        (tmp_path / "v3" / "admins.gl").write_text(ADMINS + "oops(X) :- .\n")
        with grantlog.Client(url, token=ADMIN) as client:
            before = client.policy()["hash"]
            with pytest.raises(GrantlogError) as err:
                client.set_policy([tmp_path / "v3" / "policy.gl", tmp_path / "v3" / "admins.gl"])
            assert "admins.gl:5:" in str(err.value) and "oops(X) :- ." in str(err.value)
            assert client.policy()["hash"] == before
            (tmp_path / "v3" / "admins.gl").write_text(ADMINS)
            got = client.set_policy([tmp_path / "v3" / "policy.gl",
                                     tmp_path / "v3" / "admins.gl"], if_hash=before)
            assert got["previous"] == before and client.policy()["hash"] == got["hash"]
    finally:
        stop(proc)


@pytest.mark.skipif(not Path("/proc/self/task").exists(),
                    reason="needs Linux /proc to find the worker processes")
def test_every_worker_and_a_restarted_one_serve_the_new_policy(tmp_path: Path) -> None:
    store = _store(tmp_path)
    proc, url = serve(tmp_path, str(tmp_path / "policy.gl"), "--store", store, "--tokens",
                      str(tmp_path / "tokens"), "--workers", "2")

    def hashes(n: int = 24) -> set[str]:
        seen = set()
        for _ in range(n):  # a new connection each time: both workers are asked
            seen.add(httpx.get(url + "/v1/policy", headers=AUTH, timeout=30).json()["hash"])
        return seen

    try:
        old = hashes()
        assert len(old) == 1
        with _client(url) as c:
            got = c.put("/v1/policy", json={"files": V2})
            assert got.status_code == 200, got.text
            new = got.json()["hash"]
        deadline = time.monotonic() + 30
        while hashes() != {new}:
            assert time.monotonic() < deadline, "a worker kept the old policy"
            time.sleep(0.2)
        # a worker killed now is restarted by uvicorn and reads the store's newest policy
        started = workers(proc.pid)
        os.kill(started[0], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while True:
            alive = [p for p in workers(proc.pid) if p != started[0]]
            if len(alive) >= 2:
                break
            assert time.monotonic() < deadline, "no worker replaced the killed one"
            time.sleep(0.2)
        deadline = time.monotonic() + 60
        seen: set[Any] = set()
        while len(seen) < 40:
            try:
                seen.add((httpx.get(url + "/v1/policy", headers=AUTH,
                                    timeout=30).json()["hash"],
                          len(seen)))
            except httpx.HTTPError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert {h for h, _ in seen} == {new}
        got = httpx.post(url + "/v1/check", json=DAVE | {"subject": "carol"}, headers=AUTH,
                         timeout=30)
        assert got.json()["allowed"] is True
    finally:
        stop(proc)


def test_policies_compile_from_memory_only(tmp_path: Path) -> None:
    (tmp_path / "secret.gl").write_text("rel secret(x: string).\n")
    files = {"a.gl": 'import "secret.gl".\n'}
    # a file beside the request's names on disk is not read: only the given texts
    with pytest.raises(GrantlogError) as err:
        compile_program(None, ["a.gl"], files=files, disk=False)
    assert err.value.diagnostics[0].code == "import-not-found"
    # the shipped models can be imported; a root that is not given is refused
    p = compile_program(None, ["m.gl"], files={"m.gl": 'import "gravitino.gl".\n'},
                        disk=False)
    assert "allowed" in p.relations
    with pytest.raises(GrantlogError) as err:
        compile_program(None, [str(tmp_path / "secret.gl")], files=files, disk=False)
    assert err.value.diagnostics[0].code == "file-not-found"
    # in memory, a path shadows the disk's file of that name
    (tmp_path / "x.gl").write_text("rel x(a: string).\n")
    p = compile_program(None, [str(tmp_path / "x.gl")],
                        files={str(tmp_path / "x.gl"): "rel y(a: string).\n"})
    assert "y" in p.relations and "x" not in p.relations
