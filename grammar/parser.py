"""Text → AST. The Lark parser is built once at import; Lark's errors become diagnostics here."""

from __future__ import annotations

import dataclasses
import threading
from importlib import resources
from typing import Any

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)
from lark.lexer import PatternStr
from lark.tree import Meta

from . import ast
from .diagnostics import Diagnostic, GrantlogError, Span, error

_local = threading.local()


#: the range of integer values (64-bit, two's complement)
INT_MIN, INT_MAX = -(2**63), 2**63 - 1

def _on_comment(tok: Token) -> Token:
    sink = getattr(_local, "comments", None)
    if sink is not None:
        sink.append(tok)
    return tok


#: a UTF-8 byte-order mark: ignored at the start of a text (editors on Windows write one)
BOM = "\ufeff"
_GRAMMAR = resources.files(__package__).joinpath("grantlog.lark").read_text(encoding="utf-8")
_PARSER = Lark(
    _GRAMMAR,
    parser="lalr",
    start=["start", "goal"],
    propagate_positions=True,
    maybe_placeholders=True,
    lexer_callbacks={"COMMENT": _on_comment},
)

_FRIENDLY = {
    "IDENT": "identifier",
    "VAR": "variable",
    "STRING": "string",
    "INT": "integer",
    "CMP": "comparison operator",
    "DOC": "doc comment",
    "EXPECT_NOT": "`expect not`",
    "$END": "end of input",
}
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}


#: annotations a relation declaration may carry
ANNOTATIONS = ("materialize", "demand", "decision", "writable", "hierarchy")
#: the arguments an annotation takes (one of them, always); the others take none
ANNOTATION_ARGS = {"hierarchy": ("edge", "type", "closure", "strict", "parent")}


def split_annotation(note: str) -> tuple[str, str | None]:
    """An annotation as the AST keeps it (``hierarchy(edge)``) as its name and its argument
    (``("hierarchy", "edge")``; ``("demand", None)`` without one)."""
    name, paren, arg = note.partition("(")
    return (name, arg[:-1]) if paren else (name, None)


