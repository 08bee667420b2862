"""The layering rules of docs/architecture.md, checked over the AST import graph.

Every module of ``grammar/``, ``engine/``, ``spark_bridge/``, ``grantlog/`` and ``rules/`` is read
(the folders map to ``grantlog.grammar``, ``grantlog.engine``, ``grantlog.spark_bridge``,
``grantlog`` and ``grantlog.rules``), relative imports resolved, and *every* import counted:
module level, lazy (inside a function) and under ``if TYPE_CHECKING:``. ``from X import y``
is an edge to the module ``X.y`` when there is one, else to ``X`` (a name of it).

The rules:

(a) **downward only**: a module imports modules of its own layer or below (:data:`LAYERS`);
(b) **no cycle**: the strongly connected components of the module graph are single modules;
(c) **front ends use the engine's public surface**: ``grantlog.cli``, ``grantlog.service``,
    ``grantlog.lsp`` and ``grantlog.interop`` import from the engine only the ``grantlog.engine``
    package itself, or public names (no leading ``_``) of ``grantlog.engine.core.*``,
    ``grantlog.engine.compile.*`` and ``grantlog.engine.answer.*``; never ``plan``, ``eval``
    or ``backends`` (the answer modules are the facade: OPA's ``rego`` package);
(d) **no private name across packages**: ``from X import _y`` (or ``import X._y``) only from a
    module of the importer's own package;
(e) **optional dependencies stay home** (:data:`OPTIONAL`);
(f) **no relation name below the API**: the prelude's relation names are not spelled as string
    literals (docstrings aside; comments are not in the AST) in ``engine/`` or
    ``spark_bridge/``: the hierarchy is declared in the rules or recognised on the IR.

Each rule has an allowlist of today's violations, each entry naming who removes it; a list may
only shrink: an entry that no longer occurs fails the test ("remove it from the allowlist").
Each rule is also shown to catch a violation planted in a synthetic tree.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from grantlog.engine.core.analyses import sccs

ROOT = Path(__file__).resolve().parent.parent

#: source folder -> import name
PACKAGES = {"grammar": "grantlog.grammar", "engine": "grantlog.engine",
            "spark_bridge": "grantlog.spark_bridge", "rules": "grantlog.rules",
            "grantlog": "grantlog"}

#: the layers, lowest first; a module belongs to the layer of its longest matching prefix.
#: Same table as docs/architecture.md ("Layers").
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("grammar", ("grantlog.grammar", "grantlog.rules")),  # rules: package data, imports nothing
    ("engine.core", ("grantlog.engine.core",)),
    ("engine.compile", ("grantlog.engine.compile",)),
    ("engine.plan", ("grantlog.engine.plan",)),
    ("engine.eval", ("grantlog.engine.eval",)),
    ("engine.answer", ("grantlog.engine.answer",)),
    ("engine.backends", ("grantlog.engine.backends", "grantlog.engine")),  # + the facade
    ("library", ("grantlog.spark_bridge", "grantlog.reasoner", "grantlog.client",
                 "grantlog.filters", "grantlog.store", "grantlog.interop", "grantlog.tomlfile")),
    ("public API", ("grantlog",)),  # `import grantlog`: the package's own names
    ("front ends", ("grantlog.cli", "grantlog.service", "grantlog.lsp", "grantlog.explorer",
                    # the command lines of the store and of Spark, built with grantlog.cli's
                    "grantlog.store.cli", "grantlog.spark_bridge.cli")),
]

#: rule (c): who is a front end, and what of the engine it may import
FRONT_ENDS = ("grantlog.cli", "grantlog.service", "grantlog.lsp", "grantlog.interop",
              "grantlog.explorer")
ENGINE_PUBLIC = ("grantlog.engine.core", "grantlog.engine.compile", "grantlog.engine.answer")

#: rule (e): optional dependency -> the only modules (prefixes) that may import it
OPTIONAL: dict[str, tuple[str, ...]] = {
    "pyspark": ("grantlog.spark_bridge",),
    "graphframes": ("grantlog.spark_bridge",),
    "psycopg": ("grantlog.store",),
    "starlette": ("grantlog.service", "grantlog.explorer"),
    "uvicorn": ("grantlog.service", "grantlog.explorer"),
    "prometheus_client": ("grantlog.service",),
    "jmespath": ("grantlog.service",),
    "pygls": ("grantlog.lsp",),
    "lsprotocol": ("grantlog.lsp",),
    # spark_bridge/local.py: small relations as Arrow local relations (a list without it)
    "pyarrow": ("grantlog.store.ingest", "grantlog.spark_bridge.local"),
    "sqlglot": ("grantlog.filters",),
    "pyDatalog": ("grantlog.engine.backends.pydatalog",),
    "httpx": ("grantlog.client",),
}

#: rule (f): the prelude's relation names, and the folders below the API
RELATIONS = ("contains", "entity", "ancestor_or_self", "ancestor", "member", "role_of", "holds")
BELOW_API = ("engine", "spark_bridge")
#: (file or folder, word) where the word is not a relation: not violations
NOT_RELATIONS = {("engine/answer/explain", "holds"): "a why-not node's kind",
                 ("engine/answer/decide.py", "holds"): "a why-not node's kind",
                 ("engine/answer/suggest.py", "holds"): "a JSON key: whether the goal holds"}

# ---- allowlists: today's violations; they may only shrink ---------------------------------

#: (a) (file, imported module)
UPWARD_ALLOWED: set[tuple[str, str]] = set()
#: (b) the modules of each cycle
CYCLES_ALLOWED: set[frozenset[str]] = set()
#: (c) (file, imported module[.name])
FRONT_END_ALLOWED: set[tuple[str, str]] = set()
#: (d) (file, imported module.name)
PRIVATE_ALLOWED: set[tuple[str, str]] = set()
#: (e) (file, dependency)
OPTIONAL_ALLOWED: set[tuple[str, str]] = set()
#: (f) (file, relation name)
RELATIONS_ALLOWED: set[tuple[str, str]] = set()
#: tests' use of private names (attribute access ``x._name`` but ``self._name``, ``from
#: grantlog... import _name``, ``setattr(obj, "_name", ...)``): file -> names; may only shrink.
#: The public seam each needs, and who owns the module it belongs in:
TESTS_PRIVATE_ALLOWED: dict[str, set[str]] = {}

# ---- the checker ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    file: str  # relative to the root
    src: str  # the importing module
    target: str  # the imported module
    name: str  # the imported name of it ("" for a module)
    line: int


def module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGES[parts[0]], *parts[1:]])


def modules(root: Path) -> dict[str, Path]:
    """Every module of the source folders: name -> path relative to ``root``."""
    out = {}
    for folder in PACKAGES:
        for f in sorted((root / folder).rglob("*.py")):
            rel = f.relative_to(root)
            out[module_name(rel)] = rel
    return out


def imports(root: Path) -> tuple[Import, ...]:
    """Every import of every module, wherever it stands in the file: the repository's read
    once per run (five rules walk it), a planted tree's each time."""
    return _repository_imports() if root == ROOT else _imports(root)


