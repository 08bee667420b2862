"""`grantlog lsp` end to end through the protocol (pytest-lsp starts the server as a
subprocess and talks to it over stdio like an editor): diagnostics on open and change, across
imports, equal to the CLI's, and lint's findings with them; hover, definition, references,
outline and formatting on the shipped rule files; and docs/editor.md's Neovim configuration in
a headless Neovim where one is installed."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import pytest
import pytest_lsp
from grantlog.engine.compile.compiler import compile_program
from grantlog.engine.compile.lint import lint
from grantlog.grammar import format_text
from grantlog.grammar.diagnostics import GrantlogError
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

ROOT = Path(__file__).resolve().parent.parent
GRAVITINO = ROOT / "rules" / "gravitino.gl"


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=[sys.executable, "-m", "grantlog.cli", "lsp"]))
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    refreshed: list[None] = []

    @lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)
    def code_lens_refresh(params: None) -> None:  # as VS Code: lenses asked for again
        refreshed.append(params)

    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=ROOT.as_uri()))
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, path: Path, text: str | None = None) -> str:
    uri = path.as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(
        uri=uri, language_id="grantlog", version=1,
        text=path.read_text() if text is None else text)))
    return uri


def _saved(client: LanguageClient, path: Path, text: str) -> str:
    """``text`` written to ``path``, and the file opened: its uri."""
    path.write_text(text)
    return _open(client, path)


async def _diagnostics(client: LanguageClient, uri: str,
                       ok: Callable[[Sequence[lsp.Diagnostic]], bool],
                       ) -> Sequence[lsp.Diagnostic]:
    async def wait() -> Sequence[lsp.Diagnostic]:
        while uri not in client.diagnostics or not ok(client.diagnostics[uri]):
            await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        return client.diagnostics[uri]

    return await asyncio.wait_for(wait(), 30)


def _at(text: str, needle: str, nth: int = 0) -> lsp.Position:
    """The position of the ``nth`` occurrence of ``needle``."""
    i = -1
    for _ in range(nth + 1):
        i = text.index(needle, i + 1)
    line = text.count("\n", 0, i)
    return lsp.Position(line, i - (text.rfind("\n", 0, i) + 1))


@pytest.mark.asyncio
async def test_diagnostics_are_the_compilers(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "bad.gl"
    text = "rel member(user: string, group: string).\nok(U) :- member(U, _).\n" \
           "bad(X, Y) :- member(X, _).\n"
    path.write_text(text)
    with pytest.raises(GrantlogError) as err:
        compile_program(None, [str(path)])
    want = err.value.diagnostics[0]
    uri = _open(client, path)
    got = (await _diagnostics(client, uri, lambda ds: bool(ds)))[0]
    assert got.code == want.code == "unsafe-variable"
    assert (got.range.start.line + 1, got.range.start.character + 1) == \
        (want.span.line, want.span.col)
    assert want.message in got.message and got.severity == lsp.DiagnosticSeverity.Error
    # fixed in the editor (not saved): the diagnostics clear
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [lsp.TextDocumentContentChangeWholeDocument(text=text.replace("bad(X, Y)", "bad(X)"))]))
    assert not await _diagnostics(client, uri, lambda ds: not ds)


@pytest.mark.asyncio
async def test_an_edit_in_an_import_rechecks_its_importers(client: LanguageClient,
                                                           tmp_path: Path) -> None:
    (tmp_path / "prelude.gl").write_text("rel member(user: string, group: string).\n")
    (tmp_path / "main.gl").write_text('import "prelude.gl".\nok(U) :- member(U, admins).\n')
    main = _open(client, tmp_path / "main.gl")
    prelude = _open(client, tmp_path / "prelude.gl")
    assert not await _diagnostics(client, main, lambda ds: not ds)
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=prelude, version=2),
        [lsp.TextDocumentContentChangeWholeDocument(
            text="rel member(user: string, group: string, since: int).\n")]))
    got = await _diagnostics(client, main, lambda ds: bool(ds))
    assert got[0].code == "arity-mismatch" and got[0].range.start.line == 1


def _found(ds: Sequence[lsp.Diagnostic]) -> set[tuple[str, int, int]]:
    return {(str(d.code), d.range.start.line + 1, d.range.start.character + 1) for d in ds}


def _linted(path: Path) -> set[tuple[str, int, int]]:
    """`grantlog lint PATH`'s findings in PATH: (code, line, col)."""
    return {(d.code, d.span.line, d.span.col) for d in lint([str(path)])[0]
            if d.span.file == str(path)}


