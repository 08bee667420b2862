"""docs/diagnostics.md lists every diagnostic code the source can raise, and only those.

The codes are found in the AST of every module of the installed packages (grammar/, engine/,
spark_bridge/, grantlog/: the API, store, client, service, CLI, language server):

* a call of any function or class that has a parameter named ``code`` (``error``,
  ``warning``, ``Diagnostic``, ``store_error``, the service's ``problem``, ``read_toml``...),
  the code at that parameter's position or given as ``code=``; a default value of such a
  parameter (``_bad(message, code="bad-request")``) is a code too;
* any call with a ``code=`` keyword (``out.update(code="decision-log-failed")``);
* a dict literal with a ``"code"`` key (the service's JSON answers);

the value a string literal, a conditional of them, a module constant (``CODE = "bad-import"``,
also imported: ``from ...vocabulary import CODE``) or a local variable assigned those
(``code, message = ("not-found", ...) if ... else (...)``). A diagnostic's code passed on
(``d.code``, ``err["code"]``) was found where it was made; a parameter named ``code`` at the
callers. A code built at run time (the client's ``http-<status>`` for an answer that names
none) cannot be listed: :data:`DYNAMIC` names the places that do so, and a new one fails the
test until someone looks at it. A module's own function wins over a public one of the same
name (gravitino's ``self.problem(file, message)`` is not the service's ``problem``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("grammar", "engine", "spark_bridge", "grantlog")
DOC = ROOT / "docs" / "diagnostics.md"
CODE = re.compile(r"^[a-z]+(?:-[a-z0-9]+)*$")

#: places where a code is not a literal, each "file:function": why that is fine
DYNAMIC = {
    "grantlog/client.py:_raise": "`http-<status>` for an answer that is not grantlog's JSON",
    "grantlog/service/app.py:readyz": "the code of the last failed write, kept to report it",
    "grantlog/service/state.py:handle": "the code of the GrantlogError the endpoint raised",
    "grantlog/service/openapi.py:<module>": "the OpenAPI schema of an error body",
}
#: functions with a `code` parameter that read a code rather than raise one
READERS = {"warned", "status_of"}
#: codes the scanner finds that are not diagnostics: why
NOT_CODES = {"error": "the service's code for an exception without diagnostics, which no "
                      "code path raises"}


def _modules() -> list[Path]:
    return sorted(p for src in SOURCES for p in (ROOT / src).rglob("*.py")
                  if ".venv" not in p.parts)


def _import_name(rel: str) -> str:
    """``engine/answer/vocabulary.py`` -> ``grantlog.engine.answer.vocabulary``."""
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts if parts[0] == "grantlog" else ["grantlog", *parts])


def _definitions(tree: ast.Module) -> dict[str, int | None]:
    """The functions, methods and classes a module defines -> the position of their ``code``
    parameter (``self`` dropped; a class: its ``__init__``'s), None when they have none."""
    out: dict[str, int | None] = {}
    for node in ast.walk(tree):
        fns: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
        if isinstance(node, ast.ClassDef):
            out.setdefault(node.name, None)
            fns = [(node.name, f) for f in node.body if isinstance(f, ast.FunctionDef)
                   and f.name == "__init__"]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) \
                and node.name != "__init__":
            fns = [(node.name, node)]
        for name, fn in fns:
            names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
            if names and names[0] in ("self", "cls"):
                names = names[1:]
            if "code" in names and name not in READERS:
                out[name] = names.index("code")
            else:
                out.setdefault(name, None)
    return out


def _constants(tree: ast.Module) -> dict[str, set[str]]:
    """Module-level names bound to string literals."""
    out: dict[str, set[str]] = {}
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        value = getattr(node, "value", None)
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            for t in targets:
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, set()).add(value.value)
    return out


def _copied(node: ast.expr) -> bool:
    """An existing diagnostic's code passed on (``d.code``, ``err["code"]``,
    ``err.get("code", ...)``): raised where that diagnostic was made."""
    if isinstance(node, ast.Attribute):
        return node.attr == "code"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "code"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "get" and node.args:
        return isinstance(node.args[0], ast.Constant) and node.args[0].value == "code"
    return False


