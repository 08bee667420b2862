"""Shared test setup: hypothesis profiles, golden-file helpers, the shared Spark session.

Goldens: set ``GRANTLOG_UPDATE_GOLDENS=1`` to rewrite expected files, then review the diff.
Hypothesis: ``HYPOTHESIS_PROFILE=ci`` (set by .ci/run) or ``dev`` (default).
The long profile (``make test-long``: ``GRANTLOG_LONG=1``) also runs the tests marked
``slow`` and more examples of the slowest property tests (:data:`LONG`); ``make test`` leaves
them out (reported as deselected) to keep the suite near its time budget.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_DIR = ROOT / "tests" / "golden"
UPDATE = os.environ.get("GRANTLOG_UPDATE_GOLDENS") == "1"
#: the long local profile: `slow` tests run, the slowest property tests take more examples
LONG = os.environ.get("GRANTLOG_LONG") == "1"

settings.register_profile(
    "dev", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# the property tests that take the profile's count (generated programs against the naive
# evaluator, incremental maintenance, formatting, junk input) are most of the suite's
# hypothesis time: 100 examples in `make test`, 150 in the long profile
settings.register_profile(
    "ci", max_examples=150 if LONG else 100, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def examples(short: int, long: int) -> int:
    """``max_examples`` of one of the slowest property tests: ``short`` in `make test` (the
    suite's 15-minute budget), ``long`` in the long profile (`make test-long`)."""
    return long if LONG else short


#: fixtures whose tests run on one worker when the run is split over processes (pytest-xdist,
#: ``make test``'s ``-n``): one Spark session, one Chromium and one explorer per run, not
#: one per worker (with the Spark ones: a ``spark`` backend parameter, and every test of a
#: tests/test_spark_*.py file); the PostgreSQL server is shared by passing its address (below)
GROUPS = {"spark": "spark", "browser": "browser", "explorer_url": "browser"}


def pytest_itemcollected(item: pytest.Item) -> None:
    """Put the tests of a shared expensive resource in one group (:data:`GROUPS`), as each
    is collected: before pytest-xdist reads the groups (in its collection_modifyitems)."""
    names = {GROUPS[f] for f in item.fixturenames if f in GROUPS}
    spec = getattr(item, "callspec", None)  # a backend parameter: the fixture asked later
    if (spec is not None and "spark" in spec.params.values()) \
            or item.path.name.startswith("test_spark_"):  # the CLI's own getOrCreate
        names.add("spark")
    for name in sorted(names):
        item.add_marker(pytest.mark.xdist_group(name))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Outside the long profile, leave out the tests marked ``slow`` (deselected, so the
    summary counts them; ``make test-long`` runs them)."""
    if LONG or config.getoption("-m"):
        return
    slow = [i for i in items if i.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [i for i in items if not i.get_closest_marker("slow")]


T = TypeVar("T")


def within(seconds: float, fn: Callable[[], T]) -> T:
    """``fn()``, failing the test instead of hanging when it does not finish in time (in a
    daemon thread: a runaway loop cannot keep the test run alive)."""
    out: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as e:  # re-raised in the test's thread
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        pytest.fail(f"did not terminate within {seconds}s")
    if errors:
        raise errors[0]
    return out[0]


def check_golden(name: str, actual: str) -> None:
    """Compare ``actual`` with tests/golden/<name>; rewrite it when updating goldens."""
    path = GOLDEN_DIR / name
    if UPDATE or not path.exists():
        if not UPDATE and os.environ.get("CI"):
            pytest.fail(f"golden file {path} is missing (run with GRANTLOG_UPDATE_GOLDENS=1)")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"output differs from golden {path}"


@pytest.fixture
def golden() -> object:
    return check_golden


#: the shared session's settings for speed on tiny tables (see :func:`spark`); none with
#: ``GRANTLOG_TEST_SPARK_DEFAULTS=1`` (Spark's defaults: benchmarks/suite_time.py compares)
SPARK_TEST_CONF: dict[str, str] = {} if os.environ.get("GRANTLOG_TEST_SPARK_DEFAULTS") == "1" \
    else {"spark.sql.codegen.wholeStage": "false",
          "spark.default.parallelism": "1",
          # the quick compiler alone shrinks the JIT's code cache to 48 MB, which the suite's
          # one JVM fills (then compiles nothing more): Java's usual 240 MB, and a little more
          "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 "
                                           "-XX:ReservedCodeCacheSize=256m"}


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local Spark session for the whole test run (startup takes seconds): the case corpus
    (tests/test_cases.py) and tests/test_spark_bridge.py share it. Skips, with the reason,
    when pyspark or Java is missing.

    Tuned for many small jobs on tiny tables (:data:`SPARK_TEST_CONF`): whole-stage code
    generation off (compiling each plan's Java source cost more than running it), one
    partition by default, and the JVM's quick compiler only (with its code cache at 256 MB: 48 MB
    by default with that compiler, too small for the suite). Together they took the JVM's
    CPU time for six of the case corpus's Spark cases from 63 s to 28 s (benchmarks/RESULTS.md,
    "Test suite time"); the answers do not depend on them, and tests/test_spark_codegen.py
    runs a shipped model with Spark's code generation on."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install "
                        "'grantlog[spark]')")
    if shutil.which("java") is None:
        pytest.skip("no `java` on PATH: the Spark backend needs Java 17")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Python tasks import grantlog
    builder = (SparkSession.builder.master("local[2]").appName("grantlog-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.adaptive.enabled", "false"))
    for key, value in SPARK_TEST_CONF.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    session.sparkContext.setCheckpointDir(str(tmp_path_factory.mktemp("checkpoints")))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def pg_server(request: pytest.FixtureRequest) -> Iterator[Any]:
    """One throwaway PostgreSQL server for the whole run (tests/pgserver.py), started from the
    machine's binaries; each store test gets a schema of its own. Skips, saying why, where no
    PostgreSQL server binaries exist."""
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install "
                        "'grantlog[postgres]')")
    from pgserver import PgServer, find_bin

    shared = getattr(request.config, "workerinput", {}).get(PG_SHARED)
    if shared:  # a worker of a split run: the controller's server (pytest_configure_node)
        yield PgServer.attach(shared)
        return
    if find_bin() is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl): set PG_BIN or install "
                    "the postgresql package")
    server = PgServer().start()
    yield server
    server.stop()


#: what a split run's controller started for its workers
_CONTROLLER: dict[str, Any] = {}
#: the key under which a split run's controller passes its PostgreSQL server's URL to workers
PG_SHARED = "grantlog_pg_url"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, before it starts a worker: one PostgreSQL server for the
    whole run, started here once (when the machine has the binaries and psycopg) and stopped
    by :func:`pytest_unconfigure`; each worker's ``pg_server`` attaches to it."""
    if "pg" not in _CONTROLLER:
        _CONTROLLER["pg"] = None
        try:
            import psycopg  # noqa: F401
            from pgserver import PgServer, find_bin
        except ImportError:
            return
        if find_bin() is not None:
            _CONTROLLER["pg"] = PgServer().start()
    if _CONTROLLER["pg"] is not None:
        node.workerinput[PG_SHARED] = _CONTROLLER["pg"].url


def pytest_unconfigure(config: pytest.Config) -> None:
    if _CONTROLLER.get("pg") is not None:
        _CONTROLLER.pop("pg").stop()


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store of each kind (created: opening a store that does not exist is
    `store-not-found`): the store suite runs against both."""
    from grantlog.store import open_store

    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'facts.db'}"
    else:
        url = str(request.getfixturevalue("pg_server").schema_url())
    open_store(url, create=True).close()
    return url


@pytest.fixture(scope="session")
def gravitino_3000() -> Any:
    """The shipped Gravitino model and its database after one transaction inserting a
    generated world of 3,000 tables (benchmarks/gravitino_workload.py, seed 1): shared by
    the cold-start tests, which read it and never write."""
    import grantlog

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gravitino_workload as gw

    program = grantlog.compile(paths=[str(ROOT / "rules" / "gravitino.gl")])
    r = grantlog.Reasoner(program)
    with r.transaction() as tx:
        for rel, rows in gw.generate(3000, seed=1).facts.items():
            tx.insert(rel, rows)
    return program, r.database()


@pytest.fixture(scope="session")
def explorer_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The decision log `explorer_url`'s explorer replays (`--log`; empty at start: a test
    writes the entries it replays and empties it after)."""
    path = tmp_path_factory.mktemp("explore-log") / "decisions.log"
    path.write_text("")
    return path


@pytest.fixture(scope="session")
def explorer_url(tmp_path_factory: pytest.TempPathFactory, explorer_log: Path) -> Iterator[str]:
    """One `grantlog explore` process for the run (the explorer's API and browser tests): the
    Gravitino model (the page's editable file) and examples/gravitino/facts.gl."""
    import subprocess

    import httpx
    from httpserver import free_port

    port, log = free_port(), tmp_path_factory.mktemp("explore") / "explore.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "grantlog.cli", "explore", "--model", "gravitino", "--facts",
         str(ROOT / "examples" / "gravitino" / "facts.gl"), "--port", str(port), "--no-open",
         "--log", str(explorer_log)],
        stdout=subprocess.DEVNULL, stderr=open(log, "wb"))  # noqa: SIM115
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(log.read_text())
        try:
            if httpx.get(url + "/api/state", timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the run (tests/browser_support.py; the tests using it skip,
    saying why, when Chromium or its driver is absent)."""
    import browser_support

    yield from browser_support.start()


@pytest.fixture
def page(browser: Any, explorer_url: str) -> Iterator[Any]:
    """The explorer's page, loaded fresh; the model's text and the pins are put back after."""
    import browser_support

    yield from browser_support.fresh_page(browser, explorer_url)


# -- generated transaction histories (the history tests' shared generator and writer) ----------

def history_strategy(values: dict[str, tuple[list[str], ...]], signs: str = "+-",
                     most: int = 8) -> Any:
    """Histories: at most ``most`` transactions, each 1-4 inserts (``+``) and retracts
    (``-``; ``signs`` weighs them) of rows over ``values`` (relation -> each column's
    values), with at most one ``"swap"`` (install policy B) among them."""
    from hypothesis import strategies as st

    @st.composite
    def op(draw: st.DrawFn) -> tuple[str, str, tuple[str, ...]]:
        rel = draw(st.sampled_from(sorted(values)))
        row = tuple(draw(st.sampled_from(vs)) for vs in values[rel])
        return rel, draw(st.sampled_from(signs)), row

    return st.lists(st.lists(op(), min_size=1, max_size=4), min_size=1, max_size=most).flatmap(
        lambda txs: st.integers(0, len(txs) + 1).map(
            lambda at: [*txs[:at], "swap", *txs[at:]] if at <= len(txs) else txs))


def write_history(policy_a: Any, policy_b: Any, url: str, history: list[Any], every: int,
                  reasons: bool = False) -> int:
    """Write ``history`` to a new store at ``url`` under ``policy_a`` (a ``"swap"`` installs
    ``policy_b``), checkpoints every ``every`` revisions, each transaction by author
    ``a<n>`` (and reason ``step <n>`` with ``reasons``); the head revision."""
    import grantlog

    with grantlog.Reasoner(policy_a, store=url, create=True, follow=False) as r:
        assert r.store is not None
        r.store.checkpoint(every)
        for n, step in enumerate(history):
            if step == "swap":
                r.store.put_policy(policy_b)
                continue
            extra = {"reason": f"step {n}"} if reasons else {}
            with r.transaction(author=f"a{n}", **extra) as tx:
                for rel, sign, row in step:
                    (tx.insert if sign == "+" else tx.retract)(rel, [row])
        return int(r.revision)
