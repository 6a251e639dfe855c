"""Shared fixtures. `spark`: ONE real local SparkSession for the whole test run."""
from __future__ import annotations

import pytest


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
    )
    yield session
    session.stop()
