"""Times as the API takes them (``as_of=``, ``now=``, ``valid_from=``, ``valid_until=``) and
as the rule files write them: seconds since the epoch, and validity intervals."""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime

from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error

from . import arguments, ir

#: (valid_from, valid_until) in seconds since the epoch; unbounded: -inf, inf
Interval = tuple[float, float]
INF = float("inf")
_API = Span("<api>", 0, 0, 0, 0)


def moment(value: object, name: str = "as_of") -> float:
    """``value`` as seconds since the epoch: a ``datetime`` (naive: UTC), a ``date`` (its
    midnight, UTC), an ISO 8601 string of either, or a number of seconds."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise arguments.bad_argument(
                name, "a time", value, "an ISO 8601 time, e.g. `2026-03-03T12:00:00Z`, or "
                "a date, e.g. `2026-03-03`") from None
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    seconds = float(arguments.number(name, value))
    if not math.isfinite(seconds):
        raise arguments.bad_argument(name, "a finite number of seconds", value,
                                     "seconds since the epoch, e.g. `1772539200`")
    return seconds


def interval(valid_from: object, valid_until: object, span: Span = _API) -> Interval:
    """The interval of ``valid_from`` and ``valid_until`` (each a time as :func:`moment`
    takes it, or None: unbounded), to the microsecond. ``bad-argument`` for a value that is
    no time, ``empty-validity`` when the interval holds at no moment."""
    lo = -INF if valid_from is None else instant(valid_from, "valid_from")
    hi = INF if valid_until is None else instant(valid_until, "valid_until")
    if hi <= lo:
        raise GrantlogError([error(
            "empty-validity", f"`valid_until` ({show(hi)}) is not after `valid_from` "
            f"({show(lo)}): the fact would hold at no moment", span,
            "give a `valid_until` later than `valid_from` (the interval is half-open: "
            "from `valid_from` up to, not including, `valid_until`)")])
    return lo, hi


def validity_derived(rel: str, span: Span = _API) -> Diagnostic:
    """A validity interval given to a fact of ``rel``, which rules derive."""
    return error("validity-derived", f"`{rel}` is derived by rules: only base facts may carry "
                 "a validity interval", span, "give the interval to the base facts the rule "
                 "reads (a grant, a membership)")


def instant(value: object, name: str) -> float:
    """``value`` as :func:`moment` takes it, to the microsecond (:func:`canonical`):
    ``bad-argument`` for a time outside the years 1 to 9999."""
    t = moment(value, name)
    try:
        return canonical(t)
    except (OverflowError, OSError, ValueError):
        raise arguments.bad_argument(name, "a time between the years 1 and 9999", value,
                                     "seconds since the epoch, e.g. `1772539200`, or an ISO "
                                     "8601 time") from None


def canonical(t: float) -> float:
    """``t`` as its text (:func:`show`) reads back: to the microsecond."""
    return parse(show(t))


def show(t: float) -> str:
    """A bound as ISO 8601 UTC to the microsecond (``""``: unbounded)."""
    if t in (INF, -INF):
        return ""
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="microseconds") \
        .replace("+00:00", "Z")


def parse(text: str) -> float:
    """:func:`show`'s text as seconds (``""``: unbounded is the caller's)."""
    return datetime.fromisoformat(text).timestamp()


__all__ = ["INF", "Interval", "canonical", "instant", "interval", "moment", "parse", "show",
           "validity_derived"]


# -- a fact with a validity interval as a row of the `@valid` relation --------------------------


def holds(iv: Interval, t: float) -> bool:
    """Whether ``t`` is inside ``iv`` (its start included, its end not)."""
    return iv[0] <= t < iv[1]


def encode(rel: str, row: ir.Row, iv: Interval) -> ir.Row:
    """The :data:`VALID` row of ``rel(row)`` valid in ``iv``."""
    return (rel, json.dumps(list(row), ensure_ascii=False, separators=(",", ":")),
            show(iv[0]), show(iv[1]))


def decode(vrow: ir.Row) -> tuple[str, ir.Row, Interval]:
    rel, fact, lo, hi = vrow
    return (str(rel), tuple(json.loads(str(fact))),
            (parse(str(lo)) if lo else -INF, parse(str(hi)) if hi else INF))
