"""Writes that never lose data: a failure at every request of a commit, and a process
killed at every request of a commit, leave the table with exactly its old rows or exactly
its new rows (moto behind the fault-injecting proxy; ``WriteJob.recover`` finishes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from listing import ListingTable
from listing.errors import CommitError
from listing.testing.faults import FaultProxy
from listing.write import WriteJob, write_table

#: no retries: every injected fault fails the request it hits
NO_RETRY = {"max_retries": 0, "retry_max_backoff": 0.01}
OLD = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "k": ["a", "b", "c"]})
NEW = pa.table({"id": pa.array([11, 12], pa.int64()), "k": ["b", "z"]})
KINDS = ("503", "500", "reset")
#: (mode, partition_overwrite_mode) -> the ids the table holds after the job
CASES = {
    ("append", "static"): [1, 2, 3, 11, 12],
    ("overwrite", "static"): [11, 12],
    ("overwrite", "dynamic"): [1, 3, 11, 12],  # k=b replaced, k=a and k=c kept, k=z new
}


@pytest.fixture
def proxy(s3_server):
    with FaultProxy(s3_server.endpoint_url) as p:
        yield p


def ids(url, opts):
    return sorted(ListingTable.open(url, storage_options=opts).scan().to_arrow()
                  .column("id").to_pylist())


def keys(s3_server, bucket, prefix):
    resp = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for o in resp.get("Contents", []))


def staged_job(url, opts, mode, dynamic, protocol="auto"):
    job = WriteJob(url, NEW.schema, partition_by=["k"], mode=mode,
                   partition_overwrite_mode=dynamic, storage_options=opts,
                   commit_protocol=protocol)
    job.setup()
    return job, job.write_task(NEW.to_batches())


def commit_requests(s3_server, proxy, bucket, mode, dynamic, protocol):
    """The number of requests a fault-free commit sends, and the ids it leaves."""
    n, _, new_ids = commit_log(s3_server, proxy, bucket, mode, dynamic, protocol)
    return n, new_ids


def commit_log(s3_server, proxy, bucket, mode, dynamic, protocol="auto"):
    """A fault-free commit's request count, the kinds of its requests in order, its ids."""
    url = f"s3://{bucket}/probe-{mode}-{dynamic}"
    write_table(url, OLD, partition_by=["k"], storage_options=s3_server.storage_options)
    job, task = staged_job(url, {**proxy.storage_options, **NO_RETRY}, mode, dynamic,
                           protocol)
    before = proxy.stats.requests
    with s3_server.log.capture(bucket) as cap:
        job.commit([task])
    n = proxy.stats.requests - before
    kinds = [e.kind for e in cap.entries()]
    assert len(kinds) == n
    return n, kinds, ids(url, s3_server.storage_options)


@pytest.mark.parametrize("mode, dynamic, protocol", [
    *[(mode, dynamic, "multipart") for mode, dynamic in CASES],
    ("overwrite", "static", "copy")])  # the staged-copy commit (stores without multipart)
def test_a_fault_at_every_request_of_a_commit_leaves_old_or_new(s3_server, s3_bucket, proxy,
                                                                mode, dynamic, protocol):
    """Each fault kind at each request index of the commit: the commit either succeeds
    (the new rows, at once) or raises with the old rows in place, and after Spark's
    ``abort`` and ``recover`` the table is exactly old or exactly new, its staging empty,
    no upload open and ``_SUCCESS`` present."""
    n, new_ids = commit_requests(s3_server, proxy, s3_bucket, mode, dynamic, protocol)
    assert new_ids == CASES[(mode, dynamic)]
    offset = list(CASES).index((mode, dynamic))
    assert n >= 10  # GETs, LISTs, PUTs, COPYs, DeleteObjects: every step is covered
    outcomes: dict[str, int] = {}
    for index in range(n):
        # the kinds in turn, shifted per mode: every kind meets every index across modes
        kind = KINDS[(index + offset) % len(KINDS)]
        outcome = fault_once(s3_server, s3_bucket, proxy, mode, dynamic, protocol, index,
                             kind, new_ids)
        assert outcome != "no fault", (index, kind)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    # positive controls: faults before the commit point roll back, after it they do not
    assert outcomes.get("old", 0) >= 2 and outcomes.get("new", 0) >= 2, outcomes
    if mode == "overwrite":
        assert outcomes.get("committed, old files left", 0) >= 1, outcomes


