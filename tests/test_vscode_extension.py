"""The VS Code extension's manifest holds together: the language, its grammar and language
configuration exist and agree, and the client starts `grantlog lsp` by default. (The grammar's
own tests run with vscode-tmgrammar-test in `make grammar`, part of `make test`.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXT = ROOT / "editors" / "vscode"


def test_the_manifest_points_at_files_that_agree() -> None:
    pkg = json.loads((EXT / "package.json").read_text())
    (lang,) = pkg["contributes"]["languages"]
    (grammar,) = pkg["contributes"]["grammars"]
    assert lang["id"] == grammar["language"] == "grantlog" and lang["extensions"] == [".gl"]
    tm = json.loads((EXT / grammar["path"]).read_text())
    assert tm["scopeName"] == grammar["scopeName"] == "source.grantlog"
    conf = json.loads((EXT / lang["configuration"]).read_text())
    assert conf["comments"]["lineComment"] == "//"
    assert (EXT / pkg["main"]).is_file()
    props = pkg["contributes"]["configuration"]["properties"]
    assert props["grantlog.server.command"]["default"] == "grantlog"
    assert props["grantlog.server.args"]["default"] == ["lsp"]
    assert "vscode-languageclient" in pkg["dependencies"]


def test_the_grammar_tests_cover_every_keyword_of_the_language() -> None:
    lark = (ROOT / "grammar" / "grantlog.lark").read_text()
    keywords = set(re.findall(r'"([a-z]+)"', lark))
    tested = (EXT / "tests" / "grantlog.test.gl").read_text()
    assert keywords == {"import", "rel", "not", "expect", "test", "from", "until"}
    for k in keywords:  # a source line that uses it, followed by an assertion on it
        m = re.search(rf"(?m)^(?!//)(.*\b{k}\b.*)\n((?://.*\n)+)", tested)
        assert m is not None, k
        assert re.search(r"keyword\.|storage\.type\.", m.group(2)), k
