"""Reading rule files: paths and directories, `import` resolution, cycle detection.

Texts can come from memory instead of the disk (``files``: a policy uploaded to the decision
service, an editor's unsaved buffers): a path found there is read from there, and with
``disk=False`` a relative import must be one of them (only the shipped models are still read
from the search path).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from grantlog.grammar import ast
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, display_path, error
from grantlog.grammar.facts import CACHE_TEXT, FactTable, parse_cached, read_cached, read_facts

from ..core import progress


@dataclass
class Loaded:
    """Parsed modules in dependency order (imports before importers) and their texts."""

    modules: list[ast.Module] = field(default_factory=list)
    #: with ``rows``: each module's plain fact lines, read into rows (not in its statements)
    tables: list[FactTable | None] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    roots: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


def default_search_path() -> list[Path]:
    from grantlog.rules import rules_dir

    return [rules_dir()]


def expand_paths(
    paths: list[str], allow_empty: bool = False
) -> tuple[list[str], list[Diagnostic]]:
    """Files as given; directories become their `.gl` files, recursively, sorted.

    A directory without `.gl` files is an error unless ``allow_empty`` (fmt, test).
    """
    files: list[str] = []
    diags: list[Diagnostic] = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(str(f) for f in Path(p).rglob("*.gl"))
            if not found and not allow_empty:
                diags.append(error("file-not-found", f"no `.gl` files in `{p}`", _file_span(p)))
            files.extend(found)
        elif os.path.isfile(p):
            files.append(p)
        else:
            diags.append(error("file-not-found", f"cannot read `{p}`: no such file", _file_span(p)))
    return files, diags


def _where(path: str, folder: Path | None) -> str:
    """An import candidate as a hint names it: a shipped model not by its checkout path."""
    from grantlog.rules import rules_dir

    if folder is not None and folder.resolve() == rules_dir():
        return "among the shipped models (`grantlog models` lists them)"
    return f"`{display_path(path)}`"


def _file_span(path: str) -> Span:
    return Span(path, 0, 0, 0, 0)


def read_source(path: str, span: Span | None = None) -> tuple[str, Diagnostic | None]:
    """The text of a rule file, or a `file-not-found` / `bad-encoding` diagnostic."""
    try:
        return Path(path).read_text(encoding="utf-8-sig"), None  # a byte-order mark is dropped
    except UnicodeDecodeError as e:
        raw = Path(path).read_bytes()[: e.start]
        line = raw.count(b"\n") + 1
        col = e.start - (raw.rfind(b"\n") + 1) + 1
        return "", error("bad-encoding", f"`{path}` is not UTF-8 text (byte {e.start})",
                         span or Span(path, line, col, line, col + 1),
                         "rule files are read as UTF-8; convert the file")
    except OSError as e:
        reason = (e.strerror or str(e)).lower()
        return "", error("file-not-found", f"cannot read `{path}`: {reason}",
                         span or _file_span(path))


class _Loader:
    def __init__(self, search_path: list[Path], files: Mapping[str, str] | None = None,
                 disk: bool = True, rows: bool = False) -> None:
        self.search_path = search_path
        self.rows = rows
        #: texts by normalized path, read instead of the disk
        self.files = {os.path.normpath(k): v for k, v in (files or {}).items()}
        self.disk = disk
        self.out = Loaded()
        self.done: set[str] = set()
        self.stack: list[tuple[str, str]] = []  # (realpath, shown name)

    def load_text(self, text: str, name: str, base_dir: str) -> None:
        self._module(text, name, os.path.realpath(name) if os.path.exists(name) else name,
                     base_dir)

    def _real(self, path: str) -> str:
        norm = os.path.normpath(path)
        return norm if norm in self.files else os.path.realpath(path)

    def _exists(self, path: str, disk: bool = True) -> bool:
        return os.path.normpath(path) in self.files or (disk and os.path.isfile(path))

    def load_file(self, path: str, span: Span | None = None) -> None:
        real = self._real(path)
        if real in self.done:
            return
        norm = os.path.normpath(path)
        text, diag = (self.files[norm], None) if norm in self.files else \
            read_source(path, span)
        if diag is not None:
            self.out.diagnostics.append(diag)
            return
        self._module(text, path, real, os.path.dirname(path))

    def _module(self, text: str, name: str, real: str, base_dir: str) -> None:
        text = text.removeprefix("\ufeff")  # a byte-order mark (text given to the API)
        self.out.sources[name] = text
        table: FactTable | None = None
        try:
            if not self.rows:
                mod = parse_cached(text, name)  # fact lines without the LALR parser; kept
            elif len(text) <= CACHE_TEXT:
                mod, table = read_cached(text, name)
            else:
                with progress.task(f"reading {display_path(name)}", total=len(text),
                                   unit="B") as advance:
                    mod, table = read_facts(text, name, advance)
        except GrantlogError as e:
            self.out.diagnostics.extend(e.diagnostics)
            self.done.add(real)
            return
        self.stack.append((real, name))
        for st in mod.statements:
            if isinstance(st, ast.Import):
                self._import(st, base_dir)
        self.stack.pop()
        self.done.add(real)
        self.out.modules.append(mod)
        self.out.tables.append(table)

    def _shipped(self, name: str) -> str | None:
        """The search path's file for an import ``name`` that names one of its `.gl` files
        (``gravitino.gl``, ``org/prelude.gl``), else None: an absolute name, a `..` or a file
        that is not a rule file never leaves the search path's folders."""
        norm = posixpath.normpath(name.replace("\\", "/"))
        if (not norm.endswith(".gl") or norm.startswith(("/", "../")) or norm == ".."
                or ":" in norm or "\0" in norm):
            return None
        for d in self.search_path:
            root = d.resolve()
            cand = (root / norm).resolve()
            if cand.is_relative_to(root) and cand.is_file():
                return str(d / norm)
        return None

    def _import(self, st: ast.Import, base_dir: str) -> None:
        local = os.path.normpath(os.path.join(base_dir, st.path))
        if self.disk:
            candidates = [local] + [str(d / st.path) for d in self.search_path]
            found = next((c for c in candidates if self._exists(c)), None)
            tried = [_where(c, d) for c, d in zip(candidates, [None, *self.search_path],
                                                   strict=True)]
            where = ", ".join(tried[:-1]) + " and " + tried[-1] if len(tried) > 1 else tried[0]
        else:  # only the given files, and the shipped models by name: no path is read
            found = local if self._exists(local, disk=False) else self._shipped(st.path)
            where = "the given files and the shipped models (`grantlog models` lists them)"
        if found is None:
            self.out.diagnostics.append(
                error("import-not-found", f"cannot find `{st.path}`", st.span,
                      f"looked for {where}")
            )
            return
        real = self._real(found)
        on_stack = [n for r, n in self.stack]
        reals = [r for r, n in self.stack]
        if real in reals:
            cycle = [display_path(n) for n in [*on_stack[reals.index(real):], found]]
            self.out.diagnostics.append(
                error("import-cycle", f"import cycle: {' -> '.join(cycle)}", st.span,
                      "remove one of the imports; shared rules belong in a third file")
            )
            return
        self.load_file(found, st.span)


def load(
    text: str | None,
    paths: list[str],
    filename: str,
    search_path: list[Path] | None = None,
    files: Mapping[str, str] | None = None,
    disk: bool = True,
    rows: bool = False,
) -> Loaded:
    """The modules of ``paths`` and ``text`` and of their imports. ``rows``: a file's plain
    fact lines are read into rows (``Loaded.tables``), not made into statements (what the
    compiler wants; the linter and the language server want every statement)."""
    loader = _Loader(search_path if search_path is not None else default_search_path(),
                     files, disk, rows)
    roots: list[str] = []
    for p in paths:
        if os.path.normpath(p) in loader.files:
            roots.append(p)
        elif not disk:
            loader.out.diagnostics.append(error(
                "file-not-found", f"`{p}` is not among the given files", _file_span(p)))
        else:
            found, diags = expand_paths([p])
            roots.extend(found)
            loader.out.diagnostics.extend(diags)
    for f in roots:
        loader.out.roots.append(f)
        loader.load_file(f)
    if text is not None:
        loader.out.roots.append(filename)
        base = os.path.dirname(filename) if os.path.exists(filename) else os.getcwd()
        loader.load_text(text, filename, base)
    return loader.out
