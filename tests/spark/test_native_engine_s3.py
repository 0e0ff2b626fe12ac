"""S3 tables handed to Spark's own readers through Hadoop's S3A connector.

Real Spark with the connector fetched by ``make s3a`` (listing.session() puts it on the
classpath), a moto S3 server over HTTP, files written with pyarrow. Every native result is
checked against the Python engine on the same objects, and request counts against the
server's own log.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid
from contextlib import redirect_stdout

import pytest
from spark_plans import s3a_bucket_conf as _s3a_conf
from test_native_engine import QUERIES, _file_index, engine_of, physical

import listing
from listing.spark.s3a import connector_jars
from listing.testing import datasets

DAYS = 4


@pytest.fixture(scope="module", autouse=True)
def _connector():
    assert connector_jars(), ("Spark's S3A connector is not fetched: run `make s3a` "
                              "(python -m listing.spark.s3a)")


def _options(server, **extra):
    return {**server.storage_options, **extra}


@pytest.fixture(scope="module", params=["parquet", "csv", "ndjson"])
def s3_events(request, s3_server):
    bucket = s3_server.create_bucket(f"s3a-{request.param}-{uuid.uuid4().hex[:8]}")
    ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options,
                        format=request.param, days=DAYS, rows_per_file=6,
                        put=datasets.fast_writer(s3_server))
    yield ds
    s3_server.drop_bucket(bucket)


@pytest.fixture
def parquet_table(s3_server):
    bucket = s3_server.create_bucket(f"s3a-pq-{uuid.uuid4().hex[:8]}")
    ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options, days=DAYS,
                        rows_per_file=6, put=datasets.fast_writer(s3_server))
    yield bucket, ds
    s3_server.drop_bucket(bucket)


def read(spark, ds, engine=None, storage_options=None, **options):
    r = (spark.read.format("listing").option("format", ds.format)
         .option("storage_options", json.dumps(storage_options or ds.storage_options)))
    if engine is not None:
        r = r.option("engine", engine)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load(ds.root)


def test_native_and_python_give_the_same_results_on_s3(spark, s3_events):
    """The local files' query matrix (test_native_engine.QUERIES), one DataFrame per engine."""
    python = read(spark, s3_events, "python")
    native = read(spark, s3_events)  # auto hands S3 to Spark's reader
    assert engine_of(python) == "python" and engine_of(native) == "native"
    assert f"Location: ListingFileIndex(1 paths)[s3a://{s3_events.root[5:]}]" in physical(native)
    assert native.schema == python.schema
    results = {name: (query(native), query(python)) for name, query in QUERIES.items()}
    assert {n: got for n, (got, _) in results.items()} == {
        n: want for n, (_, want) in results.items()}
    assert results["count"][0] == s3_events.num_rows
    assert results["partition_pruned_count"][0] == sum(
        f.num_rows for f in s3_events.files if f.partition_values["date"] >= dt.date(2025, 1, 3)
        and f.partition_values["region"] == "eu") > 0


def _spark_reader(spark, ds, schema):
    """Spark's own reader of ``ds``'s format, as the hand-off configures it."""
    fmt = "json" if ds.format == "ndjson" else ds.format
    r = spark.read.format(fmt)
    if fmt != "parquet":
        r = r.schema(schema)
    if fmt == "csv":
        r = r.option("header", "true")
    return r