def fault_once(s3_server, s3_bucket, proxy, mode, dynamic, protocol, index, kind, new_ids):
    """One commit with ``kind`` injected at its request ``index``, then Spark's abort (if
    it failed) and recover; checks the table and returns what the commit reported."""
    direct = s3_server.storage_options
    prefix = f"{mode}-{dynamic}-{protocol}-{index}-{kind}"
    url = f"s3://{s3_bucket}/{prefix}"
    write_table(url, OLD, partition_by=["k"], storage_options=direct)
    old_keys = keys(s3_server, s3_bucket, prefix + "/")
    job, task = staged_job(url, {**proxy.storage_options, **NO_RETRY}, mode, dynamic,
                           protocol)
    rule = proxy.add_rule(None, kind, skip=index, times=1)
    error = None
    try:
        job.commit([task])
    except CommitError as err:
        error = str(err)
    proxy.clear_rules()
    where = (index, kind, error)
    got = ids(url, direct)
    if not rule.fired:  # the index lies past the commit's last request
        assert error is None and got == new_ids, where
        return "no fault"
    if error is None:
        assert got == new_ids, where  # a commit that returns is complete
        outcome = "new"
    elif "is committed" in error:
        assert sorted(got) == sorted(set(got)), where
        outcome = "committed, old files left"
    else:
        assert got == [1, 2, 3], where  # rolled back: the old rows exactly
        outcome = "old"
    if error is not None:
        job.abort()  # what Spark does after a failed commit
    WriteJob.recover(url, direct)
    final = ids(url, direct)
    assert final == (new_ids if outcome != "old" else [1, 2, 3]), where
    now = keys(s3_server, s3_bucket, prefix + "/")
    assert not [k for k in now if "/_temporary/" in k or k.endswith(".lock")], where
    assert f"{prefix}/_SUCCESS" in now, where
    assert not s3_server.client().list_multipart_uploads(
        Bucket=s3_bucket, Prefix=prefix + "/").get("Uploads"), where
    if final == [1, 2, 3]:
        assert now == old_keys, where  # old files never removed, nothing left over
    return outcome


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from([(m, d, p) for m, d in CASES for p in ("multipart", "copy")]),
       index=st.integers(0, 20), kind=st.sampled_from(KINDS))
def test_property_any_failure_point_leaves_old_or_new(s3_server, s3_bucket, proxy, case,
                                                      index, kind):
    """Any mode, protocol, fault kind and request index (past the commit's last request:
    no fault, the new rows): exactly the old or exactly the new rows."""
    mode, dynamic, protocol = case
    new_ids = CASES[(mode, dynamic)]
    fault_once(s3_server, s3_bucket, proxy, mode, dynamic, protocol, index, kind, new_ids)


@pytest.mark.parametrize("protocol, op", [("copy", "PUT"), ("multipart", "POST")])
def test_without_the_manifest_a_failed_overwrite_would_have_lost_rows(s3_server, s3_bucket,
                                                                    proxy, protocol, op):
    """Every COPY (or CompleteMultipartUpload) failing in a static overwrite: the old rows
    stay (the old code deleted them first: 0 rows)."""
    direct = s3_server.storage_options
    url = f"s3://{s3_bucket}/t"
    write_table(url, OLD, partition_by=["k"], storage_options=direct)
    job, task = staged_job(url, {**proxy.storage_options, **NO_RETRY}, "overwrite", "static",
                           protocol)
    proxy.add_rule(op, "503", path_regex=r"/t/k=")  # publishing a file at its final key
    with pytest.raises(CommitError, match="rolled back: the table is as it was"):
        job.commit([task])
    proxy.clear_rules()
    assert proxy.stats.faults(op=op) >= 1
    assert ids(url, direct) == [1, 2, 3]
    job.abort()
    assert ids(url, direct) == [1, 2, 3]


@pytest.mark.parametrize("protocol, op, skip", [
    ("copy", "POST", 1),  # the DeleteObjects of the old _SUCCESS passes, the staged files' fails
    ("multipart", "OTHER", 0)])  # the listing of the job's leftover uploads fails
