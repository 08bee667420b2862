"""Hypothesis strategies for `.gl` programs.

* :func:`programs` — random *valid, safe, stratified* programs (facts and rules) over a small
  constant domain, for comparing the engine with the naive oracle (tests/naive.py).
* :func:`goals` — safe goals over a generated program.
* :func:`updates` — insert / retract sequences over a generated program.
* :func:`source_files` — syntactically valid files using every construct of the language
  (declarations, imports, doc comments, labels, test blocks, ``//`` comments anywhere, odd
  whitespace), for the formatter round trip.
* :func:`junk` / :func:`mutated` — text that is mostly not a program.
* fuzzing (tests/test_fuzz.py): :func:`policy_files` (valid programs with declarations,
  annotations, test blocks, comments, doc comments, imports of missing files, strings with
  escapes), :func:`fact_files`, :func:`token_mutated` (token deletions, duplications, swaps,
  replacements, truncation, random unicode, deep nesting, very long identifiers and integers),
  :func:`byte_mutated` (bit flips, invalid UTF-8); :func:`gravitino_dirs` (Gravitino REST JSON)
  and :func:`json_mutated` / :func:`json_bytes` (wrong types, missing keys, nulls, huge
  numbers, nested garbage, broken JSON text).

Stratification is guaranteed by construction: every relation gets a level; a rule may read
relations of its own level or lower positively (recursion, mutual and non-linear included) and
only relations of strictly lower levels under ``not``. Safety is guaranteed by construction too:
head variables, negated variables and comparison variables are drawn from the variables bound
by positive atoms (or by ``V = term`` with ``term`` already bound).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import note
from hypothesis import strategies as st

Value = str | int
Row = tuple[Value, ...]

INTS: tuple[int, ...] = (0, 1, 2, -1, 10)
IDENTS: tuple[str, ...] = ("a", "b", "c", "ab")
#: strings that need quotes; "1" is a string, distinct from the integer 1
STRINGS: tuple[str, ...] = ("B", "", "x y", 'q"t', "1", "a\\b", "é")
VALUES: tuple[Value, ...] = (*INTS, *IDENTS, *STRINGS)
VARS: tuple[str, ...] = ("X", "Y", "Z", "_W")
OPS: tuple[str, ...] = ("=", "!=", "<", "<=", ">", ">=")
KEYWORDS: tuple[str, ...] = ("not", "rel", "import", "test", "expect")


def quote(s: str) -> str:
    esc = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{esc}"'


def is_ident(v: Value) -> bool:
    return (isinstance(v, str) and v[:1].islower() and v.isascii()
            and all(c.isalnum() or c == "_" for c in v) and v not in KEYWORDS)


def show(v: Value, quoted: bool = False) -> str:
    """A constant as source text; identifiers are written bare unless ``quoted``."""
    if isinstance(v, int):
        return str(v)
    return v if is_ident(v) and not quoted else quote(v)


def show_row(rel: str, row: Row) -> str:
    return f"{rel}({', '.join(show(v) for v in row)})" if row else rel


# ---------------------------------------------------------------------------------------------
# valid, stratified programs


@dataclass(frozen=True)
class Rel:
    name: str
    arity: int
    level: int


@dataclass
class Program:
    relations: tuple[Rel, ...]
    domain: tuple[Value, ...]
    facts: dict[str, set[Row]]
    rules: list[str] = field(default_factory=list)
    #: relations declared with `rel` (relations the text would not mention are declared too)
    declared: frozenset[str] = frozenset()
    #: relations some rule derives: declared `@writable`, since facts and updates may give
    #: any relation rows (what base facts of a derived relation do is part of what is tested)
    derived: set[str] = field(default_factory=set)

    @property
    def arity(self) -> dict[str, int]:
        return {r.name: r.arity for r in self.relations}

    def text(self, facts: dict[str, set[Row]] | None = None) -> str:
        """The program as source: the rules, then the given facts (its own by default)."""
        facts = self.facts if facts is None else facts
        lines = []
        for r in self.relations:
            mentioned = any(re.search(rf"\b{r.name}\b", x) for x in self.rules)
            writable = r.name in self.derived
            if writable or r.name in self.declared or not (mentioned or facts.get(r.name)):
                cols = ", ".join(f"c{i}" + (": any" if i % 2 else "") for i in range(r.arity))
                lines.append(f"{'@writable ' if writable else ''}rel {r.name}({cols}).")
        lines += self.rules
        for rel in sorted(facts):
            for row in sorted(facts[rel], key=repr):
                lines.append(show_row(rel, row) + ".")
        return "\n".join(lines) + "\n"


@st.composite
def _const(draw: st.DrawFn, domain: tuple[Value, ...]) -> tuple[str, Value]:
    v = draw(st.sampled_from(domain))
    return show(v, draw(st.booleans())), v


@st.composite
def _body(
    draw: st.DrawFn,
    pos_rels: list[Rel],
    neg_rels: list[Rel],
    domain: tuple[Value, ...],
    min_pos: int = 0,
) -> tuple[list[str], list[str]]:
    """A safe body: (literal texts in random order, variables it binds)."""
    lits: list[str] = []
    bound: list[str] = []

    def term_in_atom(for_negation: bool, fresh: list[str]) -> str:
        kind = draw(st.sampled_from(["var", "var", "var", "anon", "const"]))
        if kind == "var":
            if for_negation:
                if bound:
                    return draw(st.sampled_from(bound))
                kind = "anon"
            else:
                name = draw(st.sampled_from(VARS))
                fresh.append(name)
                return name
        if kind == "anon":
            fresh.append("_")
            return "_"
        return draw(_const(domain))[0]

    def atom(rel: Rel, for_negation: bool, fresh: list[str]) -> str:
        if rel.arity == 0:
            return rel.name + draw(st.sampled_from(["", "()"]))
        args = [term_in_atom(for_negation, fresh) for _ in range(rel.arity)]
        return f"{rel.name}({', '.join(args)})"

    n_pos = draw(st.integers(min_pos, 3)) if pos_rels else 0
    plain: list[str] = []  # positive atoms without `_`
    for _ in range(n_pos):
        fresh: list[str] = []
        lits.append(atom(draw(st.sampled_from(pos_rels)), False, fresh))
        if "_" not in fresh:
            plain.append(lits[-1])
        bound.extend(v for v in fresh if v not in bound and v != "_")
    # now and then a body longer than the code generator's nesting limit (engine/plan/codegen.py
    # MAX_LOOPS = 16): repeat atoms without `_` (a repeated atom changes nothing)
    if plain and draw(st.integers(0, 15)) == 15:
        while len(lits) < 18:
            lits.append(draw(st.sampled_from(plain)))

    # `V = t` binds a new variable from a bound one or a constant
    if draw(st.integers(0, 3)) == 3:
        free = [v for v in VARS if v not in bound]
        if free:
            new = draw(st.sampled_from(free))
            src = draw(st.sampled_from(bound)) if bound and draw(st.booleans()) else (
                draw(_const(domain))[0])
            lits.append(f"{new} = {src}" if draw(st.booleans()) else f"{src} = {new}")
            bound.append(new)

    for _ in range(draw(st.sampled_from([0, 1, 2, 0, 1]))):
        op = draw(st.sampled_from(OPS))
        if bound and draw(st.integers(0, 3)) > 0:
            left = draw(st.sampled_from(bound))
            other = st.sampled_from(bound) if draw(st.booleans()) else _const(domain).map(
                lambda c: c[0])
            right = draw(other)
            if draw(st.booleans()):
                left, right = right, left
        else:
            # constants on both sides must have the same type (else `type-mismatch`)
            ltext, lval = draw(_const(domain))
            same = [v for v in domain if isinstance(v, int) == isinstance(lval, int)]
            rval = draw(st.sampled_from(same))
            left, right = ltext, show(rval, draw(st.booleans()))
        lits.append(f"{left} {op} {right}")

    if neg_rels:
        for _ in range(draw(st.integers(0, 2))):
            lits.append("not " + atom(draw(st.sampled_from(neg_rels)), True, []))

    if not lits:  # a rule needs a body: a comparison of constants (true or false)
        v = draw(st.sampled_from(domain))
        lits.append(f"{show(v)} {draw(st.sampled_from(OPS))} {show(v)}")
    order = draw(st.permutations(range(len(lits))))
    return [lits[i] for i in order], bound


@st.composite
def programs(draw: st.DrawFn, max_rels: int = 5, max_rules: int = 7) -> Program:
    domain = tuple(draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=5, unique=True)))
    n = draw(st.integers(1, max_rels))
    rels = tuple(
        Rel(f"r{i}", draw(st.integers(0, 3)), draw(st.integers(0, 2))) for i in range(n)
    )
    facts: dict[str, set[Row]] = {}
    for r in rels:
        rows = draw(st.lists(st.tuples(*[st.sampled_from(domain)] * r.arity),
                             max_size=6 if r.level == 0 else 2))
        if rows:
            facts[r.name] = set(rows)
    declared = frozenset(draw(st.sets(st.sampled_from([r.name for r in rels]))))
    prog = Program(rels, domain, facts, declared=declared)
    labels = 0
    for _ in range(draw(st.integers(0, max_rules))):
        head = draw(st.sampled_from(rels))
        pos = [r for r in rels if r.level <= head.level]
        neg = [r for r in rels if r.level < head.level]
        body, bound = draw(_body(pos, neg, domain))
        args = []
        for _ in range(head.arity):
            if bound and draw(st.integers(0, 4)) > 0:
                args.append(draw(st.sampled_from(bound)))
            else:
                args.append(draw(_const(domain))[0])
        head_text = f"{head.name}({', '.join(args)})" if args else head.name
        label = ""
        if draw(st.integers(0, 4)) == 4:
            labels += 1
            label = f"rule{labels}: "
        prog.rules.append(f"{label}{head_text} :- {', '.join(body)}.")
        prog.derived.add(head.name)
    return prog


@st.composite
def goal_bodies(draw: st.DrawFn, prog: Program) -> list[str]:
    """The literals of a safe goal over the program's relations (negation on any of them)."""
    rels = list(prog.relations)
    body, _ = draw(_body(rels, rels, prog.domain, min_pos=1))
    return body


