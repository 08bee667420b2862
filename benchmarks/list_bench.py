#!/usr/bin/env python3
"""Listing over the whole platform (issue 16): ``list(user, "load_table", type="table")`` on
the Gravitino-shaped workload, for users whose answers range from a handful of tables to most
of the metalake, against the target of 50 ms + 2 µs per listed table.

Every user ``u0000``..``u{N-1}`` is listed once (``--users``, default 24), in one process,
after ``prepare()``; each listing's answer is checked against one ``check`` per table for a
sample of tables (in the answer and not). The table reports, for the users whose answers are
nearest 10, 10,000 and 500,000 tables, the time and the budget, and every user's figures.

    .venv/bin/python benchmarks/list_bench.py [--size 1000000] [--users 24] [--write]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
from typing import Any

import gravitino_workload as gw
from harness import HERE, ROOT, log, replace_section, run_info

import grantlog
from grantlog.filters import Layout, select_sql

RULES = ROOT / "rules" / "gravitino.gl"
HEADING = "## Listing over the whole metalake (issue 16)"
TARGETS = (10, 10_000, 500_000)


def budget_ms(n: int) -> float:
    return 50.0 + 0.002 * n


def probes(w: gw.Workload) -> dict[str, int]:
    """Three users added to the world whose answers hold about 10, 10,000 and 500,000 tables
    (the generated users hold 4k-50k, and the owner all): each holds one role with
    SELECT_TABLE and USE_SCHEMA on a schema of ~10 tables, on the 10,000-table schema, and on
    whole catalogs adding up to ~500,000 tables, with USE_CATALOG on their catalogs. Returns
    user -> the tables the grants cover."""
    tables: dict[str, int] = {}
    parent = {c: p for p, c in w.facts["contains"]}
    for x, t in w.facts["entity"]:
        if t == "table":
            s = parent[x]
            tables[s] = tables.get(s, 0) + 1
    per_catalog: dict[str, int] = {}
    for s, n in tables.items():
        per_catalog[parent[s]] = per_catalog.get(parent[s], 0) + n
    small = min(sorted(tables), key=lambda s: abs(tables[s] - 10))
    big = max(sorted(tables), key=tables.__getitem__)
    cats: list[str] = []
    for c in sorted(per_catalog):
        if sum(per_catalog[x] for x in cats) >= 500_000:
            break
        cats.append(c)
    plan = {"probe10": [small], "probe10k": [big], "probe500k": cats}
    out = {}
    for user, objs in plan.items():
        role = f"{gw.METALAKE}/role/{user}"
        w.facts["entity"].append((role, "role"))
        w.facts["contains"].append((gw.METALAKE, role))
        w.facts["metalake_user"].append((user, gw.METALAKE))
        w.facts["role_of"].append((user, role))
        for o in objs:
            privs = ["select_table", "use_schema"] + (["use_catalog"] if o in per_catalog else [])
            w.facts["privilege"] += [(role, p, o, "allow") for p in privs]
            if o not in per_catalog:
                w.facts["privilege"].append((role, "use_catalog", parent[o], "allow"))
        out[user] = sum(per_catalog[o] if o in per_catalog else tables[o] for o in objs)
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=1_000_000)
    p.add_argument("--users", type=int, default=24)
    p.add_argument("--write", action="store_true")
    p.add_argument("--no-postgres", action="store_true",
                   help="skip the SQL timings in PostgreSQL")
    args = p.parse_args()
    program = grantlog.compile(paths=[str(RULES)])
    w = gw.generate(args.size, seed=1)
    covered = probes(w)
    tables = [row[0] for row in w.facts["entity"] if row[1] == "table"]
    users = [*covered, *(f"u{i:04d}" for i in range(args.users))]
    r = load(program, w, args.size)
    rng = random.Random(7)
    rows: list[dict[str, Any]] = []
    answers: dict[str, int] = {}
    for u in users:
        gc.collect()  # untimed: the garbage of the user before (u0000's million) is not this one's
        t0 = time.perf_counter()
        got = r.list(u, "load_table", type="table")
        ms = (time.perf_counter() - t0) * 1e3
        answer = set(got)
        answers[u] = len(answer)
        probe = rng.sample(sorted(answer), min(20, len(answer))) + rng.sample(tables, 20)
        wrong = sum(r.check(u, "load_table", t).allowed != (t in answer) for t in probe)
        rows.append({"user": u, "tables": len(answer), "ms": ms, "budget_ms":
                     budget_ms(len(answer)), "wrong": wrong, "probed": len(probe)})
        log(f"  {u}: {len(answer):,} tables in {ms:,.1f} ms (budget "
            f"{budget_ms(len(answer)):,.1f} ms){' WRONG ' + str(wrong) if wrong else ''}")
    del r
    gc.unfreeze()
    gc.collect()
    # filters, each built once in a fresh reasoner (nothing kept from the listings)
    r = load(program, w, args.size)
    filters = {}
    for row in rows:
        u = row["user"]
        gc.collect()
        t0 = time.perf_counter()
        f = filters[u] = r.filter(u, "load_table", "table")
        row["filter_ms"] = (time.perf_counter() - t0) * 1e3
        row["terms"] = terms(f.cond)
        log(f"  {u}: filter of {row['terms']:,} terms in {row['filter_ms']:,.1f} ms")
    res = {"size": args.size, "rows": rows, "sql": sql_times(w, filters, answers, args),
           **run_info()}
    (HERE / "list_results.json").write_text(json.dumps(res, indent=2))
    text = table(res)
    print(text)
    if args.write:
        replace_section(HEADING, text)


def load(program: grantlog.Program, w: gw.Workload, size: int) -> grantlog.Reasoner:
    r = grantlog.Reasoner(program)
    with r.transaction() as tx:
        for rel, rows in w.facts.items():
            tx.insert(rel, rows)
    t0 = time.perf_counter()
    r.prepare()
    log(f"[{size:,}] loaded, prepared in {time.perf_counter() - t0:.2f} s")
    gc.collect()
    gc.freeze()
    return r


def terms(c: Any) -> int:
    if c[0] in ("and", "or"):
        return sum(terms(p) for p in c[1])
    return terms(c[1]) if c[0] == "not" else 1


#: a query running longer is cancelled (and reported as such)
TIMEOUT_S = 30
#: the catalog table of the SQL measurements, and the indexes recommended for it
CATALOG = """CREATE TABLE objects (id text PRIMARY KEY, type text NOT NULL, parent text,
                      path text NOT NULL)"""
INDEXES = ["CREATE INDEX objects_path ON objects (path text_pattern_ops)",
           "CREATE INDEX objects_parent ON objects (parent)"]
LAYOUTS = {"path": Layout("objects", "id", "type", path="path"),
           "parent": Layout("objects", "id", "type", parent="parent")}


def sql_times(w: gw.Workload, filters: dict[str, Any], answers: dict[str, int],
              args: argparse.Namespace) -> dict[str, Any]:
    """Each filter's SQL run in a throwaway PostgreSQL over the world's objects as a
    catalog table (id, type, parent, path), with :data:`INDEXES`: the median of 3 runs of
    ``SELECT id ... WHERE <filter>`` fetching every id, for the path and the parent
    layouts; each answer's size checked against ``list``'s."""
    from pgserver import PgServer, find_bin

    if args.no_postgres or find_bin() is None:
        return {}
    import psycopg

    parent = {c: p for p, c in w.facts["contains"]}
    out: dict[str, Any] = {"layouts": {}, "indexes": INDEXES}
    with PgServer(durable=True) as pg, psycopg.connect(pg.url, autocommit=True) as conn:
        conn.execute(CATALOG)
        t0 = time.perf_counter()
        with conn.cursor().copy("COPY objects (id, type, parent, path) FROM STDIN") as cp:
            for x, t in w.facts["entity"]:
                chain, node = [x], x
                while node in parent:
                    node = parent[node]
                    chain.append(node)
                cp.write_row((x, t, parent.get(x), "/" + "/".join(reversed(chain)) + "/"))
        for ddl in INDEXES:
            conn.execute(ddl)
        conn.execute("ANALYZE objects")
        n = conn.execute("SELECT count(*) FROM objects").fetchone()[0]  # type: ignore[index]
        out["rows"] = n
        log(f"  PostgreSQL: {n:,} objects loaded and indexed in "
            f"{time.perf_counter() - t0:.1f} s")
        conn.execute(f"SET statement_timeout = '{TIMEOUT_S}s'")
        for name, lay in LAYOUTS.items():
            got: dict[str, Any] = {}
            # the parent layout's recursive queries are slow at this size: a few users only
            for u, f in list(filters.items())[:None if name == "path" else 7]:
                q = select_sql(f, lay, "postgres")
                ts: list[float] = []
                ids: list[Any] | None = []
                while len(ts) < 3 and (not ts or ts[0] < 1000):  # 3 runs, 1 when slow
                    t0 = time.perf_counter()
                    try:
                        ids = conn.execute(q).fetchall()
                    except psycopg.errors.QueryCanceled:
                        ids = None
                        break
                    ts.append((time.perf_counter() - t0) * 1e3)
                if ids is None:
                    got[u] = {"ms": None, "rows": None, "agrees": None, "sql_bytes": len(q)}
                    log(f"  {name} layout, {u}: over {TIMEOUT_S} s, cancelled")
                    continue
                got[u] = {"ms": statistics.median(ts), "rows": len(ids),
                          "agrees": len(ids) == answers[u], "sql_bytes": len(q)}
                log(f"  {name} layout, {u}: {len(ids):,} rows in {got[u]['ms']:,.1f} ms"
                    f"{'' if got[u]['agrees'] else ' DISAGREES with list'}")
            out["layouts"][name] = got
    return out


def table(res: dict[str, Any]) -> str:
    rows = res["rows"]
    near = [min(rows, key=lambda x: abs(x["tables"] - n)) for n in TARGETS]
    met = sum(x["ms"] <= x["budget_ms"] for x in rows)
    fms = sorted(x["filter_ms"] for x in rows)
    lines = [
        HEADING, "",
        f"Run {res['when']} at `{res['git']}` (`.venv/bin/python benchmarks/list_bench.py "
        f"--write`, or `make bench-list`): {res['size']:,} tables, `list(u, \"load_table\", "
        "type=\"table\")` in process after `prepare()`, each user once (no answers kept from "
        "an earlier listing of the same user), a full garbage collection between users, "
        "untimed (a user's time holds the collections its own work triggers, not those of "
        "the million answers before it). The users `probe10`, `probe10k` and "
        "`probe500k` are added to the world with one role each whose grants cover about "
        "10, 10,000 and 500,000 tables; `u0000` owns the metalake. "
        f"Target: 50 ms + 2 µs per listed table: {met} of {len(rows)} users within it.", "",
        "| answer nearest | user | tables listed | list | budget | filter built |",
        "|---|---|---|---|---|---|"]
    for n, x in zip(TARGETS, near, strict=True):
        lines.append(f"| {n:,} | {x['user']} | {x['tables']:,} | {x['ms']:,.1f} ms | "
                     f"{x['budget_ms']:,.1f} ms | {x['filter_ms']:,.1f} ms |")
    lines += ["", "Every user (tables listed, list time, filter time, filter terms): " + ", ".join(
        f"{x['user']} {x['tables']:,} / {x['ms']:,.0f} ms / {x['filter_ms']:,.1f} ms / "
        f"{x['terms']:,}" for x in rows) + "; "
        + f"{sum(x['wrong'] for x in rows)} of {sum(x['probed'] for x in rows)} "
        "probed tables disagreed with `check`.", "",
        f"Filters (`r.filter(u, \"load_table\", \"table\")`, each user's first, in a fresh "
        f"reasoner): median {statistics.median(fms):,.1f} ms, "
        f"{sum(v <= 10 for v in fms)} of {len(fms)} within 10 ms, slowest {fms[-1]:,.1f} ms "
        f"({max(rows, key=lambda x: x['filter_ms'])['user']}).", ""]
    sql = res.get("sql") or {}
    if sql:
        lines += [f"The filters' SQL (`select_sql(f, layout, \"postgres\")`) in PostgreSQL 15 "
                  f"over a catalog table of {sql['rows']:,} objects (id, type, parent, path) "
                  "with the recommended indexes (" + "; ".join(f"`{i}`" for i in sql["indexes"])
                  + "), median of 3 runs fetching every id:", "",
                  "| layout | " + " | ".join(x["user"] for x in near) + " | median, all users "
                  "| answers equal to list's |", "|---|" + "---|" * (len(near) + 2)]
        for name, got in sql["layouts"].items():
            done = [g for g in got.values() if g["ms"] is not None]
            lines.append(f"| {name} | " + " | ".join(_sql_cell(got.get(x["user"])) for x in near)
                         + f" | {statistics.median(g['ms'] for g in done):,.1f} ms over "
                         f"{len(done)} users"
                         + (f", {len(got) - len(done)} cancelled after {TIMEOUT_S} s"
                            if len(done) < len(got) else "")
                         + f" | {sum(bool(g['agrees']) for g in done)} of {len(done)} |")
        lines.append("")
    return "\n".join(lines)


def _sql_cell(g: dict[str, Any] | None) -> str:
    if g is None:
        return "not run"
    if g["ms"] is None:
        return f"> {TIMEOUT_S} s (cancelled)"
    return f"{g['ms']:,.1f} ms ({g['rows']:,} rows)"


if __name__ == "__main__":
    main()
