"""The shared test session runs Spark's whole-stage code generation off (tests/conftest.py's
SPARK_TEST_CONF: on the tests' tiny tables compiling each plan cost more than running it).
Here one shipped model runs with it on, as a user's session does, and answers as memory does
(three_tier: tests/test_spark_bridge.py runs the other shipped models with it off)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import SPARK_TEST_CONF
from test_spark_bridge import test_shipped_models_match_memory as shipped_model_matches_memory

CODEGEN = "spark.sql.codegen.wholeStage"
#: the session's setting (Spark's default, on, under GRANTLOG_TEST_SPARK_DEFAULTS=1)
SESSION = SPARK_TEST_CONF.get(CODEGEN, "true")


def test_the_tests_session_has_its_codegen_setting(spark: Any) -> None:
    assert spark.conf.get(CODEGEN) == SESSION


@pytest.mark.parametrize("model", ["three_tier"])
def test_a_shipped_model_matches_memory_with_whole_stage_codegen(model: str,
                                                                 spark: Any) -> None:
    spark.conf.set(CODEGEN, "true")
    try:
        assert spark.conf.get(CODEGEN) == "true"
        shipped_model_matches_memory(model, spark)
    finally:
        spark.conf.set(CODEGEN, SESSION)