class _Module:
    """One module's scope: its constants (own and imported) and each node's function."""

    def __init__(self, tree: ast.Module, own: str,
                 constants: dict[str, dict[str, set[str]]]) -> None:
        self.consts = dict(constants.get(own, {}))
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    got = constants.get(node.module, {}).get(a.name)
                    if got:
                        self.consts[a.asname or a.name] = got
        self.fn: dict[ast.AST, ast.AST | None] = {}

        def visit(node: ast.AST, fn: ast.AST | None) -> None:
            self.fn[node] = fn
            inner = node if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else fn
            for child in ast.iter_child_nodes(node):
                visit(child, inner)

        visit(tree, None)

    def values(self, expr: ast.expr, at: ast.AST, depth: int = 0) -> set[str] | None:
        """The strings ``expr`` can be at ``at``; None when not known statically."""
        if _copied(expr):
            return set()
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return {expr.value}
        if isinstance(expr, ast.IfExp):
            a, b = self.values(expr.body, at, depth), self.values(expr.orelse, at, depth)
            return None if a is None or b is None else a | b
        if isinstance(expr, ast.Name) and depth < 3:
            fn = self.fn.get(at)
            local = self._local(fn, expr.id, at, depth) if fn is not None else None
            if local is not None:
                return local
            if expr.id in self.consts:
                return self.consts[expr.id]
        return None

    def _local(self, fn: ast.AST, name: str, at: ast.AST, depth: int) -> set[str] | None:
        """The values of a local variable of ``fn``: a parameter passes its caller's code on
        (found at the caller); assignments (``code, message = (...) if ... else (...)``)."""
        assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        a = fn.args
        if name in {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}:
            return set()
        out: set[str] = set()
        assigned = False
        for node in ast.walk(fn):
            if not isinstance(node, ast.Assign):
                continue
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == name:
                    got = self.values(node.value, at, depth + 1)
                elif isinstance(t, ast.Tuple) and any(
                        isinstance(e, ast.Name) and e.id == name for e in t.elts):
                    i = next(i for i, e in enumerate(t.elts)
                             if isinstance(e, ast.Name) and e.id == name)
                    got = self._element(node.value, i, at, depth + 1)
                else:
                    continue
                assigned = True
                if got is None:
                    return None
                out |= got
        return out if assigned else None

    def _element(self, expr: ast.expr, i: int, at: ast.AST, depth: int) -> set[str] | None:
        if isinstance(expr, ast.Tuple) and i < len(expr.elts):
            return self.values(expr.elts[i], at, depth)
        if isinstance(expr, ast.IfExp):
            a = self._element(expr.body, i, at, depth)
            b = self._element(expr.orelse, i, at, depth)
            return None if a is None or b is None else a | b
        return None


def scan(trees: dict[str, ast.Module]) -> tuple[dict[str, set[str]], set[str]]:
    """(code -> the files raising it, the dynamic places "file:function") of modules given as
    file name -> AST."""
    defs = {rel: _definitions(tree) for rel, tree in trees.items()}
    public: dict[str, int] = {"Diagnostic": 0}  # a dataclass: `code` is its first field
    no_code: set[str] = set()  # names something defines without a `code` parameter
    for d in defs.values():
        for name, i in d.items():
            if i is None:
                no_code.add(name)
            elif not name.startswith("_"):
                public[name] = i
    constants = {_import_name(rel): _constants(tree) for rel, tree in trees.items()}
    codes: dict[str, set[str]] = {}
    dynamic: set[str] = set()
    for rel, tree in trees.items():
        mod = _Module(tree, _import_name(rel), constants)
        local = defs[rel]
        # a module's own definition wins: `self.problem(file, message)` is not the service's
        sinks = {k: v for k, v in public.items() if local.get(k, v) is not None}
        sinks.update((k, v) for k, v in local.items() if v is not None)

        def found(node: ast.AST, expr: ast.expr | None, sure: bool = True,
                  rel: str = rel, mod: _Module = mod) -> None:
            if expr is None:
                return
            vals = mod.values(expr, node)
            if vals is None:
                if sure:
                    fn = mod.fn.get(node)
                    dynamic.add(f"{rel}:{getattr(fn, 'name', '<module>')}")
                return
            for v in vals:
                if CODE.match(v):
                    codes.setdefault(v, set()).add(rel)

        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = _callee(node)
                kw = next((k.value for k in node.keywords if k.arg == "code"), None)
                if name in sinks:
                    i = sinks[name]
                    arg = node.args[i] if i < len(node.args) else kw
                    # `obj.error(exc)`: a method of that name may be another function
                    sure = isinstance(node.func, ast.Name) or name not in no_code
                    if not isinstance(arg, ast.Starred):
                        found(node, arg, sure)
                elif kw is not None:
                    found(node, kw)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name in READERS:
                    continue
                args = node.args.posonlyargs + node.args.args
                defaults = dict(zip([a.arg for a in args[len(args) - len(node.args.defaults):]],
                                    node.args.defaults, strict=True))
                defaults.update((a.arg, d) for a, d in zip(
                    node.args.kwonlyargs, node.args.kw_defaults, strict=True) if d is not None)
                if "code" in defaults:
                    found(node, defaults["code"])
            elif isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values, strict=True):
                    if isinstance(k, ast.Constant) and k.value == "code":
                        found(node, v)
    for name in NOT_CODES:
        codes.pop(name, None)
    return codes, dynamic


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def raised_codes() -> tuple[dict[str, set[str]], set[str]]:
    """:func:`scan` of every module of the packages."""
    return scan({p.relative_to(ROOT).as_posix(): ast.parse(p.read_text(encoding="utf-8"), str(p))
                 for p in _modules()})


