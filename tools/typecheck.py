"""Run mypy on the source folders under their installed names.

setuptools maps the top-level folders grammar/, engine/, spark_bridge/ and rules/ to
grantlog.grammar, grantlog.engine, ... ; mypy cannot follow the editable-install import hook, so
this script builds grantlog/ in a temporary folder from symlinks to the real folders and
checks that.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: where the symlinked tree is built: GRANTLOG_TYPECHECK_STAGE, or a fresh temporary folder per
#: run (so that concurrent runs do not pull the tree from under each other)
STAGE = Path(os.environ.get("GRANTLOG_TYPECHECK_STAGE")
             or tempfile.mkdtemp(prefix="grantlog-typecheck-")).resolve()
MAPPING = {"grammar": "grammar", "engine": "engine", "spark_bridge": "spark_bridge",
           "rules": "rules"}


def main() -> int:
    shutil.rmtree(STAGE, ignore_errors=True)
    pkg = STAGE / "grantlog"
    pkg.mkdir(parents=True)
    for f in (ROOT / "grantlog").iterdir():
        if f.suffix in (".py", ".typed") or (f.is_dir() and (f / "__init__.py").exists()):
            os.symlink(f, pkg / f.name)
    for name, folder in MAPPING.items():
        os.symlink(ROOT / folder, pkg / name)
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
           "--cache-dir", str(STAGE / ".mypy_cache"), "-p", "grantlog"]
    env = dict(os.environ, MYPYPATH=str(STAGE))
    try:
        return subprocess.call(cmd, cwd=STAGE, env=env)
    finally:
        if "GRANTLOG_TYPECHECK_STAGE" not in os.environ:
            shutil.rmtree(STAGE, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
