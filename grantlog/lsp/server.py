"""``grantlog lsp``: a language server for ``.gl`` rule files over stdio (pygls, lsprotocol).

Everything comes from the compiler: diagnostics are ``compile_program``'s (the same codes,
ranges and help as the CLI), checked with the editor's unsaved texts in place of the files
(``compile_program(files=...)``), so an edit in ``prelude.gl`` re-checks the open files that
import it; names, hovers, definitions, references and outlines come from the parser's AST
(grantlog/lsp/index.py); formatting is ``grantlog fmt``'s. Checks run 150 ms after the last
edit (:data:`DEBOUNCE`), all open files at once.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from grantlog.engine.compiler import compile_program
from grantlog.grammar import format_text
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError

from .index import Index, Name, Symbol

#: seconds between the last edit and the check
DEBOUNCE = 0.15


class GrantlogServer(LanguageServer):
    def __init__(self) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            ours = version("grantlog")
        except PackageNotFoundError:  # run from a checkout without installing
            ours = "0"
        super().__init__("grantlog", ours,
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        #: open documents' paths -> their last index (the program they compile to)
        self.indexes: dict[str, Index] = {}
        #: files each open document's check published diagnostics for
        self.published: dict[str, set[str]] = {}
        self._pending: asyncio.TimerHandle | None = None

    # -- texts ----------------------------------------------------------------------------------

    def open_paths(self) -> dict[str, str]:
        """Every open document's path and text (what the compiler reads instead of disk)."""
        out = {}
        for uri, doc in self.workspace.text_documents.items():
            path = to_fs_path(uri)
            if path is not None and path.endswith(".gl"):
                out[path] = doc.source
        return out

    def schedule(self) -> None:
        """Check every open document :data:`DEBOUNCE` seconds after the last edit."""
        if self._pending is not None:
            self._pending.cancel()
        self._pending = asyncio.get_running_loop().call_later(DEBOUNCE, self.check_all)

    def check_all(self) -> None:
        self._pending = None
        texts = self.open_paths()
        for path in texts:
            self.check(path, texts)

    def check(self, path: str, texts: dict[str, str]) -> None:
        """Compile ``path`` with the open texts; publish the diagnostics of every file it
        read (an imported file's problems show in that file), clear those it no longer
        reports, and keep the index of what it read."""
        diags: list[Diagnostic]
        try:
            program = compile_program(None, [path], files=texts)
            diags, sources = list(program.warnings), program.sources
        except GrantlogError as err:
            diags, sources = list(err.diagnostics), dict(err.sources)
        sources = {os.path.normpath(f): t for f, t in sources.items()}
        sources.setdefault(path, texts.get(path, ""))
        self.indexes[path] = Index(sources)
        by_file: dict[str, list[lsp.Diagnostic]] = {f: [] for f in sources}
        for d in diags:
            by_file.setdefault(os.path.normpath(d.span.file), []).append(to_lsp(d))
        before = self.published.get(path, set())
        for f in before - by_file.keys():
            by_file[f] = []
        self.published[path] = {f for f, ds in by_file.items() if ds}
        for f, ds in by_file.items():
            if f.startswith("<"):
                continue
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=from_fs_path(f) or f, diagnostics=ds))

    # -- lookups --------------------------------------------------------------------------------

    def index_for(self, uri: str) -> tuple[str, Index]:
        path = to_fs_path(uri) or uri
        index = self.indexes.get(path)
        if index is None:
            texts = self.open_paths()
            if path not in texts:
                try:
                    with open(path, encoding="utf-8") as f:
                        texts[path] = f.read()
                except OSError:
                    texts[path] = ""
            self.check(path, texts)
            index = self.indexes[path]
        return path, index

    def name_at(self, uri: str, pos: lsp.Position) -> tuple[Index, Name | None]:
        path, index = self.index_for(uri)
        return index, index.at(path, pos.line + 1, pos.character + 1)


def to_lsp(d: Diagnostic) -> lsp.Diagnostic:
    sp = d.span
    start = lsp.Position(max(sp.line - 1, 0), max(sp.col - 1, 0))
    end_line = sp.end_line or sp.line
    end_col = sp.end_col if sp.end_col and (sp.end_line, sp.end_col) > (sp.line, sp.col) \
        else sp.col + 1
    end = lsp.Position(max(end_line - 1, 0), max(end_col - 1, 0))
    message = d.message + (f"\nhelp: {d.help}" if d.help else "")
    return lsp.Diagnostic(
        range=lsp.Range(start, end), message=message, code=d.code, source="grantlog",
        severity=lsp.DiagnosticSeverity.Error if d.severity == "error"
        else lsp.DiagnosticSeverity.Warning)