def test_a_point_query_lists_one_prefix_and_sends_no_head(spark, s3_server, s3_events):
    """1 LIST, for the pruned prefix only, then only GETs of the files read, in every
    format: no HEAD. Spark's readers would head each file (S3A's getFileStatus: Parquet's
    footer reader opens ``HadoopInputFile.fromPath``; the CSV and JSON line readers call
    ``openFile(path)`` with the split's bounds only); the hand-off's formats open each file
    with the size and ETag our listing gave it (ListedOpens.java).

    Positive control: Spark's own reader over S3A on the same query heads every file it
    reads, at least once (and lists the whole table first)."""
    ds = s3_events
    bucket = ds.root.split("/")[2]
    matching = [f for f in ds.files if f.partition_values["date"] == dt.date(2025, 1, 2)]
    keys = sorted(f"events/{f.path.split('/events/')[1]}" for f in matching)
    native = read(spark, ds, "native").where("date = '2025-01-02'")
    assert engine_of(native) == "native"
    with s3_server.log.capture(bucket) as cap:
        assert native.count() == sum(f.num_rows for f in matching)
    counts = cap.counts()
    assert counts["LIST"] == 1, cap.entries()
    (listed,) = [e for e in cap.entries() if e.kind == "LIST"]
    assert listed.query["prefix"] == "events/date=2025-01-02/"
    assert counts["HEAD"] == 0, cap.entries()
    # GETs only for those files: none when S3A's default (analytics) input stream still
    # holds what an earlier query in this JVM read of them
    assert {e.key for e in cap.entries() if e.kind == "GET"} <= set(keys)
    # Spark's own reader over S3A on the same query: it lists the whole table first
    hadoop = spark._jsc.hadoopConfiguration()
    for key, value in _s3a_conf(bucket, s3_server).items():
        hadoop.set(key, value)
    with s3_server.log.capture(bucket) as theirs:
        theirs_df = _spark_reader(spark, ds, native.schema).load(f"s3a://{bucket}/events")
        assert theirs_df.where("date = '2025-01-02'").count() == sum(
            f.num_rows for f in matching)
    # (Spark 4.0's Parquet reader heads a file twice: its footer, then its row groups)
    assert {e.key for e in theirs.entries() if e.kind == "HEAD"} >= set(keys), theirs.entries()
    listed_keys = [e for e in theirs.entries() if e.kind == "LIST"
                   and e.query.get("prefix", "").startswith("events/")]
    assert listed_keys and all(e.query.get("prefix") in ("events/", "events/_spark_metadata/")
                               for e in listed_keys), theirs.entries()


