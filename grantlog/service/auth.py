"""Bearer tokens with scopes: ``check`` (reads), ``write`` (facts), ``admin`` (the policy).

Tokens come from ``--tokens FILE`` (one ``TOKEN SCOPE[,SCOPE...] [name=NAME] [expires=WHEN]``
per line: a write with a named token records NAME as its author unless the request names one;
a token is refused from WHEN on, an ISO 8601 time, UTC unless it says otherwise; ``#`` starts
a comment) or the environment variable ``GRANTLOG_TOKENS`` (the same lines, separated by
``;``). The file is read again when it changes (:class:`Source`): a line removed is a token
revoked at once, and a file made broken leaves no token valid (fail closed).
Without tokens, reads are open and writes are refused (403) unless unauthenticated writes were
allowed for local development; admin operations (``PUT /v1/policy``) are refused without tokens,
whatever the flags say. A tokens file that holds no token is an error (the server would
otherwise run without authentication), and a tokens file that other users may read is warned
about. Tokens are compared in constant time (``hmac.compare_digest``) against every configured
token, so the time taken does not tell which prefix matched. The scheme ``Bearer`` is matched
without regard to case (RFC 7235).
"""

from __future__ import annotations

import hmac
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass

from grantlog.grammar.diagnostics import GrantlogError, Span, error

SCOPES = ("check", "write", "admin")


@dataclass(frozen=True)
class Tokens:
    """token -> its scopes (empty: no tokens configured)."""

    scopes: tuple[tuple[bytes, frozenset[str]], ...] = ()
    allow_unauthenticated_writes: bool = False
    #: token -> its ``name=`` (the author of its writes)
    names: tuple[tuple[bytes, str], ...] = ()
    #: token -> its ``expires=`` (seconds since the epoch): not valid from then on
    expires: tuple[tuple[bytes, float], ...] = ()
    #: no token is valid, yet tokens are required (a tokens file read again that is broken:
    #: fail closed, never open)
    closed: bool = False

    def name(self, header: str | None) -> str | None:
        """The name of the request's bearer token (None: no token, or one without a name);
        every named token compared in constant time."""
        _, _, credentials = (header or "").strip().partition(" ")
        given = credentials.strip().encode("latin-1", "replace")
        found = None
        for token, name in self.names:
            if hmac.compare_digest(token, given):
                found = name
        return found if given else None

    @property
    def enabled(self) -> bool:
        return bool(self.scopes) or self.closed

    def allows(self, header: str | None, scope: str) -> int:
        """200 when the request may act in ``scope``, else 401 (no or unknown token) or 403
        (a token without the scope, or writes without tokens)."""
        if not self.enabled:
            if scope == "check" or (scope == "write" and self.allow_unauthenticated_writes):
                return 200
            return 403  # admin operations always need an admin token
        found = self.scopes_of(header)
        if found is None:
            return 401
        return 200 if scope in found or "admin" in found else 403

    def scopes_of(self, header: str | None) -> frozenset[str] | None:
        """The scopes of the request's bearer token as configured now (None: no token, not
        a bearer token, not one of these, or expired)."""
        scheme, _, credentials = (header or "").strip().partition(" ")
        given = credentials.strip().encode("latin-1", "replace")
        if scheme.lower() != "bearer" or not given:
            return None
        found: frozenset[str] | None = None
        for token, scopes in self.scopes:  # every token compared, in constant time each
            if hmac.compare_digest(token, given):
                found = scopes
        if found is not None and self.expires:
            for token, until in self.expires:
                if hmac.compare_digest(token, given) and time.time() >= until:
                    return None
        return found

    @staticmethod
    def unauthorized(header: str | None) -> str:
        """Why a request answered 401 was refused, in words: no token, a header that is not
        a bearer token, or a token that is not valid (never the token itself)."""
        scheme, _, credentials = (header or "").strip().partition(" ")
        if not scheme:
            return "a bearer token is needed (`Authorization: Bearer TOKEN`)"
        if scheme.lower() != "bearer" or not credentials.strip():
            return ("the `Authorization` header is not a bearer token: send "
                    "`Authorization: Bearer TOKEN`")
        return "the bearer token is not valid: it is none of the server's tokens"


