"""Task packing, file selection options, and counted skips of bad files."""

from __future__ import annotations

import datetime as dt
import os
import time
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import listing
from listing import ListingTable, formats
from listing.errors import FileReadError
from listing.file_columns import FileColumns
from listing.files import FileGroup, PartitionedFile, whole_file
from listing.options import MB, ListingOptions
from listing.packing import pack_file_groups


def files(*sizes: int) -> list[PartitionedFile]:
    return [PartitionedFile(f"s3://b/f{i}.csv", s) for i, s in enumerate(sizes)]


def pack(listed: list[PartitionedFile], *args: Any, **kwargs: Any) -> list[FileGroup]:
    """:func:`pack_file_groups` of files as a plan holds them (as columns)."""
    return pack_file_groups(FileColumns.of_files(listed), *args, **kwargs)


def test_a_listed_file_made_through_its_slots_is_the_dataclass_made_by_its_init():
    import dataclasses
    import pickle

    when = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    for args in [("s3://b/k.parquet", 5, {"date": dt.date(2026, 3, 1)}, when, "e1"),
                 ("/tmp/x.csv", 0, {}, None, None)]:
        made = whole_file(*args)
        expected = PartitionedFile(args[0], args[1], args[2], None, args[3], args[4])
        assert made == expected
        assert repr(made) == repr(expected)
        assert pickle.loads(pickle.dumps(made)) == expected
        assert dataclasses.replace(made, etag="z") == dataclasses.replace(expected, etag="z")
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.size = 1  # type: ignore[misc]


def test_packing_follows_sparks_formula():
    opts = ListingOptions(max_partition_bytes=128 * MB, open_cost_in_bytes=4 * MB)
    csv = formats.get("csv")
    # 40 small files, 2 cores: bytesPerCore = 40 * (1 MB + 4 MB) / 2 = 100 MB per group
    groups = pack(files(*[MB] * 40), csv, opts, min_partitions=2)
    assert len(groups) == 2 and sum(len(g.files) for g in groups) == 40
    # one 300 MB splittable file: split in 128 MB ranges, each its own group
    groups = pack(files(300 * MB), csv, opts, min_partitions=1)
    ranges = sorted(f.byte_range for g in groups for f in g.files)
    assert ranges == [(0, 128 * MB), (128 * MB, 256 * MB), (256 * MB, 300 * MB)]
    # more parallelism than files: smaller splits, never below openCostInBytes
    groups = pack(files(64 * MB), csv, opts, min_partitions=8)
    assert len(groups) == 8


def test_packing_starts_no_wave_for_a_remainder():
    """Spark's rule gives 3 files on 2 cores 3 tasks (two waves); ours packs them in 2
    balanced groups, never more than Spark's, never fewer than maxPartitionBytes allows."""
    opts = ListingOptions(max_partition_bytes=128 * MB, open_cost_in_bytes=4 * MB)
    csv = formats.get("csv")
    groups = pack(files(8 * MB, 8 * MB, 8 * MB), csv, opts, min_partitions=2)
    assert sorted(len(g.files) for g in groups) == [1, 2]
    # Spark: 5 groups of one 70 MB file (two never fit in 128 MB); on 2 cores, 4 groups
    sizes = [70 * MB] * 5
    groups = pack(files(*sizes), formats.get("parquet"), opts, min_partitions=2)
    assert sorted(len(g.files) for g in groups) == [1, 1, 1, 2]
    # a total that needs 6 groups at 128 MB a group keeps them (never 4 overfull ones)
    sizes = [100 * MB, 90 * MB, 80 * MB, 70 * MB, 60 * MB, 50 * MB, 40 * MB, 30 * MB]
    groups = pack(files(*sizes), formats.get("parquet"), opts, min_partitions=2)
    assert len(groups) == 6
    assert sorted(f.size for g in groups for f in g.files) == sorted(sizes)


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(0, 400 * MB), min_size=1, max_size=60),
       parallelism=st.integers(1, 16))
