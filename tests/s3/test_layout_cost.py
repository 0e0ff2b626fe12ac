"""A layout scan never sends more LIST requests than a flat listing of the table plus one
(listing/planner/template_run.py states the bound), and keeps exactly the files a flat
listing keeps when filtered on their decoded values: over several filters, on lakes of a
few LIST pages (empty objects: only the plan is looked at)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from listing import ListingTable

SCHEMA = pa.schema([("id", pa.string())])

#: what a layout scan may cost over the flat listing of its table
BOUND = 1

FIRST = dt.date(2026, 10, 1)
DAYS = [FIRST + dt.timedelta(days=i) for i in range(30)]
BIG = dt.date(2026, 10, 20)  # its hour 13 holds 1,100 objects: pages end inside it


@pytest.fixture(scope="module")
def firehose(s3_server):
    """``fh/yyyy/MM/dd/HH/…``: 30 days, 24 hours, 3 objects an hour, 1,100 more in one
    hour, and keys off the template (a stray file, a hidden folder, a key too deep)."""
    keys = [f"fh/{d:%Y/%m/%d}/{h:02d}/s-{n}.json" for d in DAYS for h in range(24)
            for n in range(3)]
    keys += [f"fh/{BIG:%Y/%m/%d}/13/big-{n:04d}.json" for n in range(1_100)]
    keys += ["fh/2026/notes.txt", "fh/_tmp/2026/10/05/13/x.json",
             "fh/2026/10/07/13/deep/x.json", "fh/2026/1x/01/13/odd.json"]
    with s3_server.temporary_buckets("layout-cost-fh") as (bucket,):
        s3_server.put_objects_fast(bucket, {k: b"" for k in keys})
        table = ListingTable.open(f"s3://{bucket}/fh/", format="json", schema=SCHEMA,
                                  layout="{date:yyyy/MM/dd}/{hour:HH}",
                                  storage_options=s3_server.storage_options)
        yield table, _counted(s3_server, table, None)


ACCOUNTS = ("111122223333", "444455556666", "777788889999")
REGIONS = ("eu-west-1", "us-east-1", "us-west-2")
CT_DAYS = [dt.date(2026, 11, 18) + dt.timedelta(days=i) for i in range(10)]


@pytest.fixture(scope="module")
def cloudtrail(s3_server):
    """``AWSLogs/<acct>/CloudTrail/<region>/yyyy/MM/dd/…`` with the digest sibling:
    3 accounts, 3 regions, 10 days, 20 objects a day."""
    keys = []
    for a in ACCOUNTS:
        for r in REGIONS:
            for d in CT_DAYS:
                keys += [f"AWSLogs/{a}/CloudTrail/{r}/{d:%Y/%m/%d}/{a}_CloudTrail_{r}_{n}.json"
                         for n in range(20)]
                keys.append(f"AWSLogs/{a}/CloudTrail-Digest/{r}/{d:%Y/%m/%d}/digest.json")
    with s3_server.temporary_buckets("layout-cost-ct") as (bucket,):
        s3_server.put_objects_fast(bucket, {k: b"" for k in keys})
        table = ListingTable.open(
            f"s3://{bucket}/", format="json", schema=SCHEMA,
            layout="AWSLogs/{account}/CloudTrail/{region}/{date:yyyy/MM/dd}",
            partition_cols=[("account", "string")], storage_options=s3_server.storage_options)
        yield table, _counted(s3_server, table, None)


def _counted(s3_server, table: ListingTable, where: str | None
             ) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    with s3_server.log.capture() as cap:
        files = table.scan(where=where).files
    return cap.count("LIST"), sorted((f.path, f.partition_values) for f in files)


Flat = tuple[int, list[tuple[str, dict[str, Any]]]]


def _check(s3_server, table: ListingTable, flat: Flat, where: str,
           keep: Callable[[dict[str, Any]], bool]) -> tuple[int, list[str]]:
    """(requests, paths) of the filtered scan, checked against the bound and the flat
    listing (its requests, files) filtered by the decoded values."""
    got, files = _counted(s3_server, table, where)
    assert files == [(p, v) for p, v in flat[1] if keep(v)], where
    assert got <= flat[0] + BOUND, (where, got, flat[0])
    return got, [p for p, _ in files]


H = "hour"


@pytest.mark.parametrize(("where", "keep"), [
    ("hour = 13", lambda v: v[H] == 13),
    ("hour >= 20", lambda v: v[H] >= 20),
    ("date BETWEEN '2026-10-10' AND '2026-10-25'",
     lambda v: dt.date(2026, 10, 10) <= v["date"] <= dt.date(2026, 10, 25)),
    ("date BETWEEN '2026-10-19' AND '2026-10-21' AND hour IN (1, 13)",
     lambda v: dt.date(2026, 10, 19) <= v["date"] <= dt.date(2026, 10, 21)
     and v[H] in (1, 13)),
    ("date >= '2026-10-25' OR hour = 23", lambda v: v["date"] >= dt.date(2026, 10, 25)
     or v[H] == 23),
    ("date = '2026-10-20' AND hour = 13", lambda v: v["date"] == BIG and v[H] == 13),
    (None, lambda v: True),
])
def test_firehose_scans_cost_no_more_than_flat(s3_server, firehose, where, keep):
    table, flat = firehose
    assert flat[0] == 4  # 3,264 keys: the lake is several pages, so the bound is at stake
    got, _ = _check(s3_server, table, flat, where, keep)
    if where == "date = '2026-10-20' AND hour = 13":
        assert got == 2  # its one prefix, 1,100 keys: two pages, as before


def test_firehose_hour_alone_is_cheaper_than_a_walk(s3_server, firehose):
    """Positive control for the bound: a walk of ``hour = 13`` lists the root, the year,
    both months and a prefix per day (34); the listing that jumps to each day's hour 13
    no more than flat's four pages."""
    table, flat = firehose
    with s3_server.log.capture() as cap:
        plan = table.scan(where="hour = 13")
        assert len(plan.files) == 30 * 3 + 1_100
    assert cap.count("LIST") <= flat[0]
    text = plan.explain()  # it jumped (start_after) to an hour 13 and past a day, and says so
    assert " after " in text and " past " in text and "\\U0010ffff" not in text


@pytest.mark.parametrize(("where", "keep"), [
    ("region = 'us-east-1'", lambda v: v["region"] == "us-east-1"),
    ("region = 'us-east-1' AND date = '2026-11-20'",
     lambda v: v["region"] == "us-east-1" and v["date"] == dt.date(2026, 11, 20)),
    ("account = '444455556666' AND date >= '2026-11-25'",
     lambda v: v["account"] == "444455556666" and v["date"] >= dt.date(2026, 11, 25)),
    ("date >= '2026-11-26'", lambda v: v["date"] >= dt.date(2026, 11, 26)),
])
def test_cloudtrail_scans_cost_no_more_than_flat(s3_server, cloudtrail, where, keep):
    table, flat = cloudtrail
    assert flat[0] == 2
    _, paths = _check(s3_server, table, flat, where, keep)
    assert paths and not any("Digest" in p for p in paths)
