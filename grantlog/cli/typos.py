"""The warnings of a question with an unknown constant (engine/answer/vocabulary.py), as the
commands that ask one (check, list, who, filter) print them: rendered on stderr, where they
never mix with the answer on stdout (``--json`` answers that are objects carry them too)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from grantlog.grammar.diagnostics import Diagnostic, render_all


def warn(found: Sequence[Diagnostic]) -> None:
    """Print ``found`` on stderr (nothing when empty)."""
    if found:
        sys.stderr.write(render_all(found) + "\n")