@pytest.mark.asyncio
async def test_lint_findings_are_published_with_the_compilers(client: LanguageClient,
                                                              tmp_path: Path) -> None:
    """`grantlog lint`'s warnings, as the CLI finds them, beside the compiler's diagnostics:
    those of each open file (an importer's check does not clear its import's), on the open
    texts as they are, saved or not."""
    prelude, main = tmp_path / "prelude.gl", tmp_path / "main.gl"
    prelude.write_text("rel member(user: string, group: string).\n"
                       "rel unused_thing(x: string).\n")
    main.write_text('import "prelude.gl".\nok(U) :- member(U, G).\n')
    want_prelude, want_main = _linted(prelude), _linted(main)
    assert ("unused-relation", 2, 1) in want_prelude
    assert want_main == {("singleton-variable", 2, 20)}
    puri = _open(client, prelude)  # checked first: main's check then publishes prelude too
    muri = _open(client, main)
    got = await _diagnostics(client, muri, lambda ds: bool(ds))
    assert _found(got) == want_main and got[0].severity == lsp.DiagnosticSeverity.Warning
    assert "appears only once" in got[0].message and "help: write `_`" in got[0].message
    assert _found(client.diagnostics[puri]) == want_prelude
    # unsaved: lint's findings are live too, on the editor's text (not the file's)
    edited = 'import "prelude.gl".\nok(U) :- member(U, G).\nbad(X, Y) :- member(X, _).\n'
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=muri, version=2),
        [lsp.TextDocumentContentChangeWholeDocument(text=edited)]))
    got = await _diagnostics(client, muri, lambda ds: len(ds) > 1)
    unsaved = {(d.code, d.span.line, d.span.col)
               for d in lint([str(main)], texts={str(main): edited})[0]
               if d.span.file == str(main)}
    assert _found(got) == unsaved  # the CLI's lint: the error and both singletons
    assert {"singleton-variable", "unsafe-variable"} == {x[0] for x in unsaved}
    assert _linted(main) == want_main  # the file on disk is unchanged


async def _hover(client: LanguageClient, uri: str, pos: lsp.Position) -> str:
    got = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri), position=pos))
    assert got is not None and isinstance(got.contents, lsp.MarkupContent)
    return got.contents.value


@pytest.mark.asyncio
async def test_hover_shows_a_relations_declaration_and_doc(client: LanguageClient) -> None:
    text = GRAVITINO.read_text()
    uri = _open(client, GRAVITINO)
    got = await _hover(client, uri, _at(text, "in_usable_schema(U, T),"))
    assert "rel in_usable_schema(user: string, object: string)" in got
    assert "declared at gravitino.gl:" in got
    # a rule's label: its name and doc line
    got = await _hover(client, uri, _at(text, "load_table: allowed(U, load_table, T)"))
    assert "rule `load_table`" in got and "load catalog and schema" in got
    # a relation of the imported prelude
    got = await _hover(client, uri, _at(text, "ancestor_or_self(A, O)"))
    assert "declared at prelude.gl:" in got


@pytest.mark.asyncio
async def test_definition_and_references(client: LanguageClient) -> None:
    text = GRAVITINO.read_text()
    uri = _open(client, GRAVITINO)
    pos = _at(text, "in_usable_schema(U, T),")
    got = await client.text_document_definition_async(lsp.DefinitionParams(
        text_document=lsp.TextDocumentIdentifier(uri), position=pos))
    assert isinstance(got, list) and len(got) == 2  # the declaration, then its one rule
    decl, rule = got
    assert text.splitlines()[decl.range.start.line].startswith("rel in_usable_schema(")
    assert "in_usable_schema: in_usable_schema(U, O)" in text.splitlines()[rule.range.start.line]
    refs = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=lsp.TextDocumentIdentifier(uri), position=pos,
        context=lsp.ReferenceContext(include_declaration=False)))
    assert refs is not None
    lines = text.splitlines()
    for r in refs:
        if r.uri == uri:
            line = lines[r.range.start.line]
            assert line[r.range.start.character:r.range.end.character] == "in_usable_schema"
    in_file = sum(1 for r in refs if r.uri == uri)
    code = [line.split("//")[0] for line in lines if not line.startswith("rel ")]
    assert in_file == sum(len(re.findall(r"(?<![\w])in_usable_schema\(", x)) for x in code)