@pytest.mark.parametrize("fmt", ["parquet", "ndjson"])
def test_a_file_changed_since_listing_fails_its_read(spark, s3_server, fmt):
    """Opened with the listed size and ETag, every GET is conditional on the listed
    version: a file rewritten after its listing (kept by ``list_cache_ttl``) fails the
    read (S3A's RemoteFileChangedException, the server's 412), never read with its listed
    length (a grown JSON file would lose its last line's end). The file is read first after
    the change: S3A's analytics input stream may keep what an earlier query read of a file
    (the listed version). Positive controls: the same kept listing reads the other day's
    files, and a fresh listing reads the changed file as it is now."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    bucket = s3_server.create_bucket(f"s3a-changed-{uuid.uuid4().hex[:8]}")
    try:
        ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options, format=fmt,
                            days=2, rows_per_file=6, put=datasets.fast_writer(s3_server))
        day = [f for f in ds.files if f.partition_values["date"] == dt.date(2025, 1, 2)]
        table = read(spark, ds, "native", list_cache_ttl="5m")
        assert len(table.inputFiles()) == len(ds.files)  # lists (kept), reads no file
        cached = table.where("date = '2025-01-02'")
        other = [f for f in ds.files if f.partition_values["date"] == dt.date(2025, 1, 1)]
        assert table.where("date = '2025-01-01'").count() == sum(f.num_rows for f in other)
        changed = day[0]
        key = f"events/{changed.path.split('/events/')[1]}"
        client = s3_server.client()
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        if fmt == "parquet":
            rows = pq.read_table(pa.BufferReader(body))
            out = pa.BufferOutputStream()
            pq.write_table(pa.concat_tables([rows, rows]), out)
            new = out.getvalue().to_pybytes()
        else:
            new = body + body  # grown: the listed length ends inside the file
        client.put_object(Bucket=bucket, Key=key, Body=new)
        with s3_server.log.capture(bucket) as cap, pytest.raises(
                Exception, match="RemoteFileChangedException|changed"):
            cached.count()
        assert cap.count("LIST") == 0 and cap.count("HEAD") == 0, cap.entries()
        assert [e.status for e in cap.entries() if e.kind == "GET" and e.key == key] == [
            412], cap.entries()  # conditional on the listed ETag, and not retried
        fresh = read(spark, ds, "native").where("date = '2025-01-02'")
        assert fresh.count() == sum(f.num_rows for f in day) + changed.num_rows
    finally:
        s3_server.drop_bucket(bucket)


def test_spark_metadata_columns_and_input_files_on_s3(spark, parquet_table):
    bucket, ds = parquet_table
    df = read(spark, ds)
    assert engine_of(df) == "native"
    want = {f"s3a://{bucket}/events/{f.path.split('/events/')[1]}" for f in ds.files}
    assert set(df.inputFiles()) == want
    rows = df.select("_metadata.file_path", "_metadata.file_size").distinct().collect()
    assert {r.file_path for r in rows} == want and all(r.file_size > 0 for r in rows)
    from pyspark.sql import functions as F

    assert {r.f for r in df.select(F.input_file_name().alias("f")).distinct().collect()} == want


def test_credentials_never_show_in_plans_or_the_sql_status_store(spark, s3_server,
                                                                 parquet_table):
    bucket, ds = parquet_table
    key, secret = f"AKID{uuid.uuid4().hex[:12]}", f"s3cr3t{uuid.uuid4().hex}"
    token = f"t0ken{uuid.uuid4().hex}"
    opts = _options(s3_server, key=key, secret=secret, token=token)
    df = read(spark, ds, "native", storage_options=opts).where("region = 'eu'")
    assert df.count() == sum(f.num_rows for f in ds.files
                             if f.partition_values["region"] == "eu")
    # positive control: the credentials did reach the relation Spark reads with
    relation = _file_index(df)  # the one HadoopFsRelation's index; its options below
    plan = df._jdf.queryExecution().optimizedPlan().toString()
    options = _relation_options(df)
    assert options[f"fs.s3a.bucket.{bucket}.secret.key"] == secret
    assert options[f"fs.s3a.bucket.{bucket}.session.token"] == token
    assert options[f"fs.s3a.bucket.{bucket}.aws.credentials.provider"].endswith(
        "TemporaryAWSCredentialsProvider")
    out = io.StringIO()
    with redirect_stdout(out):
        df.explain(True)
        df.explain("formatted")
        listing.explain(df)
    texts = [out.getvalue(), plan, str(relation.toString()),
             str(df._jdf.queryExecution().toString())]
    store = spark._jsparkSession.sharedState().statusStore()
    executions = store.executionsList()
    for i in range(executions.size()):
        e = executions.apply(i)
        texts += [str(e.description()), str(e.details()), str(e.physicalPlanDescription())]
    for text in texts:
        assert secret not in text and token not in text and key not in text


def _relation_options(df):
    from test_native_engine import _nodes

    plan = df._jdf.queryExecution().optimizedPlan()
    (rel,) = [n for n in _nodes(plan) if n.getClass().getSimpleName() == "LogicalRelation"]
    options = rel.relation().options()
    it = options.iterator()
    out = {}
    while it.hasNext():
        pair = it.next()
        out[str(pair._1())] = str(pair._2())
    return out


def test_storage_options_map_to_per_bucket_s3a_settings(spark, s3_server, parquet_table):
    """The options become the bucket's S3A settings, and S3A reads with them: timeouts as
    plain milliseconds, which Hadoop 3.3's S3A (Spark 3.5) reads with getInt (a "5000ms"
    fails the count there) and 3.4 and later as milliseconds."""
    bucket, ds = parquet_table
    opts = _options(s3_server, max_retries=2,
                    config_kwargs={"connect_timeout": 5, "read_timeout": 7.5,
                                   "max_pool_connections": 16,
                                   "s3": {"addressing_style": "path"}})
    df = read(spark, ds, "native", storage_options=opts)
    assert df.count() == ds.num_rows
    got = _relation_options(df)
    p = f"fs.s3a.bucket.{bucket}."
    assert {k[len(p):]: v for k, v in got.items() if k.startswith(p)} == {
        "access.key": "testing", "secret.key": "testing",
        "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "endpoint": s3_server.endpoint_url, "connection.ssl.enabled": "false",
        "path.style.access": "true", "endpoint.region": "us-east-1",
        "attempts.maximum": "2", "connection.establish.timeout": "5000",
        "connection.timeout": "7500", "connection.maximum": "16"}
    assert not [k for k in got if k.startswith("fs.s3a.") and not k.startswith(p)]


def test_values_python_accepts_hand_off_as_python_reads_them(spark, s3_server, parquet_table):
    """A duration or count spelled as Python reads it ("5s", "250ms", "1_000") hands off
    with the value Python reads (the JVM once refused them and kept the Python engine);
    a value Python refuses is refused, naming the option (positive control)."""
    bucket, ds = parquet_table
    opts = _options(s3_server, config_kwargs={
        "connect_timeout": "5s", "read_timeout": "250ms", "max_pool_connections": "1_000"})
    df = read(spark, ds, storage_options=opts)
    assert engine_of(df) == "native" and df.count() == ds.num_rows
    p = f"fs.s3a.bucket.{bucket}."
    got = {k[len(p):]: v for k, v in _relation_options(df).items() if k.startswith(p)}
    assert (got["connection.establish.timeout"], got["connection.timeout"],
            got["connection.maximum"]) == ("5000", "250", "1000")
    bad = _options(s3_server, config_kwargs={"connect_timeout": "5 parsecs"})
    for engine in ("native", "auto"):
        with pytest.raises(Exception, match=r"config_kwargs.connect_timeout='5 parsecs' "
                                            "must be a duration"):
            read(spark, ds, engine, storage_options=bad).count()


@pytest.mark.parametrize(("option", "value", "named"), [
    ("retry_max_backoff", "20s", "storage option retry_max_backoff"),
    ("retry_mode", "adaptive", "storage option retry_mode=adaptive"),
    ("config_kwargs", {"tcp_keepalive": True}, "config_kwargs.tcp_keepalive"),
])
def test_options_s3a_cannot_honour_stay_python_and_say_why(spark, s3_server, parquet_table,
                                                           option, value, named):
    bucket, ds = parquet_table
    opts = _options(s3_server, **{option: value})
    auto = read(spark, ds, storage_options=opts)
    assert engine_of(auto) == "python"
    (text,) = listing.explain(auto, show=False)
    assert text.startswith("engine: python") and named in text, text
    assert "testing" not in text.split("ScanPlan")[0]
    with pytest.raises(Exception, match=f"engine=native.*{named}"):
        read(spark, ds, "native", storage_options=opts)


def test_a_bucket_opened_with_other_settings_stays_python(spark, s3_server, parquet_table):
    """S3A keeps one filesystem per bucket in a JVM: a second table on the bucket with
    other credentials would be read with the first one's, so it stays on our reader."""
    bucket, ds = parquet_table
    first = read(spark, ds)
    assert engine_of(first) == "native" and first.count() == ds.num_rows
    other = _options(s3_server, key="another-key", secret="another-secret")
    second = read(spark, ds, storage_options=other)
    assert engine_of(second) == "python" and second.count() == ds.num_rows
    (text,) = listing.explain(second, show=False)
    assert "opened earlier" in text and "access.key" in text and "another" not in text
    with pytest.raises(Exception, match="engine=native.*opened earlier"):
        read(spark, ds, "native", storage_options=other)


def test_without_the_connector_s3_stays_python_and_says_so(spark, s3_server, parquet_table):
    """A JVM that cannot load S3A (here: the session's fs.s3a.impl names a missing class,
    the check Spark's own lookup makes) keeps S3 tables on the Python engine."""
    bucket, ds = parquet_table
    spark.conf.set("fs.s3a.impl", "org.example.NoS3AFileSystem")
    try:
        auto = read(spark, ds)
        assert engine_of(auto) == "python"
        assert auto.where("region = 'us'").count() == sum(
            f.num_rows for f in ds.files if f.partition_values["region"] == "us")
        (text,) = listing.explain(auto, show=False)
        assert "no S3A connector" in text and "python -m listing.spark.s3a" in text
        assert "before any other in this process" in text  # why a later session lacks it
        with pytest.raises(Exception, match=r"engine=native.*storage s3://.*no S3A connector"):
            read(spark, ds, "native")
    finally:
        spark.conf.unset("fs.s3a.impl")
    assert engine_of(read(spark, ds)) == "native"  # positive control: the same table