@st.composite
def goals(draw: st.DrawFn, prog: Program) -> str:
    """A safe goal, as text."""
    return ", ".join(draw(goal_bodies(prog))) + draw(st.sampled_from(["", "."]))


def program_and_goal(data: st.DataObject) -> tuple[Program, str, str]:
    """A generated program, a goal over it, and its text (noted in the example's report)."""
    prog = data.draw(programs(), label="program")
    goal = data.draw(goals(prog), label="goal")
    text = prog.text()
    note(text)
    return prog, goal, text


def apply_op(target: Any, op: tuple[str, str, list[Row]], current: dict[str, set[Row]]) -> None:
    """One generated update (``insert`` or ``retract``) applied to ``target`` (a reasoner or
    a transaction) and to the expected base facts ``current``."""
    kind, rel, rows = op
    if kind == "insert":
        target.insert(rel, rows)
        current.setdefault(rel, set()).update(rows)
    else:
        target.retract(rel, rows)
        current.get(rel, set()).difference_update(rows)


@dataclass
class TestBlock:
    __test__ = False  # not a pytest test class

    name: str
    facts: dict[str, set[Row]]
    goal: list[str]
    negated: bool

    def text(self) -> str:
        lines = [f"test {quote(self.name)} {{"]
        for rel in sorted(self.facts):
            lines += [f"    {show_row(rel, row)}." for row in sorted(self.facts[rel], key=repr)]
        # `expect not` followed by a body is one token; keep a body's `not` off the front
        body = sorted(self.goal, key=lambda lit: lit.startswith("not "))
        lines.append(f"    {'expect not' if self.negated else 'expect'} {', '.join(body)}.")
        return "\n".join([*lines, "}"])


