"""Shared test set-up: one moto S3 server and one Spark session per run."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest_plugins = ["listing.testing.pytest_plugin"]


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
