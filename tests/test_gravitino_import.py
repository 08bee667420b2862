"""grantlog.interop.gravitino: Gravitino REST JSON into facts for rules/gravitino.gl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from grantlog.grammar import format_text

import grantlog
from grantlog.interop import load_gravitino_dir, to_gl

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "rules" / "gravitino.gl"
SAMPLE = ROOT / "examples" / "gravitino" / "json"


def _write(d: Path, rel: str, data: Any) -> Path:
    p = d / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return p


def _reasoner(facts: dict[str, set[tuple[str, ...]]]) -> grantlog.Reasoner:
    r = grantlog.Reasoner(grantlog.compile(paths=[MODEL], strict=True))
    for rel, rows in facts.items():
        r.insert(rel, rows)
    return r


# ---- a valid import ---------------------------------------------------------------------------


def test_small_import_gives_exactly_the_expected_facts(tmp_path: Path) -> None:
    _write(tmp_path, "users/alice.json", {"code": 0, "user": {"name": "alice", "roles": ["r"]}})
    _write(tmp_path, "groups.json", [{"name": "eng", "roles": ["r"], "users": ["bob"]}])
    _write(tmp_path, "roles/r.json", {
        "name": "r", "properties": {}, "audit": {"creator": "x"},
        "securableObjects": [
            {"fullName": "c1.s1.t1", "type": "TABLE",
             "privileges": [{"name": "SELECT_TABLE", "condition": "ALLOW"},
                            {"name": "modify_table", "condition": "deny"}]},
            {"fullName": "m1", "type": "METALAKE",
             "privileges": [{"name": "USE_CATALOG", "condition": "ALLOW"}]},
            {"fullName": "pii", "type": "TAG",
             "privileges": [{"name": "APPLY_TAG", "condition": "ALLOW"}]},
        ],
    })
    _write(tmp_path, "owners.json", [
        {"metadataObject": {"fullName": "c1", "type": "CATALOG"},
         "owner": {"name": "carol", "type": "USER"}},
        {"metadataObject": {"fullName": "c1.s1.t1", "type": "TABLE"},
         "owner": {"name": "eng", "type": "GROUP"}},
    ])
    facts = load_gravitino_dir(tmp_path, "m1")
    assert facts == {
        "entity": {("m1", "metalake"), ("m1/role/r", "role"), ("m1.c1", "catalog"),
                   ("m1.c1.s1", "schema"), ("m1.c1.s1.t1", "table"), ("m1/tag/pii", "tag")},
        "contains": {("m1", "m1/role/r"), ("m1", "m1.c1"), ("m1.c1", "m1.c1.s1"),
                     ("m1.c1.s1", "m1.c1.s1.t1"), ("m1", "m1/tag/pii")},
        "metalake_user": {("alice", "m1")},
        "metalake_group": {("eng", "m1")},
        "member": {("bob", "eng")},
        "role_of": {("alice", "m1/role/r"), ("eng", "m1/role/r")},
        "privilege": {("m1/role/r", "select_table", "m1.c1.s1.t1", "allow"),
                      ("m1/role/r", "modify_table", "m1.c1.s1.t1", "deny"),
                      ("m1/role/r", "use_catalog", "m1", "allow"),
                      ("m1/role/r", "apply_tag", "m1/tag/pii", "allow")},
        "owner": {("m1.c1", "carol")},
        "group_owner": {("m1.c1.s1.t1", "eng")},
    }


def test_list_envelopes_and_roles_without_files_of_their_own(tmp_path: Path) -> None:
    _write(tmp_path, "users.json", {"code": 0, "users": [{"name": "a"}, {"name": "b",
                                                                        "roles": ["x"]}]})
    _write(tmp_path, "roles.json", {"code": 0, "roles": []})
    facts = load_gravitino_dir(tmp_path, "lake")
    assert facts["metalake_user"] == {("a", "lake"), ("b", "lake")}
    assert facts["role_of"] == {("b", "lake/role/x")}
    assert ("lake/role/x", "role") in facts["entity"]


def test_sample_json_matches_the_example_facts() -> None:
    imported = load_gravitino_dir(SAMPLE, "m1")
    example = grantlog.Reasoner(grantlog.compile(paths=[ROOT / "examples/gravitino/facts.gl"]))
    for rel in ("metalake_user", "metalake_group", "member", "role_of", "privilege", "owner"):
        assert imported[rel] == example.rows(rel), rel
    assert imported["entity"] <= example.rows("entity")
    assert imported["contains"] <= example.rows("contains")


def test_imported_facts_answer_checks() -> None:
    r = _reasoner(load_gravitino_dir(SAMPLE, "m1"))
    # objects nobody was granted on are not in the REST JSON: add one the way a catalog
    # listing would
    r.insert("entity", [("m1.lakehouse.sales.orders", "table")])
    r.insert("contains", [("m1.lakehouse.sales", "m1.lakehouse.sales.orders")])
    assert r.check("alice", "load_table", "m1.lakehouse.sales.orders").allowed
    assert not r.check("carol", "load_table", "m1.lakehouse.sales.customers").allowed
    assert r.ask('deny_wins(carol, select_table, "m1.lakehouse.sales.customers")')
    assert r.check("alice", "load_table", "m1.lakehouse.sales.customers").allowed
    assert r.check("bob", "load_model", "m1.ml.models.churn_predictor").allowed
    assert r.check("bob", "run_job", "m1/job_template/compaction").allowed
    assert r.check("maria", "drop_metalake", "m1").allowed
    assert r.check("sam", "drop_table", "m1.lakehouse.sales.orders").allowed
    assert not r.check("dave", "load_table", "m1.lakehouse.sales.orders").allowed
    assert r.rows("invalid_grant") == set()


def test_group_owner_is_imported_but_confers_nothing(tmp_path: Path) -> None:
    _write(tmp_path, "groups.json", [{"name": "eng", "users": ["ann"]}])
    _write(tmp_path, "users.json", [{"name": "ann"}])
    _write(tmp_path, "owners.json", [{"metadataObject": {"fullName": "m1", "type": "METALAKE"},
                                      "owner": {"name": "eng", "type": "GROUP"}}])
    r = _reasoner(load_gravitino_dir(tmp_path, "m1"))
    assert r.ask("unsupported_owner(eng, m1)")
    assert not r.check("ann", "drop_metalake", "m1").allowed


def test_to_gl_is_canonical_and_compiles_with_the_model(tmp_path: Path) -> None:
    facts = load_gravitino_dir(SAMPLE, "m1")
    text = to_gl(facts)
    assert format_text(text, "imported.gl") == text
    out = _write(tmp_path, "imported.gl", text)
    r = grantlog.Reasoner(grantlog.compile(paths=[MODEL, out], strict=True))
    for rel, rows in facts.items():
        assert r.rows(rel) >= rows, rel
    assert r.rows("privilege") == facts["privilege"]


def test_to_gl_quotes_what_is_not_an_identifier() -> None:
    text = to_gl({"owner": {("m1.c1", "Bob Smith")}, "metalake_user": {("not", "m1")}})
    assert 'owner("m1.c1", "Bob Smith").' in text
    assert 'metalake_user("not", m1).' in text


# ---- malformed input: one bad-import diagnostic naming the offending file ------------------------


def _bad(tmp_path: Path, rel: str, data: Any, fragment: str) -> grantlog.Diagnostic:
    path = _write(tmp_path, rel, data)
    with pytest.raises(grantlog.GrantlogError) as info:
        load_gravitino_dir(tmp_path, "m1")
    diags = info.value.diagnostics
    assert len(diags) == 1, diags
    d = diags[0]
    assert d.code == "bad-import"
    assert d.span.file == str(path)
    assert fragment in d.message, d.message
    return d


def test_invalid_json_points_at_the_syntax_error(tmp_path: Path) -> None:
    d = _bad(tmp_path, "users.json", '[\n  {"name": "alice",}\n]\n', "invalid JSON")
    assert (d.span.line, d.span.col) == (2, 20)
    assert str(d.span).endswith("users.json:2:20")


def test_missing_key(tmp_path: Path) -> None:
    d = _bad(tmp_path, "roles/r.json", {"name": "r"}, "missing key `securableObjects`")
    assert d.span.line == 0


def test_missing_key_deep_inside(tmp_path: Path) -> None:
    _bad(tmp_path, "roles/r.json",
         {"name": "r", "securableObjects": [{"fullName": "c1", "type": "CATALOG",
                                             "privileges": [{"name": "USE_CATALOG"}]}]},
         "missing key `condition`")


def test_missing_owner_object(tmp_path: Path) -> None:
    _bad(tmp_path, "owners/t1.json", {"code": 0, "owner": {"name": "a", "type": "USER"}},
         "missing key `metadataObject`")


def test_unknown_privilege(tmp_path: Path) -> None:
    d = _bad(tmp_path, "roles.json",
             [{"name": "r", "securableObjects": [
                 {"fullName": "c1.s1.t1", "type": "TABLE",
                  "privileges": [{"name": "SELECT_TABL", "condition": "ALLOW"}]}]}],
             "unknown privilege `SELECT_TABL`")
    assert d.help is not None and "SELECT_TABLE" in d.help


def test_unknown_condition(tmp_path: Path) -> None:
    _bad(tmp_path, "roles.json",
         [{"name": "r", "securableObjects": [
             {"fullName": "c1", "type": "CATALOG",
              "privileges": [{"name": "USE_CATALOG", "condition": "MAYBE"}]}]}],
         "unknown condition `MAYBE`")


def test_unknown_object_type(tmp_path: Path) -> None:
    _bad(tmp_path, "roles.json",
         [{"name": "r", "securableObjects": [
             {"fullName": "c1.s1.t1.col", "type": "COLUMN",
              "privileges": [{"name": "SELECT_TABLE", "condition": "ALLOW"}]}]}],
         "unknown object type `COLUMN`")


def test_unknown_owner_type(tmp_path: Path) -> None:
    _bad(tmp_path, "owners.json",
         [{"metadataObject": {"fullName": "c1", "type": "CATALOG"},
           "owner": {"name": "a", "type": "ROBOT"}}],
         "unknown owner type `ROBOT`")


def test_full_name_with_the_wrong_number_of_parts(tmp_path: Path) -> None:
    _bad(tmp_path, "owners.json",
         [{"metadataObject": {"fullName": "c1.t1", "type": "TABLE"},
           "owner": {"name": "a", "type": "USER"}}],
         "a TABLE full name has 3 dot-separated parts, not `c1.t1`")


def test_object_of_another_metalake(tmp_path: Path) -> None:
    _bad(tmp_path, "owners.json",
         [{"metadataObject": {"fullName": "m2", "type": "METALAKE"},
           "owner": {"name": "a", "type": "USER"}}],
         "metalake `m2` is not the metalake being imported")


def test_wrong_json_types(tmp_path: Path) -> None:
    _bad(tmp_path, "users.json", [{"name": "a", "roles": "r1"}], "`roles` in user `a`")
    (tmp_path / "users.json").unlink()
    _bad(tmp_path, "groups.json", "42", "expected a JSON object or array of groups")
    (tmp_path / "groups.json").unlink()
    _bad(tmp_path, "users.json", [["alice"]], "user 1 must be a JSON object")


def test_names_only_list(tmp_path: Path) -> None:
    _bad(tmp_path, "roles.json", {"code": 0, "names": ["r1", "r2"]}, "carries no roles")


def test_file_of_unknown_kind(tmp_path: Path) -> None:
    _bad(tmp_path, "catalogs/c1.json", {"name": "c1"}, "cannot tell what")


def test_every_bad_file_is_reported_and_good_files_do_not_hide_them(tmp_path: Path) -> None:
    _write(tmp_path, "users.json", [{"name": "ok"}])
    a = _write(tmp_path, "roles/a.json", "{")
    b = _write(tmp_path, "owners.json", [{"metadataObject": {"fullName": "c1", "type": "X"},
                                          "owner": {"name": "a", "type": "USER"}}])
    with pytest.raises(grantlog.GrantlogError) as info:
        load_gravitino_dir(tmp_path, "m1")
    assert sorted(d.span.file for d in info.value.diagnostics) == sorted([str(b), str(a)])
    assert all(d.code == "bad-import" for d in info.value.diagnostics)
    assert "error[bad-import]" in str(info.value)


def test_not_a_directory_or_bad_metalake(tmp_path: Path) -> None:
    with pytest.raises(grantlog.GrantlogError) as info:
        load_gravitino_dir(tmp_path / "missing", "m1")
    assert info.value.diagnostics[0].code == "bad-import"
    assert info.value.diagnostics[0].span.file == str(tmp_path / "missing")
    with pytest.raises(grantlog.GrantlogError) as info:
        load_gravitino_dir(tmp_path, "m1.c1")
    assert info.value.diagnostics[0].code == "bad-import"
