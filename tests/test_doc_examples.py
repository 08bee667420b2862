"""The Python examples of README.md and docs/**/*.md run, so the docs cannot drift from the code.

Each file's ```` ```python ```` blocks run in order, in one namespace per file, in a fresh
directory where ``examples/`` and ``rules/`` are the checkout's (the paths the examples use).
Markers in the Markdown (HTML comments, invisible when rendered):

* ``<!-- example: not run (WHY) -->`` on the line before a block: the block is compiled and its
  imports run, nothing else (it needs a server, a Spark session, a catalog...);
* ``<!-- example file: NAME -->`` on the line before a block of any language: its text is
  written to ``NAME`` first (a layout file shown in the docs is the one the example reads);
* ``<!-- example setup`` ... ``-->``: Python run at that point, unseen by readers (the
  reasoner a section's fragments assume).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
NOT_RUN = re.compile(r"<!--\s*example:\s*not run\s*\((.+)\)\s*-->")
FILE = re.compile(r"<!--\s*example file:\s*(\S+)\s*-->")


@dataclass
class Step:
    kind: str  # "run", "imports", "file"
    text: str
    line: int
    name: str = ""


def steps(path: Path) -> list[Step]:
    """What a Markdown file's examples do, in order."""
    lines = path.read_text(encoding="utf-8").split("\n")
    out: list[Step] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("<!-- example setup"):
            j = i + 1
            while not lines[j].strip().startswith("-->"):
                j += 1
            out.append(Step("run", "\n".join(lines[i + 1:j]), i + 2))
            i = j + 1
            continue
        m = re.match(r"^(`{3,})(\S*)", line)
        if m:
            fence, lang = m.group(1), m.group(2)
            j = i + 1
            while not lines[j].startswith(fence):
                j += 1
            body = "\n".join(lines[i + 1:j]) + "\n"
            before = lines[i - 1] if i else ""
            file = FILE.search(before)
            if file:
                out.append(Step("file", body, i + 2, file.group(1)))
            elif lang == "python":
                out.append(Step("imports" if NOT_RUN.search(before) else "run", body, i + 2))
            i = j + 1
            continue
        i += 1
    return out


def _imports_only(text: str) -> str:
    tree = ast.parse(text)
    return "\n".join(ast.unparse(n) for n in tree.body
                     if isinstance(n, ast.Import | ast.ImportFrom))


@pytest.mark.parametrize("doc", [d for d in DOCS if any(s.kind != "file" for s in steps(d))],
                         ids=lambda d: d.relative_to(ROOT).as_posix())
def test_python_examples_run(doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("examples", "rules"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    shown = doc.relative_to(ROOT).as_posix()
    namespace: dict[str, object] = {"__name__": "__doc_example__"}
    for step in steps(doc):
        if step.kind == "file":
            (tmp_path / step.name).write_text(step.text, encoding="utf-8")
            continue
        text = step.text if step.kind == "run" else _imports_only(step.text)
        # line numbers of the Markdown file in tracebacks
        code = compile("\n" * (step.line - 1) + text, shown, "exec")
        exec(code, namespace)


def test_markers_are_found(tmp_path: Path) -> None:
    """The markers parse as the module doc says (a synthetic document)."""
    doc = ("<!-- example setup\nx = 1\n-->\n<!-- example file: a.toml -->\n```toml\nk = 1\n```\n"
           "<!-- example: not run (needs a server) -->\n```python\nimport json\nserver()\n```\n"
           "```python\nprint(x)\n```\n```sh\nls\n```\n")
    path = tmp_path / "doc.md"
    path.write_text(doc, encoding="utf-8")
    got = [(s.kind, s.name, s.line) for s in steps(path)]
    assert got == [("run", "", 2), ("file", "a.toml", 6), ("imports", "", 10), ("run", "", 14)]
    assert _imports_only("import json\nserver()\n") == "import json"
