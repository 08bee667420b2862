#!/usr/bin/env python3
"""The explorer's asked check (issue 29: "a check answered and drawn <= 200 ms at 100k
tables"), on the Gravitino model and on the own models of benchmarks/models/ (issue 26's rule:
no fast path depends on the shipped models' names), each over the same generated world of
``--tables`` tables (benchmarks/models/worlds.py, seed 1).

Checks: the workload's sampler's (benchmarks/gravitino_workload.py; the own models only have
the table-loading operation, so theirs are its ``load_table`` checks), until ``--checks``
ALLOWs and ``--checks`` DENYs are found. Each is measured three ways:

* **in process**: what ``POST /api/ask`` runs for a check (grantlog/explorer/ask.py): the
  decision, ``explain``, the page's graph (grantlog/explorer/proofs.py) and the JSON, in parts.
  ``first``: the question's first ask (the reasoner warm, the question new), ``again``: the
  ``--rounds`` asks after it;
* **over HTTP** (``--http``): the world loaded into a SQLite store (``grantlog store load``),
  ``grantlog explore RULES --store URL`` started, and every check posted to ``/api/ask``
  (its first ask and ``--rounds`` more): the seconds from start to the first answer, the
  latency and the bytes of each answer;
* **in the browser** (``--browser``, which implies ``--http``; the shipped model only): headless
  Chromium (Selenium, Debian's ``chromium`` and ``chromium-driver``) loads the page and asks
  each check as the ask bar does (``askNow()``), the server idle (what the page asked after the
  previous answer done): from the request to the next animation frame after the graph is
  drawn, and the page's own drawing time (``explorer.drawMs``).

Prints medians (and the max) per model, decision and part; ``--json`` prints them as JSON.

    .venv/bin/python benchmarks/explorer_bench.py [--tables 100000] [--checks 20]
        [--rounds 3] [--models shipped,unary,twotrees] [--http] [--browser] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "models"))

import gravitino_workload as gw  # noqa: E402
import worlds  # noqa: E402
from grantlog.engine.core.ir import show_atom  # noqa: E402

import grantlog  # noqa: E402
from grantlog.explorer import proofs  # noqa: E402

GRANTLOG = str(Path(sys.executable).with_name("grantlog"))
PARTS = ("check", "explain", "graph", "json", "total")


def sample(world: worlds.World, r: grantlog.Reasoner, n: int) -> list[tuple[str, str, str]]:
    """``n`` ALLOW and ``n`` DENY checks of ``world`` (fewer when 50 n samples do not hold
    them), in the order sampled."""
    sampler = gw.Sampler(world.workload)
    own = world.model != "shipped"
    found: dict[bool, list[tuple[str, str, str]]] = {True: [], False: []}
    seen: set[tuple[str, str, str]] = set()
    for _ in range(50 * n):
        s, o, res = sampler.one("load_table" if own else None)
        c = (s, world.load if own else o, res)
        if c in seen:
            continue
        seen.add(c)
        d = bool(r.check(*c).allowed)
        if len(found[d]) < n:
            found[d].append(c)
        if all(len(v) >= n for v in found.values()):
            break
    return found[True] + found[False]


def in_process(r: grantlog.Reasoner, checks: list[tuple[str, str, str]],
               rounds: int) -> dict[str, Any]:
    """The parts of each check's asks (ms), by decision and first/again; graph sizes."""
    fold = proofs.folded_relations(r.program)
    out: dict[str, Any] = {}
    nodes: dict[str, list[int]] = {"ALLOW": [], "DENY": []}
    for s, o, res in checks:
        for k in range(rounds + 1):
            t = time.perf_counter()
            d = r.check(s, o, res)
            t1 = time.perf_counter()
            ex = r.explain(show_atom(r.program.decision, (s, o, res))).to_dict()
            t2 = time.perf_counter()
            g = proofs.graph(ex, fold)
            t3 = time.perf_counter()
            json.dumps({"graph": g, "summary": d.allowed})
            t4 = time.perf_counter()
            which = "ALLOW" if d.allowed else "DENY"
            cell = out.setdefault(f"{which} {'first' if k == 0 else 'again'}",
                                  {p: [] for p in PARTS})
            for p, dt in zip(PARTS, (t1 - t, t2 - t1, t3 - t2, t4 - t3, t4 - t), strict=True):
                cell[p].append(dt * 1000)
        nodes[which].append(len(g["nodes"]))
    return {"ms": out, "nodes": nodes}


