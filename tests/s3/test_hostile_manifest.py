"""Recovery never reaches outside its table: a planted job manifest (anyone who writes a
table can write one under its ``_temporary/``) whose paths or ids break a rule is never
followed, by ``WriteJob.recover``, ``listing recover``, ``listing cleanup`` or a following
append or overwrite (which recover first): nothing outside the table changes, the table
reads exactly, the manifest stays in place and is reported. The same manifest naming
paths inside the table is followed (the positive control). Local files and moto."""

from __future__ import annotations

import io
import json
import logging
import os
import uuid
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from listing import ListingTable
from listing.cli import main
from listing.errors import CommitError
from listing.storage.spec import StorageSpec
from listing.storage.store import open_store
from listing.write import WriteJob, write_table

OLD = pa.table({"a": pa.array([1, 2], pa.int64())})
NEW = pa.table({"a": pa.array([3], pa.int64())})
ENTRIES = ("recover", "cli_recover", "cli_cleanup", "append", "overwrite")
PATH_ESCAPES = ("elsewhere", "dotdot", "bucket", "protocol")
#: (field, escape) per store kind; uploads exist on S3 only, links on local files only
CASES = {
    "local": [(f, e) for f in ("remove", "publish_dst", "publish_src") for e in PATH_ESCAPES]
    + [("job_id", e) for e in ("empty", "mismatch", "pattern")]
    + [("dir_name", e) for e in ("mismatch", "link", "staging_link")],
    "s3": [(f, e) for f in ("remove", "publish_dst", "publish_src", "upload_key")
           for e in PATH_ESCAPES]
    + [("job_id", e) for e in ("empty", "mismatch", "pattern")] + [("dir_name", "mismatch")],
}
POSITIVE = {"local": ("remove", "publish_dst", "publish_src", "job_id"),
            "s3": ("remove", "publish_dst", "publish_src", "upload_key", "job_id")}


def parquet(values: list[int]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table({"a": pa.array(values, pa.int64())}), sink)
    return sink.getvalue()


@pytest.fixture(scope="module")
def buckets(s3_server):
    """The module's two buckets on the one moto server: the tables' and another."""
    with s3_server.temporary_buckets("hostile", "hostile-other") as names:
        yield names


@dataclass
class Run:
    """One table with a planted manifest, and what must not change."""

    kind: str
    url: str
    prefix: str  # the table's fsspec prefix, "/" at the end
    outside: str  # an fsspec directory beside the table, "/" at the end
    sibling: str  # another bucket (S3), or a directory named like the table (local)
    opts: dict[str, Any]
    local_tmp: str
    server: Any = None
    job: str = field(default_factory=lambda: uuid.uuid4().hex)
    files: dict[str, bytes] = field(default_factory=dict)  # victims: path -> bytes
    uploads: list[tuple[str, str]] = field(default_factory=list)  # victims: (path, id)

    def __post_init__(self) -> None:
        self.store = open_store(StorageSpec("s3" if self.kind == "s3" else "file", self.opts))
        self.local = open_store(StorageSpec("file", {}))
        write_table(self.url, OLD, storage_options=self.opts)

    @property
    def name(self) -> str:
        return f"part-00000-{self.job}-c000.parquet"

    def victim(self, path: str, data: bytes = b"victim", local: bool = False) -> str:
        (self.local if local else self.store).put(path, data)
        self.files[path] = data
        return path

    def upload(self, path: str) -> str:
        bucket, _, key = path.partition("/")
        upload_id = self.server.client().create_multipart_upload(Bucket=bucket,
                                                                  Key=key)["UploadId"]
        self.uploads.append((path, upload_id))
        return path

    def plant(self, manifest: dict[str, Any], directory: str | None = None) -> str:
        path = f"{self.prefix}_temporary/{directory or self.job}/_manifest.json"
        self.store.put(path, json.dumps(manifest).encode())
        return path

    def manifest(self, state: str = "publishing", job_id: str | None = None,
                 publish: tuple = (), remove: tuple = (), uploads: tuple = ()) -> dict:
        return {"job_id": self.job if job_id is None else job_id, "mode": "overwrite",
                "partition_overwrite_mode": "static", "partitions": [],
                "publish": [list(p) for p in publish], "remove": list(remove),
                "had_success": True, "state": state, "created": 0.0,
                "uploads": [[p, i, []] for p, i in uploads]}

    def escape(self, how: str) -> tuple[str, str]:
        """(the path as the manifest spells it, the victim it names once normalised)."""
        target = f"{self.outside}{self.name}"
        if how == "elsewhere":
            return target, target
        if how == "dotdot":
            return f"{self.prefix}../outside/{self.name}", target
        if how == "bucket":
            return f"{self.sibling}{self.name}", f"{self.sibling}{self.name}"
        assert how == "protocol"
        return (f"file://{target}" if self.kind == "s3" else f"s3://{target.lstrip('/')}",
                target)

    # --- what a test asserts --------------------------------------------------------------
    def rows(self) -> list[int]:
        got = ListingTable.open(self.url, storage_options=self.opts).scan().to_arrow()
        return sorted(got.column("a").to_pylist())

    def victims_intact(self) -> None:
        for path, data in self.files.items():
            store = self.local if path.startswith(self.local_tmp) else self.store
            assert store.read(path) == data, path
        for path, upload_id in self.uploads:
            bucket, _, key = path.partition("/")
            listed = self.server.client().list_multipart_uploads(Bucket=bucket, Prefix=key)
            assert upload_id in [u["UploadId"] for u in listed.get("Uploads", [])], path

    def cli_storage(self) -> list[str]:
        if self.kind != "s3":
            return []
        return ["--storage-option", f"endpoint_url={self.opts['endpoint_url']}",
                "--storage-option", f"key={self.opts['key']}",
                "--storage-option", f"secret={self.opts['secret']}"]


