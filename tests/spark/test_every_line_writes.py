"""The Python API's reads and writes on every Spark line, 3.5 included (no Python data
source there): ``listing.write_spark`` and ``to_spark`` run the source's own tasks through
``mapInArrow`` (listing.spark.arrow_jobs). Spark's own Parquet reader is the oracle of what
a write left; on 4.x ``df.write.format("listing")`` is the oracle of its layout.

Run on 3.5 with ``make test-spark SPARK=3.5.6 SPARK_TESTS=tests/spark/test_every_line_writes.py``.
"""

from __future__ import annotations

import re
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyspark
import pytest
from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

import listing
from listing import ListingTable
from listing.spark.arrow_jobs import to_spark_by_tasks
from listing.spark.compat import HAS_DATA_SOURCE_API
from listing.testing import datasets

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # examples/ is a user's project folder, not an installed package
    sys.path.insert(0, str(ROOT))

from examples.fixed_width_format import FixedWidthFormat  # noqa: E402

pytestmark = pytest.mark.spark

SPARK_35 = pyspark.__version__.startswith("3.5.")
DAYS = ("2026-03-01", "2026-03-02", "2026-03-03")
SCHEMA = "id long, note string, day string, region string"


@pytest.fixture(scope="module")
def session(spark):
    """The shared session (``listing.session()``), on every line."""
    return spark


def frame(spark, ids, days=DAYS, regions=("us", "eu"), parts=3):
    """Rows ``id`` of ``ids`` (a range) spread over ``days`` x ``regions``, in ``parts``
    partitions (Spark's own rows: no Python in the way but the write's)."""
    def pick(values):
        return F.element_at(F.array(*map(F.lit, values)),
                            (F.col("id") % len(values) + 1).cast("int"))

    return (spark.range(ids.start, ids.stop, 1, parts)
            .select("id", F.concat(F.lit("note "), F.col("id").cast("string")).alias("note"),
                    pick(days).alias("day"), pick(regions).alias("region")))


def read_back(spark, path):
    """What Spark's own Parquet reader finds at ``path``: (id, note, day, region) rows."""
    df = spark.read.schema(SCHEMA).parquet(str(path))
    return sorted((r.id, r.note, r.day, r.region) for r in df.collect())


def expected(ids, days=DAYS, regions=("us", "eu")):
    return sorted((i, f"note {i}", days[i % len(days)], regions[i % len(regions)]) for i in ids)


def layout(path):
    """The table's files below ``path``, a job's id in their names spelled ``JOB``."""
    out = set()
    for f in Path(path).rglob("*"):
        if f.is_file() and not f.name.startswith("."):
            rel = f.relative_to(path).as_posix()
            out.add(re.sub(r"-[0-9a-f]{32}-c", "-JOB-c", rel))
    return out


def test_partitioned_appends_then_an_overwrite_round_trip(session, tmp_path):
    url = tmp_path / "events"
    first = listing.write_spark(frame(session, range(30)), str(url),
                                partition_by=["day", "region"])
    assert first.rows == 30 and first.mode == "append"
    listing.write_spark(frame(session, range(30, 40)), str(url), partition_by="day,region")
    assert read_back(session, url) == expected(range(40))
    # an overwrite (static: the whole table replaced), a write option as df.write takes it
    last = listing.write_spark(frame(session, range(200, 212)), str(url), mode="overwrite",
                               partition_by=["day", "region"], max_records_per_file=2)
    assert read_back(session, url) == expected(range(200, 212))
    assert last.rows == 12 and len(last.files) == len(layout(url)) - 1  # _SUCCESS beside
    assert (url / "_SUCCESS").exists() and not (url / "_temporary").exists()


@pytest.mark.skipif(not HAS_DATA_SOURCE_API, reason="the oracle, df.write.format('listing'), "
                    "is a Python data source (Spark 4.0 and later)")
