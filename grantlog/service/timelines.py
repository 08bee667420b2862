"""``POST /v1/timeline``: when decisions held, from the store's history (docs/history.md),
answered in a snapshot like every read, with the ``check`` scope.

``{subject, operation, resource, since?, until?, proofs?}``: the intervals of one decision
(``proofs``: each with the why at its start and the why-not at its end);
``{operation, resource, since?, until?}``: who gained and lost access to the resource;
``{subject, operation?, since?, until?}``: what the subject gained and lost. ``since`` and
``until`` are revisions (integers) or times (ISO 8601 strings, seconds since the epoch as
numbers with a fraction are not revisions: send a string)."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from .http import BadRequest, get_int, get_str
from .reads import JSON_TYPE, Rendered, _run
from .state import Service, endpoint


def _bound(data: dict[str, Any], key: str) -> Any:
    v = data.get(key)
    if v is None or (isinstance(v, int) and not isinstance(v, bool)) or isinstance(v, str):
        return v
    raise BadRequest(422, "bad-request", f"`{key}` must be a revision (an integer) or a time "
                     "(an ISO 8601 string)")


def render_timeline(r: Any, subject: str | None, operation: str | None,
                    resource: str | None, since: Any, until: Any, proofs: bool) -> Rendered:
    if subject is not None and operation is not None and resource is not None:
        found = r.timeline(subject, operation, resource, since, until, proofs=proofs)
        body: dict[str, Any] = {"intervals": [i.to_dict() for i in found]}
    elif resource is not None and operation is not None:
        body = r.resource_timeline(operation, resource, since, until).to_dict()
    else:
        assert subject is not None
        body = r.subject_timeline(subject, operation, since, until).to_dict()
    out = orjson.dumps({**body, "revision": r.revision})
    return 200, JSON_TYPE, [out], {"size": len(out), "unit": "bytes", "revision": r.revision}


@endpoint("timeline", "check")
async def timeline(svc: Service, request: Request) -> Response:
    """POST /v1/timeline {subject?, operation?, resource?, since?, until?, proofs?,
    at_least_revision?}"""
    data = await svc.body(request)
    s = get_str(data, "subject", False)
    o = get_str(data, "operation", False)
    x = get_str(data, "resource", False)
    if (x is not None and o is None) or (s is None and x is None):
        raise BadRequest(422, "bad-request", "ask a `subject` (with `operation` and "
                         "`resource`: one decision), or an `operation` and a `resource`")
    proofs = data.get("proofs", False)
    if not isinstance(proofs, bool):
        raise BadRequest(422, "bad-request", "`proofs` must be true or false")
    since, until = _bound(data, "since"), _bound(data, "until")
    asked = {"subject": s, "operation": o, "resource": x, "since": since, "until": until,
             "proofs": proofs or None, "timeout_ms": data.get("timeout_ms")}
    return await _run(svc, request, asked, get_int(data, "at_least_revision"),
                      render_timeline, subject=s, operation=o, resource=x, since=since,
                      until=until, proofs=proofs)
