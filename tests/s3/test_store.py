"""The Store implementations (listing.storage.store), each over its real store: local
files, fsspec's in-memory filesystem, and S3 on the moto server over HTTP. One contract
for all three; where a store can do more (S3's conditional writes, multipart uploads,
ETag-pinned reads) or less (no conditional writes), the test says which."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest

from listing.errors import FileChangedError, StorageError
from listing.files import PartitionedFile
from listing.storage import client
from listing.storage.errors import raise_as
from listing.storage.spec import StorageSpec
from listing.storage.store import FsspecStore, LocalStore, S3Store, open_store, store_class

KINDS = ["local", "memory", "s3"]


@pytest.fixture(params=KINDS)
def where(request, tmp_path):
    """(spec, root) of an empty place in one store; root is an fsspec path with no slash
    at its end."""
    if request.param == "local":
        yield StorageSpec("file", {}), str(tmp_path / "t")
        return
    if request.param == "memory":
        root = f"/store-{uuid.uuid4().hex[:8]}"
        yield StorageSpec("memory", {}), root
        fs = StorageSpec("memory", {}).filesystem()
        if fs.exists(root):
            fs.rm(root, recursive=True)
        return
    s3_server = request.getfixturevalue("s3_server")
    bucket = request.getfixturevalue("s3_bucket")
    yield StorageSpec("s3", s3_server.storage_options), f"{bucket}/t"


def test_each_protocol_gets_its_store(where):
    spec, _ = where
    store = open_store(spec)
    expected = {"file": LocalStore, "memory": FsspecStore, "s3": S3Store}[spec.protocol]
    assert type(store) is expected is store_class(spec)
    assert store.supports_multipart == (spec.protocol == "s3")
    assert store.max_key_bytes == (1024 if spec.protocol == "s3" else None)


def test_put_read_find_delete_round_trip(where):
    spec, root = where
    store = open_store(spec)
    assert store.read(f"{root}/a/x.bin") is None  # nothing there: None, not an error
    store.put(f"{root}/a/x.bin", b"hello")
    store.put_atomic(f"{root}/b/y.bin", b"world!")
    assert store.read(f"{root}/a/x.bin") == b"hello"
    assert store.read(f"{root}/b/y.bin") == b"world!"
    found = {m.path: m.size for m in store.find(f"{root}/")}
    assert found == {f"{root}/a/x.bin": 5, f"{root}/b/y.bin": 6}
    store.delete([f"{root}/a/x.bin", f"{root}/a/missing.bin"])  # a missing one: no error
    assert [m.path for m in store.find(f"{root}/")] == [f"{root}/b/y.bin"]


def test_put_if_absent_creates_once_where_the_store_can_tell(where):
    spec, root = where
    store = open_store(spec)
    first = store.put_if_absent(f"{root}/lock", b"one")
    second = store.put_if_absent(f"{root}/lock", b"two")
    if spec.protocol == "memory":  # no conditional writes: the store says it cannot tell
        assert first is None and second is None
        return
    assert (first, second) == (True, False)
    assert store.read(f"{root}/lock") == b"one"  # the second write did not land


def test_create_streams_a_file_and_publish_puts_it_in_place(where):
    spec, root = where
    metrics: dict[str, int] = {}
    store = open_store(spec, metrics)
    out, finish = store.create(f"{root}/_temporary/j/f.bin")
    out.write(b"x" * 1000)
    out.close()
    size, upload = finish()
    assert (size, upload) == (1000, None)
    store.publish([(f"{root}/_temporary/j/f.bin", f"{root}/k=1/f.bin")])
    assert store.read(f"{root}/k=1/f.bin") == b"x" * 1000
    if spec.protocol == "file":
        assert metrics["renames"] == 1
    else:
        assert metrics["copy_requests"] == 1 and metrics["put_requests"] == 1


def test_s3_requests_are_counted_as_the_server_saw_them(s3_server, s3_bucket):
    metrics: dict[str, int] = {}
    store = open_store(StorageSpec("s3", s3_server.storage_options), metrics)
    root = f"{s3_bucket}/t"
    with s3_server.log.capture(s3_bucket) as cap:
        store.put(f"{root}/a", b"1")
        store.put_if_absent(f"{root}/a", b"2")
        store.read(f"{root}/a")
        store.publish([(f"{root}/a", f"{root}/b"), (f"{root}/a", f"{root}/c")])
        store.find(f"{root}/")
        store.delete([f"{root}/a", f"{root}/b", f"{root}/c"])
    assert metrics == {"put_requests": 2, "get_requests": 1, "copy_requests": 2,
                       "list_requests": 1, "retries": 0, "delete_requests": 1}
    assert cap.counts() == {"PUT": 2, "COPY": 2, "GET": 1, "LIST": 1, "POST": 1}


def test_s3_multipart_upload_appears_only_when_completed(s3_server, s3_bucket):
    store = open_store(StorageSpec("s3", s3_server.storage_options), {},
                       part_size=5 * 1024 * 1024)
    path = f"{s3_bucket}/t/big.bin"
    out, finish = store.create(path)
    out.write(b"a" * (6 * 1024 * 1024))
    out.close()
    size, upload = finish()
    assert size == 6 * 1024 * 1024 and upload is not None and len(upload[2]) == 2
    assert store.read(path) is None  # an upload in progress is no object
    assert [u[:2] for u in store.list_uploads(f"{s3_bucket}/t/")] == [(path, upload[1])]
    store.complete([upload])
    store.complete([upload])  # idempotent: already completed, its object exists
    assert store.read(path) == b"a" * (6 * 1024 * 1024)
    assert store.list_uploads(f"{s3_bucket}/t/") == []
    assert store.metrics["post_requests"] >= 2


def test_s3_abort_drops_an_upload(s3_server, s3_bucket):
    store = open_store(StorageSpec("s3", s3_server.storage_options), {},
                       part_size=5 * 1024 * 1024)
    out, finish = store.create(f"{s3_bucket}/t/x.bin")
    out.write(b"b" * 10)
    out.close()
    _, upload = finish()
    store.abort_uploads([upload])
    store.abort_uploads([upload])  # already gone: skipped
    assert store.list_uploads(f"{s3_bucket}/t/") == []
    assert store.read(f"{s3_bucket}/t/x.bin") is None
    assert store.metrics["uploads_aborted"] == 2


@pytest.mark.parametrize("where", ["local", "memory"], indirect=True)
def test_stores_without_multipart_refuse_uploads(where):
    spec, root = where
    store = open_store(spec)
    assert store.list_uploads(f"{root}/") == []
    store.complete([])
    with pytest.raises(StorageError, match="no multipart uploads"):
        store.complete([(f"{root}/x", "id", [])])


def test_local_directories_are_pruned_up_to_the_root(tmp_path):
    store = open_store(StorageSpec("file", {}))
    root = str(tmp_path / "t")
    store.put(f"{root}/k=1/j=2/f", b"1")
    store.put(f"{root}/k=3/f", b"1")
    store.delete([f"{root}/k=1/j=2/f"])
    store.prune_dirs([f"{root}/k=1/j=2/f"], f"{root}/")
    assert sorted(p.name for p in tmp_path.joinpath("t").iterdir()) == ["k=3"]
    store.put(f"{root}/_temporary/job/f", b"1")
    store.remove_dir(f"{root}/_temporary/job", f"{root}/_temporary")
    assert not tmp_path.joinpath("t", "_temporary").exists()


def test_open_reads_only_the_listed_version(where):
    """Reads are pinned to what the listing saw: S3 by the listed ETag (If-Match), local
    and in-memory files by size and modification time."""
    spec, root = where
    store = open_store(spec)
    store.put(f"{root}/f.bin", b"0123456789")
    [meta] = store.find(f"{root}/")
    proto = "" if spec.protocol == "file" else f"{spec.protocol}://"
    file = PartitionedFile(f"{proto}{meta.path}", meta.size, last_modified=meta.last_modified,
                           etag=meta.etag)
    with store.open(file) as handle:
        assert handle.read() == b"0123456789"
    store.put(f"{root}/f.bin", b"changed, longer")
    with pytest.raises(FileChangedError, match="changed since listing"):
        with store.open(file) as handle:
            handle.read()


def test_the_s3_client_is_adjusted_once(s3_server, s3_bucket, monkeypatch):
    """The botocore adjustments run on a client's first request, not on every request;
    the backoff cap is the spec's retry_max_backoff."""
    calls = []
    real = client._adjust
    monkeypatch.setattr(client, "_adjust", lambda c, s: (calls.append(c), real(c, s)))
    # a retry_max_backoff of its own: a new filesystem (and client), not a cached one
    cap = 1 + uuid.uuid4().int % 1000 / 1000
    spec = StorageSpec("s3", {**s3_server.storage_options, "retry_max_backoff": cap})
    store = open_store(spec)
    for i in range(3):
        store.put(f"{s3_bucket}/t/{i}", b"x")
    store.find(f"{s3_bucket}/t/")
    assert len(calls) == 1
    events = calls[0].meta.events
    handler = getattr(events, "_emitter", events)._unique_id_handlers["retry-config-s3"]
    assert handler["handler"].__self__._retry_policy._retry_backoff._max_backoff == cap


