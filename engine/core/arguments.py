"""Checks of the arguments of the public entry points (``grantlog.compile``, the Reasoner's
methods, ``grantlog.Client``, the SQL renderers), shared by every layer that takes them.

A wrong argument is a ``bad-argument`` :class:`GrantlogError` naming the argument and what it
takes (``unknown-relation`` for a relation name the program does not have), never a
``TypeError`` from deep inside, nor a silent answer: a string where rows belong is not
iterated into one-letter values, ``None`` is not a subject that is denied everything. The
diagnostic's span is the API's (``ir.API_SPAN``: no place is shown, the message names the
argument).

What the API takes (docs/diagnostics.md, ``bad-argument``):

- a constant (a subject, an operation, a resource, a type, a cursor) is a ``str`` or an
  ``int`` (``bool`` is not an int here);
- a relation name and a goal are ``str``;
- rows are an iterable (list, tuple, set, generator) of rows, each a ``tuple`` or a ``list``
  of constants — never a single ``str`` or a ``dict``;
- ``watch`` is ``"all"``, one relation name, or an iterable of relation names;
- ``paths`` (of rule or data files) is an iterable of ``str`` or ``os.PathLike`` — never a
  single path;
- revisions, limits and counts are ``int``; timeouts ``int`` or ``float``.

The checks are ``isinstance`` tests (a check costs well under a microsecond); rows are checked
for their shape with a type test per row, their values by the relation they are written to
(``ir.Program.writable_rows``, ``bad-fact``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from grantlog.grammar.diagnostics import GrantlogError, error

from . import ir

CODE = "bad-argument"
#: how much of a wrong value a message shows
_SHOWN = 40
CONSTANT = "a string or an integer"
#: the names of the constants of a check, a listing and a filter (:func:`question`)
DECIDED = ("subject", "operation", "resource")
LISTED = ("subject", "operation", "type", "within", "after")
FILTERED = ("subject", "operation", "type")
_CONSTANT_HINT = "constants are strings or integers, e.g. `\"alice\"` or `42`"


def describe(value: object) -> str:
    """A wrong value as a message shows it: its (shortened) repr and its type."""
    shown = repr(value)
    if len(shown) > _SHOWN:
        shown = shown[:_SHOWN - 3] + "..."
    shown = shown.replace("`", "'")
    if value is None or isinstance(value, bool):
        return f"`{shown}`"
    return f"`{shown}` ({type(value).__name__})"


def bad_argument(name: str, wanted: str, value: object, hint: str | None = None,
                 code: str = CODE) -> GrantlogError:
    """``bad-argument``: ``name`` must be ``wanted``, it was ``value``."""
    be = "" if wanted.startswith(("hold ", "map ")) else "be "  # what a collection holds
    return GrantlogError([error(code, f"`{name}` must {be}{wanted}, not {describe(value)}",
                                ir.API_SPAN, hint or f"pass `{name}` as {wanted}")])


def _raise(name: str, wanted: str, value: object, hint: str | None = None) -> NoReturn:
    raise bad_argument(name, wanted, value, hint)


def is_constant(value: object) -> bool:
    """Whether ``value`` is a constant of the rule language: a str or an int (not a bool)."""
    return isinstance(value, str | int) and not isinstance(value, bool)


def text(name: str, value: object, hint: str | None = None) -> str:
    """``value``, which must be a str."""
    if not isinstance(value, str):
        _raise(name, "a string", value, hint)
    return value


def optional_text(name: str, value: object, hint: str | None = None) -> str | None:
    return None if value is None else text(name, value, hint)


def constant(name: str, value: object) -> ir.Value:
    """``value``, which must be a constant (a str or an int, not a bool)."""
    if not is_constant(value):
        _raise(name, CONSTANT, value, _CONSTANT_HINT)
    assert isinstance(value, str | int)
    return value


def optional_constant(name: str, value: object) -> ir.Value | None:
    return None if value is None else constant(name, value)


def integer(name: str, value: object, minimum: int | None = None) -> int:
    """``value``, which must be an int (not a bool), at least ``minimum``."""
    if not isinstance(value, int) or isinstance(value, bool):
        _raise(name, "an integer", value)
    if minimum is not None and value < minimum:
        _raise(name, f"an integer of at least {minimum}", value)
    return value


def optional_int(name: str, value: object, minimum: int | None = None) -> int | None:
    return None if value is None else integer(name, value, minimum)


def number(name: str, value: object) -> float:
    """``value``, which must be an int or a float (not a bool, not NaN)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or value != value:
        _raise(name, "a number", value)
    return value


