"""``grantlog spark run``: evaluate rule files on Spark, inputs from files, outputs to Parquet.

::

    grantlog spark run [--model NAME] [FILE ...] [--facts FILE]... [--json]
                       [--input REL=PATH[:FORMAT]]... [--inputs MAPPING]
                       --output DIR [-r REL]... [--goal ATOM [--where LITERALS]]
                       [--master URL] [--conf KEY=VALUE]... [--with-reasons]
                       [--explain-plan] [--closure auto|doubling|graphframes|semi-naive]
                       [--max-iterations N] [--broadcast-rows N] [--local-rows N]
                       [--checkpoint-dir DIR]
                       [--progress | --quiet]
                       [--filters OPERATION [--type T] (--subject S | --subjects-from REL)]

The rules are read as by every command (grantlog/cli/inputs.py): ``--model``, the FILE
arguments (``--rules FILE``, repeatable, is the same), then ``--facts``. Writes each chosen
relation (default: every derived relation; with ``--goal``, the goal's
answers) to ``DIR/<rel>/`` as Parquet and shows progress (a bar over the strata and one over
the writes, a line per stratum and iteration with its rows and seconds: engine/core/progress.py,
as every command) on stderr when stderr is a terminal (``--progress``: always, ``--quiet``:
never; warnings and errors always). With ``-r`` and no goal, only the chosen relations' dependency
cone is evaluated (engine/compile/restrict.py).
``--goal 'allowed(U, load_table, T)' --where 'catalog_of(T, "m1.c1")'``
computes only those rows of ``allowed`` (the program rewritten for the goal, engine/plan/magic.py)
and writes them to ``DIR/allowed/``. ``--filters load_table --type table --subjects-from
metalake_user`` writes each subject's data filter instead (``DIR/filters/``: one row per
subject, the condition as JSON; spark_bridge/filters.py), for access reviews that join them
with the catalog later. Exit codes as the main CLI: 0 success, 2 a user error
(diagnostics on stderr), 3 an internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grantlog.engine.core import progress


def add_parser(sub: Any) -> None:
    """Register ``spark run`` with the main command line (grantlog/cli/main.py): the rule
    inputs as every command takes them (``--model``, FILE..., ``--facts``;
    grantlog/cli/inputs.py), ``-r`` for ``--relation`` and ``--json`` as everywhere."""
    from grantlog.cli.inputs import HELP_STRICT, add_inputs, add_json, add_progress

    from .local import DRIVER_ROWS, LOCAL_ROWS

    p = sub.add_parser("spark", help="bulk evaluation on Spark (see `grantlog spark run -h`)",
                       description="bulk evaluation on Spark")
    ssub = p.add_subparsers(dest="spark_command", required=True, metavar="COMMAND")
    r = ssub.add_parser("run", help="evaluate rule files on Spark and write the results",
                        description="evaluate rule files on Spark and write each relation "
                        "(or each subject's data filter) as Parquet")
    add_inputs(r, store=False)
    r.add_argument("--rules", action="append", default=[], metavar="FILE",
                   help="a rule file, as a FILE argument (repeatable)")
    r.add_argument("--input", action="append", default=[], metavar="REL=PATH[:FORMAT]",
                   help="rows of a base relation (parquet, csv with a header, json lines)")
    r.add_argument("--inputs", metavar="MAPPING",
                   help="a JSON or TOML file: relation -> {path, format, columns, header}")
    r.add_argument("--output", "-o", required=True, metavar="DIR",
                   help="Parquet output directory")
    r.add_argument("--relation", "-r", action="append", default=[], metavar="REL",
                   help="relation to write (repeatable; default: every derived relation)")
    r.add_argument("--goal", metavar="ATOM",
                   help="compute only the rows of one relation matching ATOM, e.g. "
                        "'allowed(U, load_table, T)' (constants and variables)")
    r.add_argument("--where", metavar="LITERALS",
                   help="conditions on the goal's variables, evaluated first, e.g. "
                        "'catalog_of(T, \"m1.c1\")' (needs --goal)")
    r.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    r.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark configuration setting (repeatable), e.g. "
                        "spark.driver.memory=8g")
    r.add_argument("--with-reasons", action="store_true",
                   help="decision rows carry rule, reason_rel, reason_row")
    r.add_argument("--explain-plan", action="store_true",
                   help="print each rule's join plan and Spark's physical plan of the outputs")
    r.add_argument("--closure", default="auto",
                   choices=["auto", "doubling", "graphframes", "semi-naive"],
                   help="how transitive closures are computed (default auto: by shape)")
    r.add_argument("--max-iterations", type=int, default=10_000, metavar="N",
                   help="stop a recursive stratum after N iterations (iteration-limit)")
    r.add_argument("--broadcast-rows", type=int, default=100_000, metavar="N",
                   help="broadcast a join's side with at most N rows (default 100000)")
    r.add_argument("--local-rows", type=int, default=LOCAL_ROWS, metavar="N",
                   help="without --goal, evaluate on the driver with the in-memory engine "
                        f"when facts and inputs hold at most N rows (default {LOCAL_ROWS}; "
                        "0: always on Spark)")
    r.add_argument("--driver-rows", type=int, default=DRIVER_ROWS, metavar="N",
                   help="hold relations on the driver too while they hold at most N rows "
                        "in all, and evaluate there the strata that read only such relations, "
                        f"with or without --goal (default {DRIVER_ROWS}; 0: every stratum "
                        "on Spark)")
    r.add_argument("--no-symmetry", action="store_true",
                   help="do not run on one representative per class of interchangeable input "
                        "values (default: on inputs of 1 MiB or more, where found sound)")
    r.add_argument("--exceptions", choices=["on", "off", "auto"], default="auto",
                   help="with --goal: run values with facts of their own as members of the "
                        "class their other facts match, their own answers decided on the "
                        "driver (auto: with the rewrite above, where sound; not with "
                        "--with-reasons)")
    r.add_argument("--checkpoint-dir", metavar="DIR",
                   help="Spark checkpoint directory (default: a temp dir)")
    r.add_argument("--strict", action="store_true", help=HELP_STRICT)
    add_progress(r, "progress on stderr (a bar over the strata, and a line per stratum with "
                 "its relations, rows and seconds) even when stderr is not a terminal "
                 "(default: only on a terminal)")
    add_json(r, "print a JSON summary on stdout: what was written where, and the time taken")
    f = r.add_argument_group("filters in bulk (instead of every subject-resource pair)")
    f.add_argument("--filters", metavar="OPERATION",
                   help="write each subject's data filter for OPERATION to DIR/filters/ "
                        "(subject, operation, type, revision, condition JSON, error)")
    f.add_argument("--type", "-t", dest="resource_type", metavar="TYPE",
                   help="only resources of this type (with --filters)")
    f.add_argument("--subject", action="append", default=[], metavar="S",
                   help="a subject to filter for (repeatable)")
    f.add_argument("--subjects-from", metavar="REL[:COLUMN]",
                   help="every value of a column (default 0) of a base relation, e.g. "
                        "metalake_user")
    r.set_defaults(fn=cmd_run)


def main(argv: Sequence[str] | None = None) -> int:
    """``grantlog spark ...`` alone: ``argv`` are the arguments after ``spark``."""
    from grantlog.cli.parser import Parser

    parser = Parser(prog="grantlog")
    add_parser(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    args = parser.parse_args(["spark", *(sys.argv[1:] if argv is None else argv)])
    with progress.reporting(args.progress):  # as grantlog/cli/main.py does
        code: int = args.fn(args)
    return code


def cmd_run(args: argparse.Namespace) -> int:
    """``grantlog spark run``."""
    from grantlog.engine import compile_program
    from grantlog.grammar.diagnostics import GrantlogError

    from grantlog.cli.inputs import rule_files

    def warn(line: str) -> None:  # warnings and errors: always
        print(line, file=sys.stderr, flush=True)

    say = progress.note  # progress lines: shown as progress.reporting says (main)
    try:
        program = compile_program(paths=rule_files(args, [*args.rules, *args.files]),
                                  strict=args.strict)
        for w in program.warnings:
            warn(w.render(program.sources))
        from . import read_inputs, run
        from .schema import load_mapping, parse_input_arg

        specs = [parse_input_arg(a) for a in args.input]
        if args.inputs:
            specs += load_mapping(args.inputs)
        if args.where and not args.goal:
            from grantlog.grammar.diagnostics import NO_SPAN, error
            raise GrantlogError([error("bad-goal", "`--where` needs `--goal`", NO_SPAN)])
        if args.local_rows < 0:
            from grantlog.grammar.diagnostics import NO_SPAN, error
            raise GrantlogError([error(
                "bad-argument", f"`--local-rows` must be at least 0, not `{args.local_rows}`",
                NO_SPAN, help="0 runs on Spark whatever the size; N evaluates in memory up "
                "to N rows")])
        if args.driver_rows < 0:
            from grantlog.grammar.diagnostics import NO_SPAN, error
            raise GrantlogError([error(
                "bad-argument", f"`--driver-rows` must be at least 0, not `{args.driver_rows}`",
                NO_SPAN, help="0 runs every stratum on Spark")])
        conf = []
        for item in args.conf:
            key, eq, value = item.partition("=")
            if not eq or not key:
                from grantlog.grammar.diagnostics import NO_SPAN, error
                raise GrantlogError([error("bad-input", f"`--conf {item}` is not KEY=VALUE",
                                           NO_SPAN)])
            conf.append((key.strip(), value.strip()))
        unknown = [r for r in args.relation if r not in program.relations]
        if unknown:
            from grantlog.grammar.diagnostics import NO_SPAN, error
            raise GrantlogError([error("unknown-relation", f"no relation `{r}` to write",
                                       NO_SPAN) for r in unknown])
        if (args.subject or args.subjects_from or args.resource_type) and not args.filters:
            from grantlog.grammar.diagnostics import NO_SPAN, error
            raise GrantlogError([error("bad-option", "`--subject`, `--subjects-from` and "
                                       "`--type` go with `--filters`", NO_SPAN)])
        if args.relation and not args.goal and not args.filters:
            # only what the chosen relations depend on (their dependency cone) is evaluated
            from grantlog.engine.compile.restrict import restrict

            whole, program = program, restrict(program, args.relation)
            # inputs of relations outside the cone are not read (unknown ones still fail)
            specs = [s for s in specs if s.rel in program.relations
                     or s.rel not in whole.relations]
        t0 = time.perf_counter()
        spark = _session(args.master, args.checkpoint_dir, conf)
        say(f"spark session {args.master} ready ({time.perf_counter() - t0:.1f} s)")
        inputs = read_inputs(spark, program, specs)
        if args.filters:
            return _filters(args, program, spark, inputs, say, t0)
        result = run(program, spark, inputs, with_reasons=args.with_reasons,
                     closure=args.closure, max_iterations=args.max_iterations,
                     broadcast_rows=args.broadcast_rows, progress=say, goal=args.goal,
                     where=args.where, local_rows=args.local_rows,
                     driver_rows=args.driver_rows,
                     symmetry=False if args.no_symmetry else None,
                     exceptions={"on": True, "off": False}.get(args.exceptions))
        if args.explain_plan:
            if result.demand is not None:
                for line in result.demand.describe().splitlines():
                    print(f"rewritten {line}")
            for line in result.plans:
                print(f"plan {line}")
        if result.demand is not None:
            names = args.relation or [result.demand.goal.rel]
        else:
            names = args.relation or sorted(program.derived)
        if missing := [n for n in names if n not in result.relations]:
            from grantlog.grammar.diagnostics import NO_SPAN, error
            raise GrantlogError([error(
                "not-computed", f"`{n}` is not among this run's results: with `--goal` the run "
                "computes what the goal needs, and when values with facts of their own ran as "
                "members of a class (`--exceptions`), it keeps only the goal's answers",
                NO_SPAN, help="drop `--goal`, or add `--exceptions off`") for n in missing])
        out = Path(args.output)
        with progress.task("writing Parquet", len(names), "relation") as advance:
            for rel in names:
                df = result.relations[rel]
                if args.explain_plan:
                    print(f"-- spark plan of {rel}")
                    print(df._jdf.queryExecution().simpleString())
                advance(0, postfix=rel)  # a lazy relation is computed as it is written
                t1 = time.perf_counter()
                df.write.mode("overwrite").parquet(str(out / rel))
                say(f"wrote {rel} -> {out / rel} ({time.perf_counter() - t1:.2f} s)")
                advance(1)
        say(f"done in {time.perf_counter() - t0:.1f} s")
        if args.json:
            print(json.dumps({"output": str(out), "relations": {r: str(out / r) for r in names},
                              "seconds": round(time.perf_counter() - t0, 3)}))
        return 0
    except GrantlogError as err:
        warn(str(err))
        return 2
    except Exception as err:  # an internal error: keep the traceback for a bug report
        import traceback
        traceback.print_exc()
        warn(f"internal error: {err}")
        return 3


def _filters(args: argparse.Namespace, program: Any, spark: Any, inputs: dict[str, Any],
             say: Any, t0: float) -> int:
    """``--filters``: each subject's filter, written to ``DIR/filters/``."""
    from grantlog.grammar.diagnostics import NO_SPAN, GrantlogError, error, plural

    from .filters import bulk_filters

    facts = {rel: [tuple(row) for row in df.collect()] for rel, df in inputs.items()}
    subjects: list[Any] = list(args.subject)
    if args.subjects_from:
        rel, _, col = args.subjects_from.partition(":")
        if rel not in program.relations or rel in program.derived:
            raise GrantlogError([error("bad-option", f"`--subjects-from {rel}`: not a base "
                                       "relation of the rules", NO_SPAN)])
        if col and not col.isdigit():
            raise GrantlogError([error("bad-option", "`--subjects-from REL:COLUMN` takes a "
                                       f"column number, not `{col}`", NO_SPAN)])
        i = int(col or 0)
        rows = [f.row for f in program.facts if f.rel == rel] + facts.get(rel, [])
        if rows and i >= len(rows[0]):
            raise GrantlogError([error("bad-option", f"`{rel}` has no column {i}", NO_SPAN)])
        subjects += [row[i] for row in rows]
    subjects = sorted(set(subjects), key=str)
    if not subjects:
        raise GrantlogError([error("bad-option", "`--filters` needs subjects: `--subject S` "
                                   "or `--subjects-from REL`", NO_SPAN)])
    say(f"filters of {plural(len(subjects), 'subject')} for `{args.filters}`")
    df = bulk_filters(program, spark, facts, subjects, args.filters, args.resource_type)
    out = Path(args.output) / "filters"
    t1 = time.perf_counter()
    df.write.mode("overwrite").parquet(str(out))
    written = spark.read.parquet(str(out))
    refused = written.where("error IS NOT NULL").count()
    say(f"wrote filters -> {out} ({time.perf_counter() - t1:.2f} s; {refused} of "
        f"{plural(len(subjects), 'subject')} without a filter, see the error column)")
    say(f"done in {time.perf_counter() - t0:.1f} s")
    if args.json:
        print(json.dumps({"output": str(Path(args.output)), "filters": str(out),
                          "subjects": len(subjects), "without_filter": refused,
                          "seconds": round(time.perf_counter() - t0, 3)}))
    return 0


def _session(master: str, checkpoint_dir: str | None,
             conf: Sequence[tuple[str, str]] = ()) -> object:
    from pyspark.sql import SparkSession

    # Python tasks (--filters) run this interpreter, which has grantlog
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master(master).appName("grantlog")
               .config("spark.ui.showConsoleProgress", "false"))
    for key, value in conf:
        builder = builder.config(key, value)
    fresh = SparkSession.getActiveSession() is None
    spark = builder.getOrCreate()
    if fresh:  # no Java stack traces of failed tasks on stderr (a shared session keeps its own)
        spark.sparkContext.setLogLevel("ERROR")
    if checkpoint_dir:
        spark.sparkContext.setCheckpointDir(checkpoint_dir)
    return spark


if __name__ == "__main__":
    sys.exit(main())
