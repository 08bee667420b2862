"""Headless Chromium for the browser tests (the explorer's panes, the review report): Selenium
with Debian's ``chromium`` and ``chromium-driver``. Importing this module skips the importing
test module, saying why, when they are absent. One browser per run: conftest.py's ``browser``
fixture (session-scoped) calls ``start``; its ``page`` fixture calls ``fresh_page``, which
loads the explorer fresh and puts its model text and pins back after; ``shoot`` writes a
screenshot into docs/ when asked for (``GRANTLOG_SCREENSHOTS=1``) or missing, so the suite does
not churn them."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "docs" / "explorer"
ORDERS = "m1.lakehouse.sales.orders"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                "(pip install -e '.[dev]')")
if not (CHROMIUM and DRIVER):
    pytest.skip("headless Chromium is not installed (Debian: apt-get install chromium "
                "chromium-driver; `make test` does when it can)", allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def start() -> Iterator[Any]:
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1500,1700", "--force-device-scale-factor=1"):
        opts.add_argument(arg)
    drv = webdriver.Chrome(options=opts, service=webdriver.ChromeService(str(DRIVER)))
    yield drv
    drv.quit()


def fresh_page(browser: Any, explorer_url: str) -> Iterator[Any]:
    """The explorer's page, loaded fresh; the model's text and the pins are put back after."""
    with httpx.Client(base_url=explorer_url, timeout=60) as c:
        original = c.get("/api/state").json()["docs"][0]["text"]
        browser.get(explorer_url + "/")
        wait(browser, lambda d: d.execute_script("return document.body.dataset.ready"))
        yield browser
        c.post("/api/edit", json={"doc": 0, "text": original})
        for p in c.get("/api/state").json()["pins"]:
            c.delete(f"/api/pins/{p['id']}")


def wait(drv: Any, cond: Callable[[Any], Any], timeout: float = 30) -> Any:
    return WebDriverWait(drv, timeout).until(cond)


def shoot(drv: Any, selector: str, name: str, folder: Path = SHOTS) -> None:
    """A screenshot of one element, written when asked for or missing."""
    path = folder / f"{name}.png"
    if os.environ.get("GRANTLOG_SCREENSHOTS") == "1" or not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        drv.find_element(By.CSS_SELECTOR, selector).screenshot(str(path))


def ask(drv: Any, question: str) -> str:
    box = drv.find_element(By.ID, "ask")
    box.clear()
    box.send_keys(question, Keys.ENTER)  # the keyboard asks: Enter in the query bar
    return str(wait(drv, lambda d: _summary(d, question)))


def _summary(drv: Any, question: str) -> str | None:
    a = drv.execute_script("return window.explorer.answer")
    return a["summary"] if a and a["question"] == question else None


def type_at_end(drv: Any, text: str) -> None:
    ed = drv.find_element(By.ID, "editor")
    ed.click()
    ed.send_keys(Keys.CONTROL, Keys.END)
    ed.send_keys(text)
