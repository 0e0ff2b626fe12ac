"""Time zones, differentially: the listing source against Spark's own Parquet reader and
writer on the same files, in sessions of several zones (issue 45, items 1 and 2).

One table is written once, by Spark in a UTC session, with its defaults (timestamps as
INT96): a timestamp and a date partition column, a timestamp data column. Its partition
directories spell local times that a clock skips or repeats in some zones (daylight saving
days in Los Angeles and on the Chatham Islands). Spark reads a timestamp partition value
as a local time in the session's zone, and an INT96 as an instant (``timestamp``); the
listing source must answer every filter kind with Spark's rows and Spark's values, on both
engines and through the Python API, in every zone. Writes in a non-UTC session must spell
partition directories as Spark's writer does.
"""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest

from listing import ListingTable
from listing.errors import FileReadError
from listing.write import write_table

#: session zones: UTC, one with daylight saving, a half-hour offset, a 45-minute one
ZONES = ["UTC", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Chatham"]
TZ_CONF = "spark.sql.session.timeZone"

#: (id, ts partition value, d partition value, t data value), as written in UTC
ROWS = """
  (1, TIMESTAMP '2026-01-01 06:00:00', DATE '2026-01-01', TIMESTAMP '2026-01-01 12:00:00'),
  (2, TIMESTAMP '2026-01-01 23:30:00', DATE '2026-01-01', TIMESTAMP '2026-01-01 23:30:00'),
  (3, TIMESTAMP '2026-03-08 02:30:00', DATE '2026-03-08', TIMESTAMP '2026-03-08 10:30:00'),
  (4, TIMESTAMP '2026-03-08 03:00:00', DATE '2026-03-08', TIMESTAMP '2026-03-08 11:00:00'),
  (5, TIMESTAMP '2026-11-01 01:30:00', DATE '2026-11-01', TIMESTAMP '2026-11-01 08:30:00'),
  (6, TIMESTAMP '2026-04-05 02:50:00', DATE '2026-04-05', TIMESTAMP '1850-04-05 02:50:00'),
  (7, TIMESTAMP '2026-09-27 03:00:00', DATE '2026-09-27', TIMESTAMP '2026-09-27 03:00:00'),
  (8, TIMESTAMP '2026-01-01 06:00:00.5', DATE '2026-01-02', NULL),
  (9, NULL, NULL, TIMESTAMP '2026-06-01 00:00:00')
"""
# 3: skipped by Los Angeles clocks (spring forward); 5: repeated there (fall back);
# 6: repeated on the Chatham Islands; 7: skipped there. Row 6's data is before 1900.

#: every filter kind, on the timestamp and date partition columns and the data column;
#: literals are local times in the session's zone, as Spark reads them
FILTERS = {
    "all": "true",
    "eq": "ts = TIMESTAMP '2026-01-01 06:00:00'",
    "eq_string": "ts = '2026-11-01 01:30:00'",
    "lt": "ts < TIMESTAMP '2026-03-08 03:00:00'",
    "gt_le": "ts > TIMESTAMP '2026-01-01 06:00:00' AND ts <= TIMESTAMP '2026-04-05 02:50:00'",
    "ge_not_null": "ts >= TIMESTAMP '2026-03-08 02:30:00' AND d IS NOT NULL",
    "between": "ts BETWEEN TIMESTAMP '2026-01-01 00:00:00' AND TIMESTAMP '2026-01-01 23:59:59'",
    "in": "ts IN (TIMESTAMP '2026-03-08 02:30:00', TIMESTAMP '2026-04-05 02:50:00', "
          "TIMESTAMP '2026-09-27 03:00:00')",
    "is_null": "ts IS NULL",
    "not": "NOT (ts = TIMESTAMP '2026-01-01 06:00:00')",
    "or": "ts = TIMESTAMP '2026-01-01 23:30:00' OR d = DATE '2026-11-01'",
    "date": "d IN (DATE '2026-01-01', DATE '2026-09-27') OR d < DATE '2026-03-09'",
    "mixed": "ts < TIMESTAMP '2026-06-01 00:00:00' AND t > TIMESTAMP '2026-01-01 13:00:00'",
}
#: what each row shows: instants, and local times and hours in the session's zone
SHOWN = ("id, cast(ts AS string) AS ts_text, hour(ts) AS ts_hour, unix_micros(ts) AS ts_us, "
         "cast(d AS string) AS d_text, cast(t AS string) AS t_text, hour(t) AS t_hour, "
         "unix_micros(t) AS t_us")


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    """The table, written once by Spark's own writer (INT96 timestamps) in a UTC session."""
    root = str(tmp_path_factory.mktemp("tz") / "events")
    with session_zone(spark, "UTC"):
        df = spark.sql(f"SELECT * FROM VALUES {ROWS} AS v(id, ts, d, t)")
        df.coalesce(1).write.partitionBy("ts", "d").parquet(root)
    return root


class session_zone:  # noqa: N801 - used as a context manager
    """Set the session's time zone, and restore the former one on exit."""

    def __init__(self, spark, zone: str) -> None:
        self.spark, self.zone = spark, zone

    def __enter__(self) -> None:
        self.former = self.spark.conf.get(TZ_CONF)
        self.spark.conf.set(TZ_CONF, self.zone)

    def __exit__(self, *exc: object) -> None:
        self.spark.conf.set(TZ_CONF, self.former)


@pytest.fixture(params=ZONES)
def zone(request, spark):
    with session_zone(spark, request.param):
        yield request.param


@pytest.fixture(scope="module")
def oracle(spark, table):
    """Spark's own reader's answers (:func:`answers`) per session zone, computed once."""
    cache: dict[str, dict[str, list[tuple]]] = {}

    def want(zone: str) -> dict[str, list[tuple]]:
        if zone not in cache:
            with session_zone(spark, zone):
                cache[zone] = answers(spark.read.parquet(table))
        return cache[zone]
    return want


def answers(df) -> dict[str, list[tuple]]:
    """Every filter's rows over ``df``, in one Spark job (a union of filtered scans: each
    branch pushes its own filter)."""
    from functools import reduce

    branches = [df.where(sql).selectExpr(f"'{tag}' AS tag", *SHOWN.split(", "))
                for tag, sql in FILTERS.items()]
    out: dict[str, list[tuple]] = {tag: [] for tag in FILTERS}
    for row in reduce(lambda a, b: a.unionAll(b), branches).collect():
        out[row[0]].append(tuple(row[1:]))
    return {tag: sorted(rows, key=repr) for tag, rows in out.items()}


def differences(got: dict, want: dict) -> dict:
    return {tag: {"listing": got[tag], "spark": want[tag]}
            for tag in FILTERS if got[tag] != want[tag]}


@pytest.mark.parametrize("engine", ["python", "native"])
def test_filters_and_values_match_sparks_reader(spark, table, oracle, zone, engine):
    """Every filter kind returns Spark's rows, with Spark's types and values, in any zone."""
    got_df = (spark.read.format("listing").option("format", "parquet")
              .option("engine", engine).load(table))
    # t: timestamp (INT96 is an instant), not timestamp_ntz
    assert dict(got_df.dtypes) == dict(spark.read.parquet(table).dtypes)
    want = oracle(zone)
    assert want["eq"] and want["is_null"] and want["lt"]  # the oracle finds rows
    got = answers(got_df)
    assert not differences(got, want), differences(got, want)
    plan = got_df.where(FILTERS["eq"])._jdf.queryExecution().executedPlan().toString()
    assert ("FileScan" in plan) == (engine == "native")  # the engine asked for read


#: the filters the Python API takes as they are written for Spark (all but "all")
API_FILTERS = [tag for tag in FILTERS if tag != "all"]


def test_python_api_matches_spark(table, oracle):
    """``ListingTable.open(time_zone=…)`` reads the instants Spark reads in that zone."""
    for zone in ("America/Los_Angeles", "Pacific/Chatham"):
        want = oracle(zone)
        t = ListingTable.open(table, time_zone=zone)
        assert t.schema.field("t").type == pa.timestamp("us", tz="UTC")  # INT96: an instant
        for tag in API_FILTERS:
            got = t.to_arrow(where=FILTERS[tag]).to_pylist()
            assert sorted((r["id"], micros(r["ts"]), micros(r["t"])) for r in got) == sorted(
                (row[0], row[3], row[7]) for row in want[tag]), (zone, tag)


def micros(value: dt.datetime | None) -> int | None:
    if value is None:
        return None
    return (value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)


def partition_dirs(root: str) -> set[str]:
    return {name for name in os.listdir(root) if "=" in name}


def test_writes_spell_partitions_as_spark_writes_them(spark, tmp_path):
    """A write in a non-UTC session spells timestamp partition values in that zone, as
    Spark's writer does; Spark's reader and ours read the same rows back."""
    with session_zone(spark, "UTC"):
        df = spark.sql(f"SELECT * FROM VALUES {ROWS} AS v(id, ts, d, t)").drop("d")
    ours, sparks = str(tmp_path / "ours"), str(tmp_path / "spark")
    with session_zone(spark, "America/Los_Angeles"):
        df.write.format("listing").mode("append").option("partition_by", "ts").save(ours)
        df.write.partitionBy("ts").parquet(sparks)
        assert partition_dirs(ours) == partition_dirs(sparks)
        assert "ts=2025-12-31 22%3A00%3A00" in partition_dirs(ours)  # 06:00 UTC, in LA
        shown = "id, cast(ts AS string), cast(t AS string)"
        want = sorted(spark.read.parquet(sparks).selectExpr(*shown.split(", ")).collect())
        assert sorted(spark.read.parquet(ours).selectExpr(*shown.split(", ")).collect()) == want
        for engine in ("python", "native"):
            back = (spark.read.format("listing").option("engine", engine).load(ours)
                    .selectExpr(*shown.split(", ")))
            assert sorted(back.collect()) == want, engine
    # the Python API spells them so too when told the zone
    python = str(tmp_path / "python")
    rows = pa.table({"id": [r[0] for r in utc_rows()], "ts": [r[1] for r in utc_rows()]},
                    schema=pa.schema([("id", pa.int32()), ("ts", pa.timestamp("us", "UTC"))]))
    write_table(python, rows, partition_by=["ts"], time_zone="America/Los_Angeles")
    assert partition_dirs(python) == partition_dirs(sparks)


def utc_rows() -> list[tuple[int, dt.datetime | None]]:
    """``(id, ts)`` of :data:`ROWS`, as instants."""
    out = []
    for line in ROWS.strip().splitlines():
        id_, ts = line.strip(" (),").split(", ")[:2]
        text = ts.removeprefix("TIMESTAMP ").strip("'")
        out.append((int(id_), None if ts == "NULL"
                    else dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)))
    return out


