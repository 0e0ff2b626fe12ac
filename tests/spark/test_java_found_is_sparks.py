"""The ``java`` listing.spark.java_runtime.require_java() finds is the one Spark's driver
runs on (its ``java.home``): the check looks where Spark's launcher looks."""

from __future__ import annotations

from pathlib import Path

from listing.spark.java_runtime import MINIMUM_JAVA, require_java


def test_require_java_finds_the_java_the_session_runs(spark) -> None:
    found = require_java()
    assert found is not None
    running = Path(spark.sparkContext._jvm.System.getProperty("java.home"))  # noqa: SLF001
    assert found.resolve() == (running / "bin" / "java").resolve()
    major = int(spark.sparkContext._jvm.System.getProperty("java.specification.version"))  # noqa: SLF001
    assert major >= MINIMUM_JAVA
