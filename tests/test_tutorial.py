"""docs/tutorial.md is the transcript of docs/tutorial.src.md, run for real (tools/gen_tutorial.py).

The first test runs every command of the tutorial in a fresh folder (~15 s: each is a
`grantlog` process) and compares the page with the checked-in one; it also fails when a
command's exit code is not the one the tutorial writes down, so the prose ("this is an error",
"a DENY") cannot drift from what happens. `GRANTLOG_UPDATE_GOLDENS=1` rewrites the page, as for
the other goldens: review the diff. The other tests pin the generator's own rules on small
sources (no grantlog needed).
"""

from __future__ import annotations

import difflib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import ROOT, UPDATE


def _generator() -> ModuleType:
    path = ROOT / "tools" / "gen_tutorial.py"
    spec = importlib.util.spec_from_file_location("gen_tutorial", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_tutorial", module)
    spec.loader.exec_module(module)
    return module


gen = _generator()


def test_tutorial_is_the_transcript_of_its_source() -> None:
    result = gen.generate()
    target: Path = gen.TARGET
    if UPDATE:
        target.write_text(result.text, encoding="utf-8")
    expected = target.read_text(encoding="utf-8") if target.exists() else ""
    assert not result.mismatches, "exit codes differ from the tutorial's:\n" + "\n".join(
        result.mismatches)
    if result.text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), result.text.splitlines(True),
                                            "docs/tutorial.md", "generated", n=2))
        lines = diff.splitlines()
        shown = "\n".join(lines[:80]) + ("\n..." if len(lines) > 80 else "")
        pytest.fail("docs/tutorial.md is stale (GRANTLOG_UPDATE_GOLDENS=1 or "
                    f"`python tools/gen_tutorial.py` rewrites it):\n{shown}")


def test_steps_render_as_typed_with_output_and_exit_code(tmp_path: Path) -> None:
    source = "\n".join([
        "Intro.",
        "",
        "```file notes/a.txt",
        "hello",
        "```",
        "",
        "```run exit=0",
        "cat notes/a.txt && echo \"in $PWD\" && ls",
        "```",
        "",
        "```run exit=3",
        "echo oops >&2; exit 3",
        "```",
    ]) + "\n"
    result = gen.render(source, tmp_path)
    assert result.mismatches == []
    assert result.text == gen.HEADER + "\n".join([
        "Intro.",
        "",
        "```console",
        "$ cat > notes/a.txt <<'EOF'",
        "hello",
        "EOF",
        "```",
        "",
        "```console",
        "$ cat notes/a.txt && echo \"in $PWD\" && ls",
        "hello",
        "in .",           # the temporary folder never shows
        "notes",
        "[exit 0]",
        "```",
        "",
        "```console",
        "$ echo oops >&2; exit 3",
        "oops",           # stderr is part of the transcript
        "[exit 3]",
        "```",
    ]) + "\n"
    assert (tmp_path / "notes" / "a.txt").read_text() == "hello\n"


def test_an_exit_code_other_than_the_written_one_is_reported(tmp_path: Path) -> None:
    source = "```run exit=0\nfalse\n```\n"
    result = gen.render(source, tmp_path)
    assert result.mismatches == ["tutorial.src.md:1: `false` exited 1, the tutorial says 0"]
    assert "$ false\n[exit 1]\n" in result.text


def test_measured_durations_are_elided(tmp_path: Path) -> None:
    result = gen.render("```run exit=0\necho read 8 facts in 0.03 s, 12.5 s later\n```\n",
                        tmp_path)
    assert "\nread 8 facts in … s, … s later\n[exit 0]\n" in result.text


def test_a_run_step_without_its_exit_code_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="exit=N"):
        gen.render("```run\ntrue\n```\n", tmp_path)


def test_copy_brings_a_repository_file_and_shows_nothing(tmp_path: Path) -> None:
    source = "A\n\n<!-- copy examples/demo/facts.gl -->\n\nB\n"
    result = gen.render(source, tmp_path)
    assert result.text == gen.HEADER + "A\n\nB\n"
    assert (tmp_path / "examples" / "demo" / "facts.gl").read_bytes() == (
        ROOT / "examples" / "demo" / "facts.gl").read_bytes()


def test_the_commands_see_the_repository_grantlog(tmp_path: Path) -> None:
    result = gen.render("```run exit=0\ncommand -v grantlog python3\n```\n", tmp_path)
    bin_dir = Path(sys.executable).parent
    if (bin_dir / "grantlog").exists() and str(bin_dir).startswith(str(ROOT)):
        # the repository's venv: shown relative to the clone
        rel = bin_dir.relative_to(ROOT)
        assert f"<clone>/{rel}/grantlog\n<clone>/{rel}/python3\n" in result.text


def test_the_readme_links_the_tutorial() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/tutorial.md)" in readme.split("## ", 1)[0]   # before the first section
