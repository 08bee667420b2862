"""``grantlog serve --ui``: the explorer at /ui of the decision service, behind its tokens, over
real HTTP with real tokens (a `grantlog serve` subprocess). Signing in (the one-time link the
server prints, the token form, a link made with a token), the scopes (a read token views, asks
and compares drafts; only an admin token edits), and the attacks: no token, a read token
editing, a token in the query string (refused, and never in the server's output), cross-site
requests, a foreign Host, an oversized body, a spent or forged link."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import pytest
from httpserver import free_port, serve, stop

ROOT = Path(__file__).resolve().parent.parent
FACTS = str(ROOT / "examples" / "gravitino" / "facts.gl")
READ = "ui-read-token-0123456789"
ADMIN = "ui-admin-token-0123456789"
ORDERS = "m1.lakehouse.sales.orders"
CHECK = f"check alice load_table {ORDERS}"
MAX_BODY = 200_000  # a draft holds the whole model (~60 kB)
GIVE_BOB = '\ngive_bob: allowed("bob", drop_table, T) :- entity(T, table).\n'


class Server:
    def __init__(self, proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.proc, self.url, self.log = proc, url, log

    def output(self) -> str:
        return self.log.read_text()

    def link(self) -> str:
        m = re.search(r"(/ui/login#[A-Za-z0-9_-]+)", self.output())
        assert m, self.output()
        return m.group(1)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("serve-ui")
    tokens = tmp / "tokens"
    tokens.write_text(f"{READ} check\n{ADMIN} admin\n")
    tokens.chmod(0o600)
    proc, url = serve(tmp, "--model", "gravitino", "--facts", FACTS, "--tokens", str(tokens),
                      "--ui", "--ui-host", "explorer.example", "--max-body", str(MAX_BODY),
                      "--decision-log", str(tmp / "decisions.log"), "--log-level", "debug")
    log = next(tmp.glob("serve-*.log"))
    yield Server(proc, url, log)
    stop(proc)


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server without tokens: reads open (as the service's), editing refused."""
    tmp = tmp_path_factory.mktemp("serve-ui-open")
    proc, url = serve(tmp, "--model", "gravitino", "--facts", FACTS, "--ui")
    yield url
    stop(proc)


def _origin(url: str) -> dict[str, str]:
    return {"origin": url}


def _session(server: Server, link: str | None = None) -> httpx.Client:
    """A client signed in by redeeming a one-time link (the printed one by default)."""
    code = (link or server.link()).split("#", 1)[1]
    c = httpx.Client(base_url=server.url, timeout=60)
    r = c.post("/ui/login/link", json={"code": code}, headers=_origin(server.url))
    assert r.status_code == 200, r.text
    return c


def test_the_printed_link_signs_in_once_with_a_cookie_the_page_cannot_read(
        server: Server) -> None:
    link = server.link()
    assert "#" in link and "?" not in link  # the code rides in the fragment: never sent
    code = link.split("#", 1)[1]
    with httpx.Client(base_url=server.url, timeout=60) as c:
        page = c.get("/ui/login")
        assert page.status_code == 200 and 'type="password"' in page.text
        r = c.post("/ui/login/link", json={"code": code}, headers=_origin(server.url))
        assert r.status_code == 200
        cookie = r.headers["set-cookie"]
        for part in ("grantlog_ui=", "HttpOnly", "SameSite=strict", "Path=/ui"):
            assert part in cookie
        page = c.get("/ui/")
        assert page.status_code == 200
        assert '<script src="/ui/_mount.js"></script>' in page.text
        assert 'src="/ui/static/explorer.js"' in page.text and '"/static/' not in page.text
        assert page.headers["referrer-policy"] == "no-referrer"
        assert page.headers["x-frame-options"] == "DENY"
        assert c.get("/ui/api/state").status_code == 200
        a = c.post("/ui/api/ask", json={"question": CHECK}, headers=_origin(server.url))
        assert a.json()["summary"].startswith("ALLOW")
    # spent: a second use signs nobody in
    with httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.post("/ui/login/link", json={"code": code}, headers=_origin(server.url))
        assert r.status_code == 401 and r.json()["errors"][0]["code"] == "bad-link"
        assert c.get("/ui/api/state").status_code == 401