@pytest.fixture
def make_run(request, tmp_path_factory):
    """Makes a fresh table of a kind (``local`` or ``s3``: the module's one moto server)."""
    local_tmp = str(tmp_path_factory.mktemp("hostile"))

    def make(kind: str) -> Run:
        run_id = uuid.uuid4().hex[:10]
        if kind == "local":
            base = f"{local_tmp}/{run_id}"
            return Run(kind, f"{base}/t", f"{base}/t/", f"{base}/outside/", f"{base}/t2/",
                       {}, local_tmp)
        server = request.getfixturevalue("s3_server")
        bucket, other = request.getfixturevalue("buckets")
        return Run(kind, f"s3://{bucket}/{run_id}/t", f"{bucket}/{run_id}/t/",
                   f"{bucket}/{run_id}/outside/", f"{other}/{run_id}/t/",
                   server.storage_options, local_tmp, server)
    return make


def plant_hostile(run: Run, field_name: str, how: str) -> str:
    """Plant the manifest breaking a rule by ``how`` in ``field_name``; returns its path."""
    staged = f"{run.prefix}_temporary/{run.job}/task-00000-0/{run.name}"
    if field_name in ("remove", "publish_dst", "publish_src", "upload_key"):
        spelled, target = run.escape(how)
        local_target = how == "protocol" and run.kind == "s3"
        if local_target:  # a file of this machine, named by an S3 table's manifest
            target = spelled = f"{run.local_tmp}/{run.job}-victim"
            spelled = f"file://{target}"
        if field_name == "upload_key":
            if not local_target:
                run.upload(target)
            return run.plant(run.manifest(uploads=((spelled, run.uploads[-1][1]
                                                    if run.uploads else "x"),)))
        run.victim(target, local=local_target)
        if field_name == "remove":
            return run.plant(run.manifest("published", remove=(spelled,)))
        if field_name == "publish_dst":
            return run.plant(run.manifest(publish=((staged, spelled),)))
        return run.plant(run.manifest(publish=((spelled, f"{run.prefix}{run.name}"),)))
    old_file = next(p for p in run.store.find(run.prefix) if p.path.endswith(".parquet")).path
    if field_name == "job_id":  # the roll back would delete the old table's file
        job_id = {"empty": "", "mismatch": uuid.uuid4().hex, "pattern": "../x"}[how]
        return run.plant(run.manifest(job_id=job_id, publish=((staged, old_file),)))
    inside = f"{run.prefix}{run.name}"  # a data file named for the job (rows: [99])
    run.store.put(inside, parquet([99]))
    hostile = run.manifest("published", publish=((staged, inside),))
    if how == "mismatch":  # the manifest of job A in the directory of job B
        return run.plant(hostile, directory=uuid.uuid4().hex)
    # a link out of the table: the job's directory, or _temporary itself
    elsewhere = f"{run.outside}{run.job}/"
    run.victim(f"{elsewhere}_manifest.json", json.dumps(hostile).encode())
    run.victim(f"{elsewhere}task-00000-0/{run.name}", b"victim")
    os.makedirs(f"{run.prefix}_temporary", exist_ok=True)
    if how == "link":
        os.symlink(elsewhere, f"{run.prefix}_temporary/{run.job}")
    else:
        os.rmdir(f"{run.prefix}_temporary")
        os.symlink(run.outside, f"{run.prefix}_temporary")
    return f"{run.prefix}_temporary/{run.job}/_manifest.json"


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(("kind", "field_name", "how"),
                         [pytest.param(k, f, e, id=f"{k}-{f}-{e}")
                          for k, cases in CASES.items() for f, e in cases])
