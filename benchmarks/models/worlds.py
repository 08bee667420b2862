"""Generated worlds for the benchmark models of benchmarks/models/ (issue 26): one world of
``n`` tables per model, as Python rows (``World.facts``: relation -> row tuples) and as a
``.gl`` fact file (:func:`write_facts`).

Every world is a translation of one :mod:`gravitino_workload` world (one metalake > catalogs >
schemas > tables, one big schema, 1,000 users in 100 groups, 200 roles, ~20,000 grants over
every level with ~5 % DENY, owners), so the four models are measured on the same shape and the
same users:

* ``shipped``: the workload itself, for rules/gravitino.gl;
* ``renamed``: the same facts with every relation renamed (:data:`RENAMES`) for renamed.gl;
* ``bare``: the same facts for renamed.gl without its ``@materialize`` / ``@demand``
  annotations (:func:`bare_text`): the Gravitino model as written by someone who never read
  the prelude's, whose split of kept and on-demand relations is the materialization
  policy's alone (engine/compile/materialize.py);
* ``unary``: unary types (``catalog(X)``...), ``parent(child, parent)``, ``permit`` /
  ``forbid`` grants to roles, ``member_of`` and ``assigned`` for unary.gl;
* ``twotrees``: ``resource(id, kind)`` with ``encloses(outer, inner)``; every role becomes a
  group (its id kept) that the workload's groups holding it nest in (``subgroup``) and the
  users holding it directly are in; role-groups nest in ten department groups, which nest in
  ``everyone``; grants go to groups (``grant_to`` / ``deny_to``) for twotrees.gl.

Three probe users are added to the workload first (:func:`add_probes`), whose ``load_table``
answers hold three tables (``probe_small``), about 5,000 (``probe_medium``: whole schemas) and
every table (``probe_all``): the small, medium and whole-platform listings of
benchmarks/models_bench.py. The four models decide alike on these worlds (the test suite checks
it, and the benchmark compares every listing with the shipped model's).

    .venv/bin/python benchmarks/models/worlds.py 100000 [--out DIR]   # writes DIR/<model>.facts.gl

``renamed.gl`` itself is generated from rules/gravitino.gl and rules/prelude.gl by
:func:`renamed_model_text` (``--write-renamed`` rewrites the generated part; the test blocks
after :data:`OWN_TESTS` are kept).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

import gravitino_workload as gw  # noqa: E402

MODELS = ("shipped", "renamed", "unary", "twotrees", "bare")
#: the rule file of each model (``bare``: renamed.gl read through :func:`bare_text`)
RULES = {"shipped": ROOT / "rules" / "gravitino.gl", "renamed": HERE / "renamed.gl",
         "unary": HERE / "unary.gl", "twotrees": HERE / "twotrees.gl",
         "bare": HERE / "renamed.gl"}
#: the line of renamed.gl after which its own test blocks start (the part above is generated)
OWN_TESTS = "// ---- tests of the renamed model (written by hand) "

#: every relation of rules/gravitino.gl and rules/prelude.gl and its name in renamed.gl
RENAMES = {
    "allow_applies": "granted_through", "allowed": "may", "allowed_with": "may_with",
    "ancestor": "above", "ancestor_or_self": "at_or_above", "api": "endpoint",
    "authorization_disabled": "authz_off", "authorized": "entitled",
    "below_schema": "under_namespace", "can_load": "loadable_by", "can_read": "readable_by",
    "can_use_catalog": "opens_catalog", "can_use_schema": "opens_namespace",
    "catalog_of": "catalog_above", "condition": "effect_kind", "contains": "nests",
    "controls": "governs", "denied": "blocked", "deny_wins": "block_wins",
    "deprecated": "legacy_name", "entity": "kind", "get_operation": "fetch_op",
    "grant": "acl_entry", "group_owner": "team_owner", "has_policy": "policy_on",
    "has_privilege": "effective_right", "has_tag": "tagged", "holds": "acts_as",
    "in_catalog": "within_catalog", "in_usable_catalog": "catalog_open_for",
    "in_usable_schema": "namespace_open_for", "invalid_grant": "void_entry",
    "listed": "shown", "load_operation": "load_op", "manages": "administers",
    "member": "belongs", "metalake_group": "lake_team", "metalake_of": "lake_above",
    "metalake_user": "lake_member", "missing_use_catalog": "lacks_catalog_use",
    "missing_use_schema": "lacks_namespace_use", "ownable": "can_be_owned",
    "owner": "owned_by", "owns": "possesses", "privilege": "acl",
    "reads_fileset": "reads_files", "reads_table": "reads_relation",
    "reads_topic": "reads_stream", "registered": "enrolled", "role_of": "assigned",
    "schema_of": "namespace_above", "securable": "protectable",
    "service_admin": "superuser", "supported_on": "applicable_to",
    "supports": "applies_to_kind", "unregistered_owner": "stray_owner",
    "unsupported_owner": "team_owner_ignored", "uses_model": "uses_ml_model",
}
#: relations without columns: used without parentheses
_NULLARY = ("authorization_disabled",)


def renamed_model_text() -> str:
    """rules/prelude.gl and rules/gravitino.gl as one file, every relation renamed (and the
    rules named as a relation: ``holds: ...``), the ``@hierarchy`` annotations dropped (the
    engine must recognise the shape), the decision relation declared ``@decision``."""
    parts = [
        "// The shipped Gravitino model (rules/gravitino.gl and its prelude) in one file, every\n"
        "// relation renamed and no `@hierarchy` annotation: a benchmark model of issue 26.\n"
        "// Generated by benchmarks/models/worlds.py (--write-renamed); do not edit above the\n"
        "// hand-written tests at the end.\n\n"]
    for name in ("prelude.gl", "gravitino.gl"):
        text = (ROOT / "rules" / name).read_text(encoding="utf-8")
        text = text.replace('import "prelude.gl".\n', "")
        text = re.sub(r"@hierarchy\(\w+\) ", "", text)
        for old, new in RENAMES.items():
            pat = rf"\b{old}\b" if old in _NULLARY else rf"\b{old}(?=\s*\()"
            text = re.sub(pat, new, text)
            text = re.sub(rf"^{old}:", f"{new}:", text, flags=re.M)  # a rule named as it
        parts.append(text.rstrip("\n") + "\n\n")
    out = "".join(parts)
    return out.replace(f"rel {RENAMES['allowed']}(", f"@decision rel {RENAMES['allowed']}(", 1)


def write_renamed() -> None:
    """Rewrite renamed.gl's generated part, keeping its hand-written tests."""
    path = RULES["renamed"]
    old = path.read_text(encoding="utf-8") if path.exists() else OWN_TESTS + "\n"
    path.write_text(renamed_file_text(old[old.index(OWN_TESTS):]), encoding="utf-8")