REBASE_CONFS = ("spark.sql.parquet.datetimeRebaseModeInWrite",
                "spark.sql.parquet.int96RebaseModeInWrite")


def test_legacy_calendar_files_are_refused_not_misread(spark, tmp_path):
    """A file Spark wrote in its LEGACY calendar mode holds Julian-calendar values that
    Spark's reader rebases: the native engine (Spark's reader) reads them as Spark does,
    the Python engine and API refuse them, naming the column and the way out, rather than
    read other dates."""
    root = str(tmp_path / "legacy")
    former = {name: spark.conf.get(name) for name in REBASE_CONFS}
    with session_zone(spark, "UTC"):
        try:
            for name in REBASE_CONFS:
                spark.conf.set(name, "LEGACY")
            spark.sql("SELECT 1 AS id, DATE '1000-01-01' AS d, "
                      "TIMESTAMP '1000-01-01 12:00:00' AS t").write.parquet(root)
        finally:
            for name, value in former.items():
                spark.conf.set(name, value)
        shown = ("id", "cast(d AS string)", "cast(t AS string)")
        want = spark.read.parquet(root).selectExpr(*shown).collect()
        assert [tuple(r) for r in want] == [(1, "1000-01-01", "1000-01-01 12:00:00")]
        native = spark.read.format("listing").option("engine", "native").load(root)
        assert native.selectExpr(*shown).collect() == want
        python = spark.read.format("listing").option("engine", "python").load(root)
        with pytest.raises(Exception, match="LEGACY .*engine=native"):
            python.selectExpr(*shown).collect()
    with pytest.raises(FileReadError, match="column 'd' .* LEGACY"):
        ListingTable.open(root).to_arrow(columns=["d"])