def test_raise_as_replaces_an_error_by_its_classification():
    original = OSError(5, "secret-bearing text")
    with pytest.raises(StorageError) as info:
        try:
            raise original
        except OSError as err:
            raise_as(StorageError("reading x failed"), err)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    bug = KeyError("a bug")  # its own classification: raised as it is
    with pytest.raises(KeyError) as same:
        try:
            raise bug
        except KeyError as err:
            raise_as(err, err)
    assert same.value is bug


def test_an_unknown_protocol_is_a_config_error():
    from listing.errors import StorageConfigError

    with pytest.raises(StorageConfigError, match="unknown storage protocol"):
        client.filesystem("nosuchproto", {}, client.StorageSettings(), {})


def test_write_uses_the_store_for_a_generic_filesystem():
    """A table on fsspec's memory filesystem is written and committed through the generic
    store (copies and deletes by fsspec's calls)."""
    from listing.write import write_table

    root = f"memory://w-{uuid.uuid4().hex[:8]}"
    result = write_table(root, pa.table({"k": ["a", "b"], "v": [1, 2]}), partition_by=["k"])
    assert result.metrics["copy_requests"] == 2 and result.rows == 2
    fs = StorageSpec("memory", {}).filesystem()
    names = sorted(p.rsplit("/", 2)[-2] for p in fs.find(root.split("://")[1]))
    assert names == ["k=a", "k=b", root.split("://")[1].strip("/")]  # two files, _SUCCESS