def renamed_file_text(own_tests: str) -> str:
    """renamed.gl: the generated model followed by ``own_tests``, formatted (``grantlog fmt``)."""
    from grantlog.grammar.formatter import format_text

    return format_text(renamed_model_text() + own_tests, str(RULES["renamed"]))


def bare_text() -> str:
    """renamed.gl without its ``@materialize`` and ``@demand`` annotations (the ``bare``
    model: which relations are kept is left to the materialization policy)."""
    text = RULES["renamed"].read_text(encoding="utf-8")
    return re.sub(r"^@(?:materialize|demand) ", "", text, flags=re.M)


# -- the worlds ---------------------------------------------------------------------------------

#: the table-loading operation of each model (the one the benchmark lists and checks)
LOAD = {"shipped": "load_table", "renamed": "load_table", "unary": "load_table",
        "twotrees": "read_table", "bare": "load_table"}
#: the probe users and the size of their ``load_table`` answers' target
PROBES = ("probe_small", "probe_medium", "probe_all")


@dataclass
class World:
    """One model's facts and what the benchmark asks of them."""

    model: str
    workload: gw.Workload  # the world it translates (its ids, schemas, catalogs, big schema)
    facts: dict[str, list[tuple[str, ...]]]
    probes: dict[str, int]  # probe user -> the number of tables its grants cover

    @property
    def rules(self) -> Path:
        return RULES[self.model]

    @property
    def load(self) -> str:
        return LOAD[self.model]

    def program(self) -> Any:
        """The model compiled (a ``grantlog.Program``; ``bare``: :func:`bare_text`)."""
        import grantlog

        path = str(self.rules)
        files = {path: bare_text()} if self.model == "bare" else None
        return grantlog.compile(paths=[path], files=files)

    @property
    def n_facts(self) -> int:
        return sum(len(rows) for rows in self.facts.values())


