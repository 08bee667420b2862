"""Fuzzing the public API's arguments (issue #27): every public method of ``grantlog.Reasoner``
and ``grantlog.Client``, ``grantlog.compile``, the constructors and the SQL renderers of
grantlog/filters.py, called with generated values of wrong types — None, bools, ints, floats
(NaN, infinities), bytes, dicts, lists of lists, sets, huge strings, plain objects, paths —
mixed with plausible valid ones.

The property: a result or a ``GrantlogError`` whose diagnostics each carry a code; never
another exception. A context manager (``transaction``, ``frozen``) is entered, given a write
and left; an iterator (``Client.watch``) is advanced once.

The methods are found by introspection (every public callable attribute), so a method added
later is fuzzed too. Generated integers are at most 0, so that no call waits for a revision
that never comes (``at_least=5`` waits ``WAIT_TIMEOUT`` seconds, correctly); generated strings
hold no path separator and the tests run in an empty folder, so that no path names real
files. The client talks to a port where nothing listens: a call whose arguments pass is a
``service-unavailable`` error (tests/test_api_arguments.py has the live service).
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from grantlog.engine.core.results import Transaction
from httpserver import free_port
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import grantlog
from grantlog import filters

RULES = """
member("alice", eng).
grant(eng, read, t1).
allowed(U, O, R) :- member(U, G), grant(G, O, R).
"""
PROGRAM = grantlog.compile(RULES)
EXAMPLES = 25 * max(1, int(os.environ.get("GRANTLOG_FUZZ_SCALE", "1")))

_text = st.text(max_size=12).filter(lambda s: "/" not in s and "\\" not in s and "~" not in s)
#: values of the wrong type for (nearly) every argument
WRONG = st.one_of(
    st.none(), st.booleans(), st.integers(max_value=0), st.just(-(2**70)),
    st.floats(), st.sampled_from([math.nan, math.inf]), st.binary(max_size=8),
    st.dictionaries(_text, st.integers(max_value=0), max_size=2),
    st.lists(st.lists(_text, max_size=3), max_size=3),
    st.sets(st.integers(-3, 0), max_size=3), st.just("x" * 20_000), st.builds(object),
    st.just(Path("p.gl")), st.just([None]), st.just(("a", None)), _text,
)
#: values a call takes (so that a call gets past its first argument)
VALID = st.sampled_from([
    "alice", "read", "t1", "eng", "member", "allowed", "all", "allowed(U, O, R)",
    'member("alice", G)', [("bob", "eng")], [["carol", "eng"]], ("allowed",), 0, None,
])
ANY = st.one_of(WRONG, VALID)


def public_methods(obj: object) -> list[str]:
    """The public callable attributes of ``obj`` (properties and plain values left out)."""
    names = []
    for name in dir(type(obj)):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(type(obj), name)
        if isinstance(attr, property) or not callable(getattr(obj, name)):
            continue
        names.append(name)
    return names


def arguments(fn: Callable[..., Any], data: st.DataObject) -> dict[str, Any]:
    """Generated arguments for ``fn``: every required parameter, and some optional ones."""
    out = {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is p.empty or data.draw(st.booleans(), label=f"give {p.name}"):
            out[p.name] = data.draw(ANY, label=p.name)
    return out


def outcome(call: Callable[[], Any], data: st.DataObject) -> None:
    """Run ``call``: a result (used as described in the module docstring) or a
    ``GrantlogError`` with coded diagnostics."""
    try:
        got = call()
        if isinstance(got, AbstractContextManager):
            with got as inside:
                if isinstance(inside, Transaction):
                    inside.insert(data.draw(ANY, label="tx rel"), data.draw(ANY, label="tx rows"))
        elif isinstance(got, Iterator):
            next(got, None)
    except grantlog.GrantlogError as err:
        assert err.diagnostics and all(d.code for d in err.diagnostics), err
        note(f"{err.diagnostics[0].code}: {err.diagnostics[0].message[:200]}")


@pytest.fixture(autouse=True)
def _empty_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # relative paths the fuzzer makes name nothing


def reasoner() -> grantlog.Reasoner:
    return grantlog.Reasoner(PROGRAM)


@pytest.mark.parametrize("name", public_methods(reasoner()))
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_reasoner_method(name: str, data: st.DataObject) -> None:
    r = reasoner()
    fn = getattr(r, name)
    args = arguments(fn, data)
    outcome(lambda: fn(**args), data)


_client = grantlog.Client(f"http://127.0.0.1:{free_port()}", timeout=2)


@pytest.mark.parametrize("name", public_methods(_client))
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_client_method(name: str, data: st.DataObject) -> None:
    fn = getattr(_client, name)
    if name == "close":
        return  # the shared client stays open
    args = arguments(fn, data)
    outcome(lambda: fn(**args), data)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "compile": grantlog.compile,
    "Reasoner": grantlog.Reasoner,
    "Client": grantlog.Client,
    "to_sql": filters.to_sql,
    "select_sql": filters.select_sql,
    "row_filter_sql": filters.row_filter_sql,
    "strongest_mask": filters.strongest_mask,
    "mask_sql": filters.mask_sql,
    "apply_mask": filters.apply_mask,
    "check_dialect": filters.check_dialect,
    "Layout": filters.Layout,
    "Layout.load": filters.Layout.load,
    "Layout.from_dict": filters.Layout.from_dict,
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_module_function(name: str, data: st.DataObject) -> None:
    fn = FUNCTIONS[name]
    args = arguments(fn, data)
    if name in ("to_sql", "select_sql") and data.draw(st.booleans(), label="real residual"):
        args["residual"] = reasoner().filter("alice", "read")
    if name in ("to_sql", "select_sql") and data.draw(st.booleans(), label="real layout"):
        args["layout"] = filters.Layout(table="objects")
    if name == "Reasoner" and data.draw(st.booleans(), label="real program"):
        args["program"] = PROGRAM

    def call() -> Any:
        got = fn(**args)
        if isinstance(got, grantlog.Client | grantlog.Reasoner):
            got.close()
        return got

    outcome(call, data)
