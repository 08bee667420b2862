"""The explorer's accessibility basics in headless Chromium: axe-core (vendored in
tests/vendor by `make explorer-assets`) finds no serious or critical violation on the page,
with a proof, its graph and its text alternative shown, then with a why-not; and a
keyboard-only walk (key presses only, no clicks): Tab to the query bar, ask, pin the question,
reach the proof graph and move through it with the arrow keys, open a folded node, read the
proof as a list, Escape out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_support import ORDERS, ask, shoot, wait
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

AXE = (Path(__file__).resolve().parent / "vendor" / "axe.min.js").read_text()
RUN = """const done = arguments[arguments.length - 1];
axe.run(document, { resultTypes: ["violations"] }).then((r) => done(r.violations.map((v) => ({
  id: v.id, impact: v.impact, help: v.help,
  nodes: v.nodes.map((n) => n.target.join(" ") + ": " + n.failureSummary) }))));"""


def violations(page: Any) -> list[dict[str, Any]]:
    if not page.execute_script("return !!window.axe"):
        page.execute_script(AXE)
    page.set_script_timeout(60)
    found = page.execute_async_script(RUN)
    return [v for v in found if v["impact"] in ("serious", "critical")]


def keys(page: Any, *pressed: str) -> None:
    ActionChains(page).send_keys(*pressed).perform()


def focused(page: Any) -> str:
    return str(page.execute_script("const a = document.activeElement; return a.id || a.tagName"))


def tab_to(page: Any, target: str, back: bool = False, limit: int = 80) -> int:
    """Tab (or Shift+Tab) until ``target`` has the focus: how many presses it took."""
    for n in range(1, limit + 1):
        if back:
            ActionChains(page).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()
        else:
            keys(page, Keys.TAB)
        if focused(page) == target:
            return n
    raise AssertionError(f"{target} not reached by {limit} Tabs (at {focused(page)})")


def outlined(page: Any) -> bool:
    return page.execute_script("return getComputedStyle(document.activeElement).outlineStyle") \
        != "none"


def test_axe_finds_no_serious_violation(page: Any) -> None:
    assert ask(page, f"check alice load_table {ORDERS}").startswith("ALLOW")
    page.execute_script("document.getElementById('proof-list-go').click()")
    wait(page, lambda d: d.execute_script("return document.querySelectorAll('#proof-list li')"
                                          ".length"))
    assert violations(page) == []
    assert ask(page, f"check bob drop_table {ORDERS}").startswith("DENY")
    assert violations(page) == []


def test_a_keyboard_only_walk(page: Any) -> None:
    page.execute_script("document.activeElement.blur()")
    question = f"check alice load_table {ORDERS}"
    assert tab_to(page, "ask", limit=3) == 1  # the query bar comes first
    assert outlined(page)
    keys(page, question, Keys.ENTER)
    wait(page, lambda d: (d.execute_script("return window.explorer.answer") or {})
         .get("question") == question)
    summary = page.execute_script("return document.getElementById('summary').textContent")
    assert summary.startswith("ALLOW")
    # the answer is announced: it sits in a live region
    assert page.execute_script("return document.getElementById('summary')"
                               ".closest('[aria-live]').id") == "answer"
    # pin it: two Tabs reach the Pin button, Enter presses it
    tab_to(page, "pin-go", limit=2)
    assert outlined(page)
    keys(page, Keys.ENTER)
    wait(page, lambda d: d.execute_script(
        "return [...document.querySelectorAll('#pins .q')].map(e => e.textContent)") == [question])
    # on to the graph: focus selects the goal and says it
    tab_to(page, "cy")
    assert outlined(page)
    sel = "return cy.nodes(':selected').map(n => n.id())"
    assert page.execute_script(sel) == ["n0"]
    detail = page.execute_script("return document.getElementById('node-detail').textContent")
    assert "allowed(" in detail and "alice" in detail
    assert page.execute_script("return document.getElementById('node-detail')"
                               ".getAttribute('aria-live')") == "polite"
    keys(page, Keys.ARROW_RIGHT)
    first = page.execute_script(sel)
    assert first and first != ["n0"]
    keys(page, Keys.ARROW_LEFT)
    assert page.execute_script(sel) == ["n0"]
    # down the proof to a folded node, and Enter opens it
    opened = False
    for _ in range(40):
        keys(page, Keys.ARROW_RIGHT)
        if page.execute_script("return cy.nodes(':selected').hasClass('collapsed')"):
            hidden = page.execute_script("return cy.nodes('.hidden').length")
            keys(page, Keys.ENTER)
            assert page.execute_script("return cy.nodes('.hidden').length") < hidden
            opened = True
            break
        keys(page, Keys.ARROW_DOWN)
    assert opened, "no folded node reached by the arrow keys"
    keys(page, Keys.HOME)
    assert page.execute_script(sel) == ["n0"]
    keys(page, Keys.ESCAPE)
    assert page.execute_script(sel) == []
    # the proof as a list: Shift+Tab to its button, Enter opens it, Escape closes it
    tab_to(page, "proof-list-go", back=True, limit=3)
    keys(page, Keys.ENTER)
    items = page.execute_script("return [...document.querySelectorAll('#proof-list li')]"
                                ".map(e => e.firstChild.textContent)")
    assert page.execute_script("return document.getElementById('proof-list-go')"
                               ".getAttribute('aria-expanded')") == "true"
    assert items[0].startswith("derived: allowed(") and len(items) >= 8
    assert any(i.startswith("under (hierarchy): ") for i in items)
    nested = page.execute_script("return document.querySelectorAll('#proof-list ul ul li').length")
    assert nested >= 3
    shoot(page, "#proof-list", "proof-list")
    keys(page, Keys.ESCAPE)
    assert page.execute_script("return document.getElementById('proof-list').hidden")
    assert focused(page) == "proof-list-go"
    # "/" goes back to the query bar from anywhere but a text field
    keys(page, "/")
    assert focused(page) == "ask"