@pytest.mark.asyncio
async def test_outline_and_formatting(client: LanguageClient, tmp_path: Path) -> None:
    uri = _open(client, GRAVITINO)
    symbols = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(
        text_document=lsp.TextDocumentIdentifier(uri)))
    assert symbols is not None
    kinds = {(s.name, s.kind) for s in symbols if isinstance(s, lsp.DocumentSymbol)}
    assert ("in_usable_schema", lsp.SymbolKind.Struct) in kinds
    assert ("load_table", lsp.SymbolKind.Function) in kinds
    path = tmp_path / "messy.gl"
    messy = "rel   member(user:string,group:string).\nok(U):-member(U,admins).\n"
    muri = _open(client, path, messy)
    edits = await client.text_document_formatting_async(lsp.DocumentFormattingParams(
        text_document=lsp.TextDocumentIdentifier(muri),
        options=lsp.FormattingOptions(tab_size=4, insert_spaces=True)))
    assert edits and edits[0].new_text == format_text(messy, str(path))
    # a file that does not parse is left alone (its diagnostics say why)
    buri = _open(client, tmp_path / "broken.gl", "rel member(user.\n")
    edits = await client.text_document_formatting_async(lsp.DocumentFormattingParams(
        text_document=lsp.TextDocumentIdentifier(buri),
        options=lsp.FormattingOptions(tab_size=4, insert_spaces=True)))
    assert not edits
    got = await _diagnostics(client, buri, lambda ds: bool(ds))
    assert got[0].code == "syntax-error"


@pytest.mark.asyncio
async def test_rename_a_relation_and_a_variable(client: LanguageClient, tmp_path: Path) -> None:
    (tmp_path / "prelude.gl").write_text("rel member(user: string, group: string).\n")
    text = ('import "prelude.gl".\nrel admin(user: string).\n'
            "is_admin: admin(U) :- member(U, admins), not blocked(U).\n"
            "blocked(U) :- member(U, interns).\n")
    uri = _saved(client, tmp_path / "main.gl", text)
    got = await client.text_document_rename_async(lsp.RenameParams(
        text_document=lsp.TextDocumentIdentifier(uri), position=_at(text, "member(U, admins)"),
        new_name="belongs"))
    assert got is not None and got.changes is not None
    prelude = (tmp_path / "prelude.gl").as_uri()
    assert len(got.changes[uri]) == 2 and len(got.changes[prelude]) == 1
    assert all(e.new_text == "belongs" for es in got.changes.values() for e in es)
    # a variable: its occurrences in its rule only
    got = await client.text_document_rename_async(lsp.RenameParams(
        text_document=lsp.TextDocumentIdentifier(uri), position=_at(text, "U) :- member"),
        new_name="Who"))
    assert got is not None and got.changes is not None
    assert {e.range.start.line for e in got.changes[uri]} == {2}
    assert len(got.changes[uri]) == 3
    # clashes and bad names are refused with the reason
    for pos, new in ((_at(text, "member(U, admins)"), "blocked"),
                     (_at(text, "member(U, admins)"), "Member"),
                     (_at(text, "U) :- member"), "admins")):
        with pytest.raises(Exception, match=r"exists already|not a"):
            await client.text_document_rename_async(lsp.RenameParams(
                text_document=lsp.TextDocumentIdentifier(uri), position=pos, new_name=new))


@pytest.mark.asyncio
async def test_completion_of_relations_constants_and_keywords(client: LanguageClient) -> None:
    text = GRAVITINO.read_text() + "\nprobe(X) :- entity(X, "
    uri = _open(client, GRAVITINO, text)
    end = lsp.Position(text.count("\n"), len(text.splitlines()[-1]))
    got = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri), position=end))
    assert got is not None
    labels = {i.label for i in (got.items if isinstance(got, lsp.CompletionList) else got)}
    assert {"table", "schema", "catalog", "metalake"} <= labels  # from examples/gravitino
    text2 = GRAVITINO.read_text() + "\nprobe(X) :- "
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [lsp.TextDocumentContentChangeWholeDocument(text=text2)]))
    end = lsp.Position(text2.count("\n"), len(text2.splitlines()[-1]))
    got = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri), position=end))
    assert got is not None
    items = {i.label: i for i in (got.items if isinstance(got, lsp.CompletionList) else got)}
    assert items["in_usable_schema"].insert_text == "in_usable_schema(${1:User}, ${2:Object})"
    assert {"rel", "import", "test", "expect", "not"} <= items.keys()


@pytest.mark.asyncio
async def test_workspace_symbols(client: LanguageClient) -> None:
    uri = _open(client, GRAVITINO)
    await client.text_document_hover_async(lsp.HoverParams(  # indexes the document
        text_document=lsp.TextDocumentIdentifier(uri), position=lsp.Position(0, 0)))
    got = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="usable_sch"))
    assert got is not None
    names = {(s.name, s.location.uri.rsplit("/", 1)[-1]) for s in got}
    assert ("in_usable_schema", "gravitino.gl") in names


