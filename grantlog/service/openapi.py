"""The OpenAPI 3.1 document of the decision service (served at ``/openapi.json``)."""

from __future__ import annotations

from typing import Any

_STR = {"type": "string"}
_REV = {"type": "integer", "minimum": 0}
_ERROR = {"type": "object", "properties": {"error": {"type": "object", "properties": {
    "code": _STR, "message": _STR, "diagnostics": {"type": "array", "items": {
        "type": "object"}}}}}}
#: what is wrong with a question: `unknown-constant` (a subject, operation, resource, type or
#: ancestor no rule, declaration or fact mentions: a deny or an empty answer that is a typo)
_WARNINGS = {"type": "array", "items": {"type": "object", "required": ["code", "message"],
                                        "properties": {"code": _STR, "message": _STR,
                                                       "help": {"type": ["string", "null"]}}}}
#: a question's `strict`: an unknown constant is a 422 `unknown-constant`, not a warning
_STRICT = {"type": "boolean", "default": False,
           "description": "a constant no rule, declaration or fact mentions is a 422 "
                          "`unknown-constant` instead of a warning"}
#: a question about the past (docs/history.md): answered as the store's facts and policy stood
#: at a revision or a time
_AT = {"at_revision": {**_REV, "description": "answer as of this revision (not with `as_of`)"},
       "as_of": {"type": ["string", "number"],
                 "description": "answer as of this time (ISO 8601, a date being its midnight "
                                "UTC, or seconds since the epoch): the last revision "
                                "committed by then"},
       "now": {"type": ["string", "number"],
               "description": "read facts' validity intervals at this time (default: the "
                              "clock; with `as_of`: that time)"}}
#: facts inserted with a validity interval (docs/history.md "Expiring and scheduled grants")
_TIMED = {"type": "array", "items": {"type": "object", "required": ["relation", "rows"],
                                     "properties": {
                                         "relation": _STR, "rows": {"type": "array"},
                                         "valid_from": {"type": ["string", "number", "null"]},
                                         "valid_until": {"type": ["string", "number", "null"]}}}}
_META = {"author": {**_STR, "description": "who writes (default: the token's `name=`)"},
         "reason": {**_STR, "description": "why"},
         "ticket": {**_STR, "description": "a change request or ticket, free text"}}
_DECISION = {"type": "object", "required": ["allowed", "reasons", "revision"], "properties": {
    "allowed": {"type": "boolean"}, "reasons": {"type": "array", "items": _STR},
    "revision": _REV, "error": {"type": "object"}, "explanation": {"type": "object"},
    "warnings": _WARNINGS}}
_ANSWERS = {"description": "NDJSON (one `{resource|subject: value}` per line, then "
            "`{revision, count, warnings?}`), or with `limit`/`cursor` one JSON page "
            "(`warnings` when an empty answer has an unknown constant)",
            "content": {"application/x-ndjson": {"schema": _STR},
                        "application/json": {"schema": {"type": "object"}}}}


