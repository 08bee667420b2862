"""Values on Spark: one order-preserving string encoding inside, plain columns outside.

Inside an evaluation every column of every relation is a ``StringType`` column holding the
*internal encoding* of a grantlog value, so joins, ``distinct``, set difference and comparisons
need no knowledge of types, and comparisons follow the engine's order (engine/plan/codegen.py
``compare``: integers numerically, strings by code point, every integer before every string):

* a string ``s`` is ``"1" + s``;
* an integer ``n >= 0`` is ``"01"`` + ``n`` zero-padded to 19 digits;
* an integer ``n < 0`` is ``"00"`` + the nine's complement of ``-(n + 1)`` zero-padded to 19
  digits (so larger magnitudes sort first).

Spark compares strings by their UTF-8 bytes, which orders like code points, so comparing two
encodings compares the values. Integers must fit in 64 bits (Spark's ``LongType``).

Outside (inputs and outputs), a column is one of three *kinds* (see ``schema.column_kinds``):

* ``string`` — ``StringType``, the plain string;
* ``int`` — ``LongType`` (any integral type on input);
* ``any`` — a column that holds both: ``StringType`` in fact syntax, the way the value is
  written in a rule file: ``42`` is an integer, ``alice`` and ``"42"`` are strings (a string
  that is not a lowercase identifier is double-quoted, with ``\\"``, ``\\\\``, ``\\n``,
  ``\\t`` escapes). On input, text that is neither an integer nor quoted is a plain string.

This module is importable without pyspark; the functions building Spark expressions import it
when called.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from typing import Any

from grantlog.engine.core import ir
from grantlog.engine.core.ir import Value
from grantlog.engine.core.terms import compare, is_anon
from grantlog.grammar.diagnostics import NO_SPAN, GrantlogError, error

INT_MIN = -(2**63)
INT_MAX = 2**63 - 1
DIGITS = 19
_NINES = str.maketrans("0123456789", "9876543210")
KEYWORDS = ("not", "rel", "import", "test", "expect")
IDENT_PATTERN = r"^[a-z][A-Za-z0-9_]*$"
INT_PATTERN = r"^-?[0-9]+$"
QUOTED_PATTERN = r'^"(.*)"$'
_IDENT = re.compile(IDENT_PATTERN)
_INT = re.compile(INT_PATTERN)
_UNESCAPE = re.compile(r"\\(.)", re.S)
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}

#: column metadata key marking an ``any`` column (values in fact syntax)
META_KIND = "grantlog_kind"
#: the columns of a row's reason on Spark (the rule, the premise's relation and row)
REASON_COLUMNS = ("rule", "reason_rel", "reason_row")


def encode(v: Value) -> str:
    """The internal encoding of a value.

    >>> [encode(v) for v in ("ab", 7)]
    ['1ab', '010000000000000000007']
    >>> sorted([encode(2), encode(-3), encode(-1), encode("a"), encode("")]) == [
    ...     encode(-3), encode(-1), encode(2), encode(""), encode("a")]
    True
    """
    if isinstance(v, int):
        if not INT_MIN <= v <= INT_MAX:
            raise GrantlogError([error(
                "spark-unsupported", f"the integer `{v}` does not fit in 64 bits", NO_SPAN,
                help="the Spark backend stores integers as LongType")])
        if v >= 0:
            return "01" + f"{v:0{DIGITS}d}"
        return "00" + f"{-(v + 1):0{DIGITS}d}".translate(_NINES)
    return "1" + v


def encode_rows(rows: Iterable[tuple[Value, ...]], arity: int) -> list[tuple[str, ...]]:
    """Rows of values in the internal encoding, :func:`encode` per value with strings
    inlined (the bulk path); a row of a relation of no column is ``("1",)``.

    >>> encode_rows([("ab", 7)], 2) == [(encode("ab"), encode(7))]
    True
    """
    if not arity:
        return [("1",) for _ in rows]
    return [tuple(["1" + v if type(v) is str else encode(v) for v in row]) for row in rows]


def decode(s: str) -> Value:
    """The value of an internal encoding (inverse of :func:`encode`).

    >>> [decode(encode(v)) for v in (0, -1, INT_MIN, INT_MAX, "x", "")]
    [0, -1, -9223372036854775808, 9223372036854775807, 'x', '']
    """
    if s[:1] == "1":
        return s[1:]
    if s[1:2] == "1":
        return int(s[2:])
    return -int(s[2:].translate(_NINES)) - 1


def show(v: Value) -> str:
    """A value in fact syntax (the ``any`` column representation).

    >>> [show(v) for v in (42, "alice", "42", "m1.c1", 'q"t')]
    ['42', 'alice', '"42"', '"m1.c1"', '"q\\\\"t"']
    """
    if isinstance(v, int):
        return str(v)
    if _IDENT.match(v) and v not in KEYWORDS:
        return v
    esc = v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{esc}"'


def parse_shown(text: str) -> Value:
    """A value from fact syntax (lenient: unquoted non-integers are plain strings).

    >>> [parse_shown(t) for t in ("42", "alice", '"42"', "m1.c1", '"a\\\\nb"')]
    [42, 'alice', '42', 'm1.c1', 'a\\nb']
    """
    if _INT.match(text):
        return int(text)
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return _UNESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(0)), text[1:-1])
    return text


# ---------------------------------------------------------------------------------------------
# the same on Spark columns


def encode_string_col(c: Any) -> Any:
    """internal encoding of a StringType column"""
    from pyspark.sql import functions as F

    return F.concat(F.lit("1"), c)


def encode_long_col(c: Any) -> Any:
    """internal encoding of an integral column"""
    from pyspark.sql import functions as F

    c = c.cast("long")
    pos = F.concat(F.lit("01"), F.lpad(c.cast("string"), DIGITS, "0"))
    neg = F.concat(F.lit("00"), F.translate(
        F.lpad((-(c + F.lit(1))).cast("string"), DIGITS, "0"), "0123456789", "9876543210"))
    return F.when(c >= 0, pos).otherwise(neg)


def encode_shown_col(c: Any) -> Any:
    """internal encoding of a StringType column in fact syntax (an ``any`` column)"""
    from pyspark.sql import functions as F

    inner = F.regexp_extract(c, QUOTED_PATTERN, 1)
    # one pass of unescaping: protect `\\` first, then the others, then restore
    un = F.regexp_replace(inner, r"\\\\", "\u0000")
    un = F.regexp_replace(un, r'\\"', '"')
    un = F.regexp_replace(un, r"\\n", "\n")
    un = F.regexp_replace(un, r"\\t", "\t")
    un = F.regexp_replace(un, "\u0000", "\\\\")
    return (F.when(c.rlike(INT_PATTERN), encode_long_col(c.cast("long")))
            .when(c.rlike(QUOTED_PATTERN) & (F.length(c) >= 2), F.concat(F.lit("1"), un))
            .otherwise(F.concat(F.lit("1"), c)))


def is_int_col(c: Any) -> Any:
    from pyspark.sql import functions as F

    return F.substring(c, 1, 1) == F.lit("0")


def decode_long_col(c: Any) -> Any:
    """LongType value of an internal encoding of an integer"""
    from pyspark.sql import functions as F

    digits = F.substring(c, 3, DIGITS)
    neg = -(F.translate(digits, "0123456789", "9876543210").cast("long")) - F.lit(1)
    return F.when(F.substring(c, 2, 1) == F.lit("1"), digits.cast("long")).otherwise(neg)


def decode_string_col(c: Any) -> Any:
    """StringType value of an internal encoding of a string"""
    from pyspark.sql import functions as F

    return F.substring(c, 2, 1 << 30)


def shown_col(c: Any) -> Any:
    """fact syntax (StringType) of any internal encoding"""
    from pyspark.sql import functions as F

    s = F.substring(c, 2, 1 << 30)
    esc = F.regexp_replace(s, r"\\", r"\\\\")
    esc = F.regexp_replace(esc, '"', '\\\\"')
    esc = F.regexp_replace(esc, "\n", "\\\\n")
    esc = F.regexp_replace(esc, "\t", "\\\\t")
    ident = s.rlike(IDENT_PATTERN) & ~s.isin(*KEYWORDS)
    as_str = F.when(ident, s).otherwise(F.concat(F.lit('"'), esc, F.lit('"')))
    return F.when(is_int_col(c), decode_long_col(c).cast("string")).otherwise(as_str)


#: a comparison of two internal encodings (they order like the values), as a Column
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge}


def compare_col(op: str, left: Any, right: Any) -> Any:
    """a comparison of two internal encodings (they order like the values)"""
    if op not in _COMPARE:
        raise ValueError(op)
    return _COMPARE[op](left, right)


def filter_step(s: Any, expr: Callable[[Any], Any]) -> Any:
    """A plan's comparison step (engine/plan/join.py ``Filter``) as a Spark column: ``True``
    when both sides are constants that compare true (nothing to filter), ``False`` when they
    compare false (the rule yields nothing), else the column to filter on."""
    if isinstance(s.left, ir.Const) and isinstance(s.right, ir.Const):
        return compare(s.op, s.left.value, s.right.value)
    return compare_col(s.op, expr(s.left), expr(s.right))


class VarColumns:
    """A rule's variables as internal column names (``v0``, ``v1``, ... in the order first
    met): called with a variable's name, its column's; :meth:`expr`, a term as a column."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        got = self.names.get(name)
        if got is None:
            got = self.names[name] = f"v{len(self.names)}"
        return got

    def expr(self, t: ir.Term) -> Any:
        """A constant as a literal, a variable as its column."""
        from pyspark.sql import functions as F

        return F.lit(encode(t.value)) if isinstance(t, ir.Const) else F.col(self(t.name))