@pytest.mark.asyncio
async def test_code_lenses_run_tests_and_count_derivations(client: LanguageClient,
                                                           tmp_path: Path) -> None:
    text = ("rel member(user: string, group: string).\n"
            "/// Members of admins may read.\n"
            "admins_read: allowed(U, read, x) :- member(U, admins).\n"
            "member(alice, admins). member(bob, admins). member(carol, staff).\n"
            'test "admins read" {\n    member(dan, admins).\n'
            "    expect allowed(dan, read, x).\n}\n"
            'test "staff read" {\n    member(erin, staff).\n'
            "    expect allowed(erin, read, x).\n}\n")
    uri = _saved(client, tmp_path / "policy.gl", text)
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(
        text_document=lsp.TextDocumentIdentifier(uri)))
    assert lenses is not None
    titles = [x.command.title for x in lenses if x.command]
    assert titles.count("▶ run test") == 2 and "derives 2 facts on this file" in titles
    run = [x.command for x in lenses if x.command and x.command.command == "grantlog.runTest"]
    results = [await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command=c.command, arguments=c.arguments)) for c in run]
    assert [r["passed"] for r in results] == [True, False]
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(
        text_document=lsp.TextDocumentIdentifier(uri)))
    titles = sorted(x.command.title for x in lenses if x.command)
    assert "▶ run test — ✓ passed" in titles
    assert any(t.startswith("▶ run test — ✗ failed") for t in titles)


NVIM_PROBE = r"""
vim.o.hidden = true
local out = {}
for _, f in ipairs({ "rules/a.gl", "rules/b.gl" }) do
  vim.cmd("edit " .. f)
  table.insert(out, "filetype " .. vim.bo.filetype .. " waited " .. tostring(
    vim.wait(30000, function() return #vim.diagnostic.get(0) > 0 end, 50)))
end
local clients = (vim.lsp.get_clients or vim.lsp.get_active_clients)()
for _, c in ipairs(clients) do
  table.insert(out, "client " .. c.name .. " " .. tostring(c.config.root_dir))
end
for _, d in ipairs(vim.diagnostic.get()) do
  local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
  table.insert(out, vim.fn.fnamemodify(vim.api.nvim_buf_get_name(d.bufnr), ":t") .. ":"
    .. (d.lnum + 1) .. ":" .. (d.col + 1) .. " " .. tostring(code))
end
vim.fn.writefile(out, "probe.out")
vim.cmd("qa!")
"""


def test_the_neovim_snippet_of_the_docs(tmp_path: Path) -> None:
    """docs/editor.md's Neovim configuration, as written there, in a headless Neovim (0.7,
    Debian 12's, or later; skipped without `nvim`): two files of a project share one client
    rooted at the project, and get the compiler's and lint's diagnostics."""
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("no `nvim` on PATH (Debian: apt-get install neovim)")
    snippet = re.search(r"```lua\n(.*?)```", (ROOT / "docs" / "editor.md").read_text(),
                        re.S)
    assert snippet is not None
    (tmp_path / "init.lua").write_text(snippet.group(1))
    (tmp_path / "probe.lua").write_text(NVIM_PROBE)
    proj = tmp_path / "proj"
    (proj / "rules").mkdir(parents=True)
    (proj / "rules" / "a.gl").write_text("rel member(user: string, group: string).\n"
                                         "ok(U) :- member(U, G).\nbad(X, Y) :- member(X, _).\n")
    (proj / "rules" / "b.gl").write_text("rel unused_thing(x: string).\n")
    bindir = os.path.dirname(sys.executable)  # where `grantlog` is installed with this Python
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    assert shutil.which("grantlog", path=env["PATH"]) is not None
    run = subprocess.run([nvim, "--headless", "-u", str(tmp_path / "init.lua"),
                          "-c", f"luafile {tmp_path / 'probe.lua'}"], cwd=proj, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "Error" not in run.stderr, run.stderr
    got = (proj / "probe.out").read_text().splitlines()
    assert got[:2] == ["filetype grantlog waited true"] * 2
    assert got[2:3] == [f"client grantlog {proj}"]  # one client, at the project's root
    assert sorted(got[3:]) == ["a.gl:2:20 singleton-variable", "a.gl:3:8 singleton-variable",
                               "a.gl:3:8 unsafe-variable", "b.gl:1:1 unused-relation"]
