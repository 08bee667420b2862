"""``grantlog lsp``: a language server for ``.gl`` rule files over stdio (pygls, lsprotocol).

Everything comes from the compiler: diagnostics are ``compile_program``'s (the same codes,
ranges and help as the CLI), checked with the editor's unsaved texts in place of the files
(``compile_program(files=...)``), so an edit in ``prelude.gl`` re-checks the open files that
import it; with them, ``grantlog lint``'s findings (``compile.lint.lint``: singleton variables,
unused relations, ...) of each open file that is as saved, it and the open files it reads
(lint reads the disk: while a file differs, its lint findings wait for the save). Names,
hovers, definitions, references and outlines come from the parser's AST
(grantlog/lsp/index.py); formatting is ``grantlog fmt``'s. Checks run 75 ms after the last
edit (:data:`DEBOUNCE`), all open files at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from grantlog.engine.compile.compiler import compile_program
from grantlog.engine.compile.lint import lint
from grantlog.grammar import format_text
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError

from .index import Index, Name, Symbol

#: seconds between the last edit and the check
DEBOUNCE = 0.075
#: the command a test block's code lens runs
RUN_TEST = "grantlog.runTest"
KEYWORDS = ("rel", "import", "test", "expect", "not")
RELATION = re.compile(r"^[a-z][A-Za-z0-9_]*$")
VARIABLE = re.compile(r"^[A-Z_][A-Za-z0-9_]*$")


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
        #: test results by (file, test name, the file's text hash)
        self.test_results: dict[tuple[str, str, str], str] = {}
        #: decision-rule counts by (file, texts hash)
        self.rule_counts: dict[tuple[str, str], dict[str, int]] = {}
        self.root: str | None = None
        #: the last text of each file that parsed (names of a file being typed)
        self.parsed: dict[str, str] = {}
        #: `grantlog lint`'s findings of each open file beyond the compiler's (from its last
        #: check; published with whatever check publishes that file's diagnostics)
        self.linted: dict[str, list[Diagnostic]] = {}

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
        if path in self.open_paths():  # not a file only looked into (a definition's)
            self.linted[path] = _lint(path, texts, sources, diags)
        indexed = dict(sources)
        for ex in _examples(self, path):  # their facts' constants complete arguments
            text = _read(ex)
            if text is not None:
                indexed.setdefault(ex, text)
        fallback = dict(self.parsed)
        if path not in fallback:  # opened while it does not parse: the file on disk
            text = _read(path)
            if text is not None:
                fallback[path] = text
        index = self.indexes[path] = Index(indexed, fallback)
        self.parsed.update(index.parsed)
        by_file: dict[str, list[lsp.Diagnostic]] = {f: [] for f in sources}
        for d in diags:
            by_file.setdefault(os.path.normpath(d.span.file), []).append(to_lsp(d))
        for f, ds in by_file.items():  # the open files' lint findings, with their own
            ds.extend(to_lsp(d) for d in self.linted.get(f, ()))
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
                texts[path] = _read(path) or ""
            self.check(path, texts)
            index = self.indexes[path]
        return path, index

    def name_at(self, uri: str, pos: lsp.Position) -> tuple[Index, Name | None]:
        path, index = self.index_for(uri)
        return index, index.at(path, pos.line + 1, pos.character + 1)


def _lint(path: str, texts: dict[str, str], sources: dict[str, str],
          compiled: list[Diagnostic]) -> list[Diagnostic]:
    """``grantlog lint``'s findings in ``path`` that the compiler's ``compiled`` do not
    already hold, on the open texts as they are now (saved or not)."""
    try:
        found, _ = lint([path], texts=texts)
    except GrantlogError:
        return []
    known = set(compiled)
    return [d for d in found if d.severity != "error" and d not in known
            and os.path.normpath(d.span.file) == path]


def _read(path: str) -> str | None:
    """A file's text from disk (None when it cannot be read as UTF-8)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def _digest(texts: dict[str, str]) -> str:
    h = hashlib.sha256()
    for k in sorted(texts):
        h.update(k.encode() + b"\0" + texts[k].encode() + b"\0")
    return h.hexdigest()


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
    ls.linted.pop(path, None)
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


@server.feature(lsp.INITIALIZED)
def initialized(ls: GrantlogServer, params: lsp.InitializedParams) -> None:
    folders = ls.workspace.folders
    ls.root = (to_fs_path(next(iter(folders.values())).uri) if folders else
               ls.workspace.root_path)


class RenameRefused(Exception):
    """A rename that would clash or is not a name; the editor shows the message."""


