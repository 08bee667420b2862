#!/usr/bin/env python3
"""The rules editor's colouring in headless Chromium (issue 29: "syntax colouring from the
TextMate grammar"; the target: a 400-line file colours in well under 50 ms, kept in sync on each
keystroke). ``grantlog explore --model gravitino`` is started, the page loaded, and for the
first ``--lines`` lines of the model's file (and for the whole file):

* **whole file**: every line tokenized from nothing (static/highlight.js's cache emptied) by
  ``grantlogHighlight.lines``;
* **keystroke**: one character typed into (and, the next round, taken out of) a line in the
  middle, then the backdrop repainted as the editor's ``input`` handler does
  (``paintBackdrop``: tokenize the changed lines, rebuild the backdrop's HTML), until the
  browser has laid the page out again (``offsetHeight`` read);
* **lines tokenized** per keystroke.

Medians (and the max) of ``--rounds`` rounds after two warm-ups. Needs Debian's ``chromium``
and ``chromium-driver`` and selenium (the dev extra).

    .venv/bin/python benchmarks/explorer_highlight_bench.py [--lines 400] [--rounds 30] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent

WHOLE = """const lines = arguments[0], out = [];
for (let i = 0; i < arguments[1] + 2; i++) {
  grantlogHighlight.cache = [];
  const t0 = performance.now(); grantlogHighlight.lines(lines); out.push(performance.now() - t0);
}
return out.slice(2);"""

KEYS = """const lines = arguments[0], ta = document.getElementById('editor'), out = [], n = [];
ta.value = lines.join('\\n'); paintBackdrop();
const mid = lines.length >> 1;
for (let i = 0; i < arguments[1] + 2; i++) {
  const ls = ta.value.split('\\n');
  ls[mid] = i % 2 ? ls[mid].slice(0, -1) : ls[mid] + 'x';
  ta.value = ls.join('\\n');
  const before = grantlogHighlight.tokenized;
  const t0 = performance.now(); paintBackdrop(); document.body.offsetHeight;
  out.push(performance.now() - t0); n.push(grantlogHighlight.tokenized - before);
}
return [out.slice(2), n.slice(2)];"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def summary(xs: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(xs), 2), "max": round(max(xs), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from selenium import webdriver

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not (chromium and driver):
        sys.exit("needs Debian's chromium and chromium-driver")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "grantlog.cli", "explore", "--model",
                             "gravitino", "--port", str(port), "--no-open"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1500,1700"):
        opts.add_argument(arg)
    drv = None
    try:
        for _ in range(600):
            try:
                if httpx.get(url + "/api/state", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        drv = webdriver.Chrome(options=opts, service=webdriver.ChromeService(driver))
        drv.get(url + "/")
        for _ in range(600):
            if drv.execute_script("return document.body.dataset.highlight") == "1":
                break
            time.sleep(0.05)
        whole = (ROOT / "rules" / "gravitino.gl").read_text().split("\n")
        out: dict[str, dict[str, object]] = {}
        for name, lines in ((f"{args.lines} lines", whole[:args.lines]),
                            (f"{len(whole)} lines (rules/gravitino.gl)", whole)):
            cold = drv.execute_script(WHOLE, lines, args.rounds)
            keys, counts = drv.execute_script(KEYS, lines, args.rounds)
            out[name] = {"whole file ms": summary(cold), "keystroke ms": summary(keys),
                         "lines tokenized per keystroke": summary(counts)}
        out["load average"] = {"1 min": os.getloadavg()[0]}  # type: ignore[dict-item]
        if args.json:
            print(json.dumps(out, indent=1))
        else:
            for name, parts in out.items():
                print(name)
                for part, v in parts.items():
                    print(f"  {part}: {v}")
    finally:
        if drv is not None:
            drv.quit()
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