def optional_number(name: str, value: object) -> float | None:
    return None if value is None else number(name, value)


def flag(name: str, value: object) -> bool:
    """``value``, which must be a bool (``True`` or ``False``)."""
    if not isinstance(value, bool):
        _raise(name, "`True` or `False`", value)
    return value


def instance(name: str, value: object, kind: type | tuple[type, ...], wanted: str,
             optional: bool = False) -> Any:
    """``value``, which must be an instance of ``kind`` (or None when ``optional``)."""
    if not (isinstance(value, kind) or (optional and value is None)):
        _raise(name, wanted, value)
    return value


def question(names: Sequence[str], values: Sequence[object], at_least: object = None,
             optional: int = 0, limit: object = None) -> None:
    """The constants of a question (``check``'s subject, operation and resource; the last
    ``optional`` of them may be None), its ``at_least`` revision and a listing's ``limit``.
    The fast path is a type test per value: ``check`` is the hot path."""
    for v in values:
        if type(v) is not str and type(v) is not int:
            _constants(names, values, optional)
            break
    if at_least is not None and type(at_least) is not int:
        integer("at_least", at_least)
    if limit is not None:
        integer("limit", limit)


def _constants(names: Sequence[str], values: Sequence[object], optional: int) -> None:
    """:func:`question`'s slow path: an int subclass passes, and None where optional."""
    for i, v in enumerate(values):
        if not (v is None and i >= len(values) - optional):
            constant(names[i], v)


def triples(name: str, value: object, names: Sequence[str]) -> list[tuple[ir.Value, ...]]:
    """A batch of questions: an iterable of tuples or lists of ``len(names)`` constants."""
    example = ", ".join(f'"{n}"' for n in names)
    hint = f"e.g. `{name}=[({example})]`"
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        _raise(name, f"a list of ({', '.join(names)}) tuples", value, hint)
    out = []
    for item in value:
        if not isinstance(item, tuple | list) or len(item) != len(names):
            _raise(name, f"hold ({', '.join(names)}) tuples", item, hint)
        question(names, item)
        out.append(tuple(item))
    return out


def revision(value: object, timeout: object = None) -> int:
    """``wait_for``'s revision (an int) and timeout (None or a number of seconds)."""
    optional_number("timeout", timeout)
    return integer("revision", value)


def goal(value: object, at_least: object = None,
         limits: tuple[object, type] | None = None) -> str:
    """A goal's text (a str, ``'allowed(U, read, t1)'``), the ``at_least`` revision it is
    asked at, and ``limits``: (the value, the type it must have, or None)."""
    if at_least is not None:
        integer("at_least", at_least)
    if limits is not None and limits[0] is not None:
        instance("limits", limits[0], limits[1], f"a `{limits[1].__name__}` or None")
    if isinstance(value, str):
        return value
    return text("goal", value, "a goal is rule text, e.g. `'allowed(U, \"read\", \"t1\")'`")


def cell(program: ir.Program, rel: object, column: object, value: object) -> ir.Relation:
    """A (relation, column, value) lookup's arguments: a relation of the program, a column
    of it (an int from 0) and a constant."""
    r = relation(program, rel)
    integer("column", column, 0)
    constant("value", value)
    if column >= r.arity:  # type: ignore[operator]
        _raise("column", f"a column of `{r.name}` (0 to {r.arity - 1})", column)
    return r


def seed(rows: object, revision: object) -> None:
    """``seed``'s arguments: a mapping of relation names to rows, and a revision."""
    if not isinstance(rows, Mapping):
        _raise("rows", "a mapping of relation names to rows", rows)
    integer("revision", revision)


def relation(program: ir.Program, value: object, name: str = "relation") -> ir.Relation:
    """The relation of the program named ``value`` (``unknown-relation`` when there is
    none)."""
    if type(value) is not str:
        text(name, value, "name a relation by its name, e.g. `\"member\"`")
    assert isinstance(value, str)
    return program.relation(value)