def _range(n: Name) -> lsp.Range:
    return lsp.Range(lsp.Position(n.line - 1, n.col - 1), lsp.Position(n.line - 1,
                                                                       n.end_col - 1))


def _location(n: Name) -> lsp.Location:
    return lsp.Location(uri=from_fs_path(n.file) or n.file, range=_range(n))


def _symbol_range(s: Symbol) -> lsp.Range:
    return lsp.Range(lsp.Position(s.line - 1, s.col - 1),
                     lsp.Position((s.end_line or s.line) - 1, max((s.end_col or s.col) - 1, 0)))


def _hover_text(index: Index, n: Name) -> str | None:
    if n.kind == "rule":
        rule = index.rule(n.name)
        if rule is None:
            return None
        doc = "\n".join(rule.doc)
        return f"rule `{rule.name}` (derives `{rule.detail}`)" + (f"\n\n{doc}" if doc else "")
    if n.kind == "test-block":
        return f'test "{n.name}"'
    decl = index.decls.get(n.name)
    if decl is None:
        return f"`{n.name}`: not declared (its columns come from its uses)"
    doc = "\n".join(decl.doc)
    where = f"{os.path.basename(decl.file)}:{decl.line}"
    return f"```gl\n{decl.detail}.\n```\n" + (f"{doc}\n\n" if doc else "") + f"declared at {where}"


server = GrantlogServer()


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: GrantlogServer, params: lsp.DidOpenTextDocumentParams) -> None:
    ls.schedule()


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: GrantlogServer, params: lsp.DidChangeTextDocumentParams) -> None:
    ls.schedule()


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: GrantlogServer, params: lsp.DidSaveTextDocumentParams) -> None:
    ls.schedule()


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: GrantlogServer, params: lsp.DidCloseTextDocumentParams) -> None:
    path = to_fs_path(params.text_document.uri) or params.text_document.uri
    ls.indexes.pop(path, None)
    for f in ls.published.pop(path, set()):
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=from_fs_path(f) or f, diagnostics=[]))
    ls.schedule()


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def hover(ls: GrantlogServer, params: lsp.HoverParams) -> lsp.Hover | None:
    index, n = ls.name_at(params.text_document.uri, params.position)
    if n is None:
        return None
    text = _hover_text(index, n)
    if text is None:
        return None
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
                     range=_range(n))


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
def definition(ls: GrantlogServer, params: lsp.DefinitionParams) -> list[lsp.Location] | None:
    """A relation's declaration, then the rules that derive it; a rule label's rule."""
    index, n = ls.name_at(params.text_document.uri, params.position)
    if n is None or n.kind in ("rule", "test-block"):
        return None
    decls = [u for u in index.uses(n.name) if u.kind == "decl"]
    heads = [u for u in index.uses(n.name) if u.kind == "head"]
    return [_location(u) for u in decls + heads] or None


@server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
def references(ls: GrantlogServer, params: lsp.ReferenceParams) -> list[lsp.Location] | None:
    index, n = ls.name_at(params.text_document.uri, params.position)
    if n is None or n.kind in ("rule", "test-block"):
        return None
    with_decl = params.context.include_declaration
    return [_location(u) for u in index.uses(n.name) if with_decl or u.kind != "decl"]


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def document_symbols(ls: GrantlogServer, params: lsp.DocumentSymbolParams,
                     ) -> list[lsp.DocumentSymbol]:
    path, index = ls.index_for(params.text_document.uri)
    kinds = {"relation": lsp.SymbolKind.Struct, "rule": lsp.SymbolKind.Function,
             "test": lsp.SymbolKind.Method}
    out = []
    for s in index.in_file(path):
        r = _symbol_range(s)
        out.append(lsp.DocumentSymbol(name=s.name, kind=kinds[s.kind], range=r,
                                      selection_range=r, detail=s.detail))
    return out


@server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
def formatting(ls: GrantlogServer, params: lsp.DocumentFormattingParams,
               ) -> list[lsp.TextEdit] | None:
    """`grantlog fmt` of the document; nothing while it does not parse (the diagnostics
    say why)."""
    doc = ls.workspace.get_text_document(params.text_document.uri)
    path = to_fs_path(doc.uri) or doc.uri
    try:
        new = format_text(doc.source, path)
    except GrantlogError:
        return None
    if new == doc.source:
        return []
    lines = doc.source.splitlines()
    end = lsp.Position(len(lines), 0)
    return [lsp.TextEdit(range=lsp.Range(lsp.Position(0, 0), end), new_text=new)]


def main(argv: Any = None) -> int:
    server.start_io()
    return 0