def documented_codes() -> list[str]:
    """The codes of the table in docs/diagnostics.md (the first cell of each row)."""
    out = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\|\s*`([a-z0-9-]+)`\s*\|", line)
        if m:
            out.append(m.group(1))
    return out


def test_every_raised_code_is_documented() -> None:
    codes, _ = raised_codes()
    documented = set(documented_codes())
    missing = {c: sorted(files) for c, files in codes.items() if c not in documented}
    assert not missing, ("codes raised but not in docs/diagnostics.md (add a row: code, "
                         f"severity, when, an example and the fix): {missing}")


def test_every_documented_code_is_raised() -> None:
    codes, _ = raised_codes()
    stale = sorted(set(documented_codes()) - set(codes))
    assert not stale, f"docs/diagnostics.md lists codes nothing raises: {stale}"


def test_each_code_has_an_example_and_a_fix() -> None:
    """Each row shows the diagnostic (``error[code]: ...`` in double backticks, or an
    "e.g.") and says how to fix it (the word "fix")."""
    lacking = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\|\s*`([a-z0-9-]+)`\s*\|", line)
        if m and not (("``" in line or "e.g." in line) and re.search(r"\b[Ff]ix\b", line)):
            lacking.append(m.group(1))
    assert not lacking, f"rows of docs/diagnostics.md without an example or a fix: {lacking}"


def test_each_code_is_documented_once() -> None:
    docs = documented_codes()
    assert len(docs) == len(set(docs)), sorted({c for c in docs if docs.count(c) > 1})


def test_dynamic_codes_are_known() -> None:
    _, dynamic = raised_codes()
    assert dynamic == set(DYNAMIC), ("a code computed at run time: make it a literal, or list the "
                                f"place in DYNAMIC saying why: {sorted(dynamic ^ set(DYNAMIC))}")


def test_the_scanner_finds_each_form() -> None:
    """Each form the scanner knows, planted in a synthetic module, is found; a computed code
    is reported as dynamic."""
    text = """
CODE = "planted-const"
def error(code, message, span): ...
def problem(status, code, message): ...
def _bad(message, code="planted-default"): ...
class Failure:
    def __init__(self, status, code): ...
def warned(self, code): ...
error("planted-call", "m", None)
error(CODE, "m", None)
error("planted-a" if x else "planted-b", "m", None)
problem(404, code="planted-keyword", message="m")
Failure(500, "planted-class")
out.update(code="planted-update")
body = {"code": "planted-dict"}
warned("not-raised")
def computed(status):
    return error(f"http-{status}", "m", None)
"""
    other = """
from grantlog.planted import CODE as IMPORTED
def problem(file, message): ...
def local(status):
    code, message = ("planted-local", "m") if status else ("planted-other", "n")
    return error(code, message, None)
error(IMPORTED, "m", None)
problem("not-a-code", "m")
"""
    codes, dynamic = scan({"planted.py": ast.parse(text), "other.py": ast.parse(other)})
    assert set(codes) == {"planted-const", "planted-default", "planted-call", "planted-a",
                          "planted-b", "planted-keyword", "planted-class", "planted-update",
                          "planted-dict", "planted-local", "planted-other"}
    assert codes["planted-const"] == {"planted.py", "other.py"}
    assert dynamic == {"planted.py:computed"}