def _post(summary: str, required: list[str], props: dict[str, Any],
          ok: dict[str, Any], scope: str = "check", method: str = "post") -> dict[str, Any]:
    return {method: {
        "summary": summary, "security": [{"bearer": [scope]}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": required, "properties": props}}}},
        "responses": {"200": ok, **_ERRORS}}}


_ERRORS = {code: {"description": what, "content": {"application/json": {"schema": _ERROR}}}
           for code, what in (("400", "malformed JSON"), ("401", "no or unknown token"),
                              ("403", "the token lacks the scope"),
                              ("408", "the body did not arrive in time"),
                              ("409", "compare-and-set conflict (`if_revision`)"),
                              ("413", "body or batch over the limit"),
                              ("422", "bad input: the diagnostics say what; `too-large`: "
                               "a read over its memory or row bound (page it)"),
                              ("503", "the store is unavailable, or every reader is busy"),
                              ("504", "`at_least_revision` not reached in time, or a read "
                               "past its deadline"))}


_POLICY = {"files": {"type": "object", "additionalProperties": _STR,
                     "description": "relative file names (`.gl`) to their texts; an import "
                                    "names another of them or a shipped model"},
           "roots": {"type": "array", "items": _STR,
                     "description": "the files to compile (default: all)"},
           "if_hash": _STR}


def _json(schema: dict[str, Any], what: str = "ok") -> dict[str, Any]:
    return {"description": what, "content": {"application/json": {"schema": schema}}}


def document() -> dict[str, Any]:
    check = {"subject": _STR, "operation": _STR, "resource": _STR,
             "at_least_revision": _REV, "explain": {"type": "boolean"}, "strict": _STRICT,
             **_AT}
    return {
        "openapi": "3.1.0",
        "info": {"title": "grantlog decision service", "version": "1",
                 "description": "Authorization decisions, listings, explanations and writes "
                 "over a grantlog policy (docs/service.md)."},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": {
            "/v1/check": _post("one decision", ["subject", "operation", "resource"], check,
                               _json(_DECISION)),
            "/v1/check/batch": _post(
                "up to 10,000 decisions", ["checks"],
                {"checks": {"type": "array", "items": {"type": "object", "properties": check}},
                 "at_least_revision": _REV, "strict": _STRICT, **_AT},
                _json({"type": "object", "properties": {
                    "results": {"type": "array", "items": _DECISION}, "revision": _REV}})),
            "/v1/list": _post("resources a subject may use an operation on",
                              ["subject", "operation"],
                              {"subject": _STR, "operation": _STR, "type": _STR,
                               "within": _STR, "at_least_revision": _REV,
                               "limit": {"type": "integer"}, "cursor": _STR,
                               "strict": _STRICT, **_AT}, _ANSWERS),
            "/v1/who": _post("subjects that may use an operation on a resource",
                             ["operation", "resource"],
                             {"operation": _STR, "resource": _STR, "at_least_revision": _REV,
                              "limit": {"type": "integer"}, "cursor": _STR,
                              "strict": _STRICT, **_AT}, _ANSWERS),
            "/v1/filter": _post(
                "the condition a resource must meet (a data filter), as JSON and SQL",
                ["subject", "operation"],
                {"subject": _STR, "operation": _STR, "type": _STR,
                 "sql": {"enum": ["sqlite", "postgres", "spark", "trino"]},
                 "layout": {"type": "object", "properties": {
                     k: _STR for k in ("table", "schema", "catalog", "id", "type", "parent",
                                       "path", "path_separator")}},
                 "at_least_revision": _REV, "timeout_ms": {"type": "integer"},
                 "strict": _STRICT},
                _json({"type": "object", "properties": {
                    "condition": {}, "sql": _STR, "revision": _REV, "warnings": _WARNINGS}})),
            "/v1/data/{path}": _post(
                "OPA's Data API for a mapped platform's plugin (`--opa trino|polaris|FILE`, "
                "docs/opa.md): allow, batch, row filters, column masks", ["input"],
                {"input": {"type": "object"}},
                _json({"type": "object", "required": ["result"], "properties": {
                    "result": {}, "reason": _STR, "decision_id": _STR}})),
            "/v1/explain": _post("why (a proof) or why not", ["goal"],
                                 {"goal": _STR, "format": {"enum": ["json", "text", "dot",
                                                                    "mermaid"]},
                                  "at_least_revision": _REV, **_AT},
                                 _json({"type": "object"})),
            "/v1/query": _post("answers to a goal in the rule language", ["goal"],
                               {"goal": _STR, "at_least_revision": _REV,
                                "limit": {"type": "integer"}, "cursor": _STR, **_AT},
                               _json({"type": "object"})),
            "/v1/timeline": _post(
                "when decisions held (docs/history.md): one decision's intervals (with "
                "`proofs`: the why at each start, the why-not at each end), a resource's "
                "(who gained and lost it) or a subject's (what it gained and lost)", [],
                {"subject": _STR, "operation": _STR, "resource": _STR,
                 "since": {"type": ["integer", "string"]},
                 "until": {"type": ["integer", "string"]}, "proofs": {"type": "boolean"},
                 "at_least_revision": _REV}, _json({"type": "object"})),
            "/v1/write": _post("insert and retract base facts as one transaction", [],
                               {"insert": {"type": "object"}, "retract": {"type": "object"},
                                "timed": _TIMED, "if_revision": _REV,
                                "watch": {"type": "array", "items": _STR}, **_META},
                               _json({"type": "object", "properties": {
                                   "revision": _REV, "changes": {"type": "object"}}}),
                               scope="write"),
            "/v1/relations/{rel}": {"get": {
                "summary": "base facts of a relation, paged",
                "parameters": [{"name": "rel", "in": "path", "required": True,
                                "schema": _STR},
                               {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                               {"name": "cursor", "in": "query", "schema": _STR}],
                "responses": {"200": _json({"type": "object"}), **_ERRORS}}},
            "/v1/watch": {"get": {
                "summary": "a live feed of derived changes: each transaction's gained and lost "
                           "rows of a watched relation, from after `since`",
                "security": [{"bearer": ["check"]}],
                "parameters": [{"name": "since", "in": "query", "schema": _REV},
                               {"name": "relation", "in": "query", "schema": _STR},
                               {"name": "format", "in": "query",
                                "schema": {"enum": ["sse", "ndjson"]}}],
                "responses": {"200": {"description": "server-sent events (`id: REV`, `event: "
                                      "change`, `data: {revision, relation, gained, lost}`) "
                                      "or NDJSON",
                                      "content": {"text/event-stream": {"schema": _STR}}},
                              "410": _json(_ERROR, "`since` is older than the feed"),
                              **_ERRORS}}},
            "/v1/policy": {
                "get": {"summary": "the served rule files, their hash and serial (and texts)",
                        "security": [{"bearer": ["check"]}],
                        "parameters": [{"name": "sources", "in": "query",
                                        "schema": {"type": "boolean"}}],
                        "responses": {"200": _json({"type": "object"})}},
                **_post("replace the rule files: compiled and checked first, then served by "
                        "every worker; on any error the old policy keeps serving (409: "
                        "`if_hash` is not the current hash)", ["files"], _POLICY,
                        _json({"type": "object"}), scope="admin", method="put")},
            "/healthz": {"get": {"summary": "the process answers",
                                 "responses": {"200": _json({"type": "object"})}}},
            "/readyz": {"get": {"summary": "policy loaded, store reachable, caught up",
                                "responses": {"200": _json({"type": "object"}),
                                              "503": _json({"type": "object"}, "not ready")}}},
            "/metrics": {"get": {"summary": "Prometheus metrics",
                                 "responses": {"200": {"description": "text format"}}}},
        },
    }