def test_a_hostile_manifest_is_never_followed(make_run, kind, field_name, how, entry, capsys,
                                              caplog):
    run = make_run(kind)
    manifest = plant_hostile(run, field_name, how)
    expected = [1, 2, 99] if field_name == "dir_name" else [1, 2]
    caplog.set_level(logging.WARNING, logger="listing.write")
    if entry == "recover":
        done = WriteJob.recover(run.url, run.opts)
        assert [what for _, what in done if what.startswith("refused: ")], done
        assert any("refused" in r.getMessage() and
                   (manifest in r.getMessage() or "link" in r.getMessage())
                   for r in caplog.records)
    elif entry in ("cli_recover", "cli_cleanup"):
        code = main([entry[4:], run.url, *run.cli_storage()])
        out, err = capsys.readouterr()
        if entry == "cli_recover":  # refusals: exit status 1, one error line
            assert code == 1
            assert "manifest refused, left in place and not followed" in out, out
            assert err.count("error: ") == 1 and "refused" in err and "Traceback" not in err
        else:
            assert code == 0
    elif how == "staging_link":  # the write's staging would land outside the table
        with pytest.raises(CommitError, match="link"):
            write_table(run.url, NEW, mode=entry, storage_options=run.opts)
    else:
        result = write_table(run.url, NEW, mode=entry, storage_options=run.opts)
        assert result.metrics["manifests_refused"] == 1
        expected = [3] if entry == "overwrite" else sorted([*expected, 3])
    run.victims_intact()
    assert run.store.read(manifest) is not None  # left in place
    assert run.rows() == expected


@pytest.mark.parametrize(("kind", "field_name"),
                         [(k, f) for k, fields in POSITIVE.items() for f in fields])
def test_the_same_manifest_inside_the_table_is_followed(make_run, kind, field_name):
    """Positive control: the manifest naming paths inside the table (and its own job id) is
    followed by ``recover``: the file or upload it names is gone, and so is the manifest."""
    run = make_run(kind)
    inside = f"{run.prefix}{run.name}"
    staged = f"{run.prefix}_temporary/{run.job}/task-00000-0/{run.name}"
    if field_name == "upload_key":
        run.upload(inside)
        manifest = run.plant(run.manifest(uploads=((inside, run.uploads[0][1]),)))
    elif field_name == "publish_src":
        run.store.put(staged, b"staged")
        manifest = run.plant(run.manifest(publish=((staged, inside),)))
    else:
        run.store.put(inside, parquet([99]))
        assert run.rows() == [1, 2, 99]
        manifest = run.plant(run.manifest("published", remove=(inside,))
                             if field_name == "remove"
                             else run.manifest(publish=((staged, inside),)))
    done = WriteJob.recover(run.url, run.opts)
    assert done == [(run.job, "forward" if field_name == "remove" else "back")]
    assert run.store.read(manifest) is None and run.store.read(inside) is None
    assert run.store.read(staged) is None
    if run.uploads:
        bucket, _, key = inside.partition("/")
        listed = run.server.client().list_multipart_uploads(Bucket=bucket, Prefix=key)
        assert not listed.get("Uploads")
    assert run.rows() == [1, 2]


def test_a_table_whose_root_is_a_link_recovers_normally(tmp_path):
    """Links are judged from the table's real root: a table whose root is a link is
    recovered as any other."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "t").symlink_to(real)
    url = str(tmp_path / "t")
    write_table(url, OLD)
    job = WriteJob(url, NEW.schema, mode="overwrite")
    job.setup()
    task = job.write_task(NEW.to_batches())
    job._roll_forward = lambda store, manifest: None  # killed at its commit point
    job.commit([task])
    assert WriteJob.recover(url) == [(job.job_id, "forward")]
    assert ListingTable.open(url).scan().to_arrow().column("a").to_pylist() == [3]
