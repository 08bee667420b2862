"""Importers: facts for the shipped models from other systems' exported state.

* :mod:`grantlog.interop.gravitino` — Apache Gravitino REST API JSON (users, groups, roles,
  owners) into facts for ``rules/gravitino.gl``.
"""

from __future__ import annotations

from .gravitino import load_gravitino_dir, to_gl

__all__ = ["load_gravitino_dir", "to_gl"]