@st.composite
def test_blocks(draw: st.DrawFn, prog: Program) -> list[TestBlock]:
    """A few `test` blocks, each with its own facts and one expectation."""
    out = []
    for i in range(draw(st.integers(1, 3))):
        facts: dict[str, set[Row]] = {}
        for _ in range(draw(st.integers(0, 3))):
            rel = draw(st.sampled_from(prog.relations))
            row = draw(st.tuples(*[st.sampled_from(prog.domain)] * rel.arity))
            facts.setdefault(rel.name, set()).add(row)
        out.append(TestBlock(f"t{i}", facts, draw(goal_bodies(prog)), draw(st.booleans())))
    return out


@st.composite
def updates(draw: st.DrawFn, prog: Program) -> list[tuple[str, str, list[Row]]]:
    """A sequence of ``(insert | retract, relation, rows)``; retracts favour existing facts."""
    ops: list[tuple[str, str, list[Row]]] = []
    current = {r: set(rows) for r, rows in prog.facts.items()}
    for _ in range(draw(st.integers(1, 5))):
        rel = draw(st.sampled_from(prog.relations))
        kind = draw(st.sampled_from(["insert", "retract"]))
        fresh_rows = st.tuples(*[st.sampled_from(prog.domain)] * rel.arity)
        have = sorted(current.get(rel.name, set()), key=repr)
        row_st = st.one_of(st.sampled_from(have), fresh_rows) if have else fresh_rows
        rows = draw(st.lists(row_st, max_size=3))
        if kind == "insert":
            current.setdefault(rel.name, set()).update(rows)
        else:
            current.get(rel.name, set()).difference_update(rows)
        ops.append((kind, rel.name, rows))
    return ops


# ---------------------------------------------------------------------------------------------
# syntax: every construct, comments anywhere, odd whitespace

REL_NAMES = ("p", "q", "edge", "testing", "nota", "expected", "relx", "imported", "r_2")
LABELS = ("lbl", "up", "via_group", "notable")
F_VARS = ("X", "Y", "_", "_X", "Foo1", "LongVariableNameForWidth")
F_IDENTS = ("a", "b", "alice", "m1", "x_Y2", "not", "rel", "test", "expect", "import")
F_STRINGS = ("", "x y", 'q"t', "a\\b", "line\nbreak", "tab\tx", "é", "//no comment", "1",
             "a long string constant that pushes the clause past the line width of one hundred")