@functools.cache
def _repository_imports() -> tuple[Import, ...]:
    return _imports(ROOT)


def _imports(root: Path) -> tuple[Import, ...]:
    mods = modules(root)
    out = []
    for src, rel in mods.items():
        tree = ast.parse((root / rel).read_text(encoding="utf-8"))
        package = src.split(".") if rel.name == "__init__.py" else src.split(".")[:-1]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                out += [Import(rel.as_posix(), src, a.name, "", node.lineno) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    mod = ".".join([*base, *([mod] if mod else [])])
                for a in node.names:
                    sub = f"{mod}.{a.name}"
                    out.append(Import(rel.as_posix(), src, sub, "", node.lineno) if sub in mods
                               else Import(rel.as_posix(), src, mod, a.name, node.lineno))
    return tuple(out)


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if _under(module, p) and (best is None or len(p) > best[1]):
                best = (i, len(p))
    return best[0] if best else None


def upward(root: Path) -> set[tuple[str, str]]:
    out = set()
    for i in imports(root):
        a, b = layer(i.src), layer(i.target)
        if a is not None and b is not None and b > a:
            out.add((i.file, i.target))
    return out


def cycles(root: Path) -> set[frozenset[str]]:
    mods = modules(root)
    edges: dict[str, set[str]] = {}
    for i in imports(root):
        if i.target in mods and i.target != i.src:
            edges.setdefault(i.src, set()).add(i.target)
    succ = {m: sorted(es) for m, es in edges.items()}
    return {frozenset(c) for c in sccs(sorted(mods), succ) if len(c) > 1}  # Tarjan


def front_end_reach(root: Path) -> set[tuple[str, str]]:
    out = set()
    for i in imports(root):
        if not any(_under(i.src, f) for f in FRONT_ENDS) or not _under(i.target,
                                                                       "grantlog.engine"):
            continue
        public = i.target == "grantlog.engine" or any(_under(i.target, p) for p in ENGINE_PUBLIC)
        if not public or i.name.startswith("_") or i.target.rsplit(".", 1)[-1].startswith("_"):
            out.add((i.file, i.target + (f".{i.name}" if i.name else "")))
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_across(root: Path) -> set[tuple[str, str]]:
    mods = modules(root)

    def package(module: str) -> str:
        rel = mods.get(module)
        return module if rel is not None and rel.name == "__init__.py" else \
            module.rsplit(".", 1)[0]

    out = set()
    for i in imports(root):
        if i.name:
            owner, name = i.target, i.name
        elif "." in i.target:
            owner, name = i.target.rsplit(".", 1)
        else:
            continue
        if _private(name) and _under(owner, "grantlog") and package(owner) != package(i.src):
            out.add((i.file, f"{owner}.{name}"))
    return out


def optional_outside(root: Path) -> set[tuple[str, str]]:
    out = set()
    for i in imports(root):
        top = i.target.split(".")[0]
        if top in OPTIONAL and not any(_under(i.src, p) for p in OPTIONAL[top]):
            out.add((i.file, top))
    return out


#: an atom in rule or query text: the relation, then a variable, a quoted constant or (in an
#: f-string) a value spliced in; not a declaration's ``name(column: type)`` in a help text
_ATOM = re.compile(r"\b(" + "|".join(RELATIONS) + r")\s*\((?=\s*(?:[A-Z_\"]|$))")


def relation_names(root: Path) -> set[tuple[str, str]]:
    out = set()
    for folder in BELOW_API:
        for f in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(f.read_text(encoding="utf-8"))
            docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
            rel = f.relative_to(root).as_posix()
            for n in ast.walk(tree):
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
                    names = {n.value} & set(RELATIONS) | set(_ATOM.findall(n.value))
                    out |= {(rel, w) for w in names
                            if not any(rel.startswith(p) and w == word
                                       for p, word in NOT_RELATIONS)}
    return out


def private_names_in_tests(root: Path) -> dict[str, set[str]]:
    """The private names each test file uses (see :data:`TESTS_PRIVATE_ALLOWED`)."""
    out: dict[str, set[str]] = {}
    for f in sorted((root / "tests").rglob("*.py")):
        if f.name == Path(__file__).name:
            continue
        names = set()
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(n, ast.Attribute) and _private(n.attr) and not (
                    isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")):
                names.add(n.attr)
            elif isinstance(n, ast.ImportFrom) and (n.module or "").startswith("grantlog"):
                names |= {a.name for a in n.names if _private(a.name)}
            elif isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(
                    n.func, "id", "")) in ("setattr", "delattr"):
                # setattr(obj, "_name", v) or monkeypatch.setattr("module._name", v)
                names |= {a.value.rsplit(".", 1)[-1] for a in n.args[:2]
                          if isinstance(a, ast.Constant) and isinstance(a.value, str)
                          and _private(a.value.rsplit(".", 1)[-1])}
        if names:
            out[f.relative_to(root).as_posix()] = names
    return out


def _check(found: set[Any], allowed: set[Any], what: str) -> None:
    new, gone = set(found) - set(allowed), set(allowed) - set(found)
    assert not new, f"{what}: {sorted(new, key=str)}"
    assert not gone, f"{what}: no longer occurs, remove it from the allowlist: " \
        f"{sorted(gone, key=str)}"


def test_imports_run_downward() -> None:
    _check(upward(ROOT), UPWARD_ALLOWED, "an import up the layers (LAYERS)")


def test_no_import_cycles() -> None:
    _check(cycles(ROOT), CYCLES_ALLOWED, "an import cycle")


def test_front_ends_use_the_public_engine() -> None:
    _check(front_end_reach(ROOT), FRONT_END_ALLOWED,
           "a front end reaching past engine.core/compile/answer's public names")


def test_no_private_name_across_packages() -> None:
    _check(private_across(ROOT), PRIVATE_ALLOWED, "a private name imported across packages")


def test_optional_dependencies_stay_home() -> None:
    _check(optional_outside(ROOT), OPTIONAL_ALLOWED, "an optional dependency outside its package")


def test_no_relation_names_below_the_api() -> None:
    _check(relation_names(ROOT), RELATIONS_ALLOWED, "a prelude relation named below the API")


def test_tests_use_public_seams() -> None:
    def pairs(d: dict[str, set[str]]) -> set[tuple[str, str]]:
        return {(f, n) for f, names in d.items() for n in names}

    _check(pairs(private_names_in_tests(ROOT)), pairs(TESTS_PRIVATE_ALLOWED),
           "a test reaching into a private name (use or add a public seam)")


def test_every_module_has_a_layer() -> None:
    assert [m for m in modules(ROOT) if layer(m) is None] == []


def test_architecture_doc_has_the_layer_table() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for name, prefixes in LAYERS:
        row = next((line for line in doc.splitlines() if line.startswith(f"| {name} |")), None)
        assert row is not None, f"docs/architecture.md has no row for the layer {name}"
        for p in prefixes:
            assert f"`{p}`" in row, f"docs/architecture.md: layer {name} lacks `{p}`"


# ---- the rules catch planted violations -------------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for folder in PACKAGES:
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "__init__.py").touch()
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.parent != tmp_path and not (p.parent / "__init__.py").exists():
            (p.parent / "__init__.py").touch()
        p.write_text(text, encoding="utf-8")
    return tmp_path


