"""The explorer's vendored front-end files are the ones `make explorer-assets` builds from the
lock file (grantlog/explorer/assets/): their hashes are the build's record, the bundle's banner
names the locked versions, the README lists them, and the grammar the page colours with is the
one VS Code uses, byte for byte."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "grantlog" / "explorer" / "assets"
VENDOR = ROOT / "grantlog" / "explorer" / "static" / "vendor"
LOCK = json.loads((ASSETS / "package-lock.json").read_text())["packages"]


def locked(name: str) -> str:
    return str(LOCK[f"node_modules/{name}"]["version"])


def test_the_vendored_files_are_the_builds() -> None:
    record = (ASSETS / "vendored.sha256").read_text().split("\n")
    rows = [line.split() for line in record if line.strip()]
    assert {p for _, p in rows} == {"grantlog/explorer/static/vendor/shiki-core.min.js",
                                    "grantlog/explorer/static/vendor/grantlog.tmLanguage.json",
                                    "tests/vendor/axe.min.js"}
    for digest, path in rows:
        assert hashlib.sha256((ROOT / path).read_bytes()).hexdigest() == digest, (
            f"{path} is not what `make explorer-assets` wrote: rebuild it")


def test_the_versions_are_the_locked_ones() -> None:
    declared = json.loads((ASSETS / "package.json").read_text())
    for name, version in {**declared["dependencies"], **declared["devDependencies"]}.items():
        assert locked(name) == version, name
    banner = (VENDOR / "shiki-core.min.js").read_text().split("\n", 1)[0]
    assert banner == (f"/*! grantlog explorer: @shikijs/core {locked('@shikijs/core')}, "
                      f"@shikijs/engine-javascript {locked('@shikijs/engine-javascript')}, "
                      f"bundled by esbuild {locked('esbuild')}; licences: shiki-core.LICENSES */")
    axe = (ROOT / "tests" / "vendor" / "axe.min.js").read_text()[:200]
    assert f"axe v{locked('axe-core')}" in axe
    readme = (VENDOR / "README.md").read_text()
    for name in ("@shikijs/core", "@shikijs/engine-javascript", "esbuild", "axe-core"):
        assert f"{name} {locked(name)}" in readme, name
    # every bundled package's licence is shipped beside the bundle
    licences = (VENDOR / "shiki-core.LICENSES").read_text()
    for name in ("@shikijs/core", "@shikijs/engine-javascript", "@shikijs/vscode-textmate",
                 "oniguruma-to-es"):
        assert re.search(rf"^==== {re.escape(name)} {re.escape(locked(name))} \(MIT\)$",
                         licences, re.M), name


def test_the_page_colours_with_the_vscode_grammar() -> None:
    vscode = ROOT / "editors" / "vscode" / "syntaxes" / "grantlog.tmLanguage.json"
    assert (VENDOR / "grantlog.tmLanguage.json").read_bytes() == vscode.read_bytes(), (
        "the explorer's copy of the grammar differs from VS Code's: `make explorer-assets`")