@example(sizes=[0, 0, 121634817], parallelism=1)  # open costs tip the total past one group
def test_packing_is_complete_and_never_needs_more_tasks_than_sparks_rule(sizes, parallelism):
    from listing.packing import _greedy_count

    opts = ListingOptions(max_partition_bytes=128 * MB, open_cost_in_bytes=4 * MB)
    fmt = formats.get("csv")  # splittable: big files become ranges
    groups = pack(files(*sizes), fmt, opts, min_partitions=parallelism)
    pieces = [f for g in groups for f in g.files]
    covered: dict[str, int] = {}
    for f in pieces:
        covered[f.path] = covered.get(f.path, 0) + f.length
    assert covered == {f"s3://b/f{i}.csv": s for i, s in enumerate(sizes)}
    assert all(g.files for g in groups)
    total = sum(f.size + 4 * MB for f in files(*sizes))
    max_split = min(128 * MB, max(4 * MB, total // parallelism))
    spark = _greedy_count(sorted((p.length for p in pieces), reverse=True), max_split, 4 * MB)
    assert len(groups) <= spark
    assert len(groups) >= min(len(pieces), spark, -(-sum(p.length for p in pieces) // (128 * MB)))


def test_packing_asks_a_format_to_split_only_files_bigger_than_a_split():
    opts = ListingOptions(max_partition_bytes=128 * MB, open_cost_in_bytes=4 * MB)
    csv = formats.get("csv")
    asked: list[int] = []

    class Recording:
        def split(self, file: PartitionedFile, target_bytes: int) -> list[PartitionedFile]:
            asked.append(file.size)
            return csv.split(file, target_bytes)

    sizes = [MB, 300 * MB, 128 * MB, 2 * MB, 129 * MB]
    groups = pack(files(*sizes), Recording(), opts, min_partitions=1)
    assert sorted(asked) == [129 * MB, 300 * MB]
    assert groups == pack(files(*sizes), csv, opts, min_partitions=1)
    assert sum(f.length for g in groups for f in g.files) == sum(sizes)


_NAME_PARTS = ["part-0", ".parquet", ".PARQUET", ".parq", ".csv", ".CSV.GZ", ".csv.gz", ".gz",
               ".zst", ".inprogress", "._COPYING_", "._copying_", ".json", "x", ".", "/"]


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(_NAME_PARTS), min_size=1, max_size=5),
       name=st.sampled_from(["parquet", "csv", "json", "arrow"]))
@example(parts=["dir.parquet", "/", "x.csv"], name="parquet")
@example(parts=["x.parquet", "._COPYING_"], name="parquet")
def test_a_key_decided_by_its_ending_alone_is_decided_as_the_format_decides(parts, name):
    """The planner's common case decides a directory's names in one pass
    (``FileFilter.kept``: a built-in format reads every name); it must keep exactly the keys
    the format's own test (and the in-progress rule) keeps."""
    from listing.planner import FileFilter
    from listing.storage import ObjectMeta
    from listing.url import TableUrl

    fmt = formats.get(name)
    url = TableUrl.parse("s3://b/t/")
    rule = FileFilter(url, ListingOptions(), fmt.matches, fmt.name_endings)
    assert rule.every_name and rule.endings is None
    path = "b/t/k=1/" + "".join(parts)
    name = path.rsplit("/", 1)[-1]
    kept = rule.kept(lambda: [name], name + "\0", range(1))
    assert bool(len(kept)) == rule.accepts(ObjectMeta(path, 1))


def test_a_key_is_decided_by_the_format_when_its_test_is_not_the_ending_alone(tmp_path):
    from listing.formats.parquet import ParquetFormat
    from listing.planner import FileFilter
    from listing.url import TableUrl

    class KeepOnly(ParquetFormat):
        def matches(self, path: str) -> bool:
            return path.rsplit("/", 1)[-1].startswith("keep-") and self.has_extension(path)

    assert KeepOnly().name_endings is None
    url = TableUrl.parse(str(tmp_path))
    parquet = formats.get("parquet")
    globbed = FileFilter(url, ListingOptions(path_glob_filter="k*"), parquet.matches,
                         parquet.name_endings)
    assert globbed.endings is None  # a glob decides too: every key goes through accepts()
    for name in ("keep-0.parquet", "drop-1.parquet", "keep-2.csv"):
        write(f"{tmp_path}/k=1/{name}")
    plan = ListingTable.open(str(tmp_path), format=KeepOnly()).scan()
    assert [f.path.rsplit("/", 1)[-1] for f in plan.files] == ["keep-0.parquet"]
    assert plan.metrics["files_skipped_other"] == 2


def test_a_file_extension_with_a_slash_is_refused():
    from listing.formats.parquet import ParquetFormat

    class Odd(ParquetFormat):
        extensions = (".parquet", "dir/.parquet")

    with pytest.raises(ValueError, match="dir/.parquet"):
        Odd().has_extension("b/t/x.parquet")


def write(path, n: int = 3) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({"id": list(range(n))}), path)


def test_missing_and_corrupt_files_fail_naming_the_file_or_are_counted(tmp_path):
    for d in ("2026-01-01", "2026-01-02", "2026-01-03"):
        write(f"{tmp_path}/date={d}/a.parquet")
    table = ListingTable.open(str(tmp_path))
    plan = table.scan()
    os.remove(f"{tmp_path}/date=2026-01-02/a.parquet")  # vanished after listing
    with open(f"{tmp_path}/date=2026-01-03/a.parquet", "wb") as f:
        f.write(b"PAR1 not parquet at all")  # corrupt
    with pytest.raises(FileReadError, match="date=2026-01-0[23]/a.parquet"):
        plan.to_arrow()
    tolerant = ListingTable.open(str(tmp_path), schema=table.file_schema,
                                 ignore_missing_files=True, ignore_corrupt_files="true")
    plan = tolerant.scan()
    os.remove(f"{tmp_path}/date=2026-01-01/a.parquet")
    got = plan.collect()
    assert got.table.num_rows == 0
    assert got.metrics["files_skipped_missing"] == 1
    assert got.metrics["files_skipped_corrupt"] == 1
    assert "files_skipped_missing" not in plan.metrics  # the plan is left as it was


def test_glob_and_modification_time_filters(tmp_path):
    write(f"{tmp_path}/k=1/old.parquet")
    write(f"{tmp_path}/k=1/skip-me.parquet")
    cut = dt.datetime.now(dt.UTC)
    old = time.time() - 3600
    os.utime(f"{tmp_path}/k=1/old.parquet", (old, old))
    os.utime(f"{tmp_path}/k=1/skip-me.parquet", (old, old))
    time.sleep(0.01)
    write(f"{tmp_path}/k=1/new.parquet")
    names = lambda plan: sorted(f.path.rsplit("/", 1)[-1] for f in plan.files)  # noqa: E731
    assert names(ListingTable.open(str(tmp_path), modified_after=cut).scan()) == ["new.parquet"]
    assert names(ListingTable.open(str(tmp_path), modified_before=cut.isoformat()).scan()) == [
        "old.parquet", "skip-me.parquet"]
    plan = ListingTable.open(str(tmp_path), path_glob_filter="[no]*.parquet").scan()
    assert names(plan) == ["new.parquet", "old.parquet"]
    assert plan.metrics["files_skipped_other"] == 1


def test_no_columns_still_counts_rows(tmp_path):
    for d, n in (("2026-01-01", 3), ("2026-01-02", 5)):
        write(f"{tmp_path}/date={d}/a.parquet", n)
    table = ListingTable.open(str(tmp_path))
    assert table.scan(columns=[]).to_arrow().num_rows == 8
    assert table.scan(columns=[], where="date = '2026-01-02'").to_arrow().num_rows == 5


def test_a_read_of_metadata_only_packs_whole_files_one_group_a_core():
    """60 files of 5 MB (by bytes: 5 groups by Spark's rule, 4 by ours) read for their row
    counts only: one group per core but never fewer than 16 files a group (4 groups at
    most), whole files in key order, every file once; a day's 3 files are one group."""
    opts = ListingOptions(max_partition_bytes=128 * MB, open_cost_in_bytes=4 * MB)
    parquet = formats.get("parquet")
    listed = files(*[5 * MB] * 60)
    assert len(pack(listed, parquet, opts, min_partitions=2)) == 4
    for parallelism, expected in ((2, 2), (3, 3), (4, 4), (7, 4), (60, 4), (100, 4)):
        groups = pack(listed, parquet, opts, min_partitions=parallelism,
                                  metadata_only=True)
        sizes = [len(g.files) for g in groups]
        assert len(sizes) == expected and max(sizes) - min(sizes) <= 1
        assert [f for g in groups for f in g.files] == listed
        assert all(f.byte_range is None for g in groups for f in g.files)
    day = files(*[5 * MB] * 3)
    assert [len(g.files) for g in pack(day, parquet, opts, min_partitions=2,
                                                   metadata_only=True)] == [3]
    assert len(pack(files(*[5 * MB] * 17), parquet, opts, min_partitions=8,
                                metadata_only=True)) == 2
    one_big = pack(files(300 * MB), parquet, opts, min_partitions=2,
                               metadata_only=True)
    assert [[f.byte_range for f in g.files] for g in one_big] == [[None]]


def test_packing_counts_the_bytes_a_projection_reads():
    """Sizes are scaled by the share of each file a read fetches: 60 files of 5 MB read for
    29% of their bytes are 2 groups on 2 cores (4 at full size); a big file is still split
    into ranges that cover it, at the split the read bytes call for."""
    opts = ListingOptions(max_partition_bytes=128 * MB, open_cost_in_bytes=4 * MB)
    parquet = formats.get("parquet")
    listed = files(*[5 * MB] * 60)
    assert len(pack(listed, parquet, opts, min_partitions=2)) == 4
    narrow = pack(listed, parquet, opts, min_partitions=2, read_share=0.29)
    assert [len(g.files) for g in narrow] == [30, 30]
    assert sorted(f.path for g in narrow for f in g.files) == sorted(f.path for f in listed)
    big = pack(files(1024 * MB), parquet, opts, min_partitions=2,
                           read_share=0.25)
    ranges = sorted(f.byte_range for g in big for f in g.files)
    assert ranges[0][0] == 0 and ranges[-1][1] == 1024 * MB and len(ranges) == 2
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))


