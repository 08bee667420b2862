"""The review's HTML page (issue #28, item 5) for the Gravitino example world, opened in the
run's headless Chromium from a file (offline: nothing fetched) and screenshotted into
docs/history/review.png: the tables and the timeline chart render."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_support import shoot
from selenium.webdriver.common.by import By
from test_review import world

from grantlog.cli.review import to_html

ROOT = Path(__file__).resolve().parent.parent


def test_the_review_page_renders_offline(browser: Any, tmp_path: Path) -> None:
    with world(f"sqlite:///{tmp_path / 'facts.db'}") as r:
        rv = r.review(subject="alice", since=1)
    page = tmp_path / "review.html"
    page.write_text(to_html(rv), encoding="utf-8")
    browser.get(page.as_uri())
    assert browser.title == "Access review of subject alice"
    chart = browser.find_element(By.CSS_SELECTOR, "svg")
    assert chart.size["width"] > 600 and chart.size["height"] > 100
    bars = browser.find_elements(By.CSS_SELECTOR, "svg rect")
    assert len(bars) >= min(80, len(rv.entries))
    rows = browser.find_elements(By.CSS_SELECTOR, "h2 + table tbody tr")
    assert rows  # the changes
    lost = browser.find_elements(By.CSS_SELECTOR, "tbody td.lost")
    assert lost and lost[0].value_of_css_property("color") == "rgba(180, 35, 24, 1)"
    # nothing but the page itself was loaded
    loaded = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")
    assert loaded == []
    browser.set_window_size(1280, 1000)
    shoot(browser, "body", "review", folder=ROOT / "docs" / "history")
