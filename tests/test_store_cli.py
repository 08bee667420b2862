"""``grantlog store ...`` and ``--store`` on the evaluating commands, end to end (SQLite and
PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grantlog.cli import main

ROOT = Path(__file__).resolve().parent.parent
FACTS = ROOT / "examples" / "gravitino" / "facts.gl"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_store_lifecycle(store_url: str, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "store", "init", store_url, "--model", "gravitino")
    assert code == 0 and "revision 0" in out
    code, out, err = run(capsys, "store", "load", store_url, str(FACTS), "--model", "gravitino")
    assert code == 0 and "as revision 1" in out and "privilege:" in err
    # loading again adds nothing and makes no revision
    code, out, _ = run(capsys, "store", "load", store_url, str(FACTS), "--model", "gravitino")
    assert "nothing new" in out
    # the same decisions as the facts file gives
    code, out, _ = run(capsys, "check", "--model", "gravitino", "--store", store_url,
                       "alice", "load_table", "m1.lakehouse.sales.orders")
    assert code == 0 and out.startswith("ALLOW")
    code, out, _ = run(capsys, "check", "--model", "gravitino", "--store", store_url,
                       "carol", "load_table", "m1.lakehouse.sales.customers")
    assert code == 1 and out.startswith("DENY")
    code, direct, _ = run(capsys, "who", "--model", "gravitino", "--facts", str(FACTS),
                          "load_table", "m1.lakehouse.sales.orders")
    code, stored, _ = run(capsys, "who", "--model", "gravitino", "--store", store_url,
                          "load_table", "m1.lakehouse.sales.orders")
    assert stored == direct and stored
    # dump and load into a second store: the same facts
    for fmt in ("gl", "csv", "jsonl", "parquet"):
        out_path = tmp_path / ("dump.gl" if fmt == "gl" else f"dump_{fmt}")
        code, out, _ = run(capsys, "store", "dump", store_url, "--model", "gravitino",
                           "-o", str(out_path), "--format", fmt)
        assert code == 0
        other = f"sqlite:///{tmp_path / f'copy_{fmt}.db'}"
        assert run(capsys, "store", "load", other, str(out_path), "--model",
                   "gravitino", "--create")[0] == 0
        a = json.loads(run(capsys, "store", "stats", store_url, "--json")[1])["facts"]
        b = json.loads(run(capsys, "store", "stats", other, "--json")[1])["facts"]
        assert {k: v for k, v in a.items() if v} == {k: v for k, v in b.items() if v}


def test_log_shows_derived_changes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import grantlog

    url = f"sqlite:///{tmp_path / 'log.db'}"
    program = grantlog.compile(paths=[str(ROOT / "rules" / "gravitino.gl"), str(FACTS)])
    with grantlog.Reasoner(program, store=url, follow=False, create=True) as r:
        r.insert("member", [("dave", "analysts")])
        r.retract("member", [("dave", "analysts")])
    code, out, _ = run(capsys, "store", "log", url, "--rules", str(ROOT / "rules/gravitino.gl"),
                       "--rules", str(FACTS), "--derived", "allowed")
    assert code == 0
    assert "revision 1 at" in out and "+member(dave, analysts)" in out
    gained = [x for x in out.split("revision 2")[0].splitlines() if x.startswith("    +")]
    lost = [x for x in out.split("revision 2")[1].splitlines() if x.startswith("    -")]
    assert gained and sorted(g[5:] for g in gained) == sorted(x[5:] for x in lost)
    assert any("allowed(dave, load_table," in g for g in gained)
    code, out, _ = run(capsys, "store", "compact", url, "--keep", "1")
    assert code == 0 and "after revision 1" in out
    code, out, _ = run(capsys, "store", "log", url, "--json")
    assert [t["revision"] for t in json.loads(out)["transactions"]] == [2]


def test_import_gravitino_into_a_store(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'grav.db'}"
    code, _, err = run(capsys, "import", "gravitino", str(ROOT / "examples/gravitino/json"),
                       "--store", url, "--create")
    assert code == 0 and "stored" in err and "revision 1" in err
    code, out, _ = run(capsys, "store", "stats", url, "--json")
    assert json.loads(out)["total_facts"] > 0


@pytest.mark.parametrize("args", [
    ["store", "stats", "mysql://nowhere"],
    ["store", "stats", "sqlite:////nonexistent/x.db"],
    ["check", "--model", "gravitino", "--store", "sqlite:////nonexistent/dir/x.db", "a", "b",
     "c"],
])
def test_store_errors_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *args)
    assert code == 2 and "error[" in err and "Traceback" not in err


def test_spark_reads_a_store_dumped_to_parquet(spark: object, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from grantlog.spark_bridge.cli import main as spark_cli

    import grantlog

    url = f"sqlite:///{tmp_path / 'spark.db'}"
    rules = str(ROOT / "examples" / "demo" / "policy.gl")
    facts = str(ROOT / "examples" / "demo" / "facts.gl")
    assert run(capsys, "store", "load", url, facts, "--rules", rules, "--create")[0] == 0
    out = tmp_path / "dump"
    assert run(capsys, "store", "dump", url, "--rules", rules, "-o", str(out),
               "--format", "parquet")[0] == 0
    inputs = [f"--input={p.stem}={p}" for p in sorted(out.glob("*.parquet"))]
    code = spark_cli(["run", "--rules", rules, *inputs, "--output", str(tmp_path / "out"),
                      "-r", "allowed"])
    assert code == 0, capsys.readouterr().err
    got = {tuple(r)[:3] for r in spark.read.parquet(  # type: ignore[attr-defined]
        str(tmp_path / "out" / "allowed")).collect()}
    with grantlog.Reasoner(grantlog.compile(paths=[rules]), store=url, follow=False) as r:
        assert got == r.rows("allowed") and got
