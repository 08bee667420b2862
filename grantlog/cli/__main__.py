"""``python -m grantlog.cli``: the ``grantlog`` command."""

import sys

from .main import main

sys.exit(main())
