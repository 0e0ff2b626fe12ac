"""Each malformed state of issue 44 is a refusal, never a crash: ``recover()`` reports it,
``listing recover`` exits 1 with one ``error:`` line and no traceback, and the next append
and overwrite of the table commit (local files; moto in tests/s3/test_manifest_fuzz.py).
At 7a70ca6 each raised a raw exception (``RecursionError``, ``UnicodeEncodeError``,
``OSError``, ``IsADirectoryError``, ``CommitError``) and every later write failed."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from listing.cli import main
from listing.storage.spec import StorageSpec
from listing.storage.store import open_store
from listing.write import LOCK_FILE, MAX_MANIFEST_BYTES, WriteJob, write_table
from listing.write import manifest as manifest_module

OLD = pa.table({"a": pa.array([1, 2], pa.int64())})


def plant(url: str, **fields: object) -> tuple[str, Path]:
    job = uuid.uuid4().hex
    path = Path(url, "_temporary", job, "_manifest.json")
    path.parent.mkdir(parents=True)
    manifest = {"job_id": job, "mode": "append", "partition_overwrite_mode": "static",
                "partitions": [], "publish": [], "remove": [], "had_success": True,
                "state": "publishing", "created": 0.0, "uploads": []}
    manifest.update({k: [[f.replace("@JOB@", job) for f in p] if isinstance(p, list)
                          else p for p in v] if isinstance(v, list) else v
                     for k, v in fields.items()})
    path.write_text(json.dumps(manifest))
    return job, path


STATES = {
    "nested_100000_deep": lambda url: Path(plant(url)[1]).write_text("[" * 100_000),
    "destination_surrogate": lambda url: plant(url, publish=[[
        f"{url}/_temporary/@JOB@/x", f"{url}/part-00000-@JOB@-c000\ud800"]]),
    "destination_5000_chars": lambda url: plant(url, publish=[[
        f"{url}/_temporary/@JOB@/x", f"{url}/part-00000-@JOB@-c000{'x' * 5000}"]]),
    "lock_is_a_directory": lambda url: Path(url, LOCK_FILE).mkdir(),
    "remove_too_long": lambda url: plant(url, state="published",
                                         remove=[f"{url}/{'x' * 300}.parquet"]),
    "remove_surrogate": lambda url: plant(url, state="published",
                                          remove=[f"{url}/x\ud800.parquet"]),
    "over_the_size_limit": lambda url: os.truncate(plant(url)[1], MAX_MANIFEST_BYTES + 1),
}


@pytest.mark.parametrize("state", sorted(STATES))
def test_a_malformed_state_is_refused_and_the_next_write_goes_on(tmp_path, state, capsys):
    url = str(tmp_path / "t")
    write_table(url, OLD)
    STATES[state](url)
    # a refused manifest stays in place; a refused lock is set aside, so it is put back
    again = STATES[state] if state == "lock_is_a_directory" else (lambda url: None)
    done = WriteJob.recover(url)
    assert [what for _, what in done if what.startswith("refused: ")], done
    again(url)
    assert main(["recover", url]) == 1
    err = capsys.readouterr().err
    assert err.count("error: ") == 1 and "Traceback" not in err
    again(url)
    appended = write_table(url, OLD)
    assert appended.metrics["manifests_refused"] + appended.metrics["locks_refused"] == 1
    assert write_table(url, OLD, mode="overwrite").rows == 2


def test_an_s3_manifest_over_the_limit_is_refused_unread(s3_server, s3_bucket, monkeypatch):
    """On S3 the size comes from the ranged GET's Content-Range: a manifest over the limit
    is refused without its body read (the limit lowered to keep the test small); one
    within it is followed (the control)."""
    opts = s3_server.storage_options
    url = f"s3://{s3_bucket}/t"
    write_table(url, OLD, storage_options=opts)
    store = open_store(StorageSpec("s3", opts))
    job = uuid.uuid4().hex
    body = json.dumps({"job_id": job, "mode": "append", "partition_overwrite_mode": "static",
                       "partitions": [], "publish": [], "remove": [], "had_success": True,
                       "state": "published", "created": 0.0, "uploads": []}).encode()
    store.put(f"{s3_bucket}/t/_temporary/{job}/_manifest.json", body)
    monkeypatch.setattr(manifest_module, "MAX_MANIFEST_BYTES", len(body) - 1)
    done = WriteJob.recover(url, opts)
    assert done == [(job, done[0][1])] and "more than" in done[0][1], done
    monkeypatch.setattr(manifest_module, "MAX_MANIFEST_BYTES", len(body))
    assert WriteJob.recover(url, opts) == [(job, "forward")]
