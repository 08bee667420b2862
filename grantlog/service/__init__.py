"""``grantlog serve``: the decision service over HTTP/JSON (docs/service.md).

:mod:`.app` (the Starlette application and its endpoints), :mod:`.auth` (bearer tokens and
scopes), :mod:`.metrics` (Prometheus), :mod:`.openapi` (the OpenAPI document), :mod:`.cli`
(the command, on uvicorn). Needs ``pip install 'grantlog[service]'``.
"""
