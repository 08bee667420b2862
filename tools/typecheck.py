"""Run mypy on the source folders under their installed names.

setuptools maps the top-level folders grammar/, engine/, spark_bridge/ and rules/ to
grantlog.grammar, grantlog.engine, ... ; mypy cannot follow the editable-install import hook, so
this script builds .typecheck/grantlog/ from symlinks to the real folders and checks that.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAGE = ROOT / ".typecheck"
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
           "-p", "grantlog"]
    env = dict(os.environ, MYPYPATH=str(STAGE))
    return subprocess.call(cmd, cwd=STAGE, env=env)


if __name__ == "__main__":
    sys.exit(main())
