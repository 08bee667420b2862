"""The rules editor's colours in headless Chromium: the tokens carry the scopes of the TextMate
grammar VS Code uses (editors/vscode/syntaxes/grantlog.tmLanguage.json, tokenized in the page
by the vendored shiki core), each line of the backdrop is one element whose text is the
editor's line (so colours and diagnostics stay under the text they belong to), and an edit
re-tokenizes only the lines it touched. Screenshot: docs/explorer/highlight.png."""

from __future__ import annotations

from typing import Any

from browser_support import shoot, type_at_end, wait
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

LINES = """return [...document.querySelectorAll('#backdrop > [data-line]')]
  .map(e => [Number(e.dataset.line), e.textContent, e.className])"""
EDITOR = "return document.getElementById('editor').value.split('\\n')"


def scopes(page: Any, line: int) -> list[list[str]]:
    return list(page.execute_script(
        "return [...document.querySelectorAll(`#backdrop > [data-line='${arguments[0]}'] "
        "[data-scope]`)].map(e => [e.textContent, e.dataset.scope])", line))


def highlighted(page: Any) -> None:
    wait(page, lambda d: d.execute_script("return document.body.dataset.highlight") == "1")


def aligned(page: Any) -> bool:
    """Every backdrop line is the editor's line, character for character."""
    lines, text = page.execute_script(LINES), page.execute_script(EDITOR)
    return [n for n, _, _ in lines] == list(range(1, len(text) + 1)) and all(
        shown == (want or " ") for (_, shown, _), want in zip(lines, text, strict=True))


def test_tokens_carry_the_grammars_scopes(page: Any) -> None:
    highlighted(page)
    text = page.execute_script(EDITOR)
    assert aligned(page)
    comment = next(i for i, line in enumerate(text, 1) if line.lstrip().startswith("// "))
    assert scopes(page, comment) == [[text[comment - 1].lstrip(),
                                      "comment.line.double-slash.grantlog"]]
    found = set(page.execute_script(
        "return [...new Set([...document.querySelectorAll('#backdrop [data-scope]')]"
        ".map(e => e.dataset.scope))]"))
    for scope in ("entity.name.function.rule.grantlog", "entity.name.type.relation.grantlog",
                  "storage.type.relation.grantlog", "keyword.operator.rule.grantlog",
                  "variable.other.grantlog", "comment.line.documentation.grantlog"):
        assert scope in found, scope
    # a named rule's name is coloured as the grammar says, and differently from plain text
    rule, name, colour = page.execute_script(
        "const e = document.querySelector(\"#backdrop [data-scope^='entity.name.function']\"); "
        "return [Number(e.parentElement.dataset.line), e.textContent, getComputedStyle(e).color]")
    assert text[rule - 1].startswith(name + ":")
    plain = page.execute_script("return getComputedStyle(document.getElementById('backdrop'))"
                                ".color")
    assert colour != plain


def test_typing_keeps_colours_and_diagnostics_aligned(page: Any) -> None:
    highlighted(page)
    n = len(page.execute_script(EDITOR))
    type_at_end(page, '\n// a broken rule\nbroken(X) :- nope(X, "a\\"b", 42.')
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, f"#backdrop .err[data-line='{n + 2}']"))
    assert aligned(page)
    assert scopes(page, n + 1) == [["// a broken rule", "comment.line.double-slash.grantlog"]]
    got = dict((scope, t) for t, scope in scopes(page, n + 2))
    assert got["entity.name.type.relation.grantlog"] == "nope"
    assert got["constant.character.escape.grantlog"] == '\\"'
    assert got["constant.numeric.integer.grantlog"] == "42"
    assert got["keyword.operator.rule.grantlog"] == ":-"
    # the marked line is the coloured one: the error mark and the colours share the element
    cls = page.execute_script(LINES)[n + 1][2].split()
    assert "err" in cls and "ln" in cls
    # a test block opened at the end colours `expect` inside it (the grammar's state runs on
    # from line to line) and nothing before it is re-tokenized
    before = page.execute_script("return grantlogHighlight.tokenized")
    page.find_element(By.ID, "editor").send_keys(
        Keys.BACKSPACE, ').\ntest "t" {\n  expect not broken("a").\n}')
    wait(page, lambda d: any(s == "keyword.other.expect.grantlog" for _, s in scopes(d, n + 4)))
    assert [s for _, s in scopes(page, n + 3)][:1] == ["keyword.other.test.grantlog"]
    assert ["not", "keyword.operator.negation.grantlog"] in scopes(page, n + 4)
    assert aligned(page)
    typed = page.execute_script("return grantlogHighlight.tokenized") - before
    # one keystroke re-tokenizes its own line (and the lines its state flows into), not the file
    keys = len(').\ntest "t" {\n  expect not broken("a").\n}') + 1
    assert typed <= 3 * keys, typed
    wait(page, lambda d: not d.find_elements(By.CSS_SELECTOR, "#backdrop .err"))
    shoot(page, "#rules-pane", "highlight")


def test_an_edit_in_the_middle_retokenizes_a_few_lines(page: Any) -> None:
    highlighted(page)
    lines = page.execute_script(EDITOR)
    before = page.execute_script("return grantlogHighlight.tokenized")
    page.execute_script("const b = document.getElementById('backdrop'); "
                        "window.kept = [b.children[0], b.children[b.children.length - 2]]")
    # a character typed in the middle of the file, then taken back
    page.execute_script(
        "const ta = document.getElementById('editor'); const at = ta.value.indexOf('\\n', "
        "ta.value.length >> 1); ta.focus(); ta.setSelectionRange(at, at);")
    page.find_element(By.ID, "editor").send_keys(" ", Keys.BACKSPACE)
    wait(page, lambda d: d.execute_script("return grantlogHighlight.tokenized") - before >= 2)
    assert page.execute_script("return grantlogHighlight.tokenized") - before <= 4
    assert aligned(page)
    assert page.execute_script(EDITOR) == lines
    # a line break in the middle renumbers the lines after it, and taking it back too
    page.find_element(By.ID, "editor").send_keys(Keys.ENTER)
    assert len(page.execute_script(EDITOR)) == len(lines) + 1 and aligned(page)
    page.find_element(By.ID, "editor").send_keys(Keys.BACKSPACE)
    assert page.execute_script(EDITOR) == lines and aligned(page)
    # the lines it did not touch are the same elements: redrawn one line at a time
    assert page.execute_script("const b = document.getElementById('backdrop'); return "
                               "kept[0] === b.children[0] && "
                               "kept[1] === b.children[b.children.length - 2]")
