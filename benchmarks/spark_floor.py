"""The floor of Spark's every user × table listing: what writing the answer costs, and what the
best hand-written DataFrame plan of it costs (issue 26, item 6).

    python benchmarks/spark_floor.py [--sizes 1000,3000,10000] [--check 1000,3000]
        [--driver-memory 3g] [--master local[2]] [--partitions 8] [--keep 0.7]
        [--data-dir DIR] [--timeout S] [--no-memory] [--repeat 1] [--kinds write,hand,rules]
        [--json OUT.json] [--merge EARLIER.json]

The workload is benchmarks/gravitino_workload.py's (seed 1) as the CSV files
benchmarks/spark_bench.py writes (the same ``--data-dir``, generated there when missing). Each
measurement runs in a fresh process with its own Spark JVM (one JVM at a time), with the bench
session settings of spark_bench.py (``local[2]``, adaptive execution on, UI off):

(a) **write**: the cost of writing N answer-shaped rows ``(subject, operation, resource)`` as
    Parquet from a DataFrame built cheaply: the tables (``entity`` rows of type ``table``,
    spread over ``--partitions`` partitions) cross-joined with the broadcast registered users
    and filtered by a hash of the pair (``--keep``, default 0.7: the answer's share at 10k
    tables; 0.26 at 100k, so compare per million rows). Timed
    twice in the same JVM: into Spark's ``noop`` sink (building the rows only), then as Parquet.
(b) **hand**: a hand-written plan of the answer ``allowed(U, load_table, T)`` of
    rules/gravitino.gl, every registered user × every table, the best I can write:

    * the small relations (``privilege``, ``owner``, ``member``, ``role_of``,
      ``metalake_user``, the non-table objects of ``entity`` and ``contains``) collected to the
      driver; there, for each user and each object X that may hold tables (a non-table object
      with a schema at or above it), whether every table directly below X is allowed *from the
      levels above the table* (the catalog and schema prerequisites, DENY over ALLOW per
      privilege, ownership, registration): ``dense(X, U)``;
    * the few (user, table) pairs where the table's own facts change that (a SELECT_TABLE /
      MODIFY_TABLE grant or DENY on the table to a role the user holds, an owner fact on the
      table) decided on the driver in full: the pairs allowed although ``dense`` says no
      (``add``) and refused although it says yes (``drop``);
    * on Spark, one stage per partition: the tables with their parent (``entity`` ⋈
      ``contains``, O(tables), spread over ``--partitions``) streamed through a broadcast hash
      join with ``dense`` on X, a broadcast anti join with ``drop``, unioned (no distinct: the
      hierarchy is a tree and the parts are disjoint) with ``add``, written as Parquet by each
      partition.

    It assumes what Gravitino guarantees: the hierarchy is a tree (one parent per object).
(c) **rules**: the same answer by the rules' own relations, without (b)'s use of the tree (no
    per-parent decision): every table's ``ancestor_or_self`` chain (itself and its parent's
    path, a broadcast map) streamed, partitioned by table, through one broadcast hash join
    with the per-object flags the small strata give (``can_use_schema(U, A)``, ALLOW / DENY
    of SELECT_TABLE and MODIFY_TABLE set on A reaching U through a role, U owns A), then
    grouped by (table, user) in the same stage (the partitioning by table serves the grouping:
    no shuffle of the rows) where DENY over ALLOW and the prerequisites are decided. The best
    a generic planner could do with the rules' joins, the negation as a grouped test, and
    every small side broadcast.

The in-memory side is spark_bench.py's ``--memory-mode list`` worker (every registered user's
``Reasoner.list(u, "load_table", type="table")``, process CPU without the rows' hashing), run
once per size after the Spark runs (``--no-memory``: only at the ``--check`` sizes; elsewhere
the ratios are not shown). (b)'s and (c)'s answers are compared with it (count and the sum of
a hash of each row, as spark_bench.py does).

Reported per size: JVM CPU (user + system from /proc, the machine is shared), the driver's
Python CPU, wall, per million answer rows, and the ratio to the in-memory listing's CPU. Prints
a markdown section; writes nothing to RESULTS.md. Not a unit test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import spark_bench as sbench
from spark_bench import _child_pids, _cpu_s, _hwm_kib, loadavg

OP = "load_table"
COLS = ("subject", "operation", "resource")
TABLE = "table"
#: the privileges that let a user load a table (rules/gravitino.gl `reads_table`)
READS = ("select_table", "modify_table")


# ---------------------------------------------------------------------------------------------
# the Spark side (each worker in its own process)


class Meter:
    """JVM CPU (the Python process's child: the Spark JVM) and wall, per phase."""

    def __init__(self) -> None:
        self.phases: dict[str, dict[str, float]] = {}
        self.last = self.now()

    def jvm(self) -> float:
        return sum(_cpu_s(p) for p in _child_pids())

    def now(self) -> dict[str, float]:
        return {"wall": time.perf_counter(), "jvm": self.jvm(), "py": time.process_time()}

    def mark(self, name: str) -> None:
        cur = self.now()
        self.phases[name] = {k: cur[k] - self.last[k] for k in cur}
        self.last = cur
        p = self.phases[name]
        print(f"{name:>12}: {p['wall']:7.1f} s wall {p['jvm']:7.1f} s JVM CPU "
              f"{p['py']:6.1f} s Python", file=sys.stderr, flush=True)


def session(args: argparse.Namespace, data: Path) -> Any:
    """spark_bench.py's session settings (driver memory capped by ``--driver-memory``)"""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return sbench.session(args, data, "grantlog-spark-floor")


def read_csv(spark: Any, data: Path, rel: str, cols: Sequence[str]) -> Any:
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField(c, T.StringType(), True) for c in cols])
    path = data / f"{rel}.csv"
    if not path.exists():
        return spark.createDataFrame([], schema)
    return spark.read.csv(str(path), header=True, schema=schema, mode="FAILFAST")