def test_checker_catches_upward_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "engine/core/ir.py": "def f():\n    from ..eval import database\n",
        "engine/eval/database.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from grantlog.engine.answer.reasoner import Reasoner\n",
        "engine/answer/reasoner.py": "from ..core.ir import Program\n",  # downward: fine
    })
    assert upward(root) == {("engine/core/ir.py", "grantlog.engine.eval.database"),
                            ("engine/eval/database.py", "grantlog.engine.answer.reasoner")}


def test_checker_catches_a_cycle(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"grantlog/a.py": "def f():\n    from . import b\n",
                            "grantlog/b.py": "from grantlog.a import x\n",
                            "grantlog/c.py": "from . import a\n"})
    assert cycles(root) == {frozenset({"grantlog.a", "grantlog.b"})}


def test_checker_catches_a_front_end_past_the_answer_modules(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "grantlog/service/app.py": "from grantlog.engine.eval.database import Database\n"
                                   "from grantlog.engine.answer.explain import _prover\n"
                                   "from grantlog.engine.answer.explain import Limits\n"
                                   "from grantlog.engine import Reasoner\n",
    })
    assert front_end_reach(root) == {
        ("grantlog/service/app.py", "grantlog.engine.eval.database.Database"),
        ("grantlog/service/app.py", "grantlog.engine.answer.explain._prover")}


