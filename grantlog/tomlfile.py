"""TOML files the CLI and the service read (a catalog layout, an OPA mapping), with errors at
``file:line:col``."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from grantlog.grammar.diagnostics import GrantlogError, Span, error

_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def read_toml(path: str | Path, code: str, what: str, help: str | None = None) -> dict[str, Any]:
    """The table in ``path``; a ``code`` diagnostic naming ``what`` when it cannot be read,
    at the line and column TOML's parser reports."""
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise GrantlogError([error(code, f"cannot read {what}: "
                                   f"{(exc.strerror or str(exc)).lower()}",
                                   Span(str(path), 0, 0, 0, 0), help)]) from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        m = _AT.search(message)
        line, col = (int(m[1]), int(m[2])) if m else (0, 0)
        raise GrantlogError([error(code, f"{what} is not TOML: {_AT.sub('', message)}",
                                   Span(str(path), line, col, line, col + 1), help)]) from None