def answer_stats(spark: Any, out: Path) -> dict[str, int]:
    """count and the sum of a hash of each row, as spark_bench.py checks them"""
    from pyspark.sql import functions as F

    ans = spark.read.parquet(str(out))
    key = F.concat_ws("\u0000", *[F.col(c) for c in ans.columns])
    h = F.conv(F.substring(F.sha1(key), 1, 8), 16, 10).cast("long")
    agg = ans.agg(F.count(F.lit(1)).alias("n"), F.sum(h).alias("h")).collect()[0]
    return {"answers": int(agg["n"]), "hash": int(agg["h"] or 0)}


def work_write(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    """(a): N answer-shaped rows, built cheaply, into the noop sink and then as Parquet"""
    from pyspark.sql import functions as F

    m = Meter()
    spark = session(args, data)
    m.mark("session")
    tables = (read_csv(spark, data, "entity", ("object", "type"))
              .where(F.col("type") == TABLE).select(F.col("object").alias("T"))
              .repartition(args.partitions))
    users = read_csv(spark, data, "metalake_user", ("user", "metalake")).select(
        F.col("user").alias("U")).distinct()
    keep = int(args.keep * 1000)
    rows = (tables.crossJoin(F.broadcast(users))
            .where(F.pmod(F.xxhash64("U", "T"), F.lit(1000)) < keep)
            .select(F.col("U").alias(COLS[0]), F.lit(OP).alias(COLS[1]),
                    F.col("T").alias(COLS[2])))
    rows.write.format("noop").mode("overwrite").save()
    m.mark("noop")
    out = data / "floor-write"
    rows.write.mode("overwrite").parquet(str(out))
    m.mark("parquet")
    stats = answer_stats(spark, out)
    jvm_kib = max((_hwm_kib(p) for p in _child_pids()), default=0)
    spark.stop()
    return {"phases": m.phases, "jvm_peak_mib": jvm_kib / 1024, **stats}


class Hierarchy:
    """The non-table part of the tree, on the driver: each object's type, parent and path
    (itself, then its ancestors up to the root)."""

    def __init__(self, types: dict[str, str], parent: dict[str, str]) -> None:
        self.types = types
        self.parent = parent
        self._paths: dict[str, tuple[str, ...]] = {}

    def path(self, o: str) -> tuple[str, ...]:
        got = self._paths.get(o)
        if got is None:
            p = self.parent.get(o)
            got = (o,) if p is None or p == o else (o, *self.path(p))
            self._paths[o] = got
        return got


class Model:
    """rules/gravitino.gl's ``allowed(U, load_table, T)``, read by hand on the driver for the
    levels above the tables: the non-table objects (``types``, ``parent``; a tree), the tables
    with facts of their own (``table_parent``), and the small relations (``small``, the rule
    files' ``facts``)."""

    def __init__(self, small: dict[str, list[tuple[str, ...]]], facts: dict[str, list[tuple]],
                 types: dict[str, str], parent: dict[str, str],
                 table_parent: dict[str, str]) -> None:
        self.h = Hierarchy(types, parent)
        self.types = types
        self.table_parent = table_parent
        supports: dict[str, set[str]] = {}
        for p, t in facts["supports"]:
            supports.setdefault(p, set()).add(t)
        deprecated = {old: new for old, new in facts["deprecated"]}
        conditions = {c for (c,) in facts["condition"]}
        ownable = {t for (t,) in facts["ownable"]}
        self.disabled = bool(small.get("authorization_disabled"))
        # holds(U, R): direct roles and the roles of the user's groups
        role_of: dict[str, set[str]] = {}
        for p, r in small["role_of"]:
            role_of.setdefault(p, set()).add(r)
        self.roles: dict[str, set[str]] = {u: set(rs) for u, rs in role_of.items()}
        for u, g in small["member"]:
            self.roles.setdefault(u, set()).update(role_of.get(g, ()))
        self.member_of: dict[str, set[str]] = {}  # user -> metalakes
        for u, ml in small["metalake_user"]:
            self.member_of.setdefault(u, set()).add(ml)
        self.users = sorted(self.member_of)
        # grant(R, P, A, C): valid grants (deprecated names replaced)
        self.grants: dict[tuple[str, str, str], set[str]] = {}  # (object, priv, cond) -> roles
        for r, p, o, c in small["privilege"]:
            t = types.get(o)
            if t is None or c not in conditions:
                continue
            for q in (p, deprecated.get(p)):
                if q is not None and t in supports.get(p, ()):
                    self.grants.setdefault((o, q, c), set()).add(r)
        self.owners: dict[str, set[str]] = {}
        for o, u in small["owner"]:
            if types.get(o) in ownable:
                self.owners.setdefault(o, set()).add(u)
        self.holders: dict[str, list[str]] = {}  # role -> registered users holding it
        for u in self.users:
            for r in self.roles.get(u, ()):
                self.holders.setdefault(r, []).append(u)
        self._ml: dict[str, frozenset[str]] = {}
        self._ctl: dict[str, frozenset[str]] = {}
        self._up: dict[tuple[str, str, str], frozenset[str]] = {}
        self._level: dict[tuple[str, str], tuple[bool, bool, bool]] = {}

    def metalakes(self, o: str) -> frozenset[str]:
        got = self._ml.get(o)
        if got is None:
            got = self._ml[o] = frozenset(a for a in self.h.path(o)
                                          if self.types.get(a) == "metalake")
        return got

    def registered(self, u: str, o: str) -> bool:
        return bool(self.member_of.get(u, set()) & self.metalakes(o))

    def controllers(self, o: str) -> frozenset[str]:
        """controls(U, o): the registered owners of o or an ancestor (every registered user
        when authorization is disabled)"""
        got = self._ctl.get(o)
        if got is None:
            got = frozenset(u for a in self.h.path(o) for u in self.owners.get(a, ())
                            if self.registered(u, a))
            if self.disabled:
                got |= {u for u in self.users if self.registered(u, o)}
            self._ctl[o] = got
        return got

    def inherited(self, o: str, p: str, c: str) -> frozenset[str]:
        """the roles with a grant of ``p`` under condition ``c`` on ``o`` or an ancestor"""
        key = (o, p, c)
        got = self._up.get(key)
        if got is None:
            got = self._up[key] = frozenset().union(
                *(self.grants.get((a, p, c), ()) for a in self.h.path(o)))
        return got

    def privileged(self, rs: set[str], p: str, o: str) -> bool:
        return (not rs.isdisjoint(self.inherited(o, p, "allow"))
                and rs.isdisjoint(self.inherited(o, p, "deny")))

    def authorized(self, u: str, rs: set[str], p: str, o: str, reg: bool) -> bool:
        return u in self.controllers(o) or (reg and self.privileged(rs, p, o))

    def can_use_schema(self, u: str, rs: set[str], s: str, reg: bool) -> bool:
        return (self.types.get(s) == "schema"
                and self.authorized(u, rs, "use_schema", s, reg)
                and any(self.types.get(c) == "catalog"
                        and self.authorized(u, rs, "use_catalog", c, reg)
                        for c in self.h.path(s)))

    def level(self, u: str, x: str, keep: bool = True) -> tuple[bool, bool, bool]:
        """(in_usable_schema, registered, controls) of u for a table below x (remembered
        when ``keep``)"""
        got = self._level.get((u, x))
        if got is None:
            rs = self.roles.get(u, set())
            reg = self.registered(u, x)
            got = (any(self.can_use_schema(u, rs, s, reg) for s in self.h.path(x)), reg,
                   u in self.controllers(x))
            if keep:
                self._level[(u, x)] = got
        return got

    def holding(self, x: str) -> bool:
        """x may hold tables that are loadable: a non-table object with a schema at or above"""
        return (self.types.get(x) != TABLE
                and any(self.types.get(a) == "schema" for a in self.h.path(x)))

    def decide(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]],
                              list[tuple[str, str]], int]:
        """``dense`` (X, U): every table directly below X is allowed to U by the levels above
        the table; ``add``/``drop`` (U, T): the tables whose own facts turn that around."""
        xs = [x for x in self.types if self.holding(x)]
        dense: list[tuple[str, str]] = []
        for x in xs:
            for u in self.users:
                rs = self.roles.get(u, set())
                ok, reg, ctl = self.level(u, x, keep=False)
                if ok and (ctl or (reg and any(self.privileged(rs, p, x) for p in READS))):
                    dense.append((x, u))
        dense_set = set(dense)
        add: list[tuple[str, str]] = []
        drop: list[tuple[str, str]] = []
        for t, x in self.table_parent.items():
            reach = set(self.owners.get(t, ()))
            for p in READS:
                for c in ("allow", "deny"):
                    for r in self.grants.get((t, p, c), ()):
                        reach.update(self.holders.get(r, ()))
            for u in reach & self.member_of.keys():
                rs = self.roles.get(u, set())
                ok, reg, ctl = self.level(u, x)
                yes = ok and (u in self.controllers(t)
                              or (reg and any(self.privileged(rs, p, t) for p in READS)))
                was = (x, u) in dense_set
                if yes and not was:
                    add.append((u, t))
                elif was and not yes:
                    drop.append((u, t))
        return dense, add, drop, len(xs)

    def flags(self) -> list[tuple[str, str, str]]:
        """(c)'s broadcast side, (A, U, flag) with A an object, by the rules' relations: ``u``
        can_use_schema(U, A); ``o`` U owns A (registered); ``a:<p>`` / ``d:<p>`` an ALLOW
        (registered) / DENY of a reading privilege set on A reaches U through a role."""
        out: list[tuple[str, str, str]] = []
        for (a, p, c), rs in self.grants.items():
            if p not in READS:
                continue
            us = {u for r in rs for u in self.holders.get(r, ())}
            out += [(a, u, f"{c[0]}:{p}") for u in us
                    if c == "deny" or self.registered(u, a)]
        for a, us in self.owners.items():
            out += [(a, u, "o") for u in us if self.registered(u, a)]
        if self.disabled:  # pass_through: every user of a metalake controls it
            out += [(ml, u, "o") for u in self.users for ml in self.member_of[u]]
        for s, t in self.types.items():
            if t == "schema":
                out += [(s, u, "u") for u in self.users
                        if self.can_use_schema(u, self.roles.get(u, set()), s,
                                               self.registered(u, s))]
        return out