def test_write_spark_lays_out_files_as_the_listing_source_does(session, tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    df = frame(session, range(24))
    listing.write_spark(df, str(ours), partition_by=["day", "region"], max_records_per_file=3)
    (df.write.format("listing").option("partition_by", "day,region")
     .option("max_records_per_file", 3).mode("append").save(str(theirs)))
    assert layout(ours) == layout(theirs)
    assert len(layout(ours)) > 6  # a positive control: 6 partitions, several files each
    assert read_back(session, ours) == expected(range(24))


def test_a_task_failing_mid_write_leaves_the_old_table(session, tmp_path):
    url = tmp_path / "events"
    rows = expected(range(12))
    listing.write_table(str(url), pa.Table.from_pylist(
        [dict(zip(("id", "note", "day", "region"), r, strict=True)) for r in rows]),
        partition_by=["day"])
    before = layout(url)

    @F.udf("string")
    def note_or_fail(note: str, fail: bool) -> str:
        if fail:
            raise RuntimeError("injected task fault")
        return note

    def failing(ids, fault_at):
        df = frame(session, ids)  # 3 tasks; the one holding fault_at fails at that row
        return df.withColumn("note", note_or_fail("note", F.col("id") == F.lit(fault_at)))

    with pytest.raises(Exception, match="injected task fault"):
        listing.write_spark(failing(range(100, 160), 157), str(url), mode="overwrite",
                            partition_by=["day"])
    assert layout(url) == before and not (url / "_temporary").exists()
    assert read_back(session, url) == expected(range(12))
    # the positive control: the same write, no row failing, commits
    listing.write_spark(failing(range(100, 160), -1), str(url), mode="overwrite",
                        partition_by=["day"])
    assert read_back(session, url) == expected(range(100, 160))


def fixed_width_bytes(day: str, n: int) -> bytes:
    lines = ["id  code amount"] + [f"{i:<4}{'abcd'[i % 4]:<5}{i * 2:>6}" for i in range(n)]
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture(scope="module")
def bucket(s3_server):
    name = s3_server.create_bucket(f"lines-{uuid.uuid4().hex[:8]}")
    yield name
    s3_server.drop_bucket(name)


def custom_table(s3_server, bucket):
    """A user's format (a subclass defined here: workers get it by value), 3 days x 6 rows."""
    name = f"fw_{uuid.uuid4().hex[:8]}"
    fmt_class = type(f"FixedWidth_{name}", (FixedWidthFormat,), {"name": name})
    s3_server.put_objects_fast(bucket, {
        f"{name}/day={d}/part-0.txt": fixed_width_bytes(d, 6) for d in DAYS})
    table = ListingTable.open(f"s3://{bucket}/{name}", format=fmt_class(),
                              storage_options=s3_server.storage_options)
    want = sorted((i, "abcd"[i % 4], DAYS[1]) for i in range(6))
    return table, f"{name}/day={DAYS[1]}/", want


def arrow_table(s3_server, bucket, day="2025-01-02"):
    """An Arrow IPC table (a format Spark cannot read), 3 days x 2 regions x 3 rows: the
    table, the prefix of ``day``'s files and their rows (id, date, region) as written."""
    ds = datasets.daily(f"s3://{bucket}/ipc_{uuid.uuid4().hex[:8]}", s3_server.storage_options,
                        days=3, format="arrow", put=datasets.fast_writer(s3_server))
    table = ListingTable.open(ds.root, format="arrow", storage_options=s3_server.storage_options)
    want = sorted((i, day, f.partition_values["region"]) for f in ds.files
                  if str(f.partition_values["date"]) == day
                  for i in f.table.column("id").to_pylist())
    return table, ds.root.split(f"{bucket}/", 1)[1] + f"/date={day}/", want


@pytest.mark.parametrize("path", ["to_spark", "mapInArrow"])
def test_custom_format_through_to_spark_reads_only_the_filtered_partition(
        session, s3_server, bucket, path):
    read = listing.to_spark if path == "to_spark" else to_spark_by_tasks
    table, prefix, want = custom_table(s3_server, bucket)
    with s3_server.log.capture(bucket) as cap:
        df = read(table, session, columns=["id", "code", "day"], where=f"day = '{DAYS[1]}'")
        rows = df.collect()
    assert sorted((r.id, r.code, str(r.day)) for r in rows) == want
    opened = {e.key for e in cap.entries() if e.kind in ("GET", "HEAD") and e.key}
    assert opened == {prefix + "part-0.txt"}  # the matching file read, no other


@pytest.mark.parametrize("path", ["to_spark", "mapInArrow"])
def test_arrow_ipc_through_to_spark_with_a_limit_and_later_filters(
        session, s3_server, bucket, path):
    read = listing.to_spark if path == "to_spark" else to_spark_by_tasks
    day = "2025-01-02"
    table, prefix, want = arrow_table(s3_server, bucket, day)
    with s3_server.log.capture(bucket) as cap:
        df = read(table, session, columns=["id", "date", "region"], where=f"date = '{day}'")
        rows = df.collect()
    assert sorted((r.id, str(r.date), r.region) for r in rows) == want and len(want) == 6
    opened = {e.key for e in cap.entries() if e.kind in ("GET", "HEAD") and e.key}
    assert opened and all(k.startswith(prefix) for k in opened), opened
    # a later DataFrame filter is not pushed into the plan: Spark applies it to the rows read
    later = df.where(F.col("region") == "eu").collect()
    assert sorted(r.id for r in later) == sorted(i for i, _, r in want if r == "eu")
    limited = read(table, session, where=f"date = '{day}'", limit=2).collect()
    assert len(limited) == 2 and {str(r.date) for r in limited} == {day}
