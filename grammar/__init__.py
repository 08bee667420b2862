"""The `.gl` rule language: Lark grammar, AST with source spans, parser, formatter."""

from . import ast
from .diagnostics import Diagnostic, GrantlogError, Span
from .formatter import format_module, format_text
from .parser import parse, parse_goal

__all__ = [
    "Diagnostic",
    "GrantlogError",
    "Span",
    "ast",
    "format_module",
    "format_text",
    "parse",
    "parse_goal",
]
