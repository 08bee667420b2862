#!/usr/bin/env python3
"""The language server's latency (issue 17): diagnostics for the largest shipped model after
a one-character edit, through the protocol.

``grantlog lsp`` runs as a subprocess; a pygls client opens ``rules/<model>.gl`` (the largest
model, ``gravitino.gl`` by default, with a comment line at its end), then 20 times (after two
warm-up edits) types one character into that comment (each text new, as when typing: nothing
kept from an earlier check applies to the edited file) and times the wait from sending the
change to the server's ``publishDiagnostics`` for the file — the server's debounce (75 ms)
included. Target: a median within 200 ms.

    .venv/bin/python benchmarks/lsp_bench.py [--model gravitino] [--rounds 20] [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from harness import HERE, ROOT, replace_section, run_info
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

HEADING = "## Language server: diagnostics after a one-character edit (issue 17)"


async def run(model: Path, rounds: int) -> list[float]:
    client = LanguageClient("lsp-bench", "1")
    arrived: asyncio.Queue[tuple[str, float]] = asyncio.Queue()

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
        arrived.put_nowait((params.uri, time.perf_counter()))

    await client.start_io(sys.executable, "-m", "grantlog.cli", "lsp")
    await client.initialize_async(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(), root_uri=ROOT.as_uri()))
    client.initialized(lsp.InitializedParams())
    uri = model.as_uri()
    text = model.read_text() + "// typed: "  # every edit makes a text never seen before
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(
        uri=uri, language_id="grantlog", version=1, text=text)))

    async def published() -> float:
        while True:
            got, at = await asyncio.wait_for(arrived.get(), 30)
            if got == uri:
                return at

    await published()
    line = text.count("\n")
    col = len(text.splitlines()[line])
    times = []
    for k in range(rounds + 2):
        while not arrived.empty():
            arrived.get_nowait()
        change = lsp.TextDocumentContentChangePartial(
            range=lsp.Range(lsp.Position(line, col + k), lsp.Position(line, col + k)),
            text="x")
        t0 = time.perf_counter()
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=k + 2), [change]))
        at = await published()
        if k >= 2:
            times.append(at - t0)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return times


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="gravitino")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    model = ROOT / "rules" / f"{args.model}.gl"
    times = asyncio.run(run(model, args.rounds))
    res: dict[str, Any] = {
        "model": model.name, "lines": model.read_text().count("\n"), "rounds": len(times),
        "median_ms": statistics.median(times) * 1e3, "max_ms": max(times) * 1e3,
        "min_ms": min(times) * 1e3, **run_info()}
    (HERE / "lsp_results.json").write_text(json.dumps(res, indent=2))
    ok = "met" if res["median_ms"] <= 200 else "**not met**"
    text = "\n".join([
        HEADING, "",
        f"Run {res['when']} at `{res['git']}` (`.venv/bin/python benchmarks/lsp_bench.py "
        f"--write`): `grantlog lsp` over stdio, a pygls client, `rules/{res['model']}` "
        f"({res['lines']:,} lines, the largest shipped model), {res['rounds']} one-character "
        "edits after two warm-up edits; the time from sending the change to the server's "
        "diagnostics for the file, the 75 ms debounce included. Target: median ≤ 200 ms — "
        f"{ok}.", "",
        "| median | min | max |", "|---|---|---|",
        f"| {res['median_ms']:.1f} ms | {res['min_ms']:.1f} ms | {res['max_ms']:.1f} ms |", ""])
    print(text)
    if args.write:
        replace_section(HEADING, text)


if __name__ == "__main__":
    main()