def test_a_parquet_table_knows_its_column_bytes_from_the_schema_footer(tmp_path):
    """Opening infers the schema from one footer and keeps its columns' compressed bytes
    (no other request); a projection's share of a file follows. A user schema, CSV, or a
    column the sample lacks leave the share at 1."""
    rows = 20_000
    for d in ("2026-01-01", "2026-01-02"):
        os.makedirs(tmp_path / f"date={d}")
        pq.write_table(pa.table({"flag": pa.array(list(os.urandom(rows)), pa.uint8()),
                                 "text": pa.array([os.urandom(16).hex() for _ in range(rows)])}),
                       tmp_path / f"date={d}" / "a.parquet")
    table = ListingTable.open(str(tmp_path))
    assert table.open_metrics["data_files_opened"] == 1
    md = pq.ParquetFile(tmp_path / "date=2026-01-01" / "a.parquet").metadata
    assert table.column_bytes == {
        md.schema.column(i).name: md.row_group(0).column(i).total_compressed_size
        for i in range(md.num_columns)}
    flag = table.read_share(["flag"])
    assert 0 < flag < 0.05 and table.read_share(["flag", "text"]) == 1.0
    assert table.read_share(["text"]) == pytest.approx(1 - flag)
    assert table.read_share([]) == table.read_share(["gone"]) == 1.0
    given = ListingTable.open(str(tmp_path), schema=pa.schema([("flag", pa.uint8())]))
    assert given.column_bytes is None and given.read_share(["flag"]) == 1.0
    csv_root = tmp_path.parent / f"{tmp_path.name}-csv"
    os.makedirs(csv_root / "date=2026-01-01")
    (csv_root / "date=2026-01-01" / "a.csv").write_text("flag\n1\n")
    assert ListingTable.open(str(csv_root), format="csv").column_bytes is None