def test_a_commit_rerun_after_it_published_changes_nothing(s3_server, s3_bucket, proxy,
                                                           protocol, op, skip):
    """The staging cleanup fails after everything is published: the commit returns (the
    job is visible, so it succeeded), counts the failure, and a re-run of the same
    commit, or a recover, duplicates nothing."""
    direct = s3_server.storage_options
    url = f"s3://{s3_bucket}/t"
    write_table(url, OLD, partition_by=["k"], storage_options=direct)
    job, task = staged_job(url, {**proxy.storage_options, **NO_RETRY}, "append", "static",
                           protocol)
    rule = proxy.add_rule(op, "500", skip=skip, times=1)
    result = job.commit([task])
    proxy.clear_rules()
    assert rule.fired == 1 and result.metrics["cleanup_failures"] == 1
    assert ids(url, direct) == [1, 2, 3, 11, 12]
    assert keys(s3_server, s3_bucket, "t/_temporary/")  # the manifest at least: hidden
    job.commit([task])  # the natural retry
    assert ids(url, direct) == [1, 2, 3, 11, 12]
    assert WriteJob.recover(url, direct) == []  # the re-run cleaned up
    assert not keys(s3_server, s3_bucket, "t/_temporary/")


# --- a process killed during the commit ---------------------------------------------------

CHILD = textwrap.dedent("""
    import json, sys
    import pyarrow as pa
    from listing.write import WriteJob
    url, opts = sys.argv[1], json.loads(sys.argv[2])
    new = pa.table({"id": pa.array([11, 12], pa.int64()), "k": ["b", "z"]})
    job = WriteJob(url, new.schema, partition_by=["k"], mode="overwrite",
                   storage_options=opts)
    job.setup()
    task = job.write_task(new.to_batches())
    print("staged", flush=True)
    sys.stdin.readline()
    job.commit([task])
    print("committed", flush=True)
""")


