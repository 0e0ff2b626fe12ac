"""A glob in the table URL (``s3://lake/t/date=2026-03-1*``) reads what Spark's reader reads
for it (with ``basePath`` at the table root) and lists what the equivalent ``where`` lists."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from listing import ListingTable
from listing.cli import main
from listing.testing import datasets

DATA = pa.table({"id": pa.array([1, 2], pa.int64())})
DAYS = [f"2026-{m:02d}-{d:02d}" for m in (1, 2, 3) for d in range(1, 29)]
HOURS = [f"{h:02d}" for h in range(24)]

#: glob below the root, and the where that reads the same keys
EQUIVALENT = [
    ("date=2026-03-1*", "date BETWEEN '2026-03-10' AND '2026-03-19'"),
    ("date=2026-03-{01,15}", "date IN ('2026-03-01', '2026-03-15')"),
    ("date=2026-03-1*/hour=07", "date BETWEEN '2026-03-10' AND '2026-03-19' AND hour = 7"),
    ("date=2026-02-2?/hour=1*",
     "date >= '2026-02-20' AND date <= '2026-02-28' AND hour BETWEEN 10 AND 19"),
]


@pytest.fixture(scope="module")
def hourly(s3_server, tmp_path_factory):
    """2,016 keys: date=…/hour=…/p.parquet over 84 days (three LIST pages flat)."""
    bucket = "glob-" + tmp_path_factory.mktemp("b").name.lower().replace("_", "-")[:40]
    s3_server.client().create_bucket(Bucket=bucket)
    data = datasets.encode(DATA, "parquet")
    s3_server.put_objects_fast(bucket, {f"t/date={d}/hour={h}/p.parquet": data
                                        for d in DAYS for h in HOURS})
    return bucket


def _scan(s3_server, url, where=None):
    table = ListingTable.open(url, storage_options=s3_server.storage_options)
    with s3_server.log.capture() as cap:
        plan = table.scan(where=where)
    return plan, cap.count("LIST")


@pytest.mark.parametrize(("glob", "where"), EQUIVALENT)
def test_url_glob_lists_what_the_equivalent_where_lists(s3_server, hourly, glob, where):
    root = f"s3://{hourly}/t"
    by_glob, glob_lists = _scan(s3_server, f"{root}/{glob}")
    by_where, where_lists = _scan(s3_server, root, where)
    _, flat_lists = _scan(s3_server, root)
    assert sorted(f.path for f in by_glob.files) == sorted(f.path for f in by_where.files)
    assert by_glob.files  # positive control: the glob reads something
    assert glob_lists == where_lists < flat_lists, (glob, glob_lists, where_lists, flat_lists)
    assert glob in by_glob.explain() and str(by_glob.partition_filter) in by_glob.explain()


def test_url_glob_that_matches_nothing_reads_nothing(s3_server, hourly):
    plan, lists = _scan(s3_server, f"s3://{hourly}/t/date=2027-*")
    assert plan.files == [] and lists <= 1
    plan, _ = _scan(s3_server, f"s3://{hourly}/t/date=2026-01-0[1-3]/hour=2?")
    assert len(plan.files) == 3 * 4  # positive control: a bracket and a ? match


def test_url_glob_samples_its_schema_and_first_file_within_the_glob(s3_server, hourly):
    """The schema is a matched file's (Spark infers from the files it reads): the first
    sampled page holds no key of ``date=2026-03-1*``, so ``open`` costs the sample and one
    LIST of the glob's range, and reads that range's first file; ``first_file`` (the CSV
    header's sample) lists what the glob's ``where`` lists, not the table from its start."""
    url = f"s3://{hourly}/t/date=2026-03-1*"
    with s3_server.log.capture(bucket=hourly) as cap:
        table = ListingTable.open(url, storage_options=s3_server.storage_options)
    gets = [e.key for e in cap.entries() if e.kind == "GET"]
    assert cap.count("LIST") == 2 and gets == ["t/date=2026-03-10/hour=00/p.parquet"], (
        cap.count("LIST"), gets)
    with s3_server.log.capture(bucket=hourly) as cap:
        first = table.first_file()
    assert first is not None and "/date=2026-03-10/hour=00/" in first.path
    assert cap.count("LIST") == 1  # from the start of the table: two pages
    # the control: a glob the first page holds costs the sample alone
    with s3_server.log.capture(bucket=hourly) as cap:
        ListingTable.open(f"s3://{hourly}/t/date=2026-01-0*",
                          storage_options=s3_server.storage_options)
    assert cap.count("LIST") == 1


def test_folders_list_what_their_where_lists(s3_server, hourly):
    """``folders`` (Spark's paths under ``basePath``) prune the listing by their ``k=v``
    segments as the glob's do: a scan, the schema's sample and ``first_file`` list the
    folder, never the table from its start (2,016 keys, three pages flat), and several
    folders list what the equivalent ``where`` lists."""
    root = f"s3://{hourly}/t"
    with s3_server.log.capture(bucket=hourly) as cap:
        table = ListingTable.open(root, storage_options=s3_server.storage_options,
                                  folders=["date=2026-03-27"])
    gets = [e.key for e in cap.entries() if e.kind == "GET"]
    # the sample (January), then the folder's prefix: its first file gives the schema
    assert cap.count("LIST") == 2 and gets == ["t/date=2026-03-27/hour=00/p.parquet"], (
        cap.count("LIST"), gets)
    with s3_server.log.capture(bucket=hourly) as cap:
        plan = table.scan()
    assert len(plan.files) == 24 and cap.count("LIST") == 1, cap.count("LIST")
    assert "their partition filter: date IN (DATE '2026-03-27')" in plan.explain()
    with s3_server.log.capture(bucket=hourly) as cap:
        first = table.first_file()
    assert first is not None and "/date=2026-03-27/hour=00/" in first.path
    assert cap.count("LIST") == 1
    several = ListingTable.open(root, storage_options=s3_server.storage_options,
                                folders=["date=2026-03-28/hour=07", "date=2026-03-27"])
    with s3_server.log.capture(bucket=hourly) as cap:
        by_folders = several.scan()
    by_where, where_lists = _scan(
        s3_server, root, "(date = '2026-03-28' AND hour = 7) OR date = '2026-03-27'")
    assert sorted(f.path for f in by_folders.files) == sorted(f.path for f in by_where.files)
    assert len(by_folders.files) == 25 and cap.count("LIST") == where_lists
    _, flat = _scan(s3_server, root)
    assert flat >= 3  # the control: the whole table is three pages


def test_url_glob_names_the_table_columns_and_its_values(s3_server, hourly):
    table = ListingTable.open(f"s3a://{hourly}/t/date=2026-03-1*/hour=0*",
                              storage_options=s3_server.storage_options)
    assert table.partition_cols == [("date", pa.date32()), ("hour", pa.int32())]
    got = table.to_arrow()
    assert got.num_rows == 10 * 10 * 2
    assert {str(d) for d in got.column("date").to_pylist()} == {f"2026-03-1{i}" for i in range(10)}


# --- Spark is the oracle ------------------------------------------------------------------

GLOBS = ["date=2026-03-1?", "date=2026-03-{01,1{0,1}}/hour={00,7}",
         "date=2026-03-1*/hour=07/*.parquet"]


def _rows(df):
    return sorted(tuple(map(repr, r)) for r in df.collect())


def _schema(df):
    return [(f.name, f.dataType.simpleString()) for f in df.schema]


def test_url_glob_reads_what_spark_reads(spark, tmp_path):
    for d in ["2026-03-01", "2026-03-02", "2026-03-10", "2026-03-11", "2026-03-19", "2026-03-20"]:
        for h in ["00", "07", "7"][:2 if d != "2026-03-11" else 3]:
            (tmp_path / f"date={d}/hour={h}").mkdir(parents=True)
            pq.write_table(DATA, tmp_path / f"date={d}/hour={h}/p.parquet")
    root = str(tmp_path)
    for glob in GLOBS:
        path = f"{root}/{glob}"
        theirs = spark.read.option("basePath", root).parquet(path)
        ours = spark.read.format("listing").load(path)
        expected = _rows(theirs)
        assert expected, glob  # positive control
        assert (_schema(ours), _rows(ours)) == (_schema(theirs), expected), glob
    # the other entry points, and a where above the glob
    path = f"{root}/{GLOBS[1]}"
    theirs = spark.read.option("basePath", root).parquet(path)
    for ours in [spark.read.format("listing").option("basePath", root).load(path),
                 ListingTable.open(path).to_spark(spark)]:
        assert (_schema(ours), _rows(ours)) == (_schema(theirs), _rows(theirs))
    cond = "hour = 7 AND date > '2026-03-01'"
    assert _rows(ours.where(cond)) == _rows(theirs.where(cond)) != []


def test_url_glob_in_sql_location_and_cli(spark, tmp_path, capsys):
    for d in ["2026-03-01", "2026-03-10", "2026-03-11"]:
        (tmp_path / f"date={d}").mkdir()
        pq.write_table(DATA, tmp_path / f"date={d}/p.parquet")
    spark.sql("DROP TABLE IF EXISTS url_glob_t")
    spark.sql(f"CREATE TABLE url_glob_t USING listing LOCATION '{tmp_path}/date=2026-03-1*'")
    try:
        got = spark.sql("SELECT date, count(*) AS n FROM url_glob_t GROUP BY date").collect()
        assert sorted((str(r.date), r.n) for r in got) == [("2026-03-10", 2), ("2026-03-11", 2)]
    finally:
        spark.sql("DROP TABLE IF EXISTS url_glob_t")
    assert main(["ls", f"{tmp_path}/date=2026-03-1*", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "date=2026-03-10" in out and "date=2026-03-11" in out and "date=2026-03-01" not in out


def test_storage_options_of_a_glob_path_stay_out_of_its_plan(s3_server, hourly):
    plan, _ = _scan(s3_server, f"s3://{hourly}/t/date=2026-03-1*")
    secret = s3_server.storage_options.get("secret")
    assert secret and secret not in plan.explain() and json.dumps(secret) not in repr(plan)
