"""The command line's parser conventions: options anywhere, usage lines that name the
positionals, a walk over every command, and shell completion.

Every parser of ``grantlog`` (the main one and each subcommand's, nested ones too) is a
:class:`Parser`. A command without subcommands parses its arguments intermixed
(``parse_intermixed_args``): an option may stand between positionals, as in
``grantlog check RULES --json FACTS alice read t1``; argparse refuses intermixed parsing for
parsers with subcommands, so those parse as usual and hand the rest to the chosen command.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from typing import Any


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose leaf commands accept options anywhere among their
    positionals and whose default usage line reads ``PROG [options] POSITIONALS``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.command_action: argparse.Action | None = None
        self._intermixing = False
        self._has_commands = False
        self._usage: str | None = None
        super().__init__(*args, **kwargs)

    @property
    def usage(self) -> str | None:  # the default: options first, then the positionals named
        if self._usage is not None or self._has_commands:
            return self._usage
        named = " ".join(positional_usage(a) for a in positionals(self))
        return f"%(prog)s [options] {named}".rstrip()

    @usage.setter
    def usage(self, value: str | None) -> None:
        self._usage = value

    def add_subparsers(self, **kwargs: Any) -> Any:
        self._has_commands = True  # argparse's usage: the commands' prog is "grantlog store"
        action = super().add_subparsers(**kwargs)
        self.command_action = action
        return action

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None,
                         ) -> tuple[argparse.Namespace, list[str]]:
        if self.command_action is not None or self._intermixing:
            return super().parse_known_args(args, namespace)
        # parse_known_intermixed_args calls this method twice, the first time with the
        # positionals hidden: the usage line is fixed before
        self._intermixing, usage, self._usage = True, self._usage, self.usage
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing, self._usage = False, usage


def actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's arguments, options and positionals, in the order they were added."""
    return list(parser._actions)


def positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in actions(parser) if not a.option_strings]


def positional_usage(action: argparse.Action) -> str:
    """How a positional reads in a usage line: ``SUBJECT``, ``[FILE ...]``, ``LOG [LOG ...]``."""
    m = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    if action.nargs == "?":
        return f"[{m}]"
    if action.nargs == "*":
        return f"[{m} ...]"
    if action.nargs == "+":
        return f"{m} [{m} ...]"
    return m


def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser's subcommands by name (none for a leaf command)."""
    action = getattr(parser, "command_action", None)
    return dict(action.choices) if action is not None and action.choices else {}


def command_help(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    """The one-line help of each of the parser's subcommands, as ``grantlog -h`` lists them."""
    action = getattr(parser, "command_action", None)
    listed = getattr(action, "_choices_actions", [])
    return {str(c.dest): c.help for c in listed}


def walk(parser: argparse.ArgumentParser,
         path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser of the command line, the main one first: (command path, parser)."""
    yield path, parser
    for name, sub in commands(parser).items():
        yield from walk(sub, (*path, name))


def complete_models(**_: Any) -> list[str]:
    """Shell completion of ``--model``: the shipped models' names."""
    from grantlog.rules import models

    return [m.name for m in models()]


def autocomplete(parser: argparse.ArgumentParser) -> None:
    """Answer a shell's completion request (argcomplete's protocol: ``_ARGCOMPLETE`` in the
    environment) and exit; return at once otherwise."""
    import os

    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    argcomplete.autocomplete(parser)


def completion_script(shell: str, prog: str = "grantlog") -> str:
    """The script that makes ``shell`` (bash, zsh or fish) complete ``prog``."""
    from argcomplete.shell_integration import shellcode

    return str(shellcode([prog], shell=shell))