def work_rules(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    """(c): the rules' own relations in one stage (no leaf factoring)"""
    from pyspark.sql import functions as F

    m = Meter()
    spark = session(args, data)
    m.mark("session")
    model, entity, contains = small_side(spark, data)
    m.mark("small")
    flags = model.flags()
    # (X, A) for A at or above X, and (X, "") standing for the table itself
    paths = [(x, a) for x in model.types if model.holding(x) for a in ("", *model.h.path(x))]
    m.mark("driver")
    tables = entity.where(F.col("type") == TABLE).select(F.col("object").alias("T"))
    tx = (contains.join(tables, contains["child"] == tables["T"], "inner")
          .select("T", F.col("parent").alias("X")).repartition(args.partitions, "T"))
    # ancestor_or_self(A, T) of every table: itself and its parent's path (a tree)
    chain = tx.join(F.broadcast(arrow_df(spark, ("X", "A"), paths)), "X").select(
        "T", F.when(F.col("A") == "", F.col("T")).otherwise(F.col("A")).alias("A"))
    got = chain.join(F.broadcast(arrow_df(spark, ("A", "U", "f"), flags)), "A")

    def has(f: str) -> Any:
        return F.max(F.col("f") == f)

    agg = got.groupBy("T", "U").agg(
        has("u").alias("usable"), has("o").alias("owned"),
        *[(has(f"a:{p}") & ~has(f"d:{p}")).alias(p) for p in READS])
    rows = agg.where(F.col("usable") & (F.col("owned") | F.col(READS[0]) | F.col(READS[1]))).select(
        F.col("U").alias(COLS[0]), F.lit(OP).alias(COLS[1]), F.col("T").alias(COLS[2]))
    out = data / "floor-rules"
    rows.write.mode("overwrite").parquet(str(out))
    m.mark("stream+write")
    plan = rows._jdf.queryExecution().executedPlan().toString()
    stats = answer_stats(spark, out)
    jvm_kib = max((_hwm_kib(p) for p in _child_pids()), default=0)
    spark.stop()
    return {"phases": m.phases, "jvm_peak_mib": jvm_kib / 1024, "flags": len(flags),
            "shuffles": plan.count("Exchange") - plan.count("BroadcastExchange"),
            "broadcasts": plan.count("BroadcastExchange"), "plan": plan, **stats}


def arrow_df(spark: Any, cols: Sequence[str], rows: Sequence[tuple[str, ...]]) -> Any:
    """a local relation of string columns (an Arrow table: no Python worker reads it)"""
    import pyarrow as pa

    return spark.createDataFrame(pa.table({c: pa.array([r[i] for r in rows], pa.string())
                                           for i, c in enumerate(cols)}))


def small_side(spark: Any, data: Path) -> tuple[Model, Any, Any]:
    """the small relations collected, the non-table objects and the tables with facts of
    their own read from the big ones (broadcast semi-joins), the model on the driver"""
    from grantlog.rules import model_path
    from pyspark.sql import functions as F

    import grantlog

    path = model_path("gravitino")
    assert path is not None
    program = grantlog.compile(paths=[path])
    facts: dict[str, list[tuple]] = {}
    for f in program.facts:
        facts.setdefault(f.rel, []).append(tuple(map(str, f.row)))
    for name in ("supports", "deprecated", "condition", "ownable"):
        facts.setdefault(name, [])

    def rel(name: str) -> Any:
        return read_csv(spark, data, name, program.relations[name].columns)

    small = {name: [tuple(r) for r in rel(name).collect()] if (data / f"{name}.csv").exists()
             else [] for name in ("privilege", "owner", "member", "role_of", "metalake_user",
                                  "authorization_disabled")}
    own = sorted({r[2] for r in small["privilege"]} | {r[0] for r in small["owner"]})
    own_df = F.broadcast(arrow_df(spark, ("o",), [(o,) for o in own]))
    entity, contains = rel("entity"), rel("contains")
    picked = entity.join(own_df, entity["object"] == own_df["o"], "left").where(
        (F.col("type") != TABLE) | F.col("o").isNotNull()).select("object", "type")
    types = {o: t for o, t in picked.collect()}
    known = F.broadcast(arrow_df(spark, ("o",), [(o,) for o in sorted(types)]))
    edges = contains.join(known, contains["child"] == known["o"], "left_semi").collect()
    parent = {c: p for p, c in edges}
    table_parent = {c: p for c, p in parent.items() if types.get(c) == TABLE}
    return Model(small, facts, types, parent, table_parent), entity, contains


def work_hand(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    """(b): the hand-written plan"""
    from pyspark.sql import functions as F

    m = Meter()
    spark = session(args, data)
    m.mark("session")
    model, entity, contains = small_side(spark, data)
    m.mark("small")
    dense, add, drop, n_x = model.decide()
    m.mark("driver")
    # the big side: every table with its parent, spread over the partitions
    tables = entity.where(F.col("type") == TABLE).select(F.col("object").alias("T"))
    tx = (contains.join(tables, contains["child"] == tables["T"], "inner")
          .select("T", F.col("parent").alias("X")).repartition(args.partitions))
    rows = tx.join(F.broadcast(arrow_df(spark, ("X", "U"), dense)), "X").select("U", "T")
    if drop:
        rows = rows.join(F.broadcast(arrow_df(spark, ("U", "T"), drop)), ["U", "T"],
                         "left_anti")
    if add:
        rows = rows.unionByName(arrow_df(spark, ("U", "T"), add))
    rows = rows.select(F.col("U").alias(COLS[0]), F.lit(OP).alias(COLS[1]),
                       F.col("T").alias(COLS[2]))
    out = data / "floor-hand"
    rows.write.mode("overwrite").parquet(str(out))
    m.mark("stream+write")
    plan = rows._jdf.queryExecution().executedPlan().toString()
    stats = answer_stats(spark, out)
    jvm_kib = max((_hwm_kib(p) for p in _child_pids()), default=0)
    spark.stop()
    return {"phases": m.phases, "jvm_peak_mib": jvm_kib / 1024, "dense": len(dense),
            "objects_x": n_x, "add": len(add), "drop": len(drop),
            "shuffles": plan.count("Exchange") - plan.count("BroadcastExchange"),
            "broadcasts": plan.count("BroadcastExchange"), "plan": plan, **stats}


# ---------------------------------------------------------------------------------------------
# the driver


def run_worker(args: argparse.Namespace, kind: str, n: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", kind, "--sizes", str(n), "--data-dir",
           str(args.data_dir), "--driver-memory", args.driver_memory, "--master", args.master,
           "--partitions", str(args.partitions), "--keep", str(args.keep)]
    if kind == "memory":
        cmd = [sys.executable, sbench.__file__, "--worker", "memory", "--sizes", str(n),
               "--data-dir", str(args.data_dir), "--catalog", "all", "--memory-mode", "list",
               "--memory-limit-gb", "6"]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, timeout=args.timeout, text=True)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout:.0f} s"}
    if p.returncode != 0:
        return {"error": f"exit status {p.returncode}"}
    res: dict[str, Any] = json.loads(p.stdout.strip().splitlines()[-1])
    res["wall_s"] = time.perf_counter() - t0
    res["load"] = loadavg()
    return res