def add_probes(w: gw.Workload) -> dict[str, int]:
    """The three probe users, each with a role of its own (ALLOW only): ``probe_small``
    SELECT_TABLE on three tables of one schema, ``probe_medium`` on whole schemas (not the big
    one) adding up to about ``min(5,000, n / 4)`` tables, ``probe_all`` on the metalake; each
    with USE_SCHEMA and USE_CATALOG where its tables lie. Returns user -> tables covered."""
    m = gw.METALAKE
    small_schema = next(s for s in w.schemas if s != w.big_schema and len(w.schema_tables[s]) >= 3)
    target = min(5_000, w.n_tables // 4)
    medium: list[str] = []
    for s in w.schemas:
        if sum(len(w.schema_tables[x]) for x in medium) >= target:
            break
        if s != w.big_schema:
            medium.append(s)
    plan: dict[str, list[tuple[str, str]]] = {
        "probe_small": [("select_table", t) for t in w.schema_tables[small_schema][:3]]
        + [("use_schema", small_schema), ("use_catalog", w.parent[small_schema])],
        "probe_medium": [(p, s) for s in medium for p in ("select_table", "use_schema")]
        + [("use_catalog", c) for c in sorted({w.parent[s] for s in medium})],
        "probe_all": [(p, m) for p in ("select_table", "use_schema", "use_catalog")],
    }
    covered = {"probe_small": 3, "probe_medium": sum(len(w.schema_tables[s]) for s in medium),
               "probe_all": w.n_tables}
    for user, grants in plan.items():
        role = f"{m}/role/{user}"
        w.facts["entity"].append((role, "role"))
        w.facts["contains"].append((m, role))
        w.facts["metalake_user"].append((user, m))
        w.facts["role_of"].append((user, role))
        w.facts["privilege"] += [(role, p, o, "allow") for p, o in grants]
        w.users.append(user)
    return covered


def workload(n_tables: int, seed: int = 1, **sizes: int) -> tuple[gw.Workload, dict[str, int]]:
    """The Gravitino workload of ``n_tables`` with the probe users added (``sizes``:
    gravitino_workload.generate's ``n_users``, ``n_groups``, ``n_roles``, ``n_grants``)."""
    w = gw.generate(n_tables, seed, **sizes)
    return w, add_probes(w)


def renamed_facts(w: gw.Workload) -> dict[str, list[tuple[str, ...]]]:
    return {RENAMES[rel]: rows for rel, rows in w.facts.items()}


def unary_facts(w: gw.Workload) -> dict[str, list[tuple[str, ...]]]:
    """Unary types and ``parent(child, parent)``; roles are not objects of the tree here."""
    f = w.facts
    out: dict[str, list[tuple[str, ...]]] = {r: [] for r in (
        "platform", "catalog", "schema", "table", "parent", "account", "member_of",
        "assigned", "permit", "forbid", "owner")}
    unary = {"metalake": out["platform"], "catalog": out["catalog"], "schema": out["schema"],
             "table": out["table"]}
    for x, t in f["entity"]:
        if t in unary:
            unary[t].append((x,))
    out["parent"] = [(c, p) for p, c in f["contains"] if c in w.parent]
    out["account"] = [(u,) for u, _ in f["metalake_user"]]
    out["member_of"] = list(f["member"])
    out["assigned"] = list(f["role_of"])
    for role, priv, obj, cond in f["privilege"]:
        out["permit" if cond == "allow" else "forbid"].append((role, priv, obj))
    out["owner"] = [(o, u) for o, u in f["owner"] if o in w.parent or o == gw.METALAKE]
    return out


#: the departments the role-groups of twotrees nest in
N_DEPARTMENTS = 10


def twotrees_facts(w: gw.Workload) -> dict[str, list[tuple[str, ...]]]:
    """Resources and ``encloses``; every role becomes a group that the workload's groups
    holding it nest in and whose users holding it directly are in; role-groups nest in ten
    departments, which nest in ``everyone`` (no grants there: the answers equal the shipped
    model's)."""
    f = w.facts
    out: dict[str, list[tuple[str, ...]]] = {r: [] for r in (
        "resource", "encloses", "in_group", "subgroup", "enabled", "grant_to", "deny_to",
        "steward")}
    kinds = {"metalake": "platform", "catalog": "catalog", "schema": "schema", "table": "table"}
    out["resource"] = [(x, kinds[t]) for x, t in f["entity"] if t in kinds]
    out["encloses"] = [(p, c) for p, c in f["contains"] if c in w.parent]
    groups = set(w.groups)
    out["in_group"] = list(f["member"])
    for p, r in f["role_of"]:
        (out["subgroup"] if p in groups else out["in_group"]).append((p, r))
    depts = [f"dept{i:02d}" for i in range(N_DEPARTMENTS)]
    out["subgroup"] += [(r, depts[i % N_DEPARTMENTS]) for i, r in enumerate(w.roles)]
    out["subgroup"] += [(d, "everyone") for d in depts]
    out["enabled"] = [(u,) for u, _ in f["metalake_user"]]
    for role, priv, obj, cond in f["privilege"]:
        out["grant_to" if cond == "allow" else "deny_to"].append((role, priv, obj))
    out["steward"] = [(o, u) for o, u in f["owner"] if o in w.parent or o == gw.METALAKE]
    return out


def translate(model: str, w: gw.Workload, probes: dict[str, int]) -> World:
    """``w`` as ``model``'s facts."""
    if model == "shipped":
        facts = w.facts
    elif model in ("renamed", "bare"):
        facts = renamed_facts(w)
    elif model == "unary":
        facts = unary_facts(w)
    elif model == "twotrees":
        facts = twotrees_facts(w)
    else:
        raise ValueError(f"unknown model {model!r}: one of {', '.join(MODELS)}")
    return World(model, w, facts, probes)


def generate(model: str, n_tables: int, seed: int = 1, **sizes: int) -> World:
    """The world of ``n_tables`` tables for ``model`` (deterministic for ``seed``)."""
    w, probes = workload(n_tables, seed, **sizes)
    return translate(model, w, probes)


def fact_lines(facts: dict[str, list[tuple[str, ...]]]) -> Iterable[str]:
    """The facts as ``.gl`` lines, every value a quoted string."""
    from grantlog.grammar.formatter import quote

    for rel in sorted(facts):
        for row in facts[rel]:
            yield rel + "(" + ", ".join(
                quote(v) if '"' in v or "\\" in v or "\n" in v or "\t" in v else f'"{v}"'
                for v in row) + ").\n"


def write_facts(world: World, path: Path) -> Path:
    """``world``'s facts as a ``.gl`` fact file at ``path``."""
    with path.open("w", encoding="utf-8") as out:
        out.writelines(fact_lines(world.facts))
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("n_tables", type=int, nargs="?", default=100_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, help="write <model>.facts.gl for each model there")
    p.add_argument("--write-renamed", action="store_true",
                   help="regenerate renamed.gl from rules/ (its own tests kept)")
    args = p.parse_args()
    if args.write_renamed:
        write_renamed()
        return
    t0 = time.perf_counter()
    w, probes = workload(args.n_tables, args.seed)
    print(gw.summary(w), f"probes {probes}", f"generated in {time.perf_counter() - t0:.2f} s")
    for model in MODELS:
        t0 = time.perf_counter()
        world = translate(model, w, probes)
        took = time.perf_counter() - t0
        line = f"{model}: {world.n_facts:,} facts, translated in {took:.2f} s"
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            path = write_facts(world, args.out / f"{model}.facts.gl")
            line += f", {path} written in {time.perf_counter() - t0:.2f} s"
        print(line)


if __name__ == "__main__":
    main()
