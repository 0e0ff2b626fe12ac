"""Seeded fuzz of recovery: mutated real job manifests and file-system states, each put
through the five entry points (``recover()``, ``listing recover``, ``listing cleanup``,
an append, an overwrite), on local files and moto.

The states start from a real job killed at its commit point (its manifest, its published
files, the old files it removes, its lock), two hours old; each gets one to three
mutations of its JSON (types, depth, encodings, sizes, paths out of the table, names the
store cannot hold) or, on local files, of the file system (links out of the table at
``_SUCCESS``, the manifest, the lock, a removed file, the job's directory; a lock that is
a directory). After each operation: nothing outside the table changed (every file beside
it hashed before and after; on S3 every other key of both buckets), no operation raised (a
lock of the wrong kind is set aside, so an overwrite facing one commits too), ``listing
recover`` exited 0 or 1 with at most one ``error:`` line and no traceback, and every append
and overwrite committed its rows. Unmutated states are the positive control:
recovered (``forward``/``back``), their manifest gone.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from listing.cli import main
from listing.storage.spec import StorageSpec
from listing.storage.store import open_store
from listing.write import LOCK_FILE, WriteJob, write_table

SEED = 44
LOCAL_STATES = 60
S3_STATES = 5
ENTRIES = ("recover", "cli_recover", "cli_cleanup", "append", "overwrite")
ROOT = "@ROOT@"  # the table's fsspec prefix in a template manifest
OLD = pa.table({"p": pa.array([1, 2], pa.int64()), "a": pa.array([1, 2], pa.int64())})
NEW = pa.table({"p": pa.array([1, 3], pa.int64()), "a": pa.array([5, 6], pa.int64())})
TWO_HOURS = 7200.0
JSON_MUTATIONS = ("field", "path", "path", "entries", "drop", "extra", "state", "job_id",
                  "raw")
FS_MUTATIONS = ("success_link", "manifest_link", "lock_link", "lock_dir", "lock_garbage",
                "staging_link", "remove_link", "remove_dir", "dst_dir", "success_fifo")
ODD_VALUES: tuple[Any, ...] = (None, 0, -1, 1e308, True, "", "x", [], {}, [[]], [1, 2],
                               "\udc80", "a" * 5000, [[["deep"]]] * 3, {"a": [None]})


def killed_job(url: str, opts: dict[str, Any], mode: str) -> str:
    """Write a table, then a job of ``mode`` killed at its commit point; its manifest."""
    write_table(url, OLD, partition_by=["p"], storage_options=opts)
    job = WriteJob(url, NEW.schema, partition_by=["p"], mode=mode, storage_options=opts)
    job.setup()
    task = job.write_task(NEW.to_batches())
    job._roll_forward = lambda store, manifest: None  # killed at its commit point
    job.commit([task])
    return job.manifest_path


def mutate(rng: random.Random, m: dict[str, Any], root: str, outside: list[str],
           local: bool) -> tuple[dict[str, Any] | bytes, list[str]]:
    """One to three mutations of the manifest ``m`` (a dict, or raw bytes once "raw"), and
    the file-system ones (local files) to apply after it is planted."""
    fs: list[str] = []
    data: dict[str, Any] | bytes = m
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(JSON_MUTATIONS + (FS_MUTATIONS if local else ()))
        if kind in FS_MUTATIONS:
            fs.append(kind)
            continue
        if not isinstance(data, dict):
            continue
        if kind == "field":
            data[rng.choice(sorted(data))] = rng.choice(ODD_VALUES)
        elif kind == "path":
            paths = [*outside, f"{root}../outside/v.parquet", f"{root[:-1]}2/x.parquet",
                     f"file://{outside[0]}", f"s3://{outside[0].lstrip('/')}",
                     f"{root}p=1/x\udc80.parquet", f"{root}p=1/x\ud800.parquet",
                     f"{root}p=1/{'x' * 300}.parquet",
                     f"{root}{'d/' * 700}x.parquet", f"{root}p=1//x.parquet",
                     f"{root}p=1/x\0.parquet", f"{root}_temporary/x", f"{root}p=1/",
                     rng.choice(ODD_VALUES)]
            spot = rng.choice(["publish", "remove", "uploads"])
            items = data.get(spot)
            if isinstance(items, list) and items and spot != "remove":
                i = rng.randrange(len(items))
                if isinstance(items[i], list) and items[i]:
                    items[i][rng.randrange(min(2, len(items[i])))] = rng.choice(paths)
            elif isinstance(items, list):
                items.append(rng.choice(paths))
        elif kind == "entries":
            data["remove"] = [f"{root}p=9/f{i}.parquet" for i in range(rng.choice((1, 2000)))]
        elif kind == "drop":
            data.pop(rng.choice(sorted(data)), None)
        elif kind == "extra":
            data[rng.choice(["extra", "job_id ", ""])] = 1
        elif kind == "state":
            data["state"] = rng.choice(["publishing", "published", "PUBLISHED", "done"])
        elif kind == "job_id":
            data["job_id"] = rng.choice([uuid.uuid4().hex, "../x", "", "a" * 200])
        else:
            text = json.dumps(data)
            data = rng.choice([text[:rng.randrange(len(text))].encode(), b"[" * 100_000,
                               b"\xff\xfe\x00garbage", b"", b"[]", b"null", b"1" * 5000,
                               json.dumps({"job_id": [["x"] * 3] * 3}).encode(),
                               text.replace('"', "'").encode()])
    return data, fs


def tree_digest(base: Path, skip: Path) -> dict[str, str]:
    """Every entry under ``base`` but ``skip`` (links as their target, not followed)."""
    out: dict[str, str] = {}
    for directory, dirs, files in os.walk(base):
        here = Path(directory)
        if here == skip or skip in here.parents:
            continue
        for name in dirs + files:
            path = here / name
            if path == skip:
                continue
            if path.is_symlink():
                out[str(path)] = "-> " + os.readlink(path)
            elif path.is_file():
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                out[str(path)] = "dir" if path.is_dir() else "other"
    return out


def run_entry(entry: str, url: str, opts: dict[str, Any], cli: list[str], capsys) -> str:
    """Run ``entry``; what it said (asserting what every entry must hold)."""
    capsys.readouterr()
    if entry == "recover":
        return repr(WriteJob.recover(url, opts))
    if entry.startswith("cli_"):
        code = main([entry[4:], url, *cli])
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err
        assert code in ((0, 1) if entry == "cli_recover" else (0,)), err
        assert err.count("error: ") == (code == 1), err
        return out
    result = write_table(url, NEW, partition_by=["p"], mode=entry, storage_options=opts)
    assert result.rows == 2 and len(result.files) == 2
    return repr(result.metrics)


def test_fuzzed_local_states(tmp_path, capsys):
    rng = random.Random(SEED)
    template = tmp_path / "template"
    manifest_path = Path(killed_job(str(template / "t"), {}, "overwrite"))
    rel_manifest = manifest_path.relative_to(template / "t")
    text = manifest_path.read_text().replace(f"{template}/t/", ROOT)
    outcomes: dict[str, int] = {}
    for n in range(LOCAL_STATES):
        state = rng.getstate()
        for entry in ENTRIES:
            rng.setstate(state)  # the same state for each entry point
            base = tmp_path / f"c{n}-{entry}"
            table = base / "t"
            shutil.copytree(template / "t", table, symlinks=True)
            (base / "outside").mkdir()
            victims = [base / "outside" / "v.parquet", base / "outside" / "_manifest.json"]
            for v in victims:
                v.write_bytes(b"victim " + v.name.encode())
            (base / "t2").mkdir()
            (base / "t2" / "x.parquet").write_bytes(b"sibling")
            root = f"{table}/"
            control = n % 10 == 0  # every tenth state unmutated: the positive control
            data, fs = (json.loads(text.replace(ROOT, root)), []) if control else mutate(
                rng, json.loads(text.replace(ROOT, root)), root, [str(v) for v in victims],
                local=True)
            manifest = table / rel_manifest
            manifest.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
            plant_fs(fs, table, manifest, base, data)
            for path in (manifest, table / LOCK_FILE):
                if path.is_file() and not path.is_symlink():
                    os.utime(path, (time.time() - TWO_HOURS,) * 2)
            before = tree_digest(base, table)
            said = run_entry(entry, str(table), {}, [], capsys)
            assert tree_digest(base, table) == before, (n, entry, data, fs, said)
            if control and entry == "recover":
                assert "'forward'" in said and not manifest.exists(), said
            outcomes["refused" if "refused" in said else "followed"] = outcomes.get(
                "refused" if "refused" in said else "followed", 0) + 1
            shutil.rmtree(base)
    assert outcomes["refused"] > LOCAL_STATES and outcomes["followed"] > LOCAL_STATES / 5


def plant_fs(fs: list[str], table: Path, manifest: Path, base: Path,
             data: dict[str, Any] | bytes) -> None:
    """Apply the file-system mutations."""
    outside = base / "outside" / "v.parquet"
    lock = table / LOCK_FILE
    removed = [p for p in (data.get("remove") if isinstance(data, dict) else None) or []
               if isinstance(p, str) and p.startswith(str(table))]
    for kind in fs:
        if kind in ("success_link", "success_fifo"):
            success = table / "_SUCCESS"
            if os.path.lexists(success) and not success.is_dir():
                success.unlink()
            if not os.path.lexists(success):
                success.symlink_to(outside) if kind == "success_link" else os.mkfifo(success)
        elif kind == "manifest_link" and manifest.is_file() and not manifest.is_symlink():
            elsewhere = base / "outside" / "planted.json"
            manifest.rename(elsewhere)
            manifest.symlink_to(elsewhere)
        elif kind in ("lock_link", "lock_dir", "lock_garbage"):
            if lock.is_dir() and not lock.is_symlink():
                continue
            lock.unlink(missing_ok=True)
            if kind == "lock_link":
                lock.symlink_to(outside)
            elif kind == "lock_dir":
                lock.mkdir()
            else:
                lock.write_bytes(b"\x00garbage")
        elif kind == "staging_link":
            job_dir = manifest.parent
            if job_dir.is_dir() and not job_dir.is_symlink():
                shutil.copytree(job_dir, base / "outside" / "job", symlinks=True)
                shutil.rmtree(job_dir)
                job_dir.symlink_to(base / "outside" / "job")
        elif kind in ("remove_link", "remove_dir") and removed:
            target = Path(removed[0])
            if target.is_file() and not target.is_symlink():
                target.unlink()
                target.symlink_to(outside) if kind == "remove_link" else target.mkdir()
        elif kind == "dst_dir" and isinstance(data, dict):
            for pair in data.get("publish") or []:
                dst = pair[1] if isinstance(pair, list) and len(pair) == 2 else None
                if isinstance(dst, str) and dst.startswith(str(table)) and "\0" not in dst:
                    try:
                        Path(dst).mkdir(parents=True, exist_ok=True)
                    except (OSError, UnicodeEncodeError):
                        pass
                    break


@pytest.fixture
def buckets(s3_server):
    with s3_server.temporary_buckets("fuzz", "fuzz-other") as names:
        yield names


def test_fuzzed_s3_states(s3_server, buckets, capsys):
    rng = random.Random(SEED + 1)
    bucket, other = buckets
    opts = s3_server.storage_options
    store = open_store(StorageSpec("s3", opts))
    client = s3_server.client()
    template = f"{bucket}/template/t/"
    manifest_path = killed_job(f"s3://{template}", opts, "append")
    keys = {m.path: store.read(m.path) for m in store.find(template)}
    text = keys.pop(manifest_path).decode().replace(template, ROOT)
    store.put(f"{other}/t/x.parquet", b"sibling")
    cli = [f"--storage-option={k}={opts[k]}" for k in ("endpoint_url", "key", "secret")]

    def everything_else(prefix: str) -> dict[str, str]:
        out = {}
        for name in (bucket, other):
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=name):
                for obj in page.get("Contents", []):
                    if not f"{name}/{obj['Key']}".startswith(prefix):
                        out[f"{name}/{obj['Key']}"] = obj["ETag"]
        return out

    followed = 0
    for n in range(S3_STATES):
        state = rng.getstate()
        for entry in ENTRIES:
            rng.setstate(state)
            root = f"{bucket}/c{n}-{entry}/t/"
            victims = [f"{bucket}/c{n}-{entry}/outside/v.parquet"]
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda kv: store.put(*kv), [
                    *((root + key[len(template):], body or b"") for key, body in keys.items()),
                    (victims[0], b"victim")]))
            control = n % 8 == 0
            fresh = json.loads(text.replace(ROOT, root))
            data = fresh if control else mutate(rng, fresh, root, victims, local=False)[0]
            store.put(root + manifest_path[len(template):],
                      data if isinstance(data, bytes) else json.dumps(data).encode())
            before = everything_else(root)
            said = run_entry(entry, f"s3://{root}", opts, cli, capsys)
            assert everything_else(root) == before, (n, entry, data, said)
            followed += "refused" not in said
            if control and entry == "recover":
                assert "'forward'" in said, said
            store.delete([m.path for m in store.find(f"{bucket}/c{n}-{entry}/")])
    assert followed >= S3_STATES  # the controls, and mutations a job could have made