def watch_names(value: object, name: str = "watch") -> tuple[str, ...]:
    """The relation names of a ``watch=`` argument — ``"all"``, one name, or an iterable of
    names — without a program to check them against (the client's)."""
    if isinstance(value, str):
        return (value,)
    return names(value, name, "hold relation names (strings)",
                 f"`{name}` takes `\"all\"`, a relation's name, or a list of names")


def names(value: object, name: str, wanted: str, hint: str | None = None) -> tuple[str, ...]:
    """An iterable of strings (not a single string, which would be read as its letters);
    ``wanted``: what a wrong item is said to be wrong for (``"hold relation names"``)."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        _raise(name, "a list of strings", value, hint)
    out = tuple(value)
    for n in out:
        if not isinstance(n, str):
            _raise(name, wanted, n, hint)
    return out


def relation_names(program: ir.Program, value: object, name: str = "watch",
                   if_revision: object = None) -> frozenset[str]:
    """The relations a ``watch=`` argument names, each checked against the program:
    ``"all"`` (every relation answered on demand), one name, or an iterable of names; and
    a transaction's ``if_revision`` (None or an int)."""
    optional_int("if_revision", if_revision)
    if isinstance(value, str) and value == "all":
        return frozenset(program.virtual)
    names = frozenset(watch_names(value, name))
    for n in names:
        program.relation(n)
    return names


_EXAMPLE = ("alice", "eng", "read", "t1")


def rows(rel: str, value: object, verb: str = "insert",
         constants: bool = False) -> list[ir.Row]:
    """The rows of a write as tuples: ``value`` must be an iterable of rows (not a str, bytes
    or a dict), each a tuple or a list. ``constants``: check the values too (str or int; the
    engine's writes check them with the relation, as ``bad-fact``; the client has no
    relation to check them with)."""
    hint = (f"rows are tuples or lists of values, e.g. "
            f"`{verb}(\"{rel}\", [(\"alice\", \"eng\")])`")
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        _raise("rows", "an iterable of rows", value, hint)
    out: list[ir.Row] = []
    for raw in value:
        if type(raw) is tuple:
            row: ir.Row = raw
        elif isinstance(raw, tuple | list):
            row = tuple(raw)
        else:
            _raise("rows", "hold rows (tuples or lists of values)", raw, hint)
        if constants and not all(type(v) is str or type(v) is int or is_constant(v)
                                 for v in row):
            bad = next(v for v in row if not is_constant(v))
            raise GrantlogError([error("bad-fact", f"values must be strings or integers, "
                                       f"not {describe(bad)} in `{rel}`", ir.API_SPAN,
                                       _CONSTANT_HINT)])
        out.append(row)
    return out


def paths(value: object, name: str = "paths") -> list[str | Path]:
    """Paths of files or folders: an iterable of ``str`` or ``os.PathLike`` (a single path
    is refused: a string would be read as its characters)."""
    if isinstance(value, str | os.PathLike):
        one = os.fspath(value)
        _raise(name, "a list of paths", value, f"pass one path as a list: `{name}=[{one!r}]`"
               .replace("'", '"'))
    if isinstance(value, bytes | Mapping) or not isinstance(value, Iterable):
        _raise(name, "a list of paths", value, f"e.g. `{name}=[\"rules/policy.gl\"]`")
    out: list[str | Path] = []
    for p in value:
        if isinstance(p, str | Path):
            out.append(p)
        elif isinstance(p, os.PathLike) and isinstance(os.fspath(p), str):
            out.append(os.fspath(p))
        else:
            _raise(name, "hold paths (strings or pathlib.Path)", p,
                   f"e.g. `{name}=[\"rules/policy.gl\"]`")
    return out


def texts(name: str, value: object) -> dict[str, str]:
    """A mapping of file names to their texts."""
    if not isinstance(value, Mapping):
        _raise(name, "a mapping of file names to texts", value,
               f"e.g. `{name}={{\"policy.gl\": \"...\"}}`")
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, str):
            _raise(name, "map file names (strings) to texts (strings)",
                   k if not isinstance(k, str) else v, f"e.g. `{name}={{\"policy.gl\": \"...\"}}`")
    return dict(value)


def program(value: object) -> ir.Program:
    """A compiled program (what ``grantlog.compile`` returns)."""
    if not isinstance(value, ir.Program):
        _raise("program", "a compiled program", value,
               "compile the rules first: `grantlog.Reasoner(grantlog.compile(text))`")
    return value
