"""The service's policy: compiled from the rule files or read from the store, replaced by
``PUT /v1/policy``, followed by every worker.

With a store, the policy lives in it (``grantlog_policies``, grantlog/store/base.py): ``grantlog
serve RULES --store URL`` installs RULES when it starts (unless the store's newest policy is
already the same text), every worker compiles the store's newest policy, and a worker polls the
store every :data:`POLL` seconds and switches when another worker installed a new one. A worker
that uvicorn restarts reads the store's newest policy too, so all workers serve one policy.
Without a store there is one worker and the policy lives in it.

A replacement is compiled and checked first and builds a new reasoner beside the serving one;
only then is it installed and swapped in. On any error the old policy keeps serving.
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Callable
from typing import Any

from grantlog.engine.answer import validity
from grantlog.engine.compile.compiler import compile_program
from grantlog.engine.core import ir
from grantlog.engine.core.facts import Facts
from grantlog.grammar.diagnostics import GrantlogError, Span, error
from grantlog.store import StoredPolicy, open_store, schema

#: seconds between a worker's looks at the store's newest policy
POLL = 0.5


def _here(where: str = "<request>") -> Span:
    return Span(where, 0, 0, 0, 0)


def _bad(message: str, code: str = "bad-request") -> GrantlogError:
    return GrantlogError([error(code, message, _here())])


def from_upload(data: dict[str, Any], strict: bool) -> ir.Program:
    """Compile ``{"files": {NAME: TEXT, ...}, "roots"?: [NAME, ...]}``: the files are read from
    the request only (an import names another of them, or a shipped model); the roots are the
    files to compile (default: every file)."""
    files = data.get("files")
    if not isinstance(files, dict) or not files:
        raise _bad("`files` must map file names to rule texts (at least one file)")
    for name, text in files.items():
        norm = posixpath.normpath(name)
        if (not name.endswith(".gl") or name.startswith("/") or "\\" in name
                or norm.startswith("..") or norm != name):
            raise _bad(f"`{name}` is not a file name for a policy: use relative names ending "
                       "in .gl, without `..` (e.g. `gravitino.gl` or `org/prelude.gl`)")
        if not isinstance(text, str):
            raise _bad(f"`files.{name}` must be the file's text")
    roots = data.get("roots", sorted(files))
    if not isinstance(roots, list) or not roots or not all(isinstance(r, str) for r in roots):
        raise _bad("`roots` must list the files to compile")
    for r in roots:
        if r not in files:
            raise _bad(f"the root `{r}` is not among `files`")
    return compile_program(None, roots, files=files, disk=False, strict=strict)


def from_store(stored: StoredPolicy, strict: bool) -> ir.Program:
    """Compile a policy as a store keeps it (the texts of every file it read)."""
    return compile_program(None, stored.roots, files=stored.sources, disk=False, strict=strict)


def initial(rules: list[str], store: str | None, install: bool, strict: bool,
            create: bool = False) -> tuple[ir.Program, int]:
    """The policy a worker starts with, and its serial in the store (0: none). ``create``:
    a store that does not exist is created for the rules (else ``store-not-found``)."""
    if store is None:
        return compile_program(None, rules, strict=strict), 0
    if install and rules:
        program = compile_program(None, rules, strict=strict)
        # tables for it, or store-schema-mismatch (store-not-found unless `create`)
        st = open_store(store, program, create=create)
        try:
            stored = st.policy()
            if stored is None or stored.hash != program.digest:
                stored = st.put_policy(program)
            return program, stored.serial
        finally:
            st.close()
    st = open_store(store)
    try:
        st.attach()
        stored = st.policy()
    finally:
        st.close()
    if stored is None:
        raise GrantlogError([error("no-policy", "the store holds no policy", _here(store),
                                   "give the rule files: `grantlog serve RULES... --store URL` "
                                   "installs them")])
    return from_store(stored, strict), stored.serial


def carried_facts(old: Any, program: ir.Program) -> dict[str, set[ir.Row]]:
    """Without a store: the facts written at run time into ``old`` (a reasoner), for a
    reasoner of the new ``program`` — refused where the new rules changed a relation's columns
    or dropped a relation that has such facts (the same rules as a store's schema check)."""
    own = {rel: set(rows) for rel, rows in Facts.of(old.program.facts).by_relation().items()}
    facts = {rel: rows - own.get(rel, set())  # intervals kept (engine/answer/validity.py)
             for rel, rows in validity.journaled_facts(old).items()}
    facts = {rel: rows for rel, rows in facts.items() if rows}
    recorded = {rel: (schema.table(r).spec(), len(facts.get(rel, ())))
                for rel, r in old.program.relations.items()}
    _, _, diags = schema.compare(program, recorded, "<memory>")
    if diags:
        raise GrantlogError([d if d.code != "store-schema-mismatch" else
                             error("policy-schema-mismatch", d.message, d.span,
                                   "retract the facts first, or keep the relation as declared")
                             for d in diags])
    return facts


class Watcher(threading.Thread):
    """Polls the store's newest policy serial; calls ``switch(policy)`` when it moved."""

    def __init__(self, store: str, current: Callable[[], int],
                 switch: Callable[[StoredPolicy], None],
                 errors: Callable[[Exception], None]) -> None:
        super().__init__(name="grantlog-policy", daemon=True)
        self.store = open_store(store)
        self.current, self.switch, self.errors = current, switch, errors
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            while not self.stop.wait(POLL):
                try:
                    if self.store.policy_serial() > self.current():
                        stored = self.store.policy()
                        if stored is not None:
                            self.switch(stored)
                except Exception as exc:  # a store outage or a bad policy: keep serving
                    self.errors(exc)
        finally:
            self.store.close()