def test_checker_catches_a_private_name_across_packages(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "grantlog/service/cli.py": "from grantlog.cli import _inputs\n",
        "grantlog/cli.py": "from .service.cli import _ok\n",  # grantlog -> grantlog.service
        "grantlog/service/app.py": "from .cli import _same_package\n",
    })
    assert private_across(root) == {("grantlog/service/cli.py", "grantlog.cli._inputs"),
                                    ("grantlog/cli.py", "grantlog.service.cli._ok")}


def test_checker_catches_an_optional_dependency_abroad(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"engine/eval/database.py": "def f():\n    import pyspark.sql\n",
                            "grantlog/store/sqlite.py": "import pyarrow\n",
                            "grantlog/store/ingest.py": "import pyarrow\n"})
    assert optional_outside(root) == {("engine/eval/database.py", "pyspark"),
                                      ("grantlog/store/sqlite.py", "pyarrow")}


def test_checker_catches_a_relation_name(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"spark_bridge/closure.py": '"""contains: a docstring."""\n'
                            'EDGE = "contains"\nRULE = f"ancestor_or_self({1}, X)"\n'
                            'GOAL = "entity(X, table)"\n'
                            'OK = "containsx"\nHELP = "rel member(user: string)"\n'})
    assert relation_names(root) == {("spark_bridge/closure.py", "contains"),
                                    ("spark_bridge/closure.py", "ancestor_or_self"),
                                    ("spark_bridge/closure.py", "entity")}


def test_checker_catches_a_test_using_a_private_name(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"tests/test_x.py": "from grantlog.cli import _inputs\n"
                            "def test(r, monkeypatch):\n    r._read()\n"
                            "    monkeypatch.setattr(r, '_lock', None)\n"
                            "    monkeypatch.setattr('grantlog.cli._main', None)\n"
                            "    r.__class__, r.view()\n",
                            "tests/helper.py": "class A:\n    def f(self):\n"
                            "        return self._own\n"})
    assert private_names_in_tests(root) == {
        "tests/test_x.py": {"_inputs", "_read", "_lock", "_main"}}


def test_allowlists_may_only_shrink(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="remove it from the allowlist"):
        _check(set(), {("engine/x.py", "grantlog.y")}, "x")
    with pytest.raises(AssertionError, match="an import"):
        _check({("engine/x.py", "grantlog.y")}, set(), "an import")


# ---- the import-time guarantees ---------------------------------------------------------------


def test_import_grantlog_does_not_import_pyspark() -> None:
    code = ("import sys, grantlog, grantlog.cli; assert 'pyspark' not in sys.modules, 'pyspark'; "
            "assert not {'psycopg', 'pyarrow', 'starlette', 'uvicorn', 'orjson', 'httpx', "
            "'pygls', 'lsprotocol'} "
            "& set(sys.modules), "
            "'lazy'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_bare_top_level_packages_installed() -> None:
    code = (
        "import importlib.util as u, sys; sys.path = [p for p in sys.path if p not in ('', '.')]\n"
        "bad = [n for n in ('engine', 'grammar', 'spark_bridge', 'rules') if u.find_spec(n)]\n"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd="/")