@contextmanager
def explorer(world: worlds.World, folder: Path) -> Iterator[tuple[str, float]]:
    """``grantlog explore`` over ``world`` in a SQLite store: its URL and the seconds from
    start to its first answered check."""
    facts = worlds.write_facts(world, folder / f"{world.model}.facts.gl")
    url = f"sqlite:///{folder / world.model}.db"
    done = subprocess.run([GRANTLOG, "store", "load", "--rules", str(world.rules), "--create",
                           "-q", url, str(facts)], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"grantlog store load failed: {done.stderr}")
    err = folder / f"{world.model}.err"
    t0 = time.perf_counter()
    with err.open("w") as e:
        proc = subprocess.Popen([GRANTLOG, "explore", str(world.rules), "--store", url,
                                 "--port", "0", "--no-open"], stdout=subprocess.DEVNULL,
                                stderr=e)
    try:
        base = None
        while base is None:
            if proc.poll() is not None:
                raise SystemExit(f"grantlog explore stopped: {err.read_text()}")
            m = re.search(r"http://[0-9.:]+/", err.read_text())
            base = m.group(0) if m else None
            time.sleep(0.05)
        import httpx

        u = world.workload.users[0]
        httpx.post(base + "api/ask", json={"question": f"check {u} {world.load} "
                                           f"{world.workload.tables[0]}"}, timeout=600)
        yield base, time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(30)


def over_http(base: str, checks: list[tuple[str, str, str]], rounds: int) -> dict[str, Any]:
    """The latency (ms) and bytes of each check posted to ``/api/ask``."""
    import httpx

    ms: dict[str, list[float]] = {}
    size: dict[str, list[int]] = {"ALLOW": [], "DENY": []}
    with httpx.Client(base_url=base, timeout=600) as c:
        for s, o, res in checks:
            for k in range(rounds + 1):
                t = time.perf_counter()
                got = c.post("/api/ask", json={"question": f"check {s} {o} {res}"})
                dt = (time.perf_counter() - t) * 1000
                got.raise_for_status()
                which = "ALLOW" if got.json()["value"] else "DENY"
                ms.setdefault(f"{which} {'first' if k == 0 else 'again'}", []).append(dt)
            size[which].append(len(got.content))
    return {"ms": ms, "bytes": size}


ASK = """const done = arguments[arguments.length - 1];
document.getElementById("ask").value = arguments[0];
const t0 = performance.now();
askNow().then(() => requestAnimationFrame(() => done({
  total: performance.now() - t0, draw: explorer.drawMs, shown: explorer.shownNodes,
  nodes: explorer.cy ? explorer.cy.nodes().length : 0,
  allowed: explorer.answer ? explorer.answer.value : null})));"""


def in_browser(base: str, checks: list[tuple[str, str, str]]) -> dict[str, Any]:
    """Each check asked once in headless Chromium: request to drawn (ms), drawing (ms), the
    graph's nodes and the nodes shown first."""
    import httpx
    from selenium import webdriver
    from selenium.webdriver.support.ui import WebDriverWait

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1500,1700"):
        opts.add_argument(arg)
    drv = webdriver.Chrome(options=opts, service=webdriver.ChromeService(
        shutil.which("chromedriver") or "chromedriver"))
    try:
        drv.set_script_timeout(600)
        drv.get(base)
        WebDriverWait(drv, 600).until(
            lambda d: d.execute_script("return document.body.dataset.ready"))
        out: dict[str, dict[str, list[float]]] = {}
        for s, o, res in checks:
            # the server idle first: what the page asks after drawing (a DENY's suggested
            # changes, grantlog/explorer/suggestions.py) runs on, and a check asked meanwhile
            # waits for it; a check of our own returns once it is done
            httpx.post(base + "api/ask", json={"question": f"check {s} {o} {res}"},
                       timeout=600)
            got = drv.execute_async_script(ASK, f"check {s} {o} {res}")
            cell = out.setdefault("ALLOW" if got["allowed"] else "DENY",
                                  {"total": [], "draw": [], "nodes": [], "shown": []})
            for k in cell:
                cell[k].append(float(got[k] or 0))
        return out
    finally:
        drv.quit()


