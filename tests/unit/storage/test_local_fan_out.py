"""A flat local listing shared out to worker processes lists exactly what one process
lists: the same runs (names, sizes, times, versions), in the same order, the same
directories counted; a worker that cannot start or ends early has its share walked by the
listing's own process; a read failing in a worker fails the listing as it fails in one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from listing.errors import StorageError
from listing.storage import local_pages

#: directories at the level that is shared out (every test lowers the threshold to it)
WIDE = 12


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """An awkward tree: files beside directories at every depth, links to files, to
    directories and to nothing, names that are not UTF-8, empty and hidden directories."""
    root = tmp_path / "t"
    for i in range(WIDE):
        day = root / f"date=2020-01-{i + 1:02d}"
        for h in range(3):
            d = day / f"hour={h}"
            d.mkdir(parents=True)
            for j in range(4):
                (d / f"part-{j}.parquet").write_bytes(b"x" * (i + h + j))
        (day / "_SUCCESS").write_bytes(b"")
        (day / "beside.csv").write_text("a\n")
    (root / "zz-empty").mkdir()
    (root / ".hidden" / "deep").mkdir(parents=True)
    (root / ".hidden" / "deep" / "f.parquet").write_bytes(b"yy")
    first = root / "date=2020-01-01" / "hour=0"
    (first / "link.parquet").symlink_to(first / "part-3.parquet")
    (first / "dangling.parquet").symlink_to(root / "nowhere")
    (root / "date=2020-01-02" / "dirlink").symlink_to(first)
    os.close(os.open(os.fsencode(root / "date=2020-01-03" / "hour=1") + b"/caf\xe9.parquet",
                     os.O_WRONLY | os.O_CREAT, 0o644))
    (root / "top.parquet").write_bytes(b"zzz")
    return root


def _listed(root: Path, start_after: str | None = None, stop_after: str | None = None
            ) -> tuple[list[tuple[Any, ...]], int]:
    """The runs of one flat listing of ``root`` (each as plain values) and the directories
    it counted."""
    counted = [0]

    def on_directory() -> None:
        counted[0] += 1

    pages = list(local_pages.local_pages(f"{root}/", False, start_after, stop_after,
                                         on_directory=on_directory))
    assert len(pages) == 1
    runs, dirs = pages[0]
    assert dirs == []
    return ([(r.directory, r.names, r.sizes.tolist(), r.mtimes.tolist(), r.versions.tolist())
             for r in runs], counted[0])


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every worker started from now on (its command), the level of WIDE directories
    shared out among three processes."""
    started: list[list[str]] = []
    popen = subprocess.Popen

    def counting(cmd: list[str], *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        started.append(cmd)
        return popen(cmd, *args, **kwargs)

    monkeypatch.setattr(local_pages.subprocess, "Popen", counting)
    monkeypatch.setattr(local_pages, "_processes", lambda: 3)
    return started


def _in_one_process(root: Path, monkeypatch: pytest.MonkeyPatch, **bounds: Any
                    ) -> tuple[list[tuple[Any, ...]], int]:
    with monkeypatch.context() as m:
        m.setattr(local_pages, "FAN_OUT_DIRECTORIES", 10**9)
        return _listed(root, **bounds)


def test_a_shared_out_listing_lists_what_one_process_lists(tree, workers, monkeypatch):
    alone = _in_one_process(tree, monkeypatch)
    assert workers == []  # the control: one process, no worker
    monkeypatch.setattr(local_pages, "FAN_OUT_DIRECTORIES", WIDE)
    assert _listed(tree) == alone
    assert len(workers) == 2
    assert workers[0][1:3] == ["-I", "-S"]
    runs, counted = alone
    names = [n for r in runs for n in r[1]]
    assert "caf\udce9.parquet" in names and "dangling.parquet" in names
    assert counted == 1 + (WIDE + 2) + WIDE * 3 + 1  # the root, its folders, hours, deep


def test_bounds_apply_in_the_workers_as_here(tree, workers, monkeypatch):
    bounds = {"start_after": f"{tree}/date=2020-01-03/hour=1/part-1.parquet",
              "stop_after": f"{tree}/date=2020-01-09/hour=0/part-2.parquet"}
    alone = _in_one_process(tree, monkeypatch, **bounds)
    monkeypatch.setattr(local_pages, "FAN_OUT_DIRECTORIES", WIDE)
    shared = _listed(tree, **bounds)
    assert shared == alone and len(workers) == 2
    first, last = alone[0][0], alone[0][-1]
    assert (first[0] + first[1][0], last[0] + last[1][-1]) == (
        f"{tree}/date=2020-01-03/hour=1/part-2.parquet", bounds["stop_after"])


@pytest.mark.parametrize("command", [
    pytest.param(["/nonexistent/python"], id="cannot-start"),
    pytest.param([sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(3)"],
                 id="ends-early"),
    pytest.param([sys.executable, "-c", "import sys, marshal; sys.stdin.read(); "
                  "sys.stdout.buffer.write(marshal.dumps(('d', '/x', None))[:-1])"],
                 id="cut-short"),
])
def test_a_worker_that_does_not_finish_has_its_share_walked_here(tree, workers, monkeypatch,
                                                                  command):
    alone = _in_one_process(tree, monkeypatch)
    monkeypatch.setattr(local_pages, "FAN_OUT_DIRECTORIES", WIDE)
    monkeypatch.setattr(local_pages, "_worker_command", lambda: command)
    assert _listed(tree) == alone
    assert len(workers) == 2


def test_a_read_failing_in_a_worker_fails_the_listing_as_here(tree, workers, monkeypatch):
    # a directory whose path is longer than the system takes: made relative to its parent
    fd = os.open(tree / f"date=2020-01-{WIDE:02d}", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(24):
            os.mkdir("d" * 200, dir_fd=fd)
            deeper = os.open("d" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = deeper
    finally:
        os.close(fd)
    with pytest.raises(StorageError) as here:
        _in_one_process(tree, monkeypatch)
    assert workers == []
    monkeypatch.setattr(local_pages, "FAN_OUT_DIRECTORIES", WIDE)
    with pytest.raises(StorageError) as shared:
        _listed(tree)
    assert len(workers) == 2  # the last share, holding the long path, was a worker's
    assert str(shared.value) == str(here.value)
    assert "File name too long" in str(here.value) and str(tree) in str(here.value)