def test_a_parquet_count_is_packed_by_file_and_a_csv_count_by_bytes(tmp_path):
    """A Parquet scan of no data column reads footers only: whole files, 16 or more a
    group (here all 12 in one); reading a data column, a data filter, or a CSV count
    (which parses every line) keeps Spark's packing by bytes. Rows are counted exactly
    either way."""
    for i in range(12):
        write(f"{tmp_path}/pq/date=2026-01-{i + 1:02d}/a.parquet", 3)
        os.makedirs(tmp_path / "csv" / f"date=2026-01-{i + 1:02d}", exist_ok=True)
        (tmp_path / "csv" / f"date=2026-01-{i + 1:02d}" / "a.csv").write_text("x\n1\n2\n3\n")
    # by bytes, a file a group: each file is charged 1 MB of open cost, a group holds 1 MB
    small = {"max_partition_bytes": MB, "open_cost_in_bytes": MB}
    pq_table = ListingTable.open(str(tmp_path / "pq"), **small)
    counted = pq_table.scan(columns=[], min_partitions=2)
    assert [len(g.files) for g in counted.file_groups] == [12]
    assert counted.to_arrow().num_rows == 36
    assert len(pq_table.scan(columns=["date"], min_partitions=2).file_groups) == 1
    assert len(pq_table.scan(columns=["id"], min_partitions=2).file_groups) == 12
    assert len(pq_table.scan(columns=[], where="id > 1", min_partitions=2).file_groups) == 12
    csv_table = ListingTable.open(str(tmp_path / "csv"), format="csv", **small)
    csv_counted = csv_table.scan(columns=[], min_partitions=2)
    assert len(csv_counted.file_groups) == 12
    assert csv_counted.to_arrow().num_rows == 36