def key_columns(cols: tuple[int, ...], terms: tuple[ir.Term, ...],
                v: Callable[[str], str]) -> tuple[list[Any], dict[str, Any]]:
    """A lookup's key on a relation's columns: the filters (a constant; a variable met before
    in the key) and the columns to join on, by the (internal) variable name ``v`` gives."""
    from pyspark.sql import functions as F

    conds: list[Any] = []
    proj: dict[str, Any] = {}
    for col, t in zip(cols, terms, strict=True):
        if isinstance(t, ir.Const):
            conds.append(F.col(f"c{col}") == F.lit(encode(t.value)))
        elif v(t.name) in proj:
            conds.append(F.col(f"c{col}") == proj[v(t.name)])
        else:
            proj[v(t.name)] = F.col(f"c{col}")
    return conds, proj


def scan_columns(s: Any, need: set[str], v: Callable[[str], str]
                 ) -> tuple[list[Any], dict[str, Any], list[str]]:
    """A plan's scan step (engine/plan/join.py ``Scan``) as Spark columns: the filters (its
    key's constants and repeated variables, its repeated outputs), the columns to keep by
    variable name (the key's, and the outputs a later step or the head reads: ``need``) and
    the key's names to join on."""
    from pyspark.sql import functions as F

    conds, proj = key_columns(s.key_cols, s.key_terms, v)
    join_on = list(proj)
    first: dict[str, int] = {}
    for col, name in s.out:
        first[name] = col
        if name in need and not is_anon(ir.Var(name)):
            proj[v(name)] = F.col(f"c{col}")
    for col, name in s.eqs:
        conds.append(F.col(f"c{col}") == F.col(f"c{first[name]}"))
    return conds, proj, join_on


def external(df: Any, names: tuple[str, ...], kinds: tuple[str, ...],
             extra: tuple[str, ...] = ()) -> Any:
    """A relation's rows in the internal encoding as its external columns ``names``, decoded
    by column kind (``int``, ``string``, else shown as text marked ``any``), then ``extra``."""
    from pyspark.sql import functions as F

    if not names:
        return df.select(*extra)
    exprs = []
    for i, (name, kind) in enumerate(zip(names, kinds, strict=True)):
        c = F.col(f"c{i}")
        if kind == "int":
            exprs.append(decode_long_col(c).alias(name))
        elif kind == "string":
            exprs.append(decode_string_col(c).alias(name))
        else:
            exprs.append(shown_col(c).alias(name, metadata={META_KIND: "any"}))
    return df.select(*exprs, *extra)
