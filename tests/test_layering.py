"""Imports flow one way (grammar <- engine <- spark_bridge, API on top); pyspark stays lazy."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FORBIDDEN = {
    "grammar": ("grantlog.engine", "grantlog.spark_bridge", "grantlog.cli", "grantlog.store",
                "pyspark"),
    "engine": ("grantlog.spark_bridge", "grantlog.cli", "grantlog.store", "grantlog.reasoner",
               "grantlog.service", "grantlog.lsp", "pyspark", "graphframes", "psycopg",
               "sqlite3", "pyarrow", "starlette", "uvicorn", "pygls", "lsprotocol"),
    # the store sits on the engine and never reaches into Spark
    "grantlog/store": ("grantlog.spark_bridge", "grantlog.cli", "grantlog.service",
                       "grantlog.lsp", "pyspark"),
    # the language server sits on the compiler: no store, service or Spark
    "grantlog/lsp": ("grantlog.spark_bridge", "grantlog.cli", "grantlog.service",
                     "grantlog.store", "pyspark"),
}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
    return out


def test_dependencies_point_one_way() -> None:
    for folder, banned in FORBIDDEN.items():
        for f in (ROOT / folder).rglob("*.py"):
            for mod in _imports(f):
                assert not mod.startswith(banned), f"{f} imports {mod}"
                assert mod != "grantlog", f"{f} imports the public API package"


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