F_INTS = (0, 7, -3, 9223372036854775807, -9223372036854775808)  # integers are 64-bit
COMMENTS = ("// note", "//", "//x", "//// banner", "// trailing   ", "// } { . :- not")
#: comments that would lex as doc comments where a statement may start
DOC_LIKE = ("/// inner", "///")
DOCS = ("///", "/// A doc line.", "///no space", "///  two spaces", "/// `code` and // slashes")
F_ANNOTATIONS = ("materialize", "demand", "decision", "writable", "weird")


@dataclass
class _Tok:
    text: str
    #: a statement may start right after this token (a doc-like comment would become a DOC)
    boundary: bool = False
    #: the token runs to the end of its line (DOC)
    line: bool = False


@st.composite
def _f_term(draw: st.DrawFn, keywords: bool, left_of_cmp: bool = False) -> str:
    kind = draw(st.sampled_from(["var", "ident", "string", "int"]))
    if kind == "var":
        return draw(st.sampled_from(F_VARS))
    if kind == "ident":
        # a keyword lexes as an identifier only where the keyword cannot appear
        idents = [i for i in F_IDENTS if (keywords and not left_of_cmp) or i not in KEYWORDS]
        return draw(st.sampled_from(idents))
    if kind == "string":
        return quote(draw(st.sampled_from(F_STRINGS + F_IDENTS)))
    return str(draw(st.sampled_from(F_INTS)))


@st.composite
def _f_atom(draw: st.DrawFn, keywords: bool) -> list[str]:
    name = draw(st.sampled_from(REL_NAMES))
    n = draw(st.integers(0, 3))
    if n == 0:
        return [name] if draw(st.booleans()) else [name, "(", ")"]
    toks = [name, "("]
    for i in range(n):
        if i:
            toks.append(",")
        toks.append(draw(_f_term(keywords)))
    return [*toks, ")"]


@st.composite
def _f_body(draw: st.DrawFn, keywords: bool, max_size: int = 4) -> list[str]:
    toks: list[str] = []
    for i in range(draw(st.integers(1, max_size))):
        if i:
            toks.append(",")
        kind = draw(st.sampled_from(["atom", "not", "cmp"]))
        if kind == "atom":
            toks += draw(_f_atom(keywords))
        elif kind == "not":
            toks += ["not", *draw(_f_atom(keywords))]
        else:
            toks += [draw(_f_term(keywords, left_of_cmp=True)), draw(st.sampled_from(OPS)),
                     draw(_f_term(keywords))]
    return toks


@st.composite
def _f_docs(draw: st.DrawFn, min_size: int = 0) -> list[_Tok]:
    return [_Tok(d, boundary=True, line=True)
            for d in draw(st.lists(st.sampled_from(DOCS), min_size=min_size, max_size=2))]


@st.composite
def _f_clause(draw: st.DrawFn, keywords: bool, fact_only: bool = False) -> list[_Tok]:
    toks: list[str] = []
    if draw(st.integers(0, 2)) == 2:
        toks += [draw(st.sampled_from(LABELS)), ":"]
    toks += draw(_f_atom(keywords))
    if not fact_only and draw(st.booleans()):
        toks += [":-", *draw(_f_body(keywords, max_size=6))]
    toks.append(".")
    return [_Tok(t) for t in toks]


@st.composite
def _f_statement(draw: st.DrawFn, keywords: bool) -> list[_Tok]:
    kind = draw(st.sampled_from(["clause", "decl", "import", "test"]))
    docs = draw(_f_docs())
    if kind == "clause":
        body = draw(_f_clause(keywords))
    elif kind == "import":
        body = [_Tok(t) for t in ("import", quote(draw(st.sampled_from(F_STRINGS))), ".")]
    elif kind == "decl":
        # `@materialize` and friends (an unknown one parses too: `unknown-annotation` later)
        toks = [f"@{a}" for a in draw(st.lists(st.sampled_from(F_ANNOTATIONS), max_size=2))]
        toks += ["rel", draw(st.sampled_from(REL_NAMES)), "("]
        for i in range(draw(st.integers(0, 3))):
            if i:
                toks.append(",")
            toks.append(draw(st.sampled_from(("user", "obj", "n", "not", "x1"))))
            typ = draw(st.sampled_from((None, "string", "int", "any", "weird")))
            if typ:
                toks += [":", typ]
        body = [_Tok(t) for t in [*toks, ")", "."]]
    else:
        body = [_Tok("test"), _Tok(quote(draw(st.sampled_from(F_STRINGS)))),
                _Tok("{", boundary=True)]
        for _ in range(draw(st.integers(0, 3))):
            item = draw(st.sampled_from(["fact", "expect", "expect not"]))
            if item == "fact":
                body += [*draw(_f_docs()), *draw(_f_clause(keywords, fact_only=True))]
            else:
                body += [_Tok(item), *[_Tok(t) for t in draw(_f_body(keywords))], _Tok(".")]
            body[-1].boundary = True
        if draw(st.integers(0, 5)) == 5:  # doc lines documenting nothing
            body += draw(_f_docs(min_size=1))
        body.append(_Tok("}"))
    if docs:
        docs[-1].boundary = False  # after the last doc line comes the statement itself
    body[-1].boundary = True
    return [*docs, *body]


