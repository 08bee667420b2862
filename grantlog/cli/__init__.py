"""The ``grantlog`` command line.

Exit codes: 0 success (for ``check``/``query``: allowed / has answers); 1 a negative answer
(denied, no answers, failing tests, files that ``fmt --check`` would change, lint findings);
2 a user error (bad rule text, bad goal, missing file), reported as diagnostics on stderr;
3 an internal error (a bug in grantlog: please report it).

One module per command group (``rules``: eval, query, explain, check; ``authoring``: test,
fmt, lint, lsp, models; ``listing``: list, filter, who; ``interop``: import; ``diff``;
``plan``), each with an ``add_parser(sub)`` that registers its commands; ``main`` builds the
parser from them and from the front ends that register themselves the same way (``serve``:
grantlog/service/cli.py, ``store``: grantlog/store/cli.py, ``logs``: grantlog/service/replay.py,
``spark``: spark_bridge/cli.py). ``inputs`` holds what the commands share: reading rule files,
``--model``, ``--facts`` and ``--store``, printing, and the exit codes; ``parser`` the parser's
conventions (options anywhere among the positionals, usage lines, shell completion).
"""

from __future__ import annotations

from .inputs import EXIT_INTERNAL, EXIT_NO, EXIT_OK, EXIT_USER
from .main import build_parser, main

__all__ = ["EXIT_INTERNAL", "EXIT_NO", "EXIT_OK", "EXIT_USER", "build_parser", "main"]
