"""Tables laid out by a path template (option ``layout``): LIST requests and rows, on
lakes shaped as Kinesis Data Firehose and CloudTrail deliver them (docs/layouts.md).

Objects are named ``….json`` (NDJSON) rather than the services' ``.gz``/no extension:
compression and extension-free names are the file filter's part of issue 47, not the
layout's; the keys are otherwise the services' own.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest

from listing import ListingTable
from listing.errors import OptionError

DAYS = (dt.date(2026, 11, 26), dt.date(2026, 11, 27))
HOURS = (12, 13, 14)


def _put(client, bucket: str, key: str, rows: list[dict]) -> None:
    body = "".join(json.dumps(r) + "\n" for r in rows).encode()
    client.put_object(Bucket=bucket, Key=key, Body=body)


@pytest.fixture(scope="module")
def firehose(s3_server):
    """``fh/yyyy/MM/dd/HH/stream-1-yyyy-MM-dd-HH-mm-ss-<uuid>.json``, two objects an hour,
    and a stray key below an hour folder; returns (url, rows by (day, hour))."""
    with s3_server.temporary_buckets("layout-firehose") as (bucket,):
        client = s3_server.client()
        rows: dict[tuple[dt.date, int], list[dict]] = {}
        for day in DAYS:
            for hour in HOURS:
                for n in range(2):
                    at = dt.datetime.combine(day, dt.time(hour, n))
                    got = [{"id": f"{day}-{hour}-{n}-{i}", "n": i} for i in range(3)]
                    rows.setdefault((day, hour), []).extend(got)
                    key = (f"fh/{at:%Y/%m/%d/%H}/stream-1-{at:%Y-%m-%d-%H-%M-%S}-"
                           f"{uuid.uuid4()}.json")
                    _put(client, bucket, key, got)
        _put(client, bucket, "fh/2026/11/27/13/errors/stray.json", [{"id": "x", "n": 0}])
        yield f"s3://{bucket}/fh/", rows


def _ids(table: ListingTable, where: str) -> tuple[list[str], object]:
    plan = table.scan(columns=["id"], where=where)
    return sorted(plan.to_arrow().column("id").to_pylist()), plan


def test_firehose_day_and_hour_is_one_list(s3_server, firehose):
    url, rows = firehose
    table = ListingTable.open(url, format="json", storage_options=s3_server.storage_options,
                              layout="{date:yyyy/MM/dd}/{hour:HH}")
    assert [(n, str(t)) for n, t in table.partition_cols] == [("date", "date32[day]"),
                                                             ("hour", "int32")]
    with s3_server.log.capture() as cap:
        ids, plan = _ids(table, "date = '2026-11-26' AND hour = 13")
    assert cap.count("LIST") == 1
    assert ids == sorted(r["id"] for r in rows[(DAYS[0], 13)])
    # a two-hour range: two prefixes, but the lake fit one page: one flat listing
    with s3_server.log.capture() as cap:
        ids, plan = _ids(table, "date = '2026-11-27' AND hour BETWEEN 13 AND 14")
    assert cap.count("LIST") == 1
    assert ids == sorted(r["id"] for h in (13, 14) for r in rows[(DAYS[1], h)])
    assert plan.metrics["files_skipped_layout"] == 1  # errors/stray.json, below the hour


def test_firehose_without_filter_lists_flat_once(s3_server, firehose):
    url, rows = firehose
    table = ListingTable.open(url, format="json", storage_options=s3_server.storage_options,
                              layout="{date:yyyy/MM/dd}/{hour:HH}")
    with s3_server.log.capture() as cap:
        plan = table.scan(columns=["id", "date", "hour"])
        got = plan.to_arrow()
    assert cap.count("LIST") == 1
    assert sorted(got.column("id").to_pylist()) == sorted(r["id"] for v in rows.values()
                                                          for r in v)
    assert plan.metrics["files_skipped_layout"] == 1
    assert plan.metrics["files_matched"] == len(DAYS) * len(HOURS) * 2
    # each row carries the values of its own folder
    assert all(r["id"].startswith(f"{r['date']}-{r['hour']}-") for r in got.to_pylist())
    assert {(r["date"], r["hour"]) for r in got.to_pylist()} == set(rows)


def test_firehose_open_range_on_a_small_lake_lists_once(s3_server, firehose):
    """``date >= X`` has no end; the whole lake fit the page open() sampled, so one flat
    listing is cheaper than any walk."""
    url, rows = firehose
    table = ListingTable.open(url, format="json", storage_options=s3_server.storage_options,
                              layout="{date:yyyy/MM/dd}/{hour:HH}")
    with s3_server.log.capture() as cap:
        ids, plan = _ids(table, "date >= '2026-11-27'")
    assert cap.count("LIST") == 1
    assert ids == sorted(r["id"] for h in HOURS for r in rows[(DAYS[1], h)])
    assert plan.metrics["partitions_pruned"] == len(HOURS)  # the hours of the 26th


@pytest.fixture(scope="module")
def large(s3_server):
    """A Firehose lake of 5,568 keys (six pages flat): 2026-10-01 to 2026-11-27, 24 hours
    a day, four objects an hour, each one row naming its day, hour and number."""
    with s3_server.temporary_buckets("layout-large") as (bucket,):
        first = dt.date(2026, 10, 1)
        days = [first + dt.timedelta(days=i) for i in range(58)]
        s3_server.put_objects_fast(bucket, {
            f"fh/{d:%Y/%m/%d}/{h:02d}/s-{n}.json": json.dumps({"id": f"{d}-{h}-{n}"}).encode()
            for d in days for h in range(24) for n in range(4)})
        yield f"s3://{bucket}/fh/", days


def _large(s3_server, url: str, layout: str) -> ListingTable:
    return ListingTable.open(url, format="json", storage_options=s3_server.storage_options,
                             layout=layout)


def test_a_two_hour_range_is_two_lists(s3_server, large):
    url, _ = large
    table = _large(s3_server, url, "{date:yyyy/MM/dd}/{hour:HH}")
    with s3_server.log.capture() as cap:
        ids, _ = _ids(table, "date = '2026-11-26' AND hour BETWEEN 13 AND 14")
    assert cap.count("LIST") == 2
    assert ids == sorted(f"2026-11-26-{h}-{n}" for h in (13, 14) for n in range(4))


def test_a_timestamp_column_enumerates_its_hours(s3_server, large):
    url, _ = large
    table = _large(s3_server, url, "{ts:yyyy/MM/dd/HH}")
    assert str(table.partition_cols[0][1]) == "timestamp[us, tz=UTC]"
    with s3_server.log.capture() as cap:
        ids, _ = _ids(table, "ts >= '2026-11-26 13:00:00' AND ts < '2026-11-26 15:00:00'")
    assert cap.count("LIST") == 2
    assert ids == sorted(f"2026-11-26-{h}-{n}" for h in (13, 14) for n in range(4))


@pytest.mark.parametrize("concurrent", [1, 8])
def test_many_spelled_prefixes_are_one_listing_that_jumps(s3_server, large, concurrent):
    """Seven days, two hours: fourteen spelled prefixes, which one request each would
    list in fourteen; one listing of ``fh/2026/11/`` from the first of them holds them
    all (768 keys), sequential or with eight threads: the files in key order."""
    url, _ = large
    table = ListingTable.open(url, format="json", storage_options=s3_server.storage_options,
                              layout="{date:yyyy/MM/dd}/{hour:HH}",
                              max_concurrent_requests=concurrent)
    with s3_server.log.capture() as cap:
        plan = table.scan(where="date BETWEEN '2026-11-20' AND '2026-11-26' AND hour IN (1, 13)")
    prefixes = [f"fh/2026/11/{d}/{h:02d}/" for d in range(20, 27) for h in (1, 13)]
    assert [(e.query.get("prefix"), e.query.get("start-after"))
            for e in cap.entries() if e.kind == "LIST"] == [("fh/2026/11/", "fh/2026/11/20/01")]
    assert [f.path.split("/fh/")[1].rsplit("/", 1)[0] + "/" for f in plan.files] == [
        p[3:] for p in prefixes for _ in range(4)]


def test_an_open_range_walks_a_large_lake_by_level(s3_server, large):
    """``date >= X``: one listing that jumps past the month and the days before X as its
    pages reach them: four requests where flat takes six."""
    url, days = large
    table = _large(s3_server, url, "{date:yyyy/MM/dd}/{hour:HH}")
    with s3_server.log.capture() as cap:
        plan = table.scan(where="date >= '2026-11-27'")
    # fh/ from its start (Oct 1-11), after October, after Nov 11, after Nov 22
    assert cap.count("LIST") == 4
    assert len(plan.files) == 24 * 4
    assert {f.partition_values["date"] for f in plan.files} == {days[-1]}
    assert plan.metrics["partitions_pruned"] > 0  # hours of the days the pages held
    with s3_server.log.capture() as cap:  # positive control: no filter, six pages flat
        assert len(table.scan().files) == len(days) * 24 * 4
    assert cap.count("LIST") == 6


FILES = 2  # objects a day (one event each)
FILLER = 1_040  # objects of an older day, so that the lake holds more than one LIST page


@pytest.fixture(scope="module")
def cloudtrail(s3_server):
    """``AWSLogs/<acct>/CloudTrail/<region>/yyyy/MM/dd/<acct>_CloudTrail_<region>_….json``
    for two accounts, two regions, two days, with the ``CloudTrail-Digest/`` sibling."""
    with s3_server.temporary_buckets("layout-cloudtrail") as (bucket,):
        rows: dict[tuple[str, str, dt.date], list[dict]] = {}
        objects: dict[str, bytes] = {}
        digests = []
        for acct in ("111122223333", "444455556666"):
            for region in ("us-east-1", "eu-west-1"):
                for day in DAYS:
                    got = [{"eventID": f"{acct}-{region}-{day}-{i}"} for i in range(FILES)]
                    rows[(acct, region, day)] = got
                    for event in got:  # one event an object
                        key = (f"AWSLogs/{acct}/CloudTrail/{region}/{day:%Y/%m/%d}/{acct}_"
                               f"CloudTrail_{region}_{day:%Y%m%d}T0000Z_{uuid.uuid4().hex}"
                               ".json")
                        objects[key] = (json.dumps(event) + "\n").encode()
                    digest = (f"AWSLogs/{acct}/CloudTrail-Digest/{region}/{day:%Y/%m/%d}/"
                              f"{acct}_CloudTrail-Digest_{region}_{day:%Y%m%d}T0000Z.json")
                    objects[digest] = b'{"digest": true}\n'
                    digests.append(digest)
        for n in range(FILLER):
            objects[f"AWSLogs/111122223333/CloudTrail/us-east-1/2026/11/20/f-{n:04d}.json"] = (
                b'{"eventID": "filler"}\n')
        s3_server.put_objects_fast(bucket, objects)
        yield f"s3://{bucket}/", rows, digests


CLOUDTRAIL = "AWSLogs/{account}/CloudTrail/{region}/{date:yyyy/MM/dd}"


def test_cloudtrail_region_and_day(s3_server, cloudtrail):
    url, rows, digests = cloudtrail
    table = ListingTable.open(url, format="json", storage_options=s3_server.storage_options,
                              layout=CLOUDTRAIL, partition_cols=[("account", "string")])
    with s3_server.log.capture() as cap:
        plan = table.scan(where="region = 'eu-west-1' AND date = '2026-11-27'")
        got = plan.to_arrow()
    # walk AWSLogs/ for the accounts, then one listing per account: CloudTrail/ is a
    # literal, spelled, so the CloudTrail-Digest/ siblings are never listed
    assert cap.count("LIST") == 3
    assert sorted(got.column("eventID").to_pylist()) == sorted(
        r["eventID"] for a in ("111122223333", "444455556666")
        for r in rows[(a, "eu-west-1", DAYS[1])])
    assert {r["account"] for r in got.to_pylist()} == {"111122223333", "444455556666"}
    assert len(plan.files) == 2 * FILES and not any("Digest" in f.path for f in plan.files)
    listed = [e.query.get("prefix", "") for e in cap.entries() if e.kind == "LIST"]
    assert listed and not any("Digest" in p for p in listed)  # never listed


def test_cloudtrail_projection_enumerates_accounts(s3_server, cloudtrail):
    url, rows, _ = cloudtrail
    table = ListingTable.open(url, format="json", storage_options=s3_server.storage_options,
                              layout=CLOUDTRAIL,
                              layout_projection="account=111122223333|444455556666")
    with s3_server.log.capture() as cap:
        plan = table.scan(where="region = 'us-east-1' AND date = '2026-11-26'")
        got = plan.to_arrow()
    assert cap.count("LIST") == 2  # one a projected account, no walk of AWSLogs/
    assert sorted(got.column("eventID").to_pylist()) == sorted(
        r["eventID"] for a in ("111122223333", "444455556666")
        for r in rows[(a, "us-east-1", DAYS[0])])


def test_cloudtrail_flat_listing_counts_the_digests(s3_server, cloudtrail):
    url, rows, digests = cloudtrail
    table = ListingTable.open(url, format="json", storage_options=s3_server.storage_options,
                              layout=CLOUDTRAIL)
    with s3_server.log.capture() as cap:
        plan = table.scan()
    assert cap.count("LIST") == 2  # 1,056 keys: two pages
    assert plan.metrics["files_matched"] == sum(len(v) for v in rows.values()) + FILLER
    assert plan.metrics["files_skipped_layout"] == len(digests)
    assert "files_skipped_layout" in plan.explain()


def test_a_bad_layout_is_one_line_naming_it(s3_server, firehose):
    url, _ = firehose
    with pytest.raises(OptionError) as err:
        ListingTable.open(url, format="json", storage_options=s3_server.storage_options,
                          layout="{date:yyyy/MM/dd/{hour:HH}")
    text = str(err.value)
    assert "\n" not in text and "layout" in text and "character 1" in text


def test_the_cli_reads_a_layout(s3_server, firehose, capsys):
    from listing.cli import main

    url, rows = firehose
    args = [url, "--format", "json", "--layout", "{date:yyyy/MM/dd}/{hour:HH}",
            "--storage-option", f"endpoint_url={s3_server.endpoint_url}",
            "--storage-option", "key=testing", "--storage-option", "secret=testing"]
    assert main(["ls", *args, "-q", "--where", "date = '2026-11-26' AND hour = 13"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 2 and "/2026/11/26/13/stream-1-" in out
    assert "1 LIST requests" in err
    assert main(["ls", *args, "--layout", "{date:yyyy/MM/dd/{hour:HH}"]) == 2
    err = capsys.readouterr().err
    assert "layout" in err and "character 1" in err and len(err.strip().splitlines()) == 1


def test_a_layout_below_a_glob_is_refused(s3_server, firehose):
    url, _ = firehose
    with pytest.raises(OptionError, match="option layout reads the whole table at its root"):
        ListingTable.open(url + "2026/*/*", format="json", layout="{date:yyyy/MM/dd}",
                          storage_options=s3_server.storage_options)
