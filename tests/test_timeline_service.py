"""``POST /v1/timeline`` (issue #28, item 3) over real HTTP: a served store's history answered
as the Python API answers it — one decision (with proofs), a resource, a subject — with the
``check`` scope; bad bodies are 422."""

from __future__ import annotations

from pathlib import Path

import httpx
from httpserver import serve
from test_review import RULES, world

import grantlog

READ = "reader-token-0123456789"


def test_the_service_serves_timelines(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    world(url).close()
    (tmp_path / "tokens").write_text(f"{READ} check\n")
    proc, base = serve(tmp_path, str(RULES), "--store", url, "--tokens",
                       str(tmp_path / "tokens"))
    try:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {READ}"},
                          timeout=60) as c, \
                grantlog.Reasoner(grantlog.compile(paths=[str(RULES)]), store=url,
                                  follow=False) as r:
            one = {"subject": "alice", "operation": "load_table",
                   "resource": "m1.lakehouse.sales.customers"}
            got = c.post("/v1/timeline", json={**one, "proofs": True, "since": 1})
            assert got.status_code == 200, got.text
            body = got.json()
            want = [i.to_dict() for i in r.timeline(*one.values(), since=1, proofs=True)]
            assert body["intervals"] == want and body["revision"] == r.revision
            assert [(i["start"]["revision"], i["end"] and i["end"]["revision"])
                    for i in body["intervals"]] == [(1, 3), (4, None)]
            assert body["intervals"][0]["why_not"]["holds"] is False
            res = c.post("/v1/timeline", json={"operation": "load_table",
                                               "resource": "m1.lakehouse.sales.orders"}).json()
            assert res["changes"] == r.resource_timeline(
                "load_table", "m1.lakehouse.sales.orders").to_dict()["changes"]
            sub = c.post("/v1/timeline", json={"subject": "carol", "since": 1}).json()
            assert sub == {**r.subject_timeline("carol", since=1).to_dict(),
                           "revision": r.revision}
            for bad in ({"resource": "x"}, {}, {**one, "proofs": "yes"},
                        {"subject": "alice", "since": [1]}):
                assert c.post("/v1/timeline", json=bad).status_code == 422, bad
            assert httpx.post(base + "/v1/timeline", json=one).status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=30)