def test_no_token_no_page(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.get("/ui/")
        assert r.status_code == 303 and r.headers["location"] == "/ui/login"
        assert c.get("/ui").status_code == 308
        for method, path in (("GET", "/ui/api/state"), ("GET", "/ui/api/facts?rel=entity"),
                             ("POST", "/ui/api/ask"), ("POST", "/ui/api/edit"),
                             ("POST", "/ui/api/whatif/diff")):
            r = c.request(method, path, json={"question": CHECK}, headers=_origin(server.url))
            assert r.status_code == 401, (method, path)
            assert r.json()["errors"][0]["code"] == "unauthorized"
        r = c.get("/ui/api/state", headers={"authorization": "Bearer not-a-token-at-all-xx"})
        assert r.status_code == 401
        r = c.get("/ui/api/state", headers={"cookie": "grantlog_ui=forged-session-id"})
        assert r.status_code == 401
        r = c.post("/ui/login/link", json={"code": "forged"}, headers=_origin(server.url))
        assert r.status_code == 401
        # the page's own files are package data: no secret, no sign-in
        assert c.get("/ui/static/whatif.js").status_code == 200


def test_a_read_token_views_asks_and_compares_drafts_but_cannot_edit(server: Server) -> None:
    for c in (_session(server, _link_for(server, READ)),
              httpx.Client(base_url=server.url, timeout=60,
                           headers={"authorization": f"Bearer {READ}"})):
        with closing(c):
            state = c.get("/ui/api/state").json()
            text = state["docs"][0]["text"]
            h = _origin(server.url)
            assert c.post("/ui/api/ask", json={"question": CHECK}, headers=h).status_code == 200
            d = c.post("/ui/api/whatif/diff", json={"drafts": {"0": text + GIVE_BOB}}, headers=h)
            assert d.status_code == 200 and d.json()["counts"]["gained"] >= 1
            # the tests pane and the filters pane change nothing: a read token runs them
            assert c.post("/ui/api/tests", json={}, headers=h).status_code == 200
            f = c.post("/ui/api/filter", json={"subject": "alice", "operation": "load_table",
                                               "dialect": "postgres"}, headers=h)
            assert f.status_code == 200, f.text
            r = c.post("/ui/api/facts/edit", json={"rel": "member", "add": [["bob", "g"]]},
                       headers=h)
            assert r.status_code == 403
            r = c.post("/ui/api/edit", json={"doc": 0, "text": text + GIVE_BOB}, headers=h)
            assert r.status_code == 403
            assert r.json()["errors"][0]["message"] == "this needs the `admin` scope"
            assert c.get("/ui/api/state").json()["docs"][0]["text"] == text


def _link_for(server: Server, token: str) -> str:
    r = httpx.post(server.url + "/ui/login/link", headers={"authorization": f"Bearer {token}"},
                   timeout=60)
    assert r.status_code == 200, r.text
    return str(r.json()["url"])


def test_an_admin_signs_in_with_the_form_and_edits(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.post("/ui/login", data={"token": "wrong-token-0123456789"},
                   headers=_origin(server.url))
        assert r.status_code == 401 and "not valid" in r.text
        r = c.post("/ui/login", data={"token": ADMIN}, headers=_origin(server.url))
        assert r.status_code == 303 and r.headers["location"] == "/ui/"
        text = c.get("/ui/api/state").json()["docs"][0]["text"]
        h = _origin(server.url)
        r = c.post("/ui/api/edit", json={"doc": 0, "text": text + GIVE_BOB}, headers=h)
        assert r.status_code == 200 and r.json()["live"]
        a = c.post("/ui/api/ask", json={"question": f"check bob drop_table {ORDERS}"}, headers=h)
        assert a.json()["summary"].startswith("ALLOW")
        # the page's edit is the page's: the service still serves its policy
        v = httpx.post(server.url + "/v1/check", json={"subject": "bob",
                                                       "operation": "drop_table",
                                                       "resource": ORDERS},
                       headers={"authorization": f"Bearer {READ}"})
        assert v.json()["allowed"] is False
        assert c.post("/ui/api/edit", json={"doc": 0, "text": text}, headers=h).status_code == 200
        # signing out ends the session
        assert c.post("/ui/logout", headers=h).status_code == 303
        assert c.get("/ui/api/state").status_code == 401


def test_a_link_made_with_an_admin_token_carries_its_scopes(server: Server) -> None:
    link = _link_for(server, ADMIN)
    with closing(_session(server, link)) as c:
        text = c.get("/ui/api/state").json()["docs"][0]["text"]
        r = c.post("/ui/api/edit", json={"doc": 0, "text": text}, headers=_origin(server.url))
        assert r.status_code == 200
    r = httpx.post(server.url + "/ui/login/link", headers={"authorization": "Bearer nope-"
                                                           "0123456789abcdef"})
    assert r.status_code == 401


@pytest.mark.parametrize("param", ["token", "access_token", "Authorization", "api_key"])
def test_a_token_in_the_address_is_refused_and_never_logged(server: Server,
                                                            param: str) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as c:
        for path in ("/ui/", "/ui/api/state", "/ui/login"):
            r = c.get(f"{path}?{param}={ADMIN}")
            assert r.status_code == 400, path
            assert r.json()["errors"][0]["code"] == "token-in-url"
            assert ADMIN not in r.text
    out = server.output()
    assert ADMIN not in out and READ not in out  # at --log-level debug


def test_cross_site_requests_are_refused(server: Server) -> None:
    with closing(_session(server, _link_for(server, ADMIN))) as c:
        evil = {"origin": "http://evil.example"}
        for path, body in (("/ui/api/edit", {"doc": 0, "text": "x"}),
                           ("/ui/api/ask", {"question": CHECK}),
                           ("/ui/api/pins", {"question": CHECK}),
                           ("/ui/logout", {})):
            r = c.post(path, json=body, headers=evil)
            assert r.status_code == 403 and r.json()["errors"][0]["code"] == "cross-site"
            # a browser always says where a POST comes from: a cookie without it is refused
            r = c.post(path, json=body)
            assert r.status_code == 403, path
            r = c.post(path, json=body, headers={**_origin(server.url),
                                                 "sec-fetch-site": "cross-site"})
            assert r.status_code == 403, path
        assert c.get("/ui/api/state").status_code == 200  # still signed in
    # a cross-site form cannot sign a victim in as someone else either
    r = httpx.post(server.url + "/ui/login", data={"token": ADMIN},
                   headers={"origin": "http://evil.example"})
    assert r.status_code == 403 and "set-cookie" not in r.headers


def test_only_the_servers_names_are_answered(server: Server) -> None:
    h = {"authorization": f"Bearer {READ}"}
    with httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.get("/ui/api/state", headers={**h, "host": "rebound.example"})
        assert r.status_code == 400 and r.json()["errors"][0]["code"] == "bad-host"
        port = server.url.rsplit(":", 1)[1]
        for host in (f"explorer.example:{port}", f"localhost:{port}"):
            assert c.get("/ui/api/state", headers={**h, "host": host}).status_code == 200


def test_bodies_are_bounded_by_the_services_limit(server: Server) -> None:
    h = {"authorization": f"Bearer {ADMIN}", "content-type": "application/json"}
    big = json.dumps({"question": "x" * MAX_BODY}).encode()
    with httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.post("/ui/api/ask", content=big, headers=h)
        assert r.status_code == 413
        r = c.post("/ui/api/ask", content=iter([big[:150_000], big[150_000:]]), headers=h)
        assert r.status_code == 413  # sent in chunks, without a length
        r = c.post("/ui/api/ask", json={"question": CHECK}, headers=h)
        assert r.status_code == 200


def test_the_replay_reads_the_services_decision_log(server: Server) -> None:
    h = {"authorization": f"Bearer {READ}"}
    v = httpx.post(server.url + "/v1/check", headers={**h, "x-request-id": "ui-replay-1"},
                   json={"subject": "bob", "operation": "drop_table", "resource": ORDERS})
    assert v.json()["allowed"] is False
    with httpx.Client(base_url=server.url, timeout=60, headers=h) as c:
        text = c.get("/ui/api/state").json()["docs"][0]["text"]
        r = c.post("/ui/api/whatif/replay", json={"drafts": {"0": text + GIVE_BOB}})
        assert r.status_code == 200, r.text
        j = r.json()
        assert j["log"] == "decisions.log"
        flips = {x["request_id"]: x for x in j["changed"]}
        assert flips["ui-replay-1"]["was"] is False and flips["ui-replay-1"]["draft"] is True


def test_without_tokens_the_page_is_open_for_viewing_only(open_server: str) -> None:
    with httpx.Client(base_url=open_server, timeout=60) as c:
        assert c.get("/ui/").status_code == 200
        text = c.get("/ui/api/state").json()["docs"][0]["text"]
        h = _origin(open_server)
        assert c.post("/ui/api/ask", json={"question": CHECK}, headers=h).status_code == 200
        r = c.post("/ui/api/edit", json={"doc": 0, "text": text}, headers=h)
        assert r.status_code == 403
        r = c.post("/ui/login", data={"token": ADMIN}, headers=h)
        assert r.status_code == 401 and "no tokens" in r.text


def test_ui_serves_from_one_worker(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "grantlog.cli", "serve", "--model", "gravitino",
                        "--ui", "--workers", "2", "--store", f"sqlite:///{tmp_path}/s.db",
                        "--create", "--port", str(free_port())],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--ui serves from one worker" in r.stderr


def test_the_page_follows_the_services_policy(server: Server) -> None:
    admin = {"authorization": f"Bearer {ADMIN}"}
    with httpx.Client(base_url=server.url, timeout=60, headers=admin) as c:
        docs = c.get("/ui/api/state").json()["docs"]
        files = {Path(d["name"]).name: d["text"] for d in docs}
        model = next(n for n in files if n.startswith("gravitino"))
        question = {"question": f"check bob drop_table {ORDERS}"}
        assert c.post("/ui/api/ask", json=question).json()["summary"].startswith("DENY")
        changed = {**files, model: files[model] + GIVE_BOB}
        r = c.put("/v1/policy", json={"files": changed})
        assert r.status_code == 200, r.text
        try:
            state = c.get("/ui/api/state").json()
            assert any("give_bob" in d["text"] for d in state["docs"])
            assert c.post("/ui/api/ask", json=question).json()["summary"].startswith("ALLOW")
        finally:
            assert c.put("/v1/policy", json={"files": files}).status_code == 200
        assert c.post("/ui/api/ask", json=question).json()["summary"].startswith("DENY")
