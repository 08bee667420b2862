"""The Gravitino-shaped workload in other policy engines, side by side with grantlog.

One module per engine; each defines an :class:`~peers.base.Engine` subclass that loads the
workload's base facts (benchmarks/gravitino_workload.py) into the engine's own idiom and answers
``check(user, operation, resource)`` for the operations in ``gravitino_workload.CHECK_OPS``,
applies a grant and a revoke, and (where the engine can) materializes every ``load_table``
decision of one schema. ``benchmarks/peers_bench.py`` runs them; ``ENGINES`` maps the names it
accepts to ``module:class``.
"""

from __future__ import annotations

ENGINES = {
    "oracle": "peers.oracle_peer:OracleEngine",
    "grantlog": "peers.grantlog_peer:GrantlogEngine",
    "pydatalog": "peers.pydatalog_peer:PyDatalogEngine",
    "clingo": "peers.clingo_peer:ClingoEngine",
    "cedar": "peers.cedar_peer:CedarEngine",
    "casbin": "peers.casbin_peer:CasbinEngine",
    "oso": "peers.oso_peer:OsoEngine",
}