def test_to_spark_count_without_columns(spark, tmp_path):
    for d, n in (("2026-01-01", 3), ("2026-01-02", 5)):
        write(f"{tmp_path}/date={d}/a.parquet", n)
    assert listing.to_spark(ListingTable.open(str(tmp_path)), spark, columns=[]).count() == 8


def test_a_parquet_file_split_into_ranges_reads_each_row_group_once(tmp_path):
    """Ranges own the row groups whose midpoint they hold (Spark's rule), so a file split
    across several tasks yields every row exactly once."""
    os.makedirs(tmp_path / "k=1")
    ids = pa.array(range(200_000), pa.int64())
    pq.write_table(pa.table({"id": ids, "pad": pa.array([f"row {i}" for i in range(200_000)])}),
                   tmp_path / "k=1" / "big.parquet", row_group_size=20_000)
    table = ListingTable.open(str(tmp_path), max_partition_bytes=100_000, open_cost_in_bytes=0)
    plan = table.scan(columns=["id"])
    assert len(plan.files) == 1 and len(plan.file_groups) > 1  # really split
    assert sum(1 for g in plan.file_groups for f in g.files if f.byte_range) > 1
    got = plan.collect()
    assert sorted(got.table.column("id").to_pylist()) == list(range(200_000))
    assert got.metrics["row_groups_read"] == 10


@pytest.mark.parametrize("prefetch", [0, 1, 4])
def test_prefetching_keeps_file_order_errors_and_skips(tmp_path, prefetch):
    """Files opened ahead by helper threads still come out in file order, a bad file
    fails (naming itself, not a later one) or is skipped once, and a limit stops early."""
    import dataclasses

    from listing.file_stream import read_group
    from listing.metrics import Counters

    for i in range(8):
        d = f"2026-01-{i + 1:02d}"
        os.makedirs(f"{tmp_path}/date={d}")
        pq.write_table(pa.table({"id": [i * 10 + j for j in range(3)]}),
                       f"{tmp_path}/date={d}/a.parquet")
    table = ListingTable.open(str(tmp_path), max_partition_bytes="1g")
    plan = table.scan(columns=["id"])
    (group,) = plan.file_groups
    spec = dataclasses.replace(plan.read, prefetch=prefetch)
    order = [int(f.partition_values["date"].day) - 1 for f in group.files]
    ids = [i for b in read_group(spec, group) for i in b.column("id").to_pylist()]
    assert ids == [i * 10 + j for i in order for j in range(3)]
    limited = [i for b in read_group(dataclasses.replace(spec, limit=4), group)
               for i in b.column("id").to_pylist()]
    assert limited == ids[:4]
    bad = group.files[3].path
    with open(bad, "r+b") as f:  # corrupt, then listed again: corrupt rather than changed
        f.write(b"PAR1 not parquet" * 4)
    (group,) = ListingTable.open(str(tmp_path), max_partition_bytes="1g").scan(
        columns=["id"]).file_groups
    assert group.files[3].path == bad
    with pytest.raises(FileReadError, match=bad.rsplit("/", 2)[-2]):
        list(read_group(spec, group))
    skipped = Counters()
    tolerant = dataclasses.replace(spec, ignore_corrupt_files=True)
    rows = [i for b in read_group(tolerant, group, skipped) for i in b.column("id").to_pylist()]
    assert rows == [i for i in ids if i // 10 != order[3]]
    assert skipped["files_skipped_corrupt"] == 1
    assert skipped["row_groups_total"] == 8  # every per-file opener's counts merged


def test_files_still_being_written_are_never_data(tmp_path):
    """A format that takes any file name (no extensions) still skips in-progress files."""
    from listing.formats.parquet import ParquetFormat

    class AnyName(ParquetFormat):
        extensions = ()

    for name in ("part-0.parquet", "part-1.parquet.inprogress", "part-2.parquet._COPYING_"):
        write(f"{tmp_path}/k=1/{name}")
    plan = ListingTable.open(str(tmp_path), format=AnyName()).scan()
    assert [f.path.rsplit("/", 1)[-1] for f in plan.files] == ["part-0.parquet"]
    assert plan.metrics["files_skipped_other"] == 1
    assert plan.metrics["files_skipped_hidden"] == 1  # ._COPYING_: hidden, by Spark's rule
