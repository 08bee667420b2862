"""The tests pane's server side: the program's ``test`` blocks run as ``grantlog test`` runs
them (engine/answer/testing.py), pass or fail per block with the failing expectations, the
rules no test fired (the same coverage as ``grantlog test --coverage``), and a failing
expectation's why or why-not, asked of the test's own facts.

- ``POST /api/tests`` ``{}``: ``{tests: [...], coverage: {rules, fired, missed: [...]}}``
- ``POST /api/tests/why`` ``{test, expect}``: the ask bar's answer (with its graph) to the
  expectation's goal, over the program plus the test's given facts"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from grantlog.engine.answer.testing import Coverage, given, run_tests
from grantlog.grammar.diagnostics import GrantlogError, Span, error

from . import ask
from .workspace import Workspace

REQUEST = Span("<request>", 0, 0, 0, 0)


def _where(span: Span, docs: dict[str, int]) -> dict[str, Any]:
    return {"doc": docs.get(span.file), "file": span.shown_file, "line": span.line,
            "end_line": max(span.end_line, span.line)}


def run(ws: Workspace) -> dict[str, Any]:
    """Every test block of the live program, run, and the rule coverage they give."""
    with ws.lock:
        program = ws.program
        docs = {d.path: i for i, d in enumerate(ws.docs)}
        cov = Coverage()
        results = run_tests(program, None, cov)
    tests = []
    for i, (case, res) in enumerate(zip(program.tests, results, strict=True)):
        failing = {(f.span.line, f.span.col): f.message for f in res.failures}
        expects = []
        for j, e in enumerate(case.expects):
            message = failing.get((e.span.line, e.span.col))
            expects.append({"index": j, "text": ("not " if e.negated else "") + e.text,
                            "passed": message is None, "message": message,
                            **_where(e.span, docs)})
        tests.append({"index": i, "name": res.name, "passed": res.passed,
                      "failed": len(res.failures), "expects": expects,
                      **_where(res.span, docs)})
    missed = [{"rule": r.name, **_where(r.span, docs)} for r in cov.missed()]
    return {"tests": tests, "passed": sum(t["passed"] for t in tests),
            "failed": sum(not t["passed"] for t in tests),
            "coverage": {"rules": len(cov.rules), "fired": len(cov.fired), "missed": missed}}


def why(ws: Workspace, test: int, expect: int) -> dict[str, Any]:
    """The answer, with its proof or why-not graph, to expectation ``expect`` of test block
    ``test`` (numbers as :func:`run` gives them), over the test's facts."""
    with ws.lock:
        program = ws.program
    if not 0 <= test < len(program.tests) or not 0 <= expect < len(
            program.tests[test].expects):
        raise GrantlogError([error("not-found", f"no expectation {expect} in test {test}",
                                   REQUEST, "run the tests again: the rules changed")])
    case = program.tests[test]
    r = given(program, case)
    try:
        out = ask.answer(r, ask.Question("goal", (case.expects[expect].text,)))
    finally:
        r.close()
    out["test"] = case.name
    return out


def routes(ws: Workspace, handled: Callable[..., Any], body: Callable[..., Any],
           run_in: Callable[..., Any]) -> list[Route]:
    async def tests(request: Request) -> Response:
        await body(request)
        return JSONResponse(await run_in(lambda: run(ws)))

    async def tests_why(request: Request) -> Response:
        data = await body(request)
        test, expect = data.get("test"), data.get("expect")
        if not isinstance(test, int) or not isinstance(expect, int) \
                or isinstance(test, bool) or isinstance(expect, bool):
            raise GrantlogError([error("bad-request", "`test` and `expect` must be numbers",
                                       REQUEST)])
        return JSONResponse(await run_in(lambda: why(ws, test, expect)))

    return [Route("/api/tests", handled(tests), methods=["POST"]),
            Route("/api/tests/why", handled(tests_why), methods=["POST"])]
