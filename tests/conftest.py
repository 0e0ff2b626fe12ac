"""Shared test set-up: one moto S3 server and one Spark session per run; the test groups
(unit, s3, spark, install) are assigned in tests/groups.py."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest_plugins = ["listing.testing.pytest_plugin", "groups"]  # groups: tests/groups.py

#: tests known to fail on Spark 4.0 (make test-spark SPARK=4.0.5), not yet fixed: marked
#: strict xfail there so CI shows them and fails the day one passes
_KEY_GROUPED = ("key-grouped scans: Spark 4.0 still plans an Exchange above the Python "
                "scan's reported partitioning (not investigated)")
KNOWN_GAPS_SPARK_40 = {
    **{f"test_spark_key_grouped.py::{name}": _KEY_GROUPED for name in (
        "test_group_by_partition_columns_plans_no_exchange",
        "test_group_by_under_filter_and_projection_stays_exact",
        "test_join_on_date_plans_no_exchange_on_either_side",
        "test_join_of_aggregates_keyed_on_different_columns",
        "test_declined_when_fewer_values_than_tasks",
        "test_engine_auto_keeps_key_grouped_scans_on_the_python_engine")},
    "test_spark_pruning.py::test_count_reads_no_column":
        "a pushed count reads one column too (column pruning keeps one: a Python scan of no "
        "columns reads no rows on 4.0); counts stay exact",
    "test_native_engine.py::test_statistics_reach_the_optimizer_broadcast_join":
        "the handed-off relation's size does not reach Spark 4.0's join planning",
    "test_native_engine_s3.py::test_a_point_query_lists_one_prefix_and_heads_each_file_read_once"
    "[parquet]":
        "Spark 4.0's native S3 point query touches more files than its partition",
}


_EXTRA_EXCHANGE = {
    "test_spark_key_grouped.py::test_join_of_aggregates_keyed_on_different_columns":
        "Spark plans an extra Exchange under GroupPartitions for this join (rows right)"}
#: the known gaps per Spark line (make test-spark SPARK=...)
KNOWN_GAPS = {"4.0": KNOWN_GAPS_SPARK_40, "4.1": _EXTRA_EXCHANGE, "4.2": _EXTRA_EXCHANGE}


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    import pyspark

    line = ".".join(pyspark.__version__.split(".")[:2])
    gaps = KNOWN_GAPS.get(line, {})
    for item in items:
        node = item.nodeid.rsplit("/", 1)[-1]
        reason = gaps.get(node) or gaps.get(node.split("[")[0])
        if reason is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"Spark {line}: {reason}"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The toolkit's own session: guard installed, pushdown on, ``listing`` registered."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from listing.spark.session import session

    spark = session(app_name="listing-tests", ui=False,
                    conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
    yield spark
    spark.stop()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    """The seed of the random test order (pytest-randomly) at the end, under ``-q`` too, so
    a failing order is replayed with ``--randomly-seed=N``."""
    if config.pluginmanager.hasplugin("randomly") and config.getoption("randomly_reorganize"):
        seed = config.getoption("randomly_seed")
        terminalreporter.write_line(f"random test order: replay with --randomly-seed={seed}")
