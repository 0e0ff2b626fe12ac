"""``listing_partitions(...)`` in SQL: SHOW PARTITIONS from the listing, as
``ListingTable.partitions`` answers it."""

from __future__ import annotations

import json

import pytest

from listing import ListingTable
from listing.testing import datasets


def test_sql_partitions_match_the_python_api(spark, tmp_path):
    ds = datasets.daily(str(tmp_path / "events"), days=6, files_per_partition=2)
    where = "date >= '2025-01-04' AND region = 'us'"
    got = spark.sql(f"SELECT * FROM listing_partitions('{ds.root}', where => \"{where}\") "
                    "ORDER BY date").collect()
    want = ListingTable.open(ds.root).partitions(where).to_pylist()
    assert [r.asDict() for r in got] == want
    assert [(str(r.date), r.files) for r in got] == [
        ("2025-01-04", 2), ("2025-01-05", 2), ("2025-01-06", 2)]


def test_sql_partitions_on_s3_with_storage_options(spark, s3_server, s3_bucket):
    ds = datasets.hourly(f"s3://{s3_bucket}/t", s3_server.storage_options, days=2, hours=3,
                         put=datasets.fast_writer(s3_server))
    opts = json.dumps({"endpoint_url": s3_server.endpoint_url, "key": "testing",
                       "secret": "testing"})
    df = spark.sql(f"SELECT * FROM listing_partitions(path => '{ds.root}', "
                   f"storage_options => '{opts}')")
    assert df.columns == ["date", "hour", "files", "bytes"]
    assert dict(df.dtypes)["hour"] == "int"
    assert df.count() == 6 and df.where("hour = 2").count() == 2


@pytest.mark.parametrize(("call", "message"), [
    ("listing_partitions('{root}/missing')", "no objects under"),
    ("listing_partitions('{root}', format => 'orcish')", "unknown format 'orcish'"),
    ("listing_partitions('{root}', where => 'nope = 1')", "nope"),
])
def test_sql_partitions_errors_name_the_argument(spark, tmp_path, call, message):
    ds = datasets.daily(str(tmp_path / "e"), days=1)
    with pytest.raises(Exception, match=message):
        spark.sql(f"SELECT * FROM {call.format(root=ds.root)}").collect()
