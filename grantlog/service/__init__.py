"""``grantlog serve``: the decision service over HTTP/JSON (docs/service.md).

:mod:`.app` (the Starlette application and its endpoints), :mod:`.auth` (bearer tokens and
scopes), :mod:`.metrics` (Prometheus), :mod:`.openapi` (the OpenAPI document), :mod:`.cli`
(the command, on uvicorn), :mod:`.decisionlog` (decision logs), :mod:`.replay` (``grantlog logs
replay``). Needs ``pip install 'grantlog[service]'``; importing this package alone does not.
"""

#: what a masked field of a decision log holds
MASK = "***"