_SPACE = st.sampled_from([" ", " ", " ", "\n", "\t", "  \n    ", "\n\n\n", "\r\n"])


@st.composite
def source_files(
    draw: st.DrawFn, comments: bool = True, doc_like: bool = True, keywords: bool = True,
    expect_newline: bool = True,
) -> str:
    """A syntactically valid `.gl` file with random layout.

    ``comments``: ``//`` comments between any two tokens; ``doc_like``: ``///`` comments inside
    statements (where they cannot be doc comments); ``keywords``: keywords written bare as
    constants where they lex as identifiers (``p(not)``); ``expect_newline``: line breaks (and
    comments) between ``expect`` and a body that starts with ``not``.
    """
    toks: list[_Tok] = [_Tok("", boundary=True)]  # start of file
    for _ in range(draw(st.integers(0, 5))):
        toks += draw(_f_statement(keywords))
    if draw(st.integers(0, 5)) == 5:  # doc lines documenting nothing at the end of the file
        toks += draw(_f_docs(min_size=1))
    out: list[str] = []
    for i, tok in enumerate(toks):
        out.append(tok.text)
        if i == len(toks) - 1:
            break
        gap = draw(_SPACE)
        if not expect_newline and tok.text == "expect":
            gap = " "  # `expect not p.`: one token, `expect not`
        elif comments and draw(st.integers(0, 4)) == 4:
            choices = COMMENTS + (DOC_LIKE if doc_like and not tok.boundary else ())
            gap = draw(st.sampled_from([" ", ""])) + draw(st.sampled_from(choices)) + "\n"
        if tok.line and "\n" not in gap:
            gap = "\n"
        out.append(gap)
    if comments and draw(st.integers(0, 3)) == 3:
        out.append("\n" + draw(st.sampled_from(COMMENTS)))
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# junk

ALPHABET = "()[]{},.:-!=<>\"_\n /\\abcnotreXYZ019"
junk = st.text(alphabet=st.sampled_from(list(ALPHABET)) | st.characters(), max_size=80)


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[str]) -> str:
    """A valid text with a few characters inserted, deleted or replaced, or cut short."""
    text = draw(base)
    if draw(st.integers(0, 3)) == 0:
        return text[: draw(st.integers(0, len(text)))]
    chars = list(text)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        pos = draw(st.integers(0, len(chars)))
        ch = draw(st.sampled_from(list(ALPHABET)) | st.characters())
        if op == "insert":
            chars.insert(pos, ch)
        elif chars:
            pos = min(pos, len(chars) - 1)
            if op == "delete":
                del chars[pos]
            else:
                chars[pos] = ch
    return "".join(chars)


# ---------------------------------------------------------------------------------------------
# fuzzing: valid inputs first, then grammar-aware and byte-level mutations of them

#: string constants that need escapes or are otherwise awkward (no `\r`: a file read with
#: universal newlines cannot keep one in a string)
EXOTIC_STRINGS: tuple[str, ...] = (
    'say "hi"', "back\\slash", "two\nlines", "tab\there", "", " ", "é", "日本語", "🙂",
    "\u2028", "\x0c", "\x00", "// not a comment", "/// nor a doc", "not", "rel", "X", "_",
    "1", "-1", "a.b.c", "m1/role/r",
)
EXOTIC_INTS: tuple[int, ...] = (0, -1, 2**63 - 1, -(2**63), 2**64, 10**40)
MISSING_IMPORTS: tuple[str, ...] = ("missing.gl", "no/such/dir/x.gl", "", "../nope.gl", "é.gl")