def test_a_process_killed_in_every_phase_of_an_overwrite_then_recover(s3_server, s3_bucket,
                                                                        proxy):
    """The committing process is killed (SIGKILL) while the proxy holds the first request
    of each phase of its commit (each run of requests of one kind: reading the manifest,
    listing, PUT of the manifest, DeleteObjects, the COPYs, the manifest marked published,
    ...): ``recover`` then leaves exactly the old or the new rows, and both happen."""
    direct = s3_server.storage_options
    n, kinds, new_ids = commit_log(s3_server, proxy, s3_bucket, "overwrite", "static",
                                   "multipart")
    phases = [i for i in range(n) if i == 0 or kinds[i] != kinds[i - 1]]
    assert len(phases) >= 7, kinds
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    children = {}
    try:
        for index in phases:  # started together: their imports overlap
            url = f"s3://{s3_bucket}/kill-{index}"
            write_table(url, OLD, partition_by=["k"], storage_options=direct)
            children[index] = subprocess.Popen(
                [sys.executable, "-c", CHILD, url,
                 json.dumps({**proxy.storage_options, **NO_RETRY})],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        seen = set()
        for index, child in children.items():
            assert child.stdout is not None and child.stdin is not None
            assert child.stdout.readline().strip() == "staged"
            rule = proxy.add_rule(None, "slow", delay=0.2, skip=index, times=1)
            child.stdin.write("go\n")
            child.stdin.flush()
            deadline = time.monotonic() + 20
            while not rule.fired and child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            assert rule.fired == 1, index
            child.send_signal(signal.SIGKILL)
            child.wait(10)
            time.sleep(0.3)  # the held request lands (or not) before the recovery
            proxy.clear_rules()
            url = f"s3://{s3_bucket}/kill-{index}"
            before = ids(url, direct)
            recovered = WriteJob.recover(url, direct)
            final = ids(url, direct)
            where = (index, kinds[index], before, recovered)
            assert final in ([1, 2, 3], new_ids), where
            assert recovered or before == final, where
            assert not keys(s3_server, s3_bucket, f"kill-{index}/_temporary/"), where
            uploads = s3_server.client().list_multipart_uploads(
                Bucket=s3_bucket, Prefix=f"kill-{index}/").get("Uploads")
            assert not uploads, where  # none left open: completed or aborted
            assert f"kill-{index}/_SUCCESS" in keys(s3_server, s3_bucket, f"kill-{index}/")
            seen.add(tuple(final))
    finally:
        for child in children.values():
            if child.poll() is None:
                child.kill()
                child.wait(10)
    assert seen == {(1, 2, 3), tuple(new_ids)}  # both outcomes happen across the phases


def test_the_next_write_finishes_a_committed_job_and_undoes_a_stale_one(s3_server, s3_bucket,
                                                                      proxy):
    """A job left past its commit point (its old files not removed) is finished by the next
    write; one left before it (its rollback failed too) is rolled back by the next write
    once older than ``recover_after``, never while younger. (The staged-copy commit: its
    requests are the simplest to aim at.)"""
    direct = s3_server.storage_options
    url = f"s3://{s3_bucket}/t"
    write_table(url, OLD, partition_by=["k"], storage_options=direct)
    job, task = staged_job(url, {**proxy.storage_options, **NO_RETRY}, "overwrite", "static",
                           "copy")
    rule = proxy.add_rule("POST", "503", skip=1, times=1)  # the DeleteObjects of old files
    with pytest.raises(CommitError, match="is committed"):
        job.commit([task])
    proxy.clear_rules()
    assert rule.fired == 1
    assert ids(url, direct) == [1, 2, 3, 11, 12]  # committed, old files not yet removed
    more = pa.table({"id": pa.array([20], pa.int64()), "k": ["q"]})
    result = write_table(url, more, partition_by=["k"], storage_options=direct)
    assert result.metrics["jobs_recovered"] == 1
    assert ids(url, direct) == [11, 12, 20]

    job, task = staged_job(url, {**proxy.storage_options, **NO_RETRY}, "overwrite", "static",
                           "copy")
    proxy.add_rule("PUT", "503", path_regex=r"/t/k=")  # every COPY to a final key
    proxy.add_rule("POST", "503")  # and the rollback's DeleteObjects
    with pytest.raises(CommitError, match="rolling back failed too"):
        job.commit([task])
    proxy.clear_rules()
    assert ids(url, direct) == [11, 12, 20]  # no _SUCCESS now, but the old rows
    young = write_table(url, more.slice(0, 0), partition_by=["k"], storage_options=direct)
    assert young.metrics["jobs_recovered"] == 0  # may still be committing: left alone
    assert keys(s3_server, s3_bucket, f"t/_temporary/{job.job_id}/_manifest.json")
    stale = WriteJob(url, more.schema, partition_by=["k"], storage_options=direct,
                     recover_after=0)
    stale.setup()
    assert stale.setup_metrics["jobs_recovered"] == 1
    assert ids(url, direct) == [11, 12, 20]
    assert not keys(s3_server, s3_bucket, "t/_temporary/")
    assert "t/_SUCCESS" in keys(s3_server, s3_bucket, "t/")


def test_listing_recover_rolls_back_a_local_job_killed_mid_publish(tmp_path, monkeypatch,
                                                                   capsys):
    """Local files: a job interrupted (a BaseException, as a kill: no rollback runs) after
    publishing one of its files shows old plus part of new; ``listing recover`` restores
    exactly the old table."""
    from listing.cli import main
    from listing.storage.store import LocalStore

    root = str(tmp_path / "t")
    write_table(root, OLD, partition_by=["k"])
    before = ids(root, None)
    job = WriteJob(root, NEW.schema, partition_by=["k"], mode="overwrite")
    job.setup()
    task = job.write_task(NEW.to_batches())
    real = LocalStore.publish

    def publish_one_then_die(self, pairs):
        real(self, pairs[:1])
        raise KeyboardInterrupt

    monkeypatch.setattr(LocalStore, "publish", publish_one_then_die)
    with pytest.raises(KeyboardInterrupt):
        job.commit([task])
    monkeypatch.undo()
    assert len(ids(root, None)) == 4 and not os.path.exists(f"{root}/_SUCCESS")
    assert main(["recover", root]) == 0
    assert f"job {job.job_id}: back" in capsys.readouterr().out
    assert ids(root, None) == before == [1, 2, 3]
    assert os.path.exists(f"{root}/_SUCCESS") and not os.path.exists(f"{root}/_temporary")


def test_spark_abort_after_a_failed_commit_leaves_the_old_table(spark, s3_server, s3_bucket,
                                                                proxy):
    """The commit fails at its commit point: Spark's overwrite fails, its abort runs, and
    the table holds its old rows and files (the old code, on a failing COPY: 0 rows)."""
    direct = s3_server.storage_options
    url = f"s3://{s3_bucket}/t"
    write_table(url, OLD, partition_by=["k"], storage_options=direct)
    old_keys = keys(s3_server, s3_bucket, "t/")
    df = spark.createDataFrame([(11, "b"), (12, "z")], "id long, k string")
    # the manifest's second PUT (the commit point) fails: every new file is published by
    # then (completed multipart uploads) and must be deleted again
    proxy.add_rule("PUT", "503", path_contains="_manifest.json", skip=1)
    with pytest.raises(Exception, match="CommitError"):
        (df.write.format("listing").option("partition_by", "k")
         .option("storage_options", json.dumps({**proxy.storage_options, **NO_RETRY}))
         .mode("overwrite").save(url))
    proxy.clear_rules()
    assert proxy.stats.faults(op="PUT") >= 1
    assert ids(url, direct) == [1, 2, 3]
    assert keys(s3_server, s3_bucket, "t/") == old_keys  # _SUCCESS back, nothing staged


# --- refused before any PUT; the listing cache ----------------------------------------------

@pytest.mark.parametrize("table, match", [
    (pa.table({"id": [1], ".x": ["x"]}), "'.x'.*hidden"),
    (pa.table({"id": [1], "..": ["x"]}), "'..'.*hidden"),
    (pa.table({"id": [1], "": ["x"]}), "column '':.*hidden"),
    (pa.table({"id": [1, 2], "p": ["ok", "a\0b"]}), "NUL byte"),
    (pa.table({"id": [1, 2], "p": ["ok", "é" * 480]}), "longer than 1024 bytes"),
])
def test_hidden_names_nul_values_and_long_keys_are_refused_before_any_put(
        s3_server, s3_bucket, table, match):
    from listing.errors import ListingError

    url = f"s3://{s3_bucket}/t"
    part = [n for n in table.column_names if n != "id"]
    with s3_server.log.capture(s3_bucket) as cap, pytest.raises(ListingError, match=match):
        write_table(url, table, partition_by=part, storage_options=s3_server.storage_options)
    assert cap.count("PUT") == 0 and not keys(s3_server, s3_bucket, "")
    ok = table.slice(0, 1) if table.num_rows > 1 else None  # positive control: "ok" writes
    if ok is not None:
        write_table(url, ok, partition_by=part, storage_options=s3_server.storage_options)
        assert ids(url, s3_server.storage_options) == [1]


def test_a_partition_column_starting_with_an_underscore_reads_back_as_spark_reads_it(
        spark, tmp_path):
    """``_src=x/`` is a partition directory for Spark's reader (a ``_`` name with ``=`` is
    not hidden) and for ours: the write is accepted and every row reads back."""
    table = pa.table({"id": [1, 2], "_src": ["x", "y"]})
    write_table(str(tmp_path / "t"), table, partition_by=["_src"])
    assert ids(str(tmp_path / "t"), None) == [1, 2]
    assert sorted(r.id for r in spark.read.parquet(str(tmp_path / "t")).collect()) == [1, 2]


def test_a_commit_invalidates_the_listing_cache(s3_server, s3_bucket):
    direct = s3_server.storage_options
    url = f"s3://{s3_bucket}/t"
    write_table(url, OLD, partition_by=["k"], storage_options=direct)
    cached = ListingTable.open(url, storage_options=direct, list_cache_ttl=600)
    assert sorted(cached.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    write_table(url, NEW, partition_by=["k"], storage_options=direct, mode="overwrite")
    got = ListingTable.open(url, storage_options=direct, list_cache_ttl=600).scan()
    assert sorted(got.to_arrow().column("id").to_pylist()) == [11, 12]


def test_spark_session_dynamic_overwrite_keeps_other_partitions_as_spark_does(spark, tmp_path):
    """``spark.sql.sources.partitionOverwriteMode=dynamic`` in the session (set before the
    source is registered): an overwrite replaces only the partitions written, as Spark's
    own ``partitionBy().parquet`` writer does; the writer option still wins."""
    from listing.spark.session import register

    conf = "spark.sql.sources.partitionOverwriteMode"
    old = spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id long, k string")
    new = spark.createDataFrame([(11, "b")], "id long, k string")
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    spark.conf.set(conf, "dynamic")
    try:
        register(spark)
        for df in (old, new):
            df.write.format("listing").option("partition_by", "k").mode("overwrite").save(ours)
        old.write.mode("overwrite").partitionBy("k").parquet(theirs)
        new.write.mode("overwrite").partitionBy("k").parquet(theirs)
        want = sorted(r.id for r in spark.read.parquet(theirs).collect())
        assert want == [1, 3, 11]  # Spark's own writer: k=a and k=c kept
        assert ids(ours, None) == want
        (new.write.format("listing").option("partition_by", "k")
         .option("partitionOverwriteMode", "static").mode("overwrite").save(ours))
        assert ids(ours, None) == [11]  # the option wins over the session
    finally:
        spark.conf.unset(conf)
        register(spark)
    new.write.format("listing").option("partition_by", "k").mode("append").save(ours)
    old.write.format("listing").option("partition_by", "k").mode("overwrite").save(ours)
    assert ids(ours, None) == [1, 2, 3]  # back to static: the whole table replaced


# --- memory: a multipart write holds a few parts, not the file -------------------------------

MEMORY_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import pyarrow as pa
    from listing.write import write_table

    url, opts, protocol, batches_n = (sys.argv[1], json.loads(sys.argv[2]), sys.argv[3],
                                      int(sys.argv[4]))
    schema = pa.schema([("k", pa.string()), ("v", pa.int64())])

    def batches(n):  # generated as written: the input is never whole in memory
        rng = np.random.default_rng(0)
        for _ in range(n):
            v = rng.integers(0, 2**62, 131072)
            yield pa.record_batch([pa.array(["a"] * len(v)), pa.array(v)], schema=schema)

    def status(name):
        for line in open("/proc/self/status"):
            if line.startswith(name + ":"):
                return int(line.split()[1]) * 1024

    kw = dict(format="csv", partition_by=["k"], storage_options=opts,
              commit_protocol=protocol, part_size=5 * 2**20)
    write_table(url + "-warm", pa.Table.from_batches(list(batches(1))), **kw)
    open("/proc/self/clear_refs", "w").write("5")  # peak RSS from here
    base = status("VmRSS")
    result = write_table(url, batches(batches_n), **kw)
    print(json.dumps({"growth": status("VmHWM") - base,
                      "bytes": result.metrics["bytes_written"],
                      "files": result.metrics["files_written"]}))
""")


def _write_in_child(s3_server, url, protocol, batches_n):
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD, url, json.dumps(s3_server.storage_options),
         protocol, str(batches_n)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": os.getcwd()}, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_multipart_write_holds_a_few_parts_not_the_file(s3_server, s3_bucket):
    """One partition written as one ~80 MB CSV file in 5 MiB parts: the process's peak RSS
    grows by less than the documented bound, the part being filled plus
    ``UPLOAD_PARTS`` parts being sent, and a fixed 24 MiB (the staged-copy commit, the
    positive control, holds the whole file several times over), and the request log shows
    the upload completed at commit and no COPY."""
    from listing.storage.multipart import UPLOAD_PARTS

    part, fixed = 5 * 2**20, 24 * 2**20
    bound = (1 + UPLOAD_PARTS) * part + fixed
    with s3_server.log.capture(s3_bucket) as cap:
        got = _write_in_child(s3_server, f"s3://{s3_bucket}/mp", "multipart", 32)
    assert got["files"] == 1 and got["bytes"] > 60 * 2**20
    assert bound < got["bytes"]  # the bound tells a few parts from the whole file
    assert got["growth"] < bound, got
    assert cap.count("COPY") == 0
    completes = [e for e in cap.entries() if e.kind == "POST" and "uploadId" in e.query
                 and e.key and e.key.startswith("mp/")]
    parts = [e for e in cap.entries() if e.kind == "PUT" and "partNumber" in e.query
             and e.key and e.key.startswith("mp/")]
    assert len(completes) == 1 and len(parts) == -(-got["bytes"] // part)
    control = _write_in_child(s3_server, f"s3://{s3_bucket}/cp", "copy", 16)
    assert control["growth"] > control["bytes"], control  # the file, more than once


def test_listing_cleanup_aborts_orphaned_uploads(s3_server, s3_bucket, capsys):
    """A job whose tasks uploaded but never committed leaves multipart uploads (invisible,
    but billed on S3): ``listing cleanup`` aborts them; the table is untouched."""
    from listing.cli import main

    direct = s3_server.storage_options
    url = f"s3://{s3_bucket}/t"
    write_table(url, OLD, partition_by=["k"], storage_options=direct)
    job, _ = staged_job(url, direct, "overwrite", "static", "multipart")
    client = s3_server.client()
    assert len(client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", [])) == 2
    args = [f"--storage-option={k}={v if isinstance(v, str) else json.dumps(v)}"
            for k, v in direct.items()]
    client.create_multipart_upload(Bucket=s3_bucket, Key="other/part-0.parquet")
    # (moto dates every upload 2010-11-10, so --older-than cannot be checked against it)
    assert main(["cleanup", url, *args]) == 0
    assert "2 multipart upload(s) aborted" in capsys.readouterr().out
    left = client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", [])
    assert [u["Key"] for u in left] == ["other/part-0.parquet"]  # another table's: kept
    assert ids(url, direct) == [1, 2, 3]


def test_a_task_keeps_at_most_max_open_files_open(tmp_path, monkeypatch):
    """Rows of 5 partitions interleaved, 2 files open at most: the rows of the other 3 wait
    on local disk (counted) until those 2 are closed, so each partition still gets one file
    (two where ``max_records_per_file`` splits it), every row written once; the
    spill folder is gone afterwards."""
    import tempfile

    import listing.write.job as job

    open_now, most = [0], [0]

    class Counted(job._OpenFile):
        def __init__(self, writer, *args):
            super().__init__(writer, *args)
            open_now[0] += 1
            most[0] = max(most[0], open_now[0])
            close = writer.close

            def closed():
                open_now[0] -= 1
                close()
            writer.close = closed

    monkeypatch.setattr(job, "_OpenFile", Counted)
    spills = tmp_path / "spills"
    spills.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spills))
    monkeypatch.setattr(job, "MAX_OPEN_FILES", 2)
    table = pa.table({"id": pa.array(range(20), pa.int64()), "k": [str(i % 5) for i in range(20)]})
    batches = [table.slice(i, 1).to_batches()[0] for i in range(20)]
    result = write_table(str(tmp_path / "a"), batches, partition_by=["k"])
    assert result.rows == 20 and len(result.files) == 5 and most[0] == 2
    assert result.metrics["rows_spilled"] == 12  # k = 2, 3, 4: 4 rows each
    assert ids(str(tmp_path / "a"), None) == list(range(20))
    assert list(spills.iterdir()) == []
    split = write_table(str(tmp_path / "b"), batches, partition_by=["k"],
                        max_records_per_file=2)
    assert len(split.files) == 10 and ids(str(tmp_path / "b"), None) == list(range(20))
    monkeypatch.setattr(job, "MAX_OPEN_FILES", 32)  # positive control: nothing spilled
    most[0] = 0
    again = write_table(str(tmp_path / "c"), batches, partition_by=["k"])
    assert len(again.files) == 5 and most[0] == 5 and "rows_spilled" not in again.metrics


def test_a_task_failing_while_spilled_leaves_nothing_behind(tmp_path, monkeypatch):
    """A task whose input fails after rows were spilled: the error is raised, no spill
    folder is left, and the table is unchanged."""
    import tempfile

    import listing.write.job as job

    monkeypatch.setattr(job, "MAX_OPEN_FILES", 1)
    spills = tmp_path / "spills"
    spills.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spills))
    write_table(str(tmp_path / "t"), OLD, partition_by=["k"])
    table = pa.table({"id": pa.array(range(6), pa.int64()), "k": [str(i % 3) for i in range(6)]})

    def failing():
        yield from table.to_batches(max_chunksize=2)
        raise RuntimeError("input failed")

    with pytest.raises(RuntimeError, match="input failed"):
        write_table(str(tmp_path / "t"), failing(), partition_by=["k"], mode="overwrite")
    assert list(spills.iterdir()) == []
    assert ids(str(tmp_path / "t"), None) == sorted(OLD.column("id").to_pylist())


# --- isolation: two overwrites committing at once -------------------------------------------

def test_a_second_overwrite_committing_at_once_fails_clearly(s3_server, s3_bucket, proxy):
    """Overwrite A is held mid-commit (its completions slowed by the proxy) when overwrite
    B commits: B fails with ConcurrentWriteError naming A before anything visible changes
    (the table's lock is created with If-None-Match), A completes alone, and once A is
    done a new overwrite commits."""
    import threading

    from listing.errors import ConcurrentWriteError

    direct = s3_server.storage_options
    url = f"s3://{s3_bucket}/t"
    write_table(url, OLD, partition_by=["k"], storage_options=direct)
    a, a_task = staged_job(url, {**proxy.storage_options, **NO_RETRY}, "overwrite", "static",
                           "multipart")
    b, b_task = staged_job(url, direct, "overwrite", "static", "multipart")
    rule = proxy.add_rule("POST", "slow", delay=1.5, path_regex=r"/t/k=", times=1)
    done = []
    thread = threading.Thread(target=lambda: done.append(a.commit([a_task])))
    thread.start()
    deadline = time.monotonic() + 20
    while not rule.fired and time.monotonic() < deadline:
        time.sleep(0.01)
    assert rule.fired == 1  # A is publishing now
    with pytest.raises(ConcurrentWriteError, match=f"job {a.job_id} is committing"):
        b.commit([b_task])
    thread.join(30)
    b.abort()  # as Spark does (after A: moto's multipart state is not thread-safe)
    assert done and ids(url, direct) == [11, 12]  # A alone: no union with B's files
    assert not keys(s3_server, s3_bucket, "t/_overwrite.lock")
    c, c_task = staged_job(url, direct, "overwrite", "dynamic", "multipart")
    c.commit([c_task])  # the lock is free again
    assert ids(url, direct) == [11, 12]


# --- background part uploads: one failed part fails the write, nothing is left ------------

def test_a_failed_part_upload_fails_the_write_and_leaves_nothing(s3_server, s3_bucket, proxy,
                                                                  monkeypatch):
    """Two partitions stream as 64 KiB parts sent in the background (several in flight);
    the fourth part sent fails (500, no retries): write_table raises, the table holds its
    old rows, no multipart upload nor staged file is left, and no part reached the server
    after the job's first abort (a file's parts in flight end before the error is raised).
    Positive control: the same write without the fault publishes every row."""
    import numpy as np

    from listing.errors import StorageError
    from listing.storage import multipart

    monkeypatch.setattr(multipart, "MIN_PART_SIZE", 64 * 2**10)  # (failed: never completed)
    url = f"s3://{s3_bucket}/t"
    write_table(url, OLD, partition_by=["k"], storage_options=s3_server.storage_options)
    v = np.arange(20_000, dtype=np.int64) * 7919  # ~120 KB of CSV a partition, a batch
    batches = [pa.record_batch([pa.array(v + i), pa.array(["a", "b"] * 10_000)],
                               names=["id", "k"]) for i in range(2)]
    rule = proxy.add_rule("PUT", "500", query="partNumber", skip=3, times=1)
    opts = {**proxy.storage_options, **NO_RETRY}
    with s3_server.log.capture(s3_bucket) as cap, pytest.raises(StorageError):
        write_table(url, batches, format="csv", partition_by=["k"], storage_options=opts,
                    part_size=64 * 2**10)
    assert rule.fired == 1
    entries = cap.entries()
    parts = [i for i, e in enumerate(entries) if e.kind == "PUT" and "partNumber" in e.query]
    aborts = [i for i, e in enumerate(entries) if e.kind == "DELETE" and "uploadId" in e.query]
    assert len(parts) > 4 and aborts and max(parts) < min(aborts)
    assert ids(url, s3_server.storage_options) == [1, 2, 3]
    assert not s3_server.client().list_multipart_uploads(Bucket=s3_bucket).get("Uploads")
    assert not keys(s3_server, s3_bucket, "t/_temporary/")
    proxy.clear_rules()
    done = write_table(url, batches, format="csv", partition_by=["k"], storage_options=opts)
    assert done.rows == 40_000 and len(done.files) == 2
