"""Facts for ``rules/gravitino.gl`` from Apache Gravitino REST API JSON.

``load_gravitino_dir(path, metalake)`` reads the JSON files of one metalake and returns the
facts as ``{relation: {row, ...}}``; ``to_gl(facts)`` renders them as a ``.gl`` fact file.

Directory layout. Every ``*.json`` file under ``path`` is read; what it holds is told by the
first folder under ``path`` (``users/alice.json``) or, for a file directly in ``path``, by its
name (``users.json``): ``users``, ``groups``, ``roles`` or ``owners``. Any other ``.json`` file
is an error (so that nothing is silently left out).

File contents. A file holds one item, a JSON array of items, or a Gravitino REST response
envelope around them: ``{"code": 0, "user": {...}}`` (GET one) or ``{"code": 0, "users":
[...]}`` (GET list with ``details=true``); likewise ``group``/``groups``, ``role``/``roles``
and ``owners``. A names-only list (``{"names": [...]}``) is an error: it carries no roles.
The items, as Gravitino's DTOs shape them (unknown keys such as ``audit`` are ignored):

* user: ``{"name": "alice", "roles": ["analyst"]}`` (``roles`` optional);
* group: ``{"name": "eng", "roles": ["reader"], "users": ["alice"]}`` (``roles`` optional).
  Gravitino takes group membership from the authenticator and does not return it; the optional
  ``users`` list (the shape of older GroupDTOs) records it as ``member`` facts;
* role: ``{"name": "analyst", "securableObjects": [{"fullName": "c1.s1.t1", "type": "TABLE",
  "privileges": [{"name": "SELECT_TABLE", "condition": "ALLOW"}]}]}``;
* owner: ``{"metadataObject": {"fullName": "c1.s1.t1", "type": "TABLE"}, "owner": {"name":
  "alice", "type": "USER"}}`` — the body of GET ``/owners/{type}/{fullName}`` (``owner``)
  together with the object it was asked for (``metadataObject``, which the response omits).

Object ids (the conventions of ``rules/gravitino.gl``). Full names are relative to the
metalake. A METALAKE's full name is the metalake's name and its id is that name; a CATALOG
(``c1``), SCHEMA (``c1.s1``), TABLE, TOPIC, FILESET or MODEL (``c1.s1.x``) gets the id
``<metalake>.<fullName>`` (``m1.c1.s1.x``), and the catalog and schema above it are added as
``entity``/``contains`` facts too; a ROLE, TAG, POLICY, JOB_TEMPLATE or JOB named ``x`` gets
``<metalake>/<kind>/x`` (``m1/role/analyst``, ``m1/job_template/compact``) under the metalake.
Users and groups are their names. Privilege names and conditions are lowercased
(``select_table``, ``allow``).

Facts produced: ``entity``, ``contains``, ``metalake_user``, ``metalake_group``, ``member``,
``role_of``, ``privilege``, ``owner`` (USER owners) and ``group_owner`` (GROUP owners, which
the model records but gives no power: Gravitino does not support group ownership).

Malformed input — a file that is not UTF-8 JSON, a missing key, a value of the wrong JSON type,
an unknown privilege name, condition, object type or owner type, a full name with the wrong
number of parts or an object of another metalake — raises :class:`GrantlogError` with one
``bad-import`` diagnostic per problem, located in the offending file (at the line and column
of a JSON syntax error, else at line 0).

>>> import json, tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "users.json").write_text(json.dumps([{"name": "alice", "roles": ["analyst"]}]))
>>> facts = load_gravitino_dir(d, "m1")
>>> sorted(facts["role_of"])
[('alice', 'm1/role/analyst')]
>>> print(to_gl({"metalake_user": {("alice", "m1")}}), end="")
// Facts for rules/gravitino.gl, imported from Gravitino REST API JSON.
<BLANKLINE>
metalake_user(alice, m1).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from grantlog.engine.core.ir import show_atom
from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error

Facts = dict[str, set[tuple[str, ...]]]

CODE = "bad-import"
KINDS = ("users", "groups", "roles", "owners")

#: Every privilege of the seed's privilege tables (REST names, uppercase).
PRIVILEGES = frozenset({
    "MANAGE_USERS", "MANAGE_GROUPS", "CREATE_ROLE", "MANAGE_GRANTS",
    "CREATE_CATALOG", "USE_CATALOG", "CREATE_SCHEMA", "USE_SCHEMA",
    "CREATE_TABLE", "MODIFY_TABLE", "SELECT_TABLE",
    "CREATE_TOPIC", "PRODUCE_TOPIC", "CONSUME_TOPIC",
    "CREATE_FILESET", "WRITE_FILESET", "READ_FILESET",
    "REGISTER_MODEL", "LINK_MODEL_VERSION", "USE_MODEL", "CREATE_MODEL", "CREATE_MODEL_VERSION",
    "CREATE_TAG", "APPLY_TAG", "CREATE_POLICY", "APPLY_POLICY",
    "REGISTER_JOB_TEMPLATE", "USE_JOB_TEMPLATE", "RUN_JOB",
})
CONDITIONS = frozenset({"ALLOW", "DENY"})
OWNER_TYPES = frozenset({"USER", "GROUP"})

#: Object types of the catalog tree: the entity type and how many dot-separated parts the full
#: name has (below the metalake).
TREE_TYPES: dict[str, tuple[str, int]] = {
    "CATALOG": ("catalog", 1),
    "SCHEMA": ("schema", 2),
    "TABLE": ("table", 3),
    "TOPIC": ("topic", 3),
    "FILESET": ("fileset", 3),
    "MODEL": ("model", 3),
}
#: Object types that sit directly under the metalake, named by a single name.
LAKE_TYPES: dict[str, str] = {
    "ROLE": "role",
    "TAG": "tag",
    "POLICY": "policy",
    "JOB_TEMPLATE": "job_template",
    "JOB": "job",
}
OBJECT_TYPES = ("METALAKE", *TREE_TYPES, *LAKE_TYPES)

#: The order relations are written in by :func:`to_gl`; others follow, sorted.
ORDER = ("entity", "contains", "metalake_user", "metalake_group", "member", "role_of",
         "privilege", "owner", "group_owner")


class _Problem(Exception):
    """One malformed item: abandons it (the rest of the file is still read)."""

    def __init__(self, message: str, help: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.help = help


def _at(file: Path, line: int = 0, col: int = 0) -> Span:
    return Span(str(file), line, col, line, col + 1 if line > 0 else col)


def _where(what: str) -> str:
    return f" in {what}" if what else ""


def _get(obj: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in obj:
        raise _Problem(f"missing key `{key}`{_where(what)}")
    return obj[key]


def _string(obj: Mapping[str, Any], key: str, what: str) -> str:
    value = _get(obj, key, what)
    if not isinstance(value, str) or not value:
        raise _Problem(f"`{key}`{_where(what)} must be a non-empty string, not {_show(value)}")
    return _writable(value, key, what)


def _writable(value: str, key: str, what: str) -> str:
    """``value``, if a `.gl` file can hold it: no carriage return (a file is read with universal
    newlines and the language has no escape for it) and no lone surrogate (not UTF-8)."""
    if "\r" in value or any("\ud800" <= c <= "\udfff" for c in value):
        raise _Problem(f"`{key}`{_where(what)} holds a character a rule file cannot: "
                       f"{_show(value)}", "carriage returns and unpaired surrogates cannot be "
                       "imported")
    return value


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _Problem(f"{what} must be a JSON object, not {_show(value)}")
    return value


def _list(obj: Mapping[str, Any], key: str, what: str, required: bool = True) -> list[Any]:
    if key not in obj and not required:
        return []
    value = _get(obj, key, what)
    if not isinstance(value, list):
        raise _Problem(f"`{key}`{_where(what)} must be a JSON array, not {_show(value)}")
    return value


def _names(obj: Mapping[str, Any], key: str, what: str) -> list[str]:
    out = []
    for v in _list(obj, key, what, required=False):
        if not isinstance(v, str) or not v:
            raise _Problem(f"`{key}`{_where(what)} must hold non-empty strings, not {_show(v)}")
        out.append(_writable(v, key, what))
    return out


def _show(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (RecursionError, ValueError):  # nested too deeply to print
        text = "[...]" if isinstance(value, list) else "{...}"
    return f"`{text if len(text) <= 40 else text[:37] + '...'}`"


class _Loader:
    def __init__(self, root: Path, metalake: str) -> None:
        self.root = root
        self.metalake = metalake
        self.facts: Facts = {}
        self.diagnostics: list[Diagnostic] = []

    def add(self, rel: str, *row: str) -> None:
        self.facts.setdefault(rel, set()).add(row)

    def problem(self, file: Path, message: str, help: str | None = None,
                line: int = 0, col: int = 0) -> None:
        self.diagnostics.append(error(CODE, message, _at(file, line, col), help))

    # ---- files ------------------------------------------------------------------------------

    def run(self) -> Facts:
        self.add("entity", self.metalake, "metalake")
        if not self.root.is_dir():
            self.problem(self.root, f"`{self.root}` is not a directory",
                         "give the directory that holds users/, groups/, roles/ and owners/")
            return self.facts
        for file in sorted(self.root.rglob("*.json")):
            kind = self.kind_of(file)
            if kind is None:
                self.problem(file, f"cannot tell what `{file.relative_to(self.root)}` holds",
                             "put it under users/, groups/, roles/ or owners/, or name it "
                             "users.json, groups.json, roles.json or owners.json")
                continue
            data = self.read(file)
            if data is not None:
                self.load_file(file, kind, data)
        return self.facts

    def kind_of(self, file: Path) -> str | None:
        parts = file.relative_to(self.root).parts
        kind = parts[0] if len(parts) > 1 else file.stem
        return kind if kind in KINDS else None

    def read(self, file: Path) -> Any:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            self.problem(file, f"cannot read the file: {e}")
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            self.problem(file, f"invalid JSON: {e.msg.lower()}", line=e.lineno, col=e.colno)
        except ValueError:  # Python reads integers of at most 4300 digits
            self.problem(file, "invalid JSON: a number of more than 4300 digits")
        except RecursionError:
            self.problem(file, "invalid JSON: nested too deeply")
        return None

    def load_file(self, file: Path, kind: str, data: Any) -> None:
        try:
            items = self.items(kind, data)
        except _Problem as p:
            self.problem(file, p.message, p.help)
            return
        load = {"users": self.user, "groups": self.group, "roles": self.role,
                "owners": self.owner}[kind]
        for i, item in enumerate(items):
            try:
                load(_object(item, f"{kind[:-1]} {i + 1}"))
            except _Problem as p:
                self.problem(file, p.message, p.help)

    def items(self, kind: str, data: Any) -> list[Any]:
        singular = kind[:-1]
        if isinstance(data, list):
            return data
        if not isinstance(data, dict):
            raise _Problem(f"expected a JSON object or array of {kind}, not {_show(data)}")
        if kind != "owners" and isinstance(data.get(singular), dict):
            return [data[singular]]
        if kind in data:
            return _list(data, kind, "")
        if "names" in data and "name" not in data:
            raise _Problem(f"a list of {singular} names carries no roles or privileges",
                           f"list the {kind} with `?details=true`, or get each one")
        return [data]

    # ---- items ------------------------------------------------------------------------------

    def role_id(self, name: str) -> str:
        rid = f"{self.metalake}/role/{name}"
        self.add("entity", rid, "role")
        self.add("contains", self.metalake, rid)
        return rid

    def user(self, item: Mapping[str, Any]) -> None:
        name = _string(item, "name", "a user")
        what = f"user `{name}`"
        roles = _names(item, "roles", what)
        self.add("metalake_user", name, self.metalake)
        for r in roles:
            self.add("role_of", name, self.role_id(r))

    def group(self, item: Mapping[str, Any]) -> None:
        name = _string(item, "name", "a group")
        what = f"group `{name}`"
        roles = _names(item, "roles", what)
        users = _names(item, "users", what)
        self.add("metalake_group", name, self.metalake)
        for r in roles:
            self.add("role_of", name, self.role_id(r))
        for u in users:
            self.add("member", u, name)

    def role(self, item: Mapping[str, Any]) -> None:
        name = _string(item, "name", "a role")
        what = f"role `{name}`"
        objects = _list(item, "securableObjects", what)
        rows: list[tuple[str, str, str]] = []
        for i, raw in enumerate(objects):
            so = _object(raw, f"securable object {i + 1} of {what}")
            obj = self.object_id(so, f"a securable object of {what}")
            where = f"{what} on `{so['fullName']}`"
            for j, rawp in enumerate(_list(so, "privileges", where)):
                p = _object(rawp, f"privilege {j + 1} of {where}")
                pname = _string(p, "name", f"a privilege of {where}")
                cond = _string(p, "condition", f"privilege `{pname}` of {where}")
                if pname.upper() not in PRIVILEGES:
                    raise _Problem(f"unknown privilege `{pname}` in {where}",
                                   "known privileges: " + ", ".join(sorted(PRIVILEGES)))
                if cond.upper() not in CONDITIONS:
                    raise _Problem(f"unknown condition `{cond}` of privilege `{pname}` in "
                                   f"{where}", "the condition is ALLOW or DENY")
                rows.append((pname.lower(), obj, cond.lower()))
        rid = self.role_id(name)
        for pname, obj, cond in rows:
            self.add("privilege", rid, pname, obj, cond)

    def owner(self, item: Mapping[str, Any]) -> None:
        mo = _object(_get(item, "metadataObject", "an owner entry"), "`metadataObject`")
        obj = self.object_id(mo, "`metadataObject`")
        who = _object(_get(item, "owner", f"the owner entry of `{mo['fullName']}`"), "`owner`")
        name = _string(who, "name", "`owner`")
        kind = _string(who, "type", "`owner`")
        if kind.upper() not in OWNER_TYPES:
            raise _Problem(f"unknown owner type `{kind}` for `{mo['fullName']}`",
                           "the owner type is USER or GROUP")
        self.add("owner" if kind.upper() == "USER" else "group_owner", obj, name)

    def object_id(self, obj: Mapping[str, Any], what: str) -> str:
        """The id of a metadata object, adding it (and the catalog tree above it) as entities."""
        full = _string(obj, "fullName", what)
        kind = _string(obj, "type", what).upper()
        m = self.metalake
        if kind == "METALAKE":
            if full != m:
                raise _Problem(f"metalake `{full}` is not the metalake being imported, `{m}`")
            return m
        if kind in LAKE_TYPES:
            etype = LAKE_TYPES[kind]
            oid = f"{m}/{etype}/{full}"
            self.add("entity", oid, etype)
            self.add("contains", m, oid)
            return oid
        if kind not in TREE_TYPES:
            raise _Problem(f"unknown object type `{obj['type']}` of `{full}`",
                           "rules/gravitino.gl knows " + ", ".join(OBJECT_TYPES))
        etype, nparts = TREE_TYPES[kind]
        parts = full.split(".")
        if len(parts) != nparts or not all(parts):
            raise _Problem(f"a {kind} full name has {nparts} dot-separated part"
                           f"{'s' if nparts > 1 else ''}, not `{full}`")
        parent = m
        for depth, ptype in enumerate(("catalog", "schema", etype)[:nparts]):
            oid = f"{m}.{'.'.join(parts[:depth + 1])}"
            self.add("entity", oid, ptype)
            self.add("contains", parent, oid)
            parent = oid
        return parent


def load_gravitino_dir(path: str | Path, metalake: str) -> Facts:
    """Facts for ``rules/gravitino.gl`` from the Gravitino JSON files under ``path``.

    ``metalake`` names the metalake the files describe; object full names are relative to it.
    Raises :class:`GrantlogError` (code ``bad-import``) listing every malformed file or item.
    """
    root = Path(path)
    if not metalake or "." in metalake or "/" in metalake:
        raise GrantlogError([error(CODE, f"`{metalake}` is not a metalake name", _at(root),
                                   "a metalake name has no `.` or `/`")])
    loader = _Loader(root, metalake)
    facts = loader.run()
    if loader.diagnostics:
        raise GrantlogError(loader.diagnostics)
    return facts


def to_gl(facts: Mapping[str, Iterable[tuple[str, ...]]]) -> str:
    """The facts as a `.gl` file: one relation after another, rows sorted, in canonical layout."""
    rels = [r for r in ORDER if r in facts] + sorted(r for r in facts if r not in ORDER)
    out = ["// Facts for rules/gravitino.gl, imported from Gravitino REST API JSON."]
    for rel in rels:
        rows = sorted(set(facts[rel]))
        if not rows:
            continue
        out.append("")
        out += [show_atom(rel, row) + "." for row in rows]
    return "\n".join(out) + "\n"
