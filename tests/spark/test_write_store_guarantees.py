"""What a write relies on from its store, checked rather than assumed: lock ages by the
store's clock (a writer whose clock runs fast or slow cannot block or break overwrites),
and a store that ignores ``If-None-Match`` on PUT and answers ``ListMultipartUploads`` with
501 (moto behind the fault proxy, playing several S3-compatible servers): overwrites are
refused there rather than left unisolated, and appends, recovery and cleanup still work."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid

import pyarrow as pa
import pytest

from listing import ListingTable
from listing.cli import main
from listing.errors import ConcurrentWriteError
from listing.storage.store import S3Store
from listing.testing.faults import FaultProxy
from listing.write import LOCK_FILE, WriteJob, write_table

OLD = pa.table({"id": pa.array([1, 2, 3], pa.int64())})


def ids(url, opts=None):
    return sorted(ListingTable.open(url, storage_options=opts).scan().to_arrow()
                  .column("id").to_pylist())


def rows(first: int, n: int = 1000) -> pa.Table:
    return pa.table({"id": pa.array(range(first, first + n), pa.int64())})


def s3_keys(s3_server, bucket, prefix=""):
    resp = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for o in resp.get("Contents", []))


def lock_body(job_id: str, created: float) -> bytes:
    return json.dumps({"job_id": job_id, "created": created}).encode()


# --- lock ages come from the store ----------------------------------------------------------

def test_a_lock_stamped_in_the_future_is_released_by_listing_recover(tmp_path, capsys):
    """A killed overwrite's lock written by a clock two hours fast: ``listing recover``
    releases it (no job holds it) and says so; the next overwrite commits."""
    root = str(tmp_path / "t")
    write_table(root, OLD)
    with open(f"{root}/{LOCK_FILE}", "wb") as f:
        f.write(lock_body("fastclock", time.time() + 7200))
    with pytest.raises(ConcurrentWriteError, match="job fastclock is committing"):
        write_table(root, rows(10, 2), mode="overwrite")
    assert main(["recover", root]) == 0
    out = capsys.readouterr().out
    assert "job fastclock: lock released: its job has no live manifest" in out
    write_table(root, rows(10, 2), mode="overwrite")
    assert ids(root) == [10, 11]


def test_the_next_write_judges_a_lock_by_its_file_age_not_its_stamp(tmp_path):
    """The write's own recovery releases a lock only once the lock file is
    ``recover_after`` old by the store's clock: a fresh lock stamped long ago (a slow
    clock; its overwrite may be committing) is kept, an old one stamped in the future is
    released."""
    root = str(tmp_path / "t")
    write_table(root, OLD)
    lock = f"{root}/{LOCK_FILE}"
    with open(lock, "wb") as f:
        f.write(lock_body("slowclock", 0.0))  # stamped 1970, written now
    with pytest.raises(ConcurrentWriteError, match="job slowclock is committing"):
        write_table(root, rows(10, 2), mode="overwrite")
    assert os.path.exists(lock) and ids(root) == [1, 2, 3]
    with open(lock, "wb") as f:
        f.write(lock_body("fastclock", time.time() + 7200))
    old = time.time() - 2 * 3600
    os.utime(lock, (old, old))  # written two hours ago, by the file system's clock
    result = write_table(root, rows(10, 2), mode="overwrite")
    assert result.metrics["jobs_recovered"] == 1 and ids(root) == [10, 11]  # the lock
    assert not os.path.exists(lock)


def test_a_future_lock_on_s3_is_released_by_an_explicit_recover(s3_server, s3_bucket):
    opts = s3_server.storage_options
    url = f"s3://{s3_bucket}/t"
    write_table(url, OLD, storage_options=opts)
    s3_server.client().put_object(Bucket=s3_bucket, Key=f"t/{LOCK_FILE}",
                                  Body=lock_body("fastclock", time.time() + 7200))
    with pytest.raises(ConcurrentWriteError, match="fastclock"):
        write_table(url, rows(10, 2), mode="overwrite", storage_options=opts)
    done = WriteJob.recover(url, opts)
    assert done == [("fastclock", "lock released: its job has no live manifest")]
    write_table(url, rows(10, 2), mode="overwrite", storage_options=opts)
    assert ids(url, opts) == [10, 11]
    assert f"t/{LOCK_FILE}" not in s3_keys(s3_server, s3_bucket, "t/")


# --- a store that ignores If-None-Match and lacks ListMultipartUploads -------------------------

@pytest.fixture(scope="module")
def lax_store(s3_server):
    """moto behind a proxy that drops If-None-Match and answers ListMultipartUploads 501."""
    with FaultProxy(s3_server.endpoint_url, ignore_if_none_match=True) as proxy:
        proxy.add_rule("OTHER", "501", query="uploads")
        yield proxy


def test_the_probe_tells_the_two_stores_apart(s3_server, s3_bucket, lax_store):
    """The probe: a PUT with If-None-Match over an existing key is refused by moto, not by
    the lax store (once per bucket and process)."""
    from listing.storage.spec import StorageSpec

    strict = S3Store(StorageSpec("s3", s3_server.storage_options), {})
    lax = S3Store(StorageSpec("s3", lax_store.storage_options), {})
    assert strict.conditional_puts(f"{s3_bucket}/p/") is True
    assert lax.conditional_puts(f"{s3_bucket}/p/") is False
    metrics = lax.metrics
    before = dict(metrics)
    assert lax.conditional_puts(f"{s3_bucket}/q/") is False and metrics == before  # cached
    assert not s3_keys(s3_server, s3_bucket, "p/")  # the probe's object is gone


def test_racing_overwrites_on_a_lax_store_never_leave_both_writers_rows(s3_server, s3_bucket,
                                                                        lax_store):
    """Two overwrites at once on a store that ignores If-None-Match: neither runs
    unprotected (each refused, saying why and how to proceed), so the table never holds
    both writers' rows; appends work and leave no job file; with ``overwrite_without_lock``
    one overwrite (the caller's own serialisation) commits."""
    opts = lax_store.storage_options
    url = f"s3://{s3_bucket}/t"
    write_table(url, OLD, storage_options=opts)
    errors: list[BaseException] = []

    def overwrite(first: int) -> None:
        try:
            write_table(url, rows(first), mode="overwrite", storage_options=opts)
        except ConcurrentWriteError as err:
            errors.append(err)

    threads = [threading.Thread(target=overwrite, args=(n,)) for n in (1000, 5000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(errors) == 2
    assert "does not honour conditional writes" in str(errors[0])
    assert "overwrite_without_lock" in str(errors[0])
    assert ids(url, opts) == [1, 2, 3]
    write_table(url, rows(10, 2), mode="append", storage_options=opts)
    assert ids(url, opts) == [1, 2, 3, 10, 11]
    write_table(url, rows(20, 2), mode="overwrite", storage_options=opts,
                overwrite_without_lock=True)
    assert ids(url, opts) == [20, 21]
    keys = s3_keys(s3_server, s3_bucket, "t/")
    assert not [k for k in keys if "_temporary" in k or LOCK_FILE in k], keys
    assert not s3_server.client().list_multipart_uploads(Bucket=s3_bucket).get("Uploads")
    assert lax_store.stats.faults("OTHER", "501") >= 1  # the store was asked, and said 501


def test_listing_recover_works_on_a_store_without_upload_listing(s3_server, s3_bucket,
                                                                 lax_store, monkeypatch,
                                                                 capsys):
    """A job killed mid-commit on the lax store leaves its manifest and open uploads:
    ``listing recover`` rolls it back, aborting the uploads its manifest names (the store
    cannot list them); ``listing cleanup`` says it cannot find uploads there."""
    opts = lax_store.storage_options
    url = f"s3://{s3_bucket}/t"
    write_table(url, OLD, storage_options=opts)
    job = WriteJob(url, OLD.schema, storage_options=opts)
    job.setup()
    task = job.write_task(rows(100, 3).to_batches())

    def die(self, uploads):
        raise KeyboardInterrupt  # killed: no roll back runs

    monkeypatch.setattr(S3Store, "complete", die)
    with pytest.raises(KeyboardInterrupt):
        job.commit([task])
    monkeypatch.undo()
    assert s3_server.client().list_multipart_uploads(Bucket=s3_bucket).get("Uploads")
    store_opts = [a for k in ("endpoint_url", "key", "secret")
                  for a in ("--storage-option", f"{k}={opts[k]}")]
    assert main(["recover", url, *store_opts]) == 0
    assert f"job {job.job_id}: back" in capsys.readouterr().out
    assert ids(url, opts) == [1, 2, 3]
    assert not s3_server.client().list_multipart_uploads(Bucket=s3_bucket).get("Uploads")
    assert not [k for k in s3_keys(s3_server, s3_bucket, "t/") if "_temporary" in k]
    assert main(["cleanup", url, *store_opts]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "cannot list multipart uploads" in err
    assert "501" in err and "listing recover" in err


def test_an_id_the_writer_would_not_make_is_refused(tmp_path):
    with pytest.raises(Exception, match="job_id"):
        WriteJob(str(tmp_path / "t"), OLD.schema, job_id="../" + uuid.uuid4().hex)


def test_spark_overwrite_on_a_lax_store_is_refused_unless_accepted(spark, s3_server, s3_bucket,
                                                                   lax_store):
    """``df.write.format("listing")`` on the store that ignores If-None-Match: the overwrite
    is refused (old rows stay) unless the writer passes ``overwrite_without_lock``, which
    the Spark writer forwards to its job."""
    url = f"s3://{s3_bucket}/spark_lax"
    opts = lax_store.storage_options
    write_table(url, OLD, storage_options=opts)
    df = spark.createDataFrame([(7,), (8,)], "id long")

    def writer():
        w = df.write.format("listing").mode("overwrite")
        for name, value in opts.items():
            w = w.option(f"storage.{name}", json.dumps(value) if isinstance(value, dict)
                         else str(value))
        return w

    with pytest.raises(Exception, match="overwrite_without_lock"):
        writer().save(url)
    assert ids(url, opts) == [1, 2, 3]
    writer().option("overwrite_without_lock", "true").save(url)
    assert ids(url, opts) == [7, 8]


def test_a_commit_in_another_process_does_not_probe_the_store_again(s3_server, s3_bucket,
                                                                   monkeypatch):
    """Spark sets a write up in one Python process and commits it in another: the
    overwrite's commit does not probe the store's conditional PUTs again (its setup did;
    the answer travels with the pickled job) and still takes the lock. Positive control:
    a job committed without its setup probes (two PUTs of the probe's object)."""
    import pickle

    from listing.storage import store as store_module

    opts = s3_server.storage_options
    url = f"s3://{s3_bucket}/iso"
    write_table(url, OLD, storage_options=opts)

    def committed(set_up: bool) -> list:
        job = WriteJob(url, OLD.schema, mode="overwrite", storage_options=opts)
        if set_up:
            job.setup()
        task = job.write_task(rows(10, 2).to_batches())
        monkeypatch.setattr(store_module, "_CONDITIONAL_PUTS", {})  # another process's
        job = pickle.loads(pickle.dumps(job))
        with s3_server.log.capture(s3_bucket) as cap:
            job.commit([task])
        assert ids(url, opts) == [10, 11]
        return [e for e in cap.entries() if e.key and e.key.endswith("/_probe")]

    assert committed(set_up=True) == []
    assert [e.kind for e in committed(set_up=False)] == ["PUT", "PUT"]
    assert not s3_keys(s3_server, s3_bucket, "iso/_overwrite.lock")
