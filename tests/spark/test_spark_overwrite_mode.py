"""``spark.sql.sources.partitionOverwriteMode`` changed after the session started decides a
listing overwrite as it decides Spark's own Parquet writer's: the mode in force when the write
is planned, the writer's ``partitionOverwriteMode`` option winning."""

from __future__ import annotations

import pytest

from listing import ListingTable

CONF = "spark.sql.sources.partitionOverwriteMode"


def _ids(url: str) -> list[int]:
    return sorted(ListingTable.open(url).scan().to_arrow().column("id").to_pylist())


@pytest.fixture
def frames(spark):
    old = spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id long, k string")
    new = spark.createDataFrame([(11, "b"), (12, "d")], "id long, k string")
    yield old, new
    spark.conf.unset(CONF)


@pytest.mark.parametrize("mode", ["dynamic", "static", "DYNAMIC"])
def test_runtime_mode_decides_as_for_sparks_parquet_writer(spark, frames, tmp_path, mode):
    old, new = frames
    spark.conf.set(CONF, "static" if mode.lower() == "dynamic" else "dynamic")  # the other
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    old.write.format("listing").option("partition_by", "k").mode("overwrite").save(ours)
    old.write.mode("overwrite").partitionBy("k").parquet(theirs)
    spark.conf.set(CONF, mode)  # changed after the session (and the source) started
    new.write.format("listing").option("partition_by", "k").mode("overwrite").save(ours)
    new.write.mode("overwrite").partitionBy("k").parquet(theirs)
    want = sorted(r.id for r in spark.read.parquet(theirs).collect())
    assert want == ([1, 3, 11, 12] if mode.lower() == "dynamic" else [11, 12])
    assert _ids(ours) == want


@pytest.mark.parametrize("option", ["partitionOverwriteMode", "partition_overwrite_mode"])
def test_the_writers_option_wins_over_the_session(spark, frames, tmp_path, option):
    old, new = frames
    url = str(tmp_path / "t")
    old.write.format("listing").option("partition_by", "k").mode("overwrite").save(url)
    spark.conf.set(CONF, "dynamic")
    (new.write.format("listing").option("partition_by", "k").option(option, "static")
     .mode("overwrite").save(url))
    assert _ids(url) == [11, 12]
    old.write.format("listing").option("partition_by", "k").mode("overwrite").save(url)
    spark.conf.set(CONF, "static")
    (new.write.format("listing").option("partition_by", "k").option(option, "dynamic")
     .mode("overwrite").save(url))
    assert _ids(url) == [1, 3, 11, 12]


def test_unset_returns_to_sparks_default(spark, frames, tmp_path):
    old, new = frames
    url = str(tmp_path / "t")
    spark.conf.set(CONF, "dynamic")
    old.write.format("listing").option("partition_by", "k").mode("overwrite").save(url)
    spark.conf.unset(CONF)  # static, Spark's default
    new.write.format("listing").option("partition_by", "k").mode("overwrite").save(url)
    assert _ids(url) == [11, 12]
