"""Shared fixtures. `spark`: ONE real local SparkSession for the whole test run.

With SUSE_TEST_SPARK_CONNECT=1 the same fixture is a Spark Connect session (a local Connect
server started by pyspark); tests/test_spark_connect.py runs a subset of the Spark tests so,
in a process of their own, since one process cannot hold a classic and a Connect session."""
from __future__ import annotations

import os

import pytest

CONNECT = os.environ.get("SUSE_TEST_SPARK_CONNECT") == "1"


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    pytest.importorskip("pyspark")
    from suse.spark.session import get_session

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = get_session(
        "local[2]",
        "suse-tests",
        {
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.warehouse.dir": str(warehouse),
            "spark.driver.memory": "2g",
        },
        connect=CONNECT,
    )
    yield session
    session.stop()