@server.feature(lsp.TEXT_DOCUMENT_RENAME)
def rename(ls: GrantlogServer, params: lsp.RenameParams) -> lsp.WorkspaceEdit | None:
    """A relation (every use in the files the document reads) or a variable (within its
    rule); refused when the new name is not one of its kind or is taken."""
    path, index = ls.index_for(params.text_document.uri)
    line, col = params.position.line + 1, params.position.character + 1
    new = params.new_name
    var = index.var_at(path, line, col)
    if var is not None:
        name, uses = var
        if not VARIABLE.match(new) or new == "_":
            raise RenameRefused(f"`{new}` is not a variable name (upper case first)")
        if any(v.name == new for v in index.clause_vars(name)):
            raise RenameRefused(f"`{new}` is already a variable of this rule")
        edits = [lsp.TextEdit(range=_range(u), new_text=new) for u in uses]
        return lsp.WorkspaceEdit(changes={params.text_document.uri: edits})
    n = index.at(path, line, col)
    if n is None or n.kind in ("rule", "test-block"):
        return None
    if not RELATION.match(new):
        raise RenameRefused(f"`{new}` is not a relation name (lower case first)")
    if new != n.name and (new in index.decls or any(True for _ in index.uses(new))):
        raise RenameRefused(f"a relation `{new}` exists already")
    changes: dict[str, list[lsp.TextEdit]] = {}
    for u in index.uses(n.name):
        changes.setdefault(from_fs_path(u.file) or u.file, []).append(
            lsp.TextEdit(range=_range(u), new_text=new))
    return lsp.WorkspaceEdit(changes=changes)


def _in_atom(text: str, line: int, character: int) -> tuple[str, int] | None:
    """The relation and argument position the cursor is in (``member(alice, |``)."""
    lines = text.splitlines()
    src = lines[line][:character] if line < len(lines) else ""
    depth, commas = 0, 0
    for i in range(len(src) - 1, -1, -1):
        ch = src[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            if depth == 0:
                m = re.search(r"([a-z][A-Za-z0-9_]*)\s*$", src[:i])
                return (m.group(1), commas) if m else None
            depth -= 1
        elif ch == "," and depth == 0:
            commas += 1
    return None


@server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                lsp.CompletionOptions(trigger_characters=["(", ","]))
def completion(ls: GrantlogServer, params: lsp.CompletionParams) -> lsp.CompletionList:
    """Inside an atom's arguments: the constants the workspace's facts give that column;
    elsewhere: relation names (with their columns as a snippet) and keywords."""
    _, index = ls.index_for(params.text_document.uri)
    doc = ls.workspace.get_text_document(params.text_document.uri)
    items: list[lsp.CompletionItem] = []
    inside = _in_atom(doc.source, params.position.line, params.position.character)
    if inside is not None:
        rel, col = inside
        for v in sorted(index.values.get((rel, col), ()), key=str):
            text = v if isinstance(v, int) or re.match(r"^[a-z][A-Za-z0-9_]*$", v) \
                else '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
            items.append(lsp.CompletionItem(label=str(text), kind=lsp.CompletionItemKind.Value,
                                            detail=f"{rel} column {col + 1}"))
        return lsp.CompletionList(is_incomplete=False, items=items)
    for rel, cols in sorted(index.columns.items()):
        snippet = ", ".join(f"${{{i + 1}:{c[:1].upper() + c[1:]}}}"
                            for i, c in enumerate(cols))
        decl = index.decls.get(rel)
        items.append(lsp.CompletionItem(
            label=rel, kind=lsp.CompletionItemKind.Struct,
            detail=decl.detail if decl else f"{rel}/{len(cols)}",
            documentation="\n".join(decl.doc) if decl and decl.doc else None,
            insert_text=f"{rel}({snippet})", insert_text_format=lsp.InsertTextFormat.Snippet))
    items += [lsp.CompletionItem(label=k, kind=lsp.CompletionItemKind.Keyword)
              for k in KEYWORDS]
    return lsp.CompletionList(is_incomplete=False, items=items)


@server.feature(lsp.WORKSPACE_SYMBOL)
def workspace_symbols(ls: GrantlogServer, params: lsp.WorkspaceSymbolParams,
                      ) -> list[lsp.SymbolInformation]:
    """Relations, rules and tests of the open documents' programs whose name contains the
    query (case-insensitive)."""
    kinds = {"relation": lsp.SymbolKind.Struct, "rule": lsp.SymbolKind.Function,
             "test": lsp.SymbolKind.Method}
    q = params.query.lower()
    seen: set[tuple[str, str, int]] = set()
    out = []
    for index in list(ls.indexes.values()):
        for s in index.symbols:
            k = (s.file, s.name, s.line)
            if q in s.name.lower() and k not in seen:
                seen.add(k)
                out.append(lsp.SymbolInformation(
                    name=s.name, kind=kinds[s.kind], container_name=os.path.basename(s.file),
                    location=lsp.Location(uri=from_fs_path(s.file) or s.file,
                                          range=_symbol_range(s))))
    return out


