"""Bearer tokens with scopes: ``check`` (reads), ``write`` (facts), ``admin`` (the policy).

Tokens come from ``--tokens FILE`` (one ``TOKEN SCOPE[,SCOPE...]`` per line; ``#`` starts a
comment) or the environment variable ``GRANTLOG_TOKENS`` (the same lines, separated by ``;``).
Without tokens, reads are open and writes are refused (403) unless unauthenticated writes were
allowed for local development. Tokens are compared in constant time (``hmac.compare_digest``)
against every configured token, so the time taken does not tell which prefix matched.
"""

from __future__ import annotations

import hmac
import os
from dataclasses import dataclass

from grantlog.grammar.diagnostics import GrantlogError, Span, error

SCOPES = ("check", "write", "admin")


@dataclass(frozen=True)
class Tokens:
    """token -> its scopes (empty: no tokens configured)."""

    scopes: tuple[tuple[bytes, frozenset[str]], ...] = ()
    allow_unauthenticated_writes: bool = False

    @property
    def enabled(self) -> bool:
        return bool(self.scopes)

    def allows(self, header: str | None, scope: str) -> int:
        """200 when the request may act in ``scope``, else 401 (no or unknown token) or 403
        (a token without the scope, or writes without tokens)."""
        if not self.scopes:
            if scope == "check" or self.allow_unauthenticated_writes:
                return 200
            return 403
        if not header or not header.startswith("Bearer "):
            return 401
        given = header[7:].strip().encode()
        found: frozenset[str] | None = None
        for token, scopes in self.scopes:  # every token compared, in constant time each
            if hmac.compare_digest(token, given):
                found = scopes
        if found is None:
            return 401
        return 200 if scope in found or "admin" in found else 403


def parse(text: str, where: str) -> list[tuple[bytes, frozenset[str]]]:
    out: list[tuple[bytes, frozenset[str]]] = []
    for no, raw in enumerate(text.replace(";", "\n").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
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


def load(path: str | None, allow_unauthenticated_writes: bool = False) -> Tokens:
    entries: list[tuple[bytes, frozenset[str]]] = []
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                entries += parse(f.read(), path)
        except OSError as exc:
            raise GrantlogError([error("file-not-found", f"cannot read `{path}`: "
                                       f"{(exc.strerror or str(exc)).lower()}",
                                       Span(path, 0, 0, 0, 0))]) from None
    env = os.environ.get("GRANTLOG_TOKENS")
    if env:
        entries += parse(env, "$GRANTLOG_TOKENS")
    return Tokens(tuple(entries), allow_unauthenticated_writes)