def total(r: dict[str, Any], key: str, skip: Sequence[str] = ("session",)) -> float:
    return sum(v[key] for k, v in r["phases"].items() if k not in skip)


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def report(args: argparse.Namespace, runs: dict[int, dict[str, Any]], started: str) -> str:
    cmd = " ".join(["python", "benchmarks/spark_floor.py", *sys.argv[1:]])
    out = [f"Run {started}. Command: `.venv/bin/{cmd}`; `{args.master}`, "
           f"`spark.driver.memory={args.driver_memory}`, {args.partitions} partitions for the "
           "streamed side, adaptive execution on. JVM CPU is user + system from /proc, "
           "without the session start (shown apart); medians of the runs.", ""]
    sizes = sorted(runs)

    def cell(f: Any) -> list[str]:
        got = []
        for n in sizes:
            try:
                got.append(f(runs[n]))
            except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError,
                    statistics.StatisticsError):
                got.append("—")
        return got

    def ok(r: dict[str, Any], kind: str) -> list[dict[str, Any]]:
        return [x for x in r[kind] if "error" not in x]

    def jvm(r: dict[str, Any], kind: str, phases: Sequence[str] | None = None) -> float:
        xs = ok(r, kind)
        if phases is None:
            return med([total(x, "jvm") for x in xs])
        return med([sum(x["phases"][p]["jvm"] for p in phases) for x in xs])

    def rows(r: dict[str, Any], kind: str) -> int:
        return int(ok(r, kind)[0]["answers"])

    def mem_cpu(r: dict[str, Any]) -> float:
        return float(r["memory"]["cpu_s"])

    def py(r: dict[str, Any], kind: str = "hand") -> float:
        return med([total(x, "py") for x in ok(r, kind)])

    def per_m(x: float, n: int) -> str:
        return f"{x / n * 1e6:,.1f} s/M"

    table = [("| " + " | ".join(["size (tables)", *[f"{n:,}" for n in sizes]]) + " |"),
             "|---|" + "--:|" * len(sizes)]

    def line(label: str, f: Any) -> None:
        table.append("| " + " | ".join([label, *cell(f)]) + " |")

    line("answers (user, load_table, table)", lambda r: f"{rows(r, 'hand'):,}")
    line("in-memory `list` per user: CPU (wall), the rows' hashing left out",
         lambda r: f"{mem_cpu(r):,.1f} s ({r['memory']['total_s']:,.1f} s)")
    line("in-memory CPU per million answers", lambda r: per_m(mem_cpu(r), rows(r, "hand")))
    line("Spark session start, JVM CPU (not below)",
         lambda r: f"{med([x['phases']['session']['jvm'] for x in ok(r, 'hand')]):,.1f} s")
    line("(a) rows written: noop sink / Parquet", lambda r: f"{rows(r, 'write'):,}")
    line("(a) JVM CPU: build rows (noop) / + Parquet",
         lambda r: f"{jvm(r, 'write', ['noop']):,.1f} s / {jvm(r, 'write', ['parquet']):,.1f} s")
    line("(a) Parquet write per million rows",
         lambda r: per_m(jvm(r, "write", ["parquet"]), rows(r, "write")))
    line("(b) JVM CPU: small relations read / stream + write",
         lambda r: f"{jvm(r, 'hand', ['small']):,.1f} s / "
                   f"{jvm(r, 'hand', ['stream+write']):,.1f} s")
    line("(b) Python CPU on the driver (decisions above the tables)",
         lambda r: f"{med([x['phases']['driver']['py'] for x in ok(r, 'hand')]):,.1f} s")
    line("(b) broadcast sizes: dense (X, U) / add / drop",
         lambda r: "{dense:,} / {add:,} / {drop:,}".format(**ok(r, "hand")[0]))
    line("(b) executed plan: shuffles / broadcasts",
         lambda r: "{shuffles} / {broadcasts}".format(**ok(r, "hand")[0]))
    line("(b) JVM CPU, whole (no session) + Python",
         lambda r: f"{jvm(r, 'hand'):,.1f} s + "
                   f"{med([total(x, 'py') for x in ok(r, 'hand')]):,.1f} s")
    line("(b) wall, whole (no session)",
         lambda r: f"{med([total(x, 'wall') for x in ok(r, 'hand')]):,.1f} s")
    line("(b) JVM CPU per million answers",
         lambda r: per_m(jvm(r, "hand"), rows(r, "hand")))
    line("(b) JVM + Python CPU / in-memory CPU",
         lambda r: f"{(jvm(r, 'hand') + py(r)) / mem_cpu(r):.2f}×")
    line("(b) JVM CPU alone / in-memory CPU",
         lambda r: f"{jvm(r, 'hand') / mem_cpu(r):.2f}×")
    line("(b) same answers as in memory (count, row hash)",
         lambda r: "yes" if (ok(r, "hand")[0]["answers"], ok(r, "hand")[0]["hash"])
         == (r["memory"]["answers"], r["memory"]["hash"]) else "**NO**")
    line("(c) broadcast flags (A, U, flag)", lambda r: f"{ok(r, 'rules')[0]['flags']:,}")
    line("(c) executed plan: shuffles / broadcasts",
         lambda r: "{shuffles} / {broadcasts}".format(**ok(r, "rules")[0]))
    line("(c) JVM CPU: small relations read / stream + write",
         lambda r: f"{jvm(r, 'rules', ['small']):,.1f} s / "
                   f"{jvm(r, 'rules', ['stream+write']):,.1f} s")
    line("(c) JVM CPU, whole (no session) + Python",
         lambda r: f"{jvm(r, 'rules'):,.1f} s + "
                   f"{med([total(x, 'py') for x in ok(r, 'rules')]):,.1f} s")
    line("(c) JVM CPU per million answers",
         lambda r: per_m(jvm(r, "rules"), rows(r, "rules")))
    line("(c) JVM + Python CPU / in-memory CPU",
         lambda r: f"{(jvm(r, 'rules') + py(r, 'rules')) / mem_cpu(r):.2f}×")
    line("(c) same answers as in memory (count, row hash)",
         lambda r: "yes" if (ok(r, "rules")[0]["answers"], ok(r, "rules")[0]["hash"])
         == (r["memory"]["answers"], r["memory"]["hash"]) else "**NO**")
    line("JVM peak RSS (a) / (b) / (c)",
         lambda r: " / ".join(f"{ok(r, k)[0]['jvm_peak_mib']:,.0f}" if ok(r, k) else "—"
                              for k in ("write", "hand", "rules")) + " MiB")
    line("load average (1 min) as (b) ended",
         lambda r: ok(r, "hand")[0]["load"].split(" / ")[0])
    return "\n".join(out + table)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,3000,10000")
    ap.add_argument("--check", default="1000,3000",
                    help="sizes whose (b) answers are compared with the in-memory engine's")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="3g")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--keep", type=float, default=0.7, help="(a): share of users × tables")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=1800.0, help="per worker, seconds")
    ap.add_argument("--no-memory", action="store_true", help="skip the in-memory listing")
    ap.add_argument("--data-dir", type=Path,
                    default=Path(os.environ.get("TMPDIR", "/tmp")) / "grantlog-spark-bench")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    ap.add_argument("--merge", type=Path,
                    help="a --json file of earlier runs: kept, this run's measurements added "
                         "(the in-memory listing is not run again for a size it has)")
    ap.add_argument("--kinds", default="write,hand,rules",
                    help="which Spark measurements: write (a), hand (b), rules (c)")
    ap.add_argument("--worker", choices=list(WORKERS), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.worker:
        data = args.data_dir / str(sizes[0])
        res = WORKERS[args.worker](args, data)
        print(json.dumps(res))
        return 0
    check = {int(s) for s in args.check.split(",") if s}
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    runs: dict[int, dict[str, Any]] = {}
    if args.merge:  # earlier runs: their measurements are kept, this run's are added
        runs = {int(n): r for n, r in json.loads(args.merge.read_text("utf-8")).items()}
    for n in sizes:
        data = args.data_dir / str(n)
        if not (data / "meta.json").exists():
            gen = sbench.run_worker("generate", sbench_args(args), n, args.timeout)
            if "error" in gen:
                print(f"[{n:,}] generation failed: {gen['error']}", file=sys.stderr)
                return 1
        kinds = [k for k in args.kinds.split(",") if k]  # none: the report of --merge only
        run: dict[str, Any] = runs.get(n) or {"n": n}
        for kind in WORKERS:
            run.setdefault(kind, [])
        for k in range(args.repeat):
            for kind in kinds:
                print(f"[{n:,}] {kind} run {k + 1} (load {loadavg()})", file=sys.stderr,
                      flush=True)
                run[kind].append(run_worker(args, kind, n))
        if "memory" not in run and (not args.no_memory or n in check):
            print(f"[{n:,}] in-memory list (load {loadavg()})", file=sys.stderr, flush=True)
            run["memory"] = run_worker(args, "memory", n)
        runs[n] = run
        if args.json:
            args.json.write_text(json.dumps(runs, indent=1), encoding="utf-8")
    print(report(args, runs, started))
    return 0


WORKERS = {"write": work_write, "hand": work_hand, "rules": work_rules}


def sbench_args(args: argparse.Namespace) -> argparse.Namespace:
    """spark_bench.py's worker arguments for generating the workload"""
    return argparse.Namespace(data_dir=args.data_dir, catalog="all",
                              driver_memory=args.driver_memory, memory_limit_gb=6.0,
                              master=args.master, partitions=args.partitions,
                              memory_mode="list", driver_rows=0)


if __name__ == "__main__":
    sys.exit(main())
