"""The commit never writes, reads or deletes through a link (local files).

Each case plants a link where the commit or recovery acts (``_SUCCESS``, a job manifest,
the overwrite lock, a publish source, a removed file) pointing at a file outside the
table, then runs the entry points that act there: ``recover()``, ``listing recover``,
the next append, the next overwrite, a roll back, an abort. The file outside keeps its
bytes, the link is refused (or, where the commit replaces the name, replaced: never
written through), and the next write goes on. Each has a positive control: the same
state with a plain file is followed.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from listing.cli import main
from listing.errors import CommitError
from listing.write import LOCK_FILE, WriteJob, write_table

OLD = pa.table({"a": pa.array([1, 2], pa.int64())})
NEW = pa.table({"a": pa.array([3], pa.int64())})
SECRET = b"the outside file's bytes"
ENTRIES = ("recover", "cli_recover", "append", "overwrite")


def rows(url: str) -> list[int]:
    files = [p for p in Path(url).rglob("*.parquet") if "_temporary" not in p.parts]
    return sorted(v for f in files for v in pq.read_table(f).column("a").to_pylist())


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def plant(url: str, state: str = "published", remove: list[str] | None = None,
          age: float = 0.0) -> Path:
    """A manifest keeping every rule (its own job id, nothing to publish), ``age`` s old."""
    job = uuid.uuid4().hex
    path = Path(url, "_temporary", job, "_manifest.json")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({
        "job_id": job, "mode": "append", "partition_overwrite_mode": "static",
        "partitions": [], "publish": [], "remove": remove or [], "had_success": True,
        "state": state, "created": 0.0, "uploads": []}))
    if age:
        os.utime(path, (time.time() - age, time.time() - age))
    return path


@pytest.fixture
def table(tmp_path):
    """A table at ``tmp_path/t`` with ``_SUCCESS``, and a file outside it."""
    url = str(tmp_path / "t")
    write_table(url, OLD)
    outside = tmp_path / "outside"
    outside.write_bytes(SECRET)
    return url, outside


def run(entry: str, url: str, capsys) -> object:
    if entry == "recover":
        return WriteJob.recover(url)
    if entry == "cli_recover":
        code = main(["recover", url])
        err = capsys.readouterr().err
        assert "Traceback" not in err
        return code
    return write_table(url, NEW, mode=entry)


@pytest.mark.parametrize("state", ["published", "publishing"])
@pytest.mark.parametrize("entry", ENTRIES)
def test_a_success_link_is_never_written_through(table, entry, state, capsys):
    """A ``_SUCCESS`` link and a manifest past (roll forward) or before its commit point
    and two hours old (roll back, which rewrites ``_SUCCESS`` as ``had_success`` says):
    the file outside keeps its bytes; a write replaces the link with a plain file."""
    url, outside = table
    success = Path(url, "_SUCCESS")
    success.unlink()
    success.symlink_to(outside)
    manifest = plant(url, state, age=7200)
    result = run(entry, url, capsys)
    assert outside.read_bytes() == SECRET
    if entry in ("append", "overwrite"):
        assert result.metrics["manifests_refused"] == 1
        assert not success.is_symlink() and success.is_file()  # replaced, not followed
        assert rows(url) == ([3] if entry == "overwrite" else [1, 2, 3])
    else:
        assert success.is_symlink()  # refused: left as it is
        assert result == 1 if entry == "cli_recover" else "symbolic link" in result[0][1]
    assert manifest.exists()


@pytest.mark.parametrize("state", ["published", "publishing"])
def test_a_plain_success_with_the_same_manifest_is_followed(table, state):
    """Positive control: the same manifest with a plain ``_SUCCESS`` is rolled forward or
    back, and ``_SUCCESS`` is written."""
    url, _ = table
    manifest = plant(url, state, age=7200)
    done = WriteJob.recover(url)
    assert done == [(manifest.parent.name, "forward" if state == "published" else "back")]
    assert not manifest.exists() and Path(url, "_SUCCESS").is_file()


def test_an_abort_never_writes_through_a_success_link(table):
    """A job killed at its commit point, then aborted with ``_SUCCESS`` made a link: the
    file outside keeps its bytes."""
    url, outside = table
    job = WriteJob(url, NEW.schema, mode="append")
    job.setup()
    task = job.write_task(NEW.to_batches())
    job._roll_forward = lambda store, manifest: None  # killed at its commit point
    job.commit([task])
    success = Path(url, "_SUCCESS")
    success.unlink(missing_ok=True)
    success.symlink_to(outside)
    del job._roll_forward
    job.abort([task])
    assert outside.read_bytes() == SECRET
    write_table(url, NEW)  # the next write goes on
    assert outside.read_bytes() == SECRET and not success.is_symlink()


@pytest.mark.parametrize("linked", [True, False])
def test_a_manifest_that_is_a_link_is_not_read(table, linked, capsys):
    """A manifest that is a link to a file outside the table is refused before it is read:
    the file it names inside the table stays. Positive control (``linked=False``): the
    same manifest as a plain file is followed and removes that file."""
    url, _ = table
    victim = next(p for p in Path(url).glob("*.parquet"))
    manifest = plant(url, remove=[str(victim)])
    if linked:
        elsewhere = Path(url).parent / "manifest.json"
        manifest.rename(elsewhere)
        manifest.symlink_to(elsewhere)
        before = digest(elsewhere)
    assert main(["recover", url]) == (1 if linked else 0)
    out, err = capsys.readouterr()
    if linked:
        assert "symbolic link" in out and err.count("error: ") == 1
        assert victim.exists() and manifest.is_symlink() and digest(elsewhere) == before
    else:
        assert not victim.exists() and not manifest.exists()


@pytest.mark.parametrize("kind", ["link", "directory"])
def test_a_lock_of_the_wrong_kind_is_refused_and_set_aside(table, kind, capsys):
    """An overwrite lock that is a link (to a file outside) or a directory is no job's lock:
    ``recover`` refuses it and renames the entry itself aside (a hidden name beside it, the
    link's target untouched, the directory whole), so the next overwrite takes the lock and
    commits. Control: a plain lock a live job holds stops an overwrite (test_write_faults)."""
    url, outside = table
    lock = Path(url, LOCK_FILE)
    if kind == "link":
        lock.symlink_to(outside)
    else:
        lock.mkdir()
        (lock / "kept").write_bytes(SECRET)
    done = WriteJob.recover(url)
    assert done == [(LOCK_FILE, done[0][1])] and done[0][1].startswith("refused: ")
    assert "set aside as" in done[0][1] and not os.path.lexists(lock)
    (aside,) = Path(url).glob(f"{LOCK_FILE}.refused-*")
    assert aside.is_symlink() if kind == "link" else (aside / "kept").read_bytes() == SECRET
    lock.mkdir()  # again: the CLI refuses and sets it aside too
    assert main(["recover", url]) == 1
    assert "error: " in capsys.readouterr().err and not os.path.lexists(lock)
    lock.mkdir()  # and a write's own recovery does
    assert write_table(url, NEW).metrics["locks_refused"] == 1
    assert write_table(url, NEW, mode="overwrite").rows == len(NEW)
    assert outside.read_bytes() == SECRET and not os.path.lexists(lock)
    assert len(list(Path(url).glob(f"{LOCK_FILE}.refused-*"))) == 3
    assert rows(url) == [3]


@pytest.mark.parametrize("linked", [True, False])
def test_a_removed_file_that_is_a_link_is_refused(table, linked):
    """A file a published manifest removes that is a link (to a file outside) is refused,
    the link left. Positive control: a plain file there is removed."""
    url, outside = table
    name = f"part-00000-{uuid.uuid4().hex}-c000.parquet"
    target = Path(url, name)
    if linked:
        target.symlink_to(outside)
    else:
        pq.write_table(pa.table({"a": pa.array([9], pa.int64())}), target)
    manifest = plant(url, remove=[str(target)])
    done = WriteJob.recover(url)
    assert outside.read_bytes() == SECRET
    if linked:
        assert done[0][1].startswith("refused: ") and "symbolic link" in done[0][1]
        assert target.is_symlink() and manifest.exists()
    else:
        assert done == [(manifest.parent.name, "forward")] and not os.path.lexists(target)


@pytest.mark.parametrize("linked", [True, False])
def test_a_staged_file_that_is_a_link_is_not_published(table, linked):
    """A job whose staged file was replaced by a link (to a file outside) before its
    commit: the commit refuses to rename the link into the table and rolls back. Positive
    control: the plain staged file is published."""
    url, outside = table
    job = WriteJob(url, NEW.schema, mode="append")
    job.setup()
    task = job.write_task(NEW.to_batches())
    staged = Path(task.files[0].staged)
    if linked:
        staged.unlink()
        staged.symlink_to(outside)
        with pytest.raises(CommitError, match="symbolic link"):
            job.commit([task])
        assert rows(url) == [1, 2] and not any(p.is_symlink() for p in Path(url).rglob("*")
                                               if "_temporary" not in p.parts)
    else:
        job.commit([task])
        assert rows(url) == [1, 2, 3]
    assert outside.read_bytes() == SECRET