@st.composite
def policy_files(draw: st.DrawFn) -> str:
    """A program that mostly compiles: a generated program (tests/strategies.py `programs`)
    with `@` annotations on its declarations, doc comments, `//` comments between statements,
    facts with awkward strings and integers, test blocks and, now and then, an import of a file
    that does not exist."""
    prog = draw(programs(max_rels=4, max_rules=5))
    out: list[str] = []
    if draw(st.integers(0, 4)) == 4:
        out.append(f"import {quote(draw(st.sampled_from(MISSING_IMPORTS)))}.")
    for line in prog.text().splitlines():
        if draw(st.integers(0, 4)) == 4:
            out.append(draw(st.sampled_from(COMMENTS)))
        if line.startswith(("rel ", "@writable rel ")) and draw(st.integers(0, 2)) == 2:
            notes = draw(st.lists(st.sampled_from(F_ANNOTATIONS[:3]), max_size=2, unique=True))
            line = " ".join([*(f"@{n}" for n in notes), line])
        if not line.startswith(("rel ", "@writable rel ")) and draw(st.integers(0, 3)) == 3:
            out.append(draw(st.sampled_from(DOCS[1:])))  # documents the statement below
        out.append(line)
    for i in range(draw(st.integers(0, 3))):
        v: Value = draw(st.sampled_from(EXOTIC_STRINGS) | st.sampled_from(EXOTIC_INTS))
        out.append(f"odd_value({i}, {show(v)}).")
    if draw(st.integers(0, 3)) == 3:
        # a long rule: a run of negations and comparisons (each one more nested block in the
        # generated code); positive atoms stay few (planning is cubic in them)
        n = draw(st.sampled_from([5, 60, 150, 400]))
        lits = [f"not lr_no(X, {i})" if i % 2 else f"X != {i + 3}" for i in range(n)]
        out += ["lr(1). lr(2). lr(5). lr_no(2, 1).",
                f"lr_out(X) :- lr(X), lr(Y), Y < 5, {', '.join(lits)}."]
    if draw(st.booleans()):
        out += [b.text() for b in draw(test_blocks(prog))]
    return "\n".join(out) + "\n"


#: the base relations of examples/demo/policy.gl and their arities
DEMO_SCHEMA: dict[str, int] = {"contains": 2, "member": 2, "role_of": 2, "privilege": 4,
                               "owner": 2, "needs": 2}
_DEMO_VALUES: tuple[Value, ...] = ("m1", "m1.c1", "m1.c1.s1.t1", "alice", "bob", "analysts",
                                   "analyst", "select_table", "load_table", "allow", "deny",
                                   *EXOTIC_STRINGS[:8])


@st.composite
def fact_files(draw: st.DrawFn) -> str:
    """A fact file for examples/demo/policy.gl (what `grantlog check --facts F` reads): facts,
    comments, now and then a value of the wrong type or a relation the policy lacks."""
    out = [draw(st.sampled_from(COMMENTS))]
    for _ in range(draw(st.integers(0, 12))):
        rel = draw(st.sampled_from(sorted(DEMO_SCHEMA)))
        vals: list[Value] = [draw(st.sampled_from(_DEMO_VALUES)) for _ in range(DEMO_SCHEMA[rel])]
        if vals and draw(st.integers(0, 9)) == 9:  # an integer in a string column
            vals[draw(st.integers(0, len(vals) - 1))] = draw(st.sampled_from(EXOTIC_INTS))
        if draw(st.integers(0, 19)) == 19:
            rel = draw(st.sampled_from(["unknown_rel", "allowed", "ancestor"]))
        out.append(show_row(rel, tuple(vals)) + ".")
    return "\n".join(out) + "\n"


#: the lexical tokens of `.gl` text (strings and comments whole), whitespace included
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|[A-Za-z_][A-Za-z0-9_]*|-?[0-9]+'
                    r"|:-|<=|>=|!=|\s+|.", re.S)
#: tokens a mutation may insert: every keyword and punctuation mark of the grammar, and then some
VOCABULARY: tuple[str, ...] = (
    "rel", "import", "test", "expect", "expect not", "not", "@materialize", "@demand", "@",
    "@writable",
    "(", ")", "{", "}", ",", ".", ":", ":-", "=", "!=", "<", "<=", ">", ">=", "X", "_", "p",
    "\"s\"", '"', "\\", "0", "-", "//", "///", "\n", " ", "é", "\x00", "\ufeff",
)


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


@st.composite
def token_mutated(draw: st.DrawFn, base: st.SearchStrategy[str]) -> str:
    """``base`` text with one to four token-level mutations."""
    toks = tokens(draw(base))
    # one mutation most often: a text with one defect reaches further than one with several
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3, 4]))):
        op = draw(st.sampled_from([
            "delete", "duplicate", "swap", "replace", "insert", "unicode", "truncate",
            "nest", "long_ident", "long_int", "repeat"]))
        pos = draw(st.integers(0, len(toks)))
        at = min(pos, len(toks) - 1)
        if op == "truncate":
            toks = toks[:pos]
        elif op == "insert":
            toks.insert(pos, draw(st.sampled_from(VOCABULARY)))
        elif op == "unicode":
            toks.insert(pos, draw(st.text(st.characters(), min_size=1, max_size=4)))
        elif op == "nest":
            # deep nesting: brackets, blocks, negations, comments opened many times over
            opener = draw(st.sampled_from(["(", "{", 'test "t" {', "not ", "p(", "[", "///\n"]))
            toks.insert(pos, opener * draw(st.integers(50, 3000)))
        elif op == "long_int":  # an integer (the first one, if any) made very long
            at = next((i for i, t in enumerate(toks) if t.lstrip("-").isdigit()), pos)
            toks[at:at + 1] = ["9" * draw(st.sampled_from([4300, 4301, 6000]))]
        elif not toks:
            continue
        elif op == "delete":
            del toks[at]
        elif op == "duplicate":
            toks.insert(at, toks[at])
        elif op == "swap":
            other = draw(st.integers(0, len(toks) - 1))
            toks[at], toks[other] = toks[other], toks[at]
        elif op == "replace":
            toks[at] = draw(st.sampled_from(VOCABULARY))
        elif op == "long_ident":
            # an identifier or variable (or whatever token is there) made very long
            toks[at] = toks[at] * draw(st.integers(100, 2000)) if toks[at].strip() else "a" * 5000
        elif op == "repeat":
            # a token run repeated: long bodies, long argument lists, many statements
            end = min(len(toks), at + draw(st.integers(1, 12)))
            toks[at:end] = toks[at:end] * draw(st.integers(2, 40))
    return "".join(toks)