def med(v: list[float]) -> str:
    return f"{statistics.median(v):8.2f} {max(v):8.2f}" if v else f"{'-':>8} {'-':>8}"


def report(model: str, n_facts: int, res: dict[str, Any]) -> None:
    print(f"\n== {model}: {n_facts:,} facts; load average {os.getloadavg()[0]:.2f}")
    print(f"{'in process (ms)':<22} {'n':>3} " + " ".join(f"{p + ' med':>9} {'max':>8}"
                                                       for p in PARTS))
    for k, cell in sorted(res["in_process"]["ms"].items()):
        print(f"{k:<22} {len(cell['total']):>3} " + " ".join(med(cell[p]) for p in PARTS))
    for k, v in res["in_process"]["nodes"].items():
        if v:
            print(f"graph nodes of a{'n' if k == 'ALLOW' else ''} {k}: median "
                  f"{statistics.median(v):.0f}, max {max(v)}")
    if "http" in res:
        h = res["http"]
        print(f"over HTTP: start to the first answer {res['start_s']:.1f} s")
        for k, v in sorted(h["ms"].items()):
            print(f"  {k:<20} {len(v):>3}  median {statistics.median(v):8.2f} ms, "
                  f"max {max(v):8.2f} ms")
        for k, v in h["bytes"].items():
            if v:
                print(f"  answer bytes, {k}: median {statistics.median(v):,.0f}, max {max(v):,}")
    for k, cell in sorted(res.get("browser", {}).items()):
        print(f"in the browser, {k} ({len(cell['total'])}): asked to drawn median "
              f"{statistics.median(cell['total']):.1f} ms (max {max(cell['total']):.1f}), "
              f"drawing {statistics.median(cell['draw']):.1f} ms "
              f"(max {max(cell['draw']):.1f}); nodes median "
              f"{statistics.median(cell['nodes']):.0f}, shown first "
              f"{statistics.median(cell['shown']):.0f}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", type=int, default=100_000)
    p.add_argument("--checks", type=int, default=20, help="ALLOWs and DENYs each (20)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--models", default="shipped,unary,twotrees",
                   help=f"comma-separated, of {', '.join(worlds.MODELS)}")
    p.add_argument("--http", action="store_true", help="also over HTTP (grantlog explore)")
    p.add_argument("--browser", action="store_true",
                   help="also in headless Chromium (implies --http; the shipped model)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    a.http = a.http or a.browser
    if a.browser and not (shutil.which("chromium") and shutil.which("chromedriver")):
        print("no headless Chromium (Debian: chromium and chromium-driver): not measuring the "
              "drawing", file=sys.stderr)
        a.browser = False
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="explorer-bench-") as tmp:
        for model in a.models.split(","):
            world = worlds.generate(model, a.tables, seed=1)
            r = grantlog.Reasoner(grantlog.compile(paths=[str(world.rules)]))
            with r.transaction() as tx:
                for rel, rows in world.facts.items():
                    tx.insert(rel, rows)
            r.prepare()
            checks = sample(world, r, a.checks)
            res: dict[str, Any] = {"in_process": in_process(r, checks, a.rounds)}
            r.close()
            del r
            if a.http:
                with explorer(world, Path(tmp)) as (base, start):
                    res["start_s"] = start
                    res["http"] = over_http(base, checks, a.rounds)
                    if a.browser and model == "shipped":
                        res["browser"] = in_browser(base, checks)
            res["load_average"] = os.getloadavg()[0]
            results[model] = res
            if not a.json:
                report(model, world.n_facts, res)
    if a.json:
        print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