def parse(text: str, where: str) -> list[tuple[bytes, frozenset[str]]]:
    out: list[tuple[bytes, frozenset[str]]] = []
    for no, raw in enumerate(text.replace(";", "\n").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = [p for p in line.split() if not p.startswith(("name=", "expires="))]
        for p in line.split():
            if p.startswith("expires=") and _when(p[8:]) is None:
                raise GrantlogError([error(
                    "bad-tokens", f"`{p[8:]}` is not a time", Span(where, no, 1, no, 2),
                    "write `expires=2027-01-31` or `expires=2027-01-31T18:00:00Z` (UTC)")])
        scopes = frozenset(s for p in parts[1:] for s in p.split(",") if s)
        bad = sorted(scopes - set(SCOPES))
        if len(parts) < 2 or bad or len(parts[0]) < 16:
            problem = (f"unknown scope `{bad[0]}`" if bad else
                       "a token must have at least 16 characters" if len(parts) >= 2 else
                       "expected `TOKEN SCOPE[,SCOPE...]`")
            raise GrantlogError([error("bad-tokens", problem, Span(where, no, 1, no, 2),
                                       "scopes: " + ", ".join(SCOPES))])
        out.append((parts[0].encode(), scopes))
    return out


def names(text: str) -> list[tuple[bytes, str]]:
    """The ``name=NAME`` of each token of ``text`` (checked by :func:`parse`) that has one."""
    out: list[tuple[bytes, str]] = []
    for raw in text.replace(";", "\n").splitlines():
        parts = raw.split("#", 1)[0].split()
        for p in parts[1:]:
            if p.startswith("name=") and len(p) > 5:
                out.append((parts[0].encode(), p[5:]))
    return out


def _when(text: str) -> float | None:
    """An ``expires=`` value (an ISO 8601 date or time; UTC unless it says otherwise) in
    seconds since the epoch (None: not a time)."""
    from datetime import UTC, datetime

    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


def expiries(text: str) -> list[tuple[bytes, float]]:
    """The ``expires=WHEN`` of each token of ``text`` (checked by :func:`parse`) that has one."""
    out: list[tuple[bytes, float]] = []
    for raw in text.replace(";", "\n").splitlines():
        parts = raw.split("#", 1)[0].split()
        for p in parts[1:]:
            when = _when(p[8:]) if p.startswith("expires=") else None
            if when is not None:
                out.append((parts[0].encode(), when))
    return out


class Source:
    """The tokens in force now: those of ``--tokens FILE``, read again when the file changes
    (its inode, size or times; looked at once per :attr:`RECHECK` seconds at
    most), and those of ``$GRANTLOG_TOKENS``. A line removed is a token revoked, a line
    changed a token's scopes or expiry changed: at once, in every worker, without a restart.
    A file read again that is missing, unreadable or broken leaves *no* token valid (fail
    closed: requests are refused, never let in), until it is fixed; ``warn`` hears why."""

    #: seconds between looks at the file
    RECHECK = 0.25

    def __init__(self, path: str | None, allow_unauthenticated_writes: bool = False,
                 warn: Callable[[str], object] | None = None) -> None:
        self.path = path
        self.allow = allow_unauthenticated_writes
        self.warn = warn
        self.tokens = load(path, allow_unauthenticated_writes)
        self._seen = self._stat()
        self._next = time.monotonic() + self.RECHECK

    def _stat(self) -> tuple[int, ...] | None:
        try:
            st = os.stat(self.path) if self.path else None
        except OSError:
            return None
        return None if st is None else (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def current(self) -> Tokens:
        """The tokens in force (the file read again if it changed)."""
        if self.path is None or time.monotonic() < self._next:
            return self.tokens
        self._next = time.monotonic() + self.RECHECK
        seen = self._stat()
        if seen != self._seen:
            self._seen = seen
            try:
                self.tokens = load(self.path, self.allow)
            except GrantlogError as exc:
                self.tokens = Tokens(closed=True)
                if self.warn is not None:
                    self.warn(f"warning: {exc.diagnostics[0].message}: no token is valid "
                              "until the tokens file is fixed")
        return self.tokens


def load(path: str | None, allow_unauthenticated_writes: bool = False,
         warn: Callable[[str], object] | None = None) -> Tokens:
    """The tokens of ``path`` and of ``$GRANTLOG_TOKENS``. A file or a variable that holds no
    token is an error (``no-tokens``): running without authentication must be asked for by
    giving neither. ``warn`` hears of a tokens file that other users may read."""
    entries: list[tuple[bytes, frozenset[str]]] = []
    named: list[tuple[bytes, str]] = []
    expiring: list[tuple[bytes, float]] = []
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                mode = os.fstat(f.fileno()).st_mode
                text = f.read()
                found = parse(text, path)
        except OSError as exc:
            raise GrantlogError([error("file-not-found", f"cannot read `{path}`: "
                                       f"{(exc.strerror or str(exc)).lower()}",
                                       Span(path, 0, 0, 0, 0))]) from None
        except UnicodeDecodeError:
            raise GrantlogError([error("bad-tokens", f"`{path}` is not UTF-8 text",
                                       Span(path, 0, 0, 0, 0))]) from None
        if not found:
            raise _empty(path, "the file")
        named += names(text)
        expiring += expiries(text)
        if mode & (stat.S_IRGRP | stat.S_IROTH | stat.S_IWGRP | stat.S_IWOTH) and warn:
            warn(f"warning: the tokens file `{path}` may be read by other users "
                 f"(mode {stat.S_IMODE(mode):o}); `chmod 600 {path}`")
        entries += found
    env = os.environ.get("GRANTLOG_TOKENS")
    if env:
        found = parse(env, "$GRANTLOG_TOKENS")
        if not found:
            raise _empty("$GRANTLOG_TOKENS", "the variable")
        entries += found
        named += names(env)
        expiring += expiries(env)
    return Tokens(tuple(entries), allow_unauthenticated_writes, tuple(named), tuple(expiring))


def _empty(where: str, what: str) -> GrantlogError:
    return GrantlogError([error(
        "no-tokens", f"{what} `{where}` holds no token: the server would run without "
        "authentication", Span(where, 0, 0, 0, 0),
        "add a line `TOKEN SCOPE[,SCOPE...]` (scopes: check, write, admin), or give no "
        "tokens at all to run without authentication (reads open, writes refused)")])
