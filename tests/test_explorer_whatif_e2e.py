"""The what-if pane end to end in headless Chromium (conftest's ``page``, ``browser`` and
``explorer_url``; skipped, saying why, without Chromium): a draft edited beside the served
rules, the diff's gained and lost rows, an example proof opened in the graph, the decision
log's request that the draft flips; and the explorer signed into through `grantlog serve --ui`'s
one-time link. The pane's screenshot goes to docs/explorer/whatif.png."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from browser_support import ORDERS, ask, shoot, wait
from httpserver import serve, stop
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

ROOT = Path(__file__).resolve().parent.parent
GIVE_BOB = '\ngive_bob: allowed("bob", drop_table, T) :- entity(T, table).'
DENY_ORDERS = '\nprivilege("m1/role/analyst", select_table, "m1.lakehouse.sales.orders", deny).'


def _logged(s: str, o: str, r: str, allowed: bool, rid: str) -> str:
    return json.dumps({"time": "2026-01-01T00:00:00Z", "request_id": rid, "endpoint": "check",
                       "revision": 1, "policy": "p0",
                       "input": {"subject": s, "operation": o, "resource": r},
                       "result": {"allowed": allowed, "reasons": []}}) + "\n"


def _summary(drv: Any) -> str:
    """The answer pane's summary line (read in one script: the pane is redrawn meanwhile)."""
    return str(drv.execute_script(
        "const s = document.getElementById('summary'); return s ? s.textContent : ''"))


def _type_draft(page: Any, text: str) -> None:
    ed = page.find_element(By.ID, "whatif-editor")
    ed.click()
    ed.send_keys(Keys.CONTROL, Keys.END)
    ed.send_keys(text)


def test_the_draft_diff_shows_gained_and_lost_with_proofs_and_the_replay(
        page: Any, explorer_log: Path) -> None:
    explorer_log.write_text(_logged("bob", "drop_table", ORDERS, False, "req-17")
                            + _logged("carol", "load_table", ORDERS, False, "req-18"))
    try:
        wait(page, lambda d: d.execute_script("return document.body.dataset.whatifReady"))
        served = page.execute_script("return document.getElementById('editor').value")
        assert page.find_element(By.ID, "whatif-editor").get_attribute("value") == served
        _type_draft(page, GIVE_BOB + DENY_ORDERS)
        page.find_element(By.ID, "whatif-go").click()
        table = wait(page, lambda d: d.find_elements(By.ID, "whatif-diff"))[0]
        summary = page.find_element(By.ID, "whatif-summary").text
        assert re.search(r"allowed: \d+ gained, \d+ lost", summary), summary
        gained = table.find_elements(By.CSS_SELECTOR, "button.chg.gained")
        lost = table.find_elements(By.CSS_SELECTOR, "button.chg.lost")
        facts = {b.get_attribute("data-fact") for b in gained}
        assert f'allowed(bob, drop_table, "{ORDERS}")' in facts
        assert f'allowed(alice, load_table, "{ORDERS}")' in {b.get_attribute("data-fact")
                                                              for b in lost}
        # the served rules still answer the ask bar
        assert ask(page, f"check bob drop_table {ORDERS}").startswith("DENY")
        # a gained decision's proof is the draft's, drawn as a graph
        next(b for b in gained if ORDERS in b.get_attribute("data-fact")).click()
        wait(page, lambda d: "under the draft" in _summary(d))
        assert page.execute_script("return cy.nodes().length") >= 2
        assert page.execute_script(
            "return cy.nodes().some(n => (n.data('rule') || n.data('label')).includes("
            "'give_bob'))")
        # a lost one's proof is the served rules'
        next(b for b in lost if "alice" in b.get_attribute("data-fact")).click()
        wait(page, lambda d: "as served" in _summary(d))
        assert page.execute_script("return cy.nodes().length") >= 5
        # the replay: the logged request the draft flips
        page.find_element(By.ID, "whatif-replay-go").click()
        item = wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#whatif-replay li"
                                                                     "[data-goal]"))
        assert len(item) == 1 and "DENY → ALLOW" in item[0].text and "req-17" in item[0].text
        assert "2 replayed, 1 would change" in page.find_element(By.ID, "whatif-status").text
        page.execute_script("const e = document.getElementById('whatif-editor'); "
                            "e.scrollLeft = 0; "
                            "document.getElementById('whatif-pane').scrollIntoView()")
        shoot(page, "#whatif-pane", "whatif")
        item[0].find_element(By.TAG_NAME, "button").click()
        wait(page, lambda d: "allowed(bob, drop_table" in _summary(d))
    finally:
        explorer_log.write_text("")


def test_a_broken_draft_shows_its_diagnostics_and_paging_moves(page: Any) -> None:
    wait(page, lambda d: d.execute_script("return document.body.dataset.whatifReady"))
    _type_draft(page, "\nbroken(X) :- nope(.")
    page.find_element(By.ID, "whatif-go").click()
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR,
                                         "#whatif-diagnostics li[data-code='syntax-error']"))
    assert "does not compile" in page.find_element(By.ID, "whatif-status").text
    page.find_element(By.ID, "whatif-reset").click()
    page.execute_script("window.whatif.limit = 1")
    _type_draft(page, GIVE_BOB)
    page.find_element(By.ID, "whatif-go").click()
    wait(page, lambda d: d.find_elements(By.ID, "whatif-next"))
    first = _first_resource(page)
    assert "left out of this page" in page.find_element(By.ID, "whatif-page").text
    page.find_element(By.ID, "whatif-next").click()
    wait(page, lambda d: _first_resource(d) not in ("", first))
    assert page.find_elements(By.ID, "whatif-prev")


def _first_resource(drv: Any) -> str:
    """The diff table's first resource (read in one script: the table is redrawn)."""
    return str(drv.execute_script(
        "const c = document.querySelector('#whatif-diff tbody td:nth-child(2)'); "
        "return c ? c.textContent : ''"))


def test_serve_ui_signs_in_by_its_link_and_the_page_works_under_ui(
        browser: Any, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("e2e-read-token-0123456789 check\n")
    tokens.chmod(0o600)
    proc, url = serve(tmp_path, "--model", "gravitino", "--facts",
                      str(ROOT / "examples/gravitino/facts.gl"), "--tokens", str(tokens), "--ui")
    try:
        log = next(tmp_path.glob("serve-*.log")).read_text()
        link = re.search(r"(/ui/login#[A-Za-z0-9_-]+)", log)
        assert link, log
        browser.get(url + link.group(1))
        wait(browser, lambda d: d.current_url == url + "/ui/" and d.execute_script(
            "return document.body && document.body.dataset.ready"))
        # the session cookie is HttpOnly: the page's scripts cannot read it
        assert "grantlog_ui" not in browser.execute_script("return document.cookie")
        assert ask(browser, f"check alice load_table {ORDERS}").startswith("ALLOW")
        assert browser.execute_script("return cy.nodes().length") >= 5
        # a read session: an edit is refused, and the page says so
        ed = browser.find_element(By.ID, "editor")
        ed.send_keys(Keys.CONTROL, Keys.END)
        ed.send_keys("\n% a comment")
        wait(browser, lambda d: "admin" in d.find_element(By.ID, "diagnostics").text)
    finally:
        stop(proc)
        browser.delete_all_cookies()