@st.composite
def byte_mutated(draw: st.DrawFn, base: st.SearchStrategy[str]) -> bytes:
    """``base`` as UTF-8 with a few bytes flipped, inserted or cut: often not UTF-8 any more."""
    data = bytearray(draw(base).encode("utf-8"))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "truncate", "bom", "crlf"]))
        pos = draw(st.integers(0, len(data)))
        if op == "flip" and data:
            at = min(pos, len(data) - 1)
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[pos:pos] = draw(st.sampled_from(
                [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf", b"\r", b"\x80\x80"]))
        elif op == "truncate":
            del data[pos:]
        elif op == "bom":
            data[0:0] = b"\xef\xbb\xbf"
        elif op == "crlf":
            data = bytearray(bytes(data).replace(b"\n", b"\r\n"))
    return bytes(data)


# ---- Gravitino REST JSON (grantlog/interop/gravitino.py; shapes as in
# ---- tests/test_gravitino_import.py)

Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]

_G_NAMES = ("alice", "bob", "eng", "analyst", "r", "Bob Smith", "not", "é", "x.y", "a/b")
_G_OBJECTS: tuple[tuple[str, str], ...] = (
    ("m1", "METALAKE"), ("c1", "CATALOG"), ("c1.s1", "SCHEMA"), ("c1.s1.t1", "TABLE"),
    ("c1.s1.k", "TOPIC"), ("c1.s1.f", "FILESET"), ("c1.s1.m", "MODEL"), ("pii", "TAG"),
    ("analyst", "ROLE"), ("retention", "POLICY"), ("compact", "JOB_TEMPLATE"), ("j-1", "JOB"),
)
_G_PRIVILEGES = ("USE_CATALOG", "USE_SCHEMA", "SELECT_TABLE", "modify_table", "CREATE_TABLE",
                 "CONSUME_TOPIC", "APPLY_TAG", "RUN_JOB")


def _g_name() -> st.SearchStrategy[str]:
    return st.sampled_from(_G_NAMES)


@st.composite
def _g_user(draw: st.DrawFn) -> dict[str, Json]:
    item: dict[str, Json] = {"name": draw(_g_name())}
    if draw(st.booleans()):
        item["roles"] = draw(st.lists(_g_name(), max_size=3))
    if draw(st.booleans()):
        item["audit"] = {"creator": "x", "createTime": "2025-01-01T00:00:00Z"}
    return item


@st.composite
def _g_group(draw: st.DrawFn) -> dict[str, Json]:
    item = draw(_g_user())
    if draw(st.booleans()):
        item["users"] = draw(st.lists(_g_name(), max_size=3))
    return item


@st.composite
def _g_object(draw: st.DrawFn) -> dict[str, Json]:
    full, kind = draw(st.sampled_from(_G_OBJECTS))
    return {"fullName": full, "type": kind if draw(st.booleans()) else kind.lower()}


@st.composite
def _g_role(draw: st.DrawFn) -> dict[str, Json]:
    objects: list[Json] = []
    for _ in range(draw(st.integers(0, 3))):
        obj = draw(_g_object())
        obj["privileges"] = [
            {"name": draw(st.sampled_from(_G_PRIVILEGES)),
             "condition": draw(st.sampled_from(["ALLOW", "DENY", "allow"]))}
            for _ in range(draw(st.integers(0, 3)))]
        objects.append(obj)
    return {"name": draw(_g_name()), "properties": {}, "securableObjects": objects}


@st.composite
def _g_owner(draw: st.DrawFn) -> dict[str, Json]:
    return {"metadataObject": draw(_g_object()),
            "owner": {"name": draw(_g_name()), "type": draw(st.sampled_from(["USER", "GROUP"]))}}


_G_ITEMS = {"users": _g_user, "groups": _g_group, "roles": _g_role, "owners": _g_owner}


@st.composite
def gravitino_dirs(draw: st.DrawFn) -> dict[str, Json]:
    """A valid Gravitino export: relative path -> JSON document, in every layout the importer
    reads (``users.json`` or ``users/x.json``; a bare item, an array, a GET-one or GET-list
    envelope)."""
    out: dict[str, Json] = {}
    for kind in draw(st.lists(st.sampled_from(sorted(_G_ITEMS)), min_size=1, max_size=4,
                              unique=True)):
        items: list[Json] = draw(st.lists(_G_ITEMS[kind](), min_size=1, max_size=3))
        shape = draw(st.sampled_from(["array", "list", "one", "bare"]))
        if shape == "array" or (kind == "owners" and shape != "list"):
            doc: Json = items
        elif shape == "list":
            doc = {"code": 0, kind: items}
        elif shape == "one":
            doc = {"code": 0, kind[:-1]: items[0]}
        else:
            doc = items[0]
        path = f"{kind}.json" if draw(st.booleans()) else f"{kind}/{draw(_g_name())}.json"
        out[path] = doc
    return out


#: values that are wrong somewhere: wrong types, nulls, huge and special numbers, garbage
_JSON_ODD: tuple[Json, ...] = (
    None, True, False, 0, -1, 1.5, 10**30, 2**63, "", " ", "\x00", "\ud800", "a\rb", "x" * 5000,
    [], {}, [None], {"": None}, {"name": None}, [[[[[]]]]], {"a": {"b": {"c": {}}}},
    float("nan"), float("inf"),
)


def _json_paths(doc: Json, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _json_paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _json_paths(v, (*prefix, i))
    return out


def _replace_at(doc: Json, path: tuple[str | int, ...], fn: Callable[[Json], Json]) -> Json:
    """``doc`` with the value at ``path`` replaced by ``fn(value)`` (``fn`` returns the marker
    ``_DELETE`` to remove it)."""
    if not path:
        return fn(doc)
    head, rest = path[0], path[1:]
    new: Any
    if isinstance(doc, dict) and isinstance(head, str):
        new = dict(doc)
    elif isinstance(doc, list) and isinstance(head, int):
        new = list(doc)
    else:
        return doc
    value = _replace_at(doc[head], rest, fn)
    if value is _DELETE:
        del new[head]
    else:
        new[head] = value
    return new


_DELETE: Json = {"__delete__": None}


@st.composite
def json_mutated(draw: st.DrawFn, doc: Json) -> Json:
    """``doc`` with one to three structural mutations: a value replaced by one of the wrong
    type (or null, or a huge number, or garbage), a key deleted, a key renamed, a value
    wrapped in a list, an item duplicated, deep nesting."""
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_json_paths(doc)))
        op = draw(st.sampled_from(["odd", "delete", "rename", "wrap", "dup", "deep", "garbage"]))
        if op == "odd":
            odd = draw(st.sampled_from(_JSON_ODD))
            doc = _replace_at(doc, path, lambda _v, odd=odd: odd)
        elif op == "delete" and path:
            doc = _replace_at(doc, path, lambda _v: _DELETE)
        elif op == "rename" and path and isinstance(path[-1], str):
            parent, key = path[:-1], path[-1]
            doc = _replace_at(doc, parent, lambda v, key=key: {
                (k + "x" if k == key else k): x for k, x in v.items()})
        elif op == "wrap":
            doc = _replace_at(doc, path, lambda v: [v])
        elif op == "dup":
            doc = _replace_at(doc, path, lambda v: [v, v] if not isinstance(v, list) else v + v)
        elif op == "deep":
            depth = draw(st.integers(50, 400))  # deeper: json_bytes's `deep`
            doc = _replace_at(doc, path, lambda v, depth=depth: _nest(v, depth))
        else:
            garbage = draw(st.recursive(
                st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                    st.text(max_size=5), inner, max_size=3),
                max_leaves=8))
            doc = _replace_at(doc, path, lambda _v, g=garbage: g)
    return doc


def _nest(v: Json, depth: int) -> Json:
    for _ in range(depth):
        v = [v]
    return v


@st.composite
def json_bytes(draw: st.DrawFn, doc: Json) -> bytes:
    """``doc`` as the bytes of a file: pretty or compact JSON, sometimes with text-level
    damage (cut short, bytes flipped, not UTF-8, a BOM, NaN, a 5000-digit number)."""
    text = json.dumps(doc, indent=draw(st.sampled_from([None, 2])))
    data = text.encode("utf-8", "surrogatepass")
    op = draw(st.sampled_from(["none", "none", "bytes", "truncate", "bignum", "deep"]))
    if op == "bytes":
        return draw(byte_mutated(st.just(data.decode("utf-8", "replace"))))
    if op == "truncate":
        return data[: draw(st.integers(0, len(data)))]
    if op == "bignum":  # Python reads integers of at most 4300 digits
        return b"[" + b"9" * draw(st.sampled_from([4300, 4301, 10000])) + b", " + data + b"]"
    if op == "deep":
        n = draw(st.integers(1000, 100_000))
        return b"[" * n + data + b"]" * n
    return data
