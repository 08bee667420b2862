"""The why-not's suggested changes in headless Chromium: a DENY asked, the smallest changes
listed under its why-not graph (the premises they repair marked in the graph), and "try it"
flipping the answer to ALLOW; "undo" puts the facts back (and the test does, whatever
happens). Screenshot: docs/explorer/suggest.png."""

from __future__ import annotations

from typing import Any

import httpx
from browser_support import ask, shoot, wait
from selenium.webdriver.common.by import By

CUSTOMERS = "m1.lakehouse.sales.customers"
DENIED = f"check carol select_table {CUSTOMERS}"


def _items(drv: Any) -> list[Any]:
    return list(drv.find_elements(By.CSS_SELECTOR, "#suggest-list > li"))


def test_a_why_not_lists_checked_suggestions_and_try_it_flips(page: Any,
                                                              explorer_url: str) -> None:
    assert ask(page, DENIED).startswith("DENY")
    items = wait(page, _items)
    assert page.find_element(By.ID, "suggest").is_displayed()
    texts = [i.find_element(By.CSS_SELECTOR, ".sentence").text for i in items]
    # the DENY grant that decided it: its retraction is among the suggestions
    assert any(t.startswith("remove `privilege(") and "deny)" in t for t in texts), texts
    assert "each checked by running it" in page.find_element(By.ID, "suggest-status").text
    # the failed premises they repair are marked in the why-not graph
    marked = page.execute_script("return cy.nodes('.repairs').map(n => n.data('fact'))")
    assert any(f.startswith("not denied(") for f in marked), marked
    assert page.execute_script(
        "return cy.nodes('.repairs').every(n => n.data('cls') === 'failed')")
    shoot(page, "#answer-pane", "suggest")
    # try the deny's retraction: the answer flips, and undo flips it back
    pick = next(i for i, t in enumerate(texts) if t.startswith("remove `privilege("))
    try:
        items[pick].find_element(By.CSS_SELECTOR, "button.try").click()
        wait(page, lambda d: d.execute_script(
            "const a = window.explorer.answer; return a && a.value === true"))
        assert page.find_element(By.ID, "summary").text.startswith("ALLOW")
        applied = wait(page, lambda d: d.find_elements(By.ID, "suggest-applied"))
        assert "Tried (in memory)" in applied[0].text
        page.find_element(By.ID, "suggest-undo").click()
        wait(page, lambda d: d.execute_script(
            "const a = window.explorer.answer; return a && a.value === false"))
        assert page.find_element(By.ID, "summary").text.startswith("DENY")
        assert not page.find_elements(By.ID, "suggest-applied")
    finally:  # the facts as they were, whatever happened above
        undo = page.execute_script("return window.suggest.applied && window.suggest.applied.undo")
        if undo:
            httpx.post(explorer_url + "/api/suggest/try", json={"edits": undo}, timeout=60)
    with httpx.Client(base_url=explorer_url, timeout=60) as c:
        a = c.post("/api/ask", json={"question": DENIED}).json()
        assert a["value"] is False


def test_an_allow_has_no_suggestions(page: Any) -> None:
    assert ask(page, "check alice select_table m1.lakehouse.sales.orders").startswith("ALLOW")
    assert not page.find_element(By.ID, "suggest").is_displayed()
    assert not _items(page)