class _SpannedSyntaxError(Exception):
    def __init__(self, message: str, span: Span, known: str | None = None,
                 help: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.help = f"annotations are {known}" if known else help


def _meta_span(file: str, meta: Meta) -> Span:
    if getattr(meta, "empty", True):
        return Span(file, 1, 1, 1, 1)
    return Span(file, meta.line, meta.column, meta.end_line, meta.end_column)


def _tok_span(file: str, tok: Token) -> Span:
    line = tok.line or 1
    col = tok.column or 1
    return Span(file, line, col, tok.end_line or line, tok.end_column or col + len(tok))


def unescape(raw: str, span: Span) -> str:
    """The value of a string literal token (with its quotes)."""
    body = raw[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            nxt = body[i + 1]
            if nxt not in _ESCAPES:
                col = span.col + 1 + i
                raise _SpannedSyntaxError(
                    f"unknown escape `\\{nxt}` in string",
                    Span(span.file, span.line, col, span.line, col + 2),
                )
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _docs(file: str, toks: list[Any]) -> tuple[str, ...]:
    out = []
    for t in toks:
        text = str(t)[3:]
        out.append(text[1:] if text.startswith(" ") else text)
    return tuple(t.rstrip() for t in out)


@v_args(meta=True)
class _ToAst(Transformer[Token, Any]):
    def __init__(self, file: str) -> None:
        super().__init__()
        self.file = file
        self.extents: list[tuple[int, int]] = []

    def _s(self, meta: Meta) -> Span:
        return _meta_span(self.file, meta)

    # terms
    def var(self, meta: Meta, ch: list[Token]) -> ast.Var:
        return ast.Var(str(ch[0]), span=_tok_span(self.file, ch[0]))

    def ident(self, meta: Meta, ch: list[Token]) -> ast.Const:
        return ast.Const(str(ch[0]), False, span=_tok_span(self.file, ch[0]))

    def string(self, meta: Meta, ch: list[Token]) -> ast.Const:
        sp = _tok_span(self.file, ch[0])
        return ast.Const(unescape(str(ch[0]), sp), True, span=sp)

    def int(self, meta: Meta, ch: list[Token]) -> ast.Const:
        sp = _tok_span(self.file, ch[0])
        text = str(ch[0])
        digits = len(text.lstrip("-"))
        # a value is a string or a 64-bit integer: what every store (BIGINT) and JSON reader
        # (Java's long, orjson) keeps alike; Python would convert at most 4300 digits
        value = int(text) if digits <= 19 else None
        if value is None or not INT_MIN <= value <= INT_MAX:
            raise _SpannedSyntaxError(
                f"integer literal `{text if digits <= 40 else text[:20] + '...'}` "
                f"({digits} digits) is out of the 64-bit range", sp,
                help=f"integers go from {INT_MIN} to {INT_MAX}; quote larger numbers as "
                "strings") from None
        return ast.Const(value, False, span=sp)

    # literals
    def atom(self, meta: Meta, ch: list[Any]) -> ast.Atom:
        name = ch[0]
        args = tuple(a for a in ch[1:] if a is not None)
        return ast.Atom(str(name), args, span=self._s(meta))

    def negation(self, meta: Meta, ch: list[Any]) -> ast.Negation:
        return ast.Negation(ch[0], span=self._s(meta))

    def comparison(self, meta: Meta, ch: list[Any]) -> ast.Comparison:
        return ast.Comparison(str(ch[1]), ch[0], ch[2], span=self._s(meta))

    def body(self, meta: Meta, ch: list[Any]) -> tuple[Any, ...]:
        return tuple(ch)

    # statements
    def clause(self, meta: Meta, ch: list[Any]) -> ast.Clause:
        label, head, body = ch
        return ast.Clause(
            head, body or (), str(label) if label is not None else None, span=self._s(meta)
        )

    def timed_fact(self, meta: Meta, ch: list[Any]) -> ast.Clause:
        label, head, (since, until) = ch
        return ast.Clause(head, (), str(label) if label is not None else None,
                          valid_from=since, valid_until=until, span=self._s(meta))

    def valid_from(self, meta: Meta, ch: list[Any]) -> tuple[Any, Any]:
        return ch[0], ch[1]

    def valid_until(self, meta: Meta, ch: list[Any]) -> tuple[Any, Any]:
        return None, ch[0]

    def column(self, meta: Meta, ch: list[Any]) -> ast.Column:
        name, typ = ch
        return ast.Column(str(name), str(typ) if typ is not None else None, span=self._s(meta))

    def annotation(self, meta: Meta, ch: list[Token | None]) -> tuple[str, Span]:
        name, arg = ch
        return (f"{name}({arg})" if arg is not None else str(name), self._s(meta))

    def decl(self, meta: Meta, ch: list[Any]) -> ast.Decl:
        notes = [c for c in ch if isinstance(c, tuple)]
        rest = [c for c in ch if not isinstance(c, tuple)]
        cols = tuple(c for c in rest[1:] if c is not None)
        return ast.Decl(str(rest[0]), cols, annotations=tuple(n for n, _ in notes),
                        span=self._s(meta))

    def import_stmt(self, meta: Meta, ch: list[Any]) -> ast.Import:
        sp = _tok_span(self.file, ch[0])
        return ast.Import(unescape(str(ch[0]), sp), span=self._s(meta))

    def expect(self, meta: Meta, ch: list[Any]) -> ast.Expect:
        return ast.Expect(ch[0], False, span=self._s(meta))

    def expect_not(self, meta: Meta, ch: list[Any]) -> ast.Expect:
        return ast.Expect(ch[1], True, span=self._s(meta))

    def docs(self, meta: Meta, ch: list[Token]) -> list[Token]:
        return list(ch)

    def dangling(self, meta: Meta, ch: list[list[Token]]) -> None:
        sink = getattr(_local, "comments", None)
        if sink is not None:
            sink.extend(ch[0])

    def _with_doc(self, meta: Meta, ch: list[Any]) -> Any:
        if len(ch) == 1:
            return ch[0]
        docs, stmt = ch
        doc = _docs(self.file, docs)
        return _replace_doc(stmt, doc) if doc else stmt

    def test_clause(self, meta: Meta, ch: list[Any]) -> Any:
        return self._with_doc(meta, ch)

    def test_block(self, meta: Meta, ch: list[Any]) -> ast.TestBlock:
        sp = _tok_span(self.file, ch[0])
        items = tuple(c for c in ch[1:] if c is not None)
        return ast.TestBlock(unescape(str(ch[0]), sp), items, span=self._s(meta))

    def statement(self, meta: Meta, ch: list[Any]) -> Any:
        sp = self._s(meta)
        self.extents.append((sp.line, sp.end_line))
        return self._with_doc(meta, ch)

    def start(self, meta: Meta, ch: list[Any]) -> tuple[Any, ...]:
        return tuple(c for c in ch if c is not None)

    def goal(self, meta: Meta, ch: list[Any]) -> tuple[Any, ...]:
        return tuple(ch[0])


def _replace_doc(stmt: Any, doc: tuple[str, ...]) -> Any:
    return dataclasses.replace(stmt, doc=doc)


def _expected(parser_err: UnexpectedInput) -> str:
    """The tokens the parser would accept at the error, as the help line lists them."""
    terms: set[str] = set()
    ip = getattr(parser_err, "interactive_parser", None)
    if ip is not None:
        try:
            terms = set(ip.accepts())
        except LarkError:  # pragma: no cover - fall back to Lark's estimate
            terms = set()
    if not terms:
        terms = set(getattr(parser_err, "expected", None) or ())
        terms |= set(getattr(parser_err, "allowed", None) or ())
    names: list[str] = []
    for term in sorted(terms):
        if term in _FRIENDLY:
            names.append(_FRIENDLY[term])
            continue
        try:
            pat = _PARSER.get_terminal(term).pattern
        except KeyError:
            continue
        if isinstance(pat, PatternStr):
            names.append(f"`{pat.value}`")
    uniq = sorted(set(names))
    return ", ".join(uniq)


def _end_span(text: str, file: str) -> Span:
    """Just after the last non-blank character (where the missing token belongs)."""
    stripped = text.rstrip()
    if not stripped:
        return Span(file, 1, 1, 1, 2)
    line = stripped.count("\n") + 1
    col = len(stripped) - (stripped.rfind("\n") + 1) + 1
    return Span(file, line, col, line, col + 1)


def _non_ascii_name(text: str, pos: int, file: str) -> Diagnostic:
    """``syntax-error`` at a word with a letter that is not ASCII (`café`): it names the
    word and says to quote it (docs/language.md: bare names are ASCII)."""
    start = pos
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    end = pos
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    word = text[start:end]
    line = text.count("\n", 0, start) + 1
    col = start - (text.rfind("\n", 0, start) + 1) + 1
    return error("syntax-error", f"`{word}` is not a bare name: `{text[pos]}` is not an ASCII "
                 "letter", Span(file, line, col, line, col + len(word)),
                 f"bare names (constants, relations, variables) are ASCII letters, digits and "
                 f"`_`; quote a constant with other letters: `\"{word}\"`")


def _convert(err: UnexpectedInput, text: str, file: str) -> Diagnostic:
    if isinstance(err, UnexpectedToken):
        tok = err.token
        expected = _expected(err)
        help_ = f"expected {expected}" if expected else None
        if tok.type == "$END":
            return error("syntax-error", "unexpected end of input", _end_span(text, file), help_)
        return error("syntax-error", f"unexpected `{tok}`", _tok_span(file, tok), help_)
    if isinstance(err, UnexpectedCharacters):
        pos = err.pos_in_stream or 0
        ch = text[pos] if pos < len(text) else ""
        sp = Span(file, err.line, err.column, err.line, err.column + 1)
        if ch == '"':
            return error("syntax-error", "unterminated string", sp, "close the string with `\"`")
        if ch.isalpha():  # a non-ASCII letter: bare names are ASCII, a quoted one is not
            return _non_ascii_name(text, pos, file)
        shown = ch if ch.isprintable() else repr(ch)
        return error("syntax-error", f"unexpected character `{shown}`", sp)
    if isinstance(err, UnexpectedEOF):
        return error("syntax-error", "unexpected end of input", _end_span(text, file))
    line = getattr(err, "line", 1) or 1
    col = getattr(err, "column", 1) or 1
    return error("syntax-error", str(err).split("\n")[0], Span(file, line, col, line, col + 1))


def _run(text: str, file: str, start: str) -> tuple[Any, list[Token], list[tuple[int, int]]]:
    text = text.removeprefix(BOM)
    comments: list[Token] = []
    _local.comments = comments
    tr = _ToAst(file)
    try:
        tree = _PARSER.parse(text, start=start)
        result = tr.transform(tree) if isinstance(tree, Tree) else tree
    except UnexpectedInput as e:
        raise GrantlogError([_convert(e, text, file)], {file: text}) from None
    except VisitError as e:
        inner = e.orig_exc
        if isinstance(inner, _SpannedSyntaxError):
            raise GrantlogError(
                [error("syntax-error", inner.message, inner.span, inner.help)], {file: text}
            ) from None
        raise
    except LarkError as e:  # pragma: no cover - defensive: any other Lark failure
        sp = Span(file, 1, 1, 1, 2)
        raise GrantlogError([error("syntax-error", str(e), sp)], {file: text}) from None
    finally:
        _local.comments = None
    return result, comments, tr.extents


def parse(text: str, file: str = "<input>") -> ast.Module:
    """Parse a whole `.gl` file; raises :class:`GrantlogError` with a ``syntax-error``."""
    stmts, comments, extents = _run(text, file, "start")
    cmts = tuple(ast.Comment(str(t), t.line or 1, t.column or 1) for t in comments)
    end = text.count("\n") + 1
    return ast.Module(file, tuple(stmts), cmts, tuple(extents), span=Span(file, 1, 1, end, 1))


def parse_goal(text: str, file: str = "<goal>") -> tuple[ast.Literal, ...]:
    """Parse a goal such as ``allowed(U, "read", t1), not banned(U)``."""
    body, _, _ = _run(text, file, "goal")
    return tuple(body)
