"""The explorer end to end in headless Chromium (Selenium with Debian's ``chromium`` and
``chromium-driver``; skipped, saying why, when they are absent): the Gravitino example loaded,
a rule with an error typed and its diagnostic shown, a check and a why-not asked and their
graphs' nodes found (Cytoscape queried from JS), a pinned check flipping after an edit, the
facts filtered. One browser per run; screenshots of each pane go to docs/explorer/*.png when
``GRANTLOG_SCREENSHOTS=1`` or when missing (the suite does not churn them)."""

from __future__ import annotations

from typing import Any

import httpx
from browser_support import ORDERS, ask, shoot, type_at_end, wait
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys


def test_a_typed_error_is_diagnosed_at_its_line(page: Any) -> None:
    lines = page.execute_script("return document.getElementById('editor').value.split('\\n')"
                                ".length")
    type_at_end(page, "\nbroken(X) :- nope(.")
    item = wait(page, lambda d: d.find_elements(By.CSS_SELECTOR,
                                                "#diagnostics li[data-code='syntax-error']"))
    assert item[0].get_attribute("data-line") == str(lines + 1)
    assert f"gravitino.gl:{lines + 1}:" in item[0].text
    assert page.find_element(By.ID, "live").text.startswith("does not compile")
    assert page.find_elements(By.CSS_SELECTOR, f"#backdrop .err[data-line='{lines + 1}']")
    shoot(page, "#rules-pane", "rules")
    # the fix clears it
    page.find_element(By.ID, "editor").send_keys(Keys.BACKSPACE, "X).")
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#diagnostics li[data-code="
                                                          "'unknown-relation']"))


def test_a_check_and_a_why_not_are_drawn(page: Any) -> None:
    assert ask(page, f"check alice load_table {ORDERS}").startswith("ALLOW")
    n = page.execute_script("return cy.nodes().length")
    assert n >= 8
    assert page.execute_script("return cy.nodes('[cls = \"under\"]').length") >= 1
    assert page.execute_script("return cy.edges().length") >= n - 1
    # dagre laid it out left to right: the root left of everything shown
    assert page.execute_script(
        "const x = cy.$('#n0').position('x'); "
        "return cy.nodes().not('.hidden').every(n => n.position('x') >= x)")
    # a large proof shows its top first; the rest opens on a click or all at once
    shown = page.execute_script("return cy.nodes().not('.hidden').length")
    assert 5 <= shown < n
    assert page.execute_script("return cy.nodes('.collapsed').length") >= 1
    shoot(page, "#answer-pane", "why")
    page.find_element(By.ID, "expand").click()
    assert page.execute_script("return cy.nodes().not('.hidden').length") == n
    shoot(page, "#answer-pane", "why-expanded")
    assert ask(page, f"check bob drop_table {ORDERS}").startswith("DENY")
    assert page.execute_script("return cy.nodes('[cls = \"failed\"]').length") >= 2
    assert page.execute_script("return cy.nodes('[cls = \"holds\"]').length") >= 1
    assert "[fails]" in page.execute_script("return cy.$('#n0').data('label')")
    shoot(page, "#answer-pane", "why-not")
    shoot(page, "body", "page")


def test_the_ask_bar_completes_names_and_constants(page: Any) -> None:
    box = page.find_element(By.ID, "ask")
    box.send_keys("check ali")
    opts = wait(page, lambda d: d.execute_script(
        "return [...document.querySelectorAll('#ask-completions option')].map(o => o.value)"))
    assert "check alice" in opts
    box.clear()
    box.send_keys("allo")
    wait(page, lambda d: "allowed(" in d.execute_script(
        "return [...document.querySelectorAll('#ask-completions option')].map(o => o.value)"))


def test_a_pinned_check_flips_after_an_edit(page: Any) -> None:
    question = f"check bob drop_table {ORDERS}"
    assert ask(page, question).startswith("DENY")
    page.find_element(By.ID, "pin-go").click()
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#pins li[data-pin]"))
    assert not page.find_elements(By.CSS_SELECTOR, "#pins li.flipped")
    type_at_end(page, '\ngive_bob: allowed("bob", drop_table, T) :- entity(T, table).')
    flipped = wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#pins li.flipped"))
    assert "ALLOW" in flipped[0].text and "flipped" in flipped[0].text
    shoot(page, "#pins-pane", "pins")


def test_the_facts_pane_filters(page: Any, explorer_url: str) -> None:
    from selenium.webdriver.support.ui import Select

    want = httpx.get(explorer_url + "/api/facts", params={"rel": "entity", "contains": "sales"}
                     ).json()["matched"]
    Select(page.find_element(By.ID, "relation")).select_by_value("entity")
    page.find_element(By.ID, "filter").send_keys("sales")
    wait(page, lambda d: d.find_element(By.ID, "matched").text == f"{want} rows")
    assert len(page.find_elements(By.CSS_SELECTOR, "#facts tbody tr")) == want
    cells = [td.text for td in page.find_elements(By.CSS_SELECTOR, "#facts tbody td")]
    assert ORDERS in cells
    shoot(page, "#facts-pane", "facts")