def _examples(ls: GrantlogServer, path: str) -> list[str]:
    """The example facts of a model: ``examples/<name>/facts.gl`` under the workspace root
    for ``<name>.gl`` (the shipped layout); none for other files."""
    if not ls.root:
        return []
    cand = os.path.join(ls.root, "examples", os.path.splitext(os.path.basename(path))[0],
                        "facts.gl")
    return [cand] if os.path.isfile(cand) else []


def _rule_counts(ls: GrantlogServer, path: str, texts: dict[str, str]) -> dict[str, int]:
    """How many facts each named rule of the decision relation derives, on the program and
    its examples (each rule's body queried, its head's rows counted)."""
    examples = _examples(ls, path)
    key = (path, _digest(texts) + "|".join(examples))
    got = ls.rule_counts.get(key)
    if got is not None:
        return got
    from grantlog.engine.answer.reasoner import Reasoner

    got = {}
    try:
        program = compile_program(None, [path, *examples], files=texts)
        r = Reasoner(program)
        for rule in program.rules:
            if rule.head.rel != program.decision or not rule.labelled \
                    or rule.span.file != path:
                continue
            goal = re.sub(r"_\?\d+", "_", ", ".join(str(b) for b in rule.body))
            rows = {tuple(b[t.name] if hasattr(t, "name") else t for t in rule.head.args)
                    for b in r.query(goal)}
            got[rule.name] = len(rows)
    except GrantlogError:
        got = {}
    ls.rule_counts[key] = got
    return got


@server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
def code_lens(ls: GrantlogServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    """Over each ``test`` block: run it (and its last result); over each named rule of the
    decision relation: how many facts it derives on the model's examples."""
    path, index = ls.index_for(params.text_document.uri)
    texts = ls.open_paths()
    text = texts.get(path, "")
    digest = _digest({path: text})
    out = []
    for s in index.in_file(path):
        r = _symbol_range(s)
        if s.kind == "test":
            last = ls.test_results.get((path, s.name, digest))
            title = "▶ run test" + (f" — {last}" if last else "")
            out.append(lsp.CodeLens(range=r, command=lsp.Command(
                title=title, command=RUN_TEST, arguments=[params.text_document.uri, s.name])))
    counts = _rule_counts(ls, path, texts)
    for s in index.in_file(path):
        if s.kind == "rule" and s.name in counts:
            n = counts[s.name]
            where = "its examples" if _examples(ls, path) else "this file"
            out.append(lsp.CodeLens(range=_symbol_range(s), command=lsp.Command(
                title=f"derives {n} fact{'s' if n != 1 else ''} on {where}", command="")))
    return out


@server.command(RUN_TEST)
def run_test_command(ls: GrantlogServer, uri: str, name: str) -> dict[str, Any]:
    """Run one test block of a file (arguments: its URI and the test's name); its lens then
    shows the result."""
    from grantlog.engine.answer.testing import run_tests

    path = to_fs_path(uri) or uri
    texts = ls.open_paths()
    if path not in texts:
        text = _read(path)
        if text is None:
            return {"passed": False, "message": f"cannot read `{path}`"}
        texts[path] = text
    try:
        program = compile_program(None, [path], files=texts)
    except GrantlogError as err:
        return {"passed": False, "message": str(err.diagnostics[0].message)}
    results = [t for t in run_tests(program, {path}) if t.name == name]
    if not results:
        return {"passed": False, "message": f"no test `{name}`"}
    res = results[0]
    summary = "✓ passed" if res.passed else f"✗ failed: {res.failures[0].message}"
    ls.test_results[(path, name, _digest({path: texts[path]}))] = summary
    ls.window_show_message(lsp.ShowMessageParams(
        type=lsp.MessageType.Info if res.passed else lsp.MessageType.Error,
        message=f'test "{name}": {summary}'))
    caps = ls.client_capabilities.workspace
    if caps is not None and caps.code_lens is not None and caps.code_lens.refresh_support:
        ls.workspace_code_lens_refresh(None)  # the lens shows the result
    return {"passed": res.passed,
            "failures": [{"line": f.span.line, "message": f.message} for f in res.failures]}


def main(argv: Any = None) -> int:
    server.start_io()
    return 0
