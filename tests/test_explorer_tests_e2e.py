"""The tests, filters and fact-editing panes end to end in headless Chromium (conftest's
``page``, ``browser`` and ``explorer_url``; skipped, saying why, without Chromium): the test
blocks run with a failing one's why-not drawn and an unfired rule coloured in the editor; a
filter as SQL in two dialects; a fact added and deleted in the table, an answer flipping and
flipping back. Screenshots: docs/explorer/tests.png, unfired.png, filters.png,
facts-edit.png."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from browser_support import ORDERS, ask, shoot, wait
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

ADDED = """

never_fires(X) :- entity(X, no_such_type).

test "pane: analysts read orders" {
    member(dave, analysts).
    expect allowed(dave, load_table, "m1.lakehouse.sales.orders").
    expect allowed(dave, drop_table, "m1.lakehouse.sales.orders").
}
"""
CHECK = f"check dave load_table {ORDERS}"


@pytest.fixture
def facts_back(explorer_url: str) -> Iterator[None]:
    """Puts back the fact the test adds (whatever the test did)."""
    yield
    httpx.post(explorer_url + "/api/facts/edit", timeout=60,
               json={"rel": "member", "retract": [["dave", "analysts"]]})


def _edit_to_end(page: Any, text: str) -> None:
    """``text`` appended to the editor as typing would (an input event), then sent."""
    before = page.execute_script("return window.explorer.edits")
    page.execute_script("const ed = document.getElementById('editor'); ed.value += arguments[0];"
                        "ed.dispatchEvent(new Event('input'));", text)
    wait(page, lambda d: d.execute_script("return window.explorer.edits") > before)


def test_tests_run_a_failure_is_explained_and_an_unfired_rule_is_coloured(page: Any) -> None:
    lines = page.execute_script("return document.getElementById('editor').value.split('\\n')"
                                ".length")
    _edit_to_end(page, ADDED)
    page.find_element(By.ID, "tests-go").click()
    failed = wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#tests li.fail"))
    assert "pane: analysts read orders" in failed[0].text and "drop_table" in failed[0].text
    status = page.find_element(By.ID, "tests-status").text
    assert "1 failed" in status and "rules fired in some test" in status
    assert any(li.text.startswith("never_fires")
               for li in page.find_elements(By.CSS_SELECTOR, "#unfired li"))
    # the unfired rule's line is marked in the editor's backdrop (a class on the line element)
    never = lines + 2  # ADDED's third line, counted from the last line of the text
    line = page.find_element(By.CSS_SELECTOR, f'#backdrop [data-line="{never}"]')
    assert "unfired" in line.get_attribute("class").split()
    assert "never_fires" in line.text
    assert line.value_of_css_property("background-color") != "rgba(0, 0, 0, 0)"
    assert "unfired" not in page.find_element(
        By.CSS_SELECTOR, f'#backdrop [data-line="{never + 3}"]').get_attribute("class")
    # the failing expectation's why-not, asked of the test's facts, drawn in the answer pane
    failed[0].find_element(By.CSS_SELECTOR, "button.why").click()
    wait(page, lambda d: (d.execute_script("return window.explorer.answer") or {}).get(
        "test") == "pane: analysts read orders")
    assert page.find_element(By.ID, "summary").text == "false"
    assert page.execute_script("return window.explorer.cy.nodes().length") > 1
    page.execute_script("document.getElementById('tests-pane').scrollIntoView()")
    shoot(page, "#tests-pane", "tests")
    # the rule's name in the list goes to its line in the editor
    page.find_element(By.XPATH, "//ul[@id='unfired']//button[starts-with(., 'never_fires')]"
                      ).click()
    wait(page, lambda d: d.execute_script(
        "const t = document.getElementById('editor'); return t.value.slice(0, "
        "t.selectionStart).split('\\n').length") == never)
    page.execute_script("document.querySelector('#rules-pane .editor').scrollIntoView()")
    shoot(page, "#rules-pane .editor", "unfired")


def test_a_filter_is_shown_as_sql_in_two_dialects(page: Any) -> None:
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#filter-dialect option"))
    page.find_element(By.ID, "filter-go").click()
    sql = wait(page, lambda d: d.find_element(By.ID, "filter-sql").text)
    assert sql.startswith('SELECT "id" FROM "catalog_objects"') and "RECURSIVE" in sql
    conditions = page.find_element(By.ID, "filter-conditions").text
    assert conditions.splitlines() == ["AND", "  type table", "  under m1.lakehouse.sales"]
    # a path column and Spark SQL: a prefix test in Spark's quoting
    page.find_element(By.ID, "filter-parent").clear()
    page.find_element(By.ID, "filter-path").send_keys("path")
    Select(page.find_element(By.ID, "filter-dialect")).select_by_value("spark")
    spark = wait(page, lambda d: (t := d.find_element(By.ID, "filter-sql").text) != sql and t)
    assert spark.startswith("SELECT `id` FROM `catalog_objects`") and "LIKE" in spark
    assert "spark" in page.find_element(By.ID, "filter-status").text
    # a layout that cannot express the filter is refused, saying why
    page.find_element(By.ID, "filter-path").clear()
    page.find_element(By.ID, "filter-go").click()
    wait(page, lambda d: "filter-layout" in d.find_element(By.ID, "filter-status").text)
    page.find_element(By.ID, "filter-path").send_keys("path")
    page.find_element(By.ID, "filter-go").click()
    wait(page, lambda d: d.find_element(By.ID, "filter-sql").text)
    page.execute_script("document.getElementById('filters-pane').scrollIntoView()")
    shoot(page, "#filters-pane", "filters")


def _ask(page: Any, question: str) -> str:
    """The ask bar's summary of ``question`` (the last answer cleared first: the same question
    asked again must wait for its new answer)."""
    page.execute_script("window.explorer.answer = null")
    return ask(page, question)


def _in_table(page: Any, script: str, *args: Any) -> Any:
    """``script`` run on the facts table as it is now (one step: the table is redrawn when
    its answer comes, so elements found in one call may be gone in the next)."""
    return wait(page, lambda d: d.execute_script(script, *args))


def test_a_fact_added_then_deleted_flips_an_answer_and_back(page: Any,
                                                            facts_back: None) -> None:
    assert _ask(page, CHECK).startswith("DENY")
    Select(page.find_element(By.ID, "relation")).select_by_value("member")
    page.find_element(By.ID, "facts-reason").send_keys("onboarding dave")
    # typed into the new row's cells and added (Enter in a cell adds, as the button does)
    _in_table(page, """
        const cells = [...document.querySelectorAll('#facts .new-cell')];
        if (cells.map((c) => c.placeholder).join() !== 'user,group') return false;
        cells[0].value = 'dave'; cells[1].value = 'analysts';
        cells[1].dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
        return true;""")
    wait(page, lambda d: "added member(dave, analysts)" in d.find_element(
        By.ID, "facts-edit-status").text)
    assert _ask(page, CHECK).startswith("ALLOW")
    page.find_element(By.ID, "filter").send_keys("dave")
    wait(page, lambda d: d.find_element(By.ID, "matched").text == "1 row")
    page.execute_script("document.getElementById('facts-pane').scrollIntoView()")
    shoot(page, "#facts-pane", "facts-edit")
    _in_table(page, """
        const b = document.querySelector('button[aria-label="delete member(dave, analysts)"]');
        if (b) b.click();
        return Boolean(b);""")
    wait(page, lambda d: "deleted member(dave, analysts)" in d.find_element(
        By.ID, "facts-edit-status").text)
    assert _ask(page, CHECK).startswith("DENY")
    wait(page, lambda d: d.find_element(By.ID, "matched").text == "0 rows")