def test_time_zone_spellings_as_spark_takes_them(tmp_path):
    """The option takes what spark.sql.session.timeZone takes: regions, UTC, offsets."""
    from listing.errors import OptionError
    from listing.options import registry

    def zone(text):
        return registry.parse({"time_zone": text}, "listing")["time_zone"]
    assert [zone(z) for z in ("Z", "UTC", "GMT+8", "UTC-03:30", "+05:30", "Pacific/Chatham")
            ] == ["UTC", "UTC", "+08:00", "-03:30", "+05:30", "Pacific/Chatham"]
    with pytest.raises(OptionError, match="time_zone='Mars/Base'"):
        zone("Mars/Base")
    # an offset zone types the column with it
    t = ListingTable.open(_one_partition(str(tmp_path)), time_zone="GMT+5:30")
    assert t.schema.field("ts").type == pa.timestamp("us", tz="+05:30")
    assert micros(t.to_arrow().column("ts")[0].as_py()) == micros(
        dt.datetime(2026, 1, 1, 0, 30, tzinfo=dt.UTC))


def _one_partition(root: str) -> str:
    import pyarrow.parquet as pq

    os.makedirs(f"{root}/ts=2026-01-01 06%3A00%3A00")
    pq.write_table(pa.table({"id": [1]}), f"{root}/ts=2026-01-01 06%3A00%3A00/p.parquet")
    return root


def test_skipped_and_repeated_local_times_read_as_sparks_cast():
    """A local time the clock skips is read one gap later, a repeated one as its earlier
    instant (Java's LocalDateTime.atZone, which Spark's Cast uses)."""
    from listing.hive import parse_value

    la = pa.timestamp("us", tz="America/Los_Angeles")

    def read(raw):
        return parse_value(raw, la, column="ts", path="p")
    assert read("2026-03-08 02%3A30%3A00") == dt.datetime(2026, 3, 8, 10, 30, tzinfo=dt.UTC)
    assert read("2026-11-01 01%3A30%3A00") == dt.datetime(2026, 11, 1, 8, 30, tzinfo=dt.UTC)
