"""``listing.write_spark`` (and ``to_spark`` on Spark 3.5) run in ``mapInArrow``, which
pyspark refuses without pandas: the check says so, naming the fix, before a write's job is
set up (measured on a fresh pyspark 3.5.4 virtualenv: Spark's own error came from inside the
write, ``Pandas >= 1.0.5 must be installed``)."""

from __future__ import annotations

import sys

import pytest

from listing.errors import SparkSetupError
from listing.spark import arrow_jobs


def test_without_pandas_the_error_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    arrow_jobs.require_pandas("listing.write_spark")  # the control: pandas is here
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails
    with pytest.raises(SparkSetupError, match=r"^listing.write_spark runs its tasks in "
                       r"Spark's mapInArrow, .* without pandas installed: pip install pandas$"):
        arrow_jobs.require_pandas("listing.write_spark")


def test_write_spark_checks_before_it_touches_the_table(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(SparkSetupError, match="pip install pandas"):
        arrow_jobs.write_spark(object(), str(tmp_path / "t"), partition_by="day")
    assert not (tmp_path / "t").exists()
