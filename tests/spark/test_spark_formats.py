"""Every format through Spark: listed from the S3 server, pruned, read in Spark tasks.

The custom formats come from ``examples/``, which Spark's Python workers cannot import:
they reach the workers because the toolkit ships users' format classes by value.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import pyarrow as pa
import pytest

import listing
from listing import ListingTable, formats
from listing.spark.session import register
from listing.testing import datasets

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # examples/ is a user's project folder, not an installed package
    sys.path.insert(0, str(ROOT))

from examples.fixed_width_format import FixedWidthFormat  # noqa: E402
from examples.tsv_format import TsvFormat  # noqa: E402

# Each custom-format scenario names a format no Python worker has seen (fresh_name), so it
# fails as on a fresh session if the format does not reach the worker before its options
# are checked.

DAYS = ("2026-03-01", "2026-03-02", "2026-03-03")


@pytest.fixture(scope="module")
def bucket(s3_server):
    name = s3_server.create_bucket(f"fmt-{uuid.uuid4().hex[:8]}")
    yield name
    s3_server.drop_bucket(name)


def options(spark, server, fmt):
    return (spark.read.format("listing").option("format", fmt)
            .option("storage_options", json.dumps(server.storage_options)))


@pytest.mark.parametrize("fmt", ["csv.gz", "ndjson", "arrow", "parquet"])
def test_builtin_formats_through_spark(spark, s3_server, bucket, fmt):
    ds = datasets.daily(f"s3://{bucket}/{fmt.replace('.', '_')}", s3_server.storage_options,
                        days=5, format=fmt, put=datasets.fast_writer(s3_server))
    name = fmt.split(".")[0]
    df = options(spark, s3_server, name).load(ds.root)
    with s3_server.log.capture() as cap:
        rows = df.where("date = '2025-01-03' AND region = 'eu'").select("id", "amount").collect()
    want = [f for f in ds.files if str(f.partition_values["date"]) == "2025-01-03"
            and f.partition_values["region"] == "eu"]
    assert sorted(r.id for r in rows) == sorted(i for f in want
                                                for i in f.table.column("id").to_pylist())
    assert cap.count("LIST") == 1
    assert df.count() == ds.num_rows


def tsv_bytes(day: str, n: int) -> bytes:
    lines = ["id\tnote\tamount"] + [f"{i}\tday {day} row {i}\t{i * 1.5}" for i in range(n)]
    return ("\n".join(lines) + "\n").encode()


def fresh_name(prefix: str) -> str:
    """A format name no Python worker of the shared session has seen, so each test reads
    as on a fresh session (Spark reuses its workers: a name an earlier test registered in
    a worker would hide a format that does not reach the worker on its own)."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def test_registered_custom_format_by_name(spark, s3_server, bucket):
    name = fresh_name("tsv")
    formats.register(name, TsvFormat)  # the README's recipe: register, then name it
    s3_server.put_objects_fast(bucket, {
        f"{name}/day={d}/part-0.tsv.gz": gzip.compress(tsv_bytes(d, 4)) for d in DAYS})
    df = options(spark, s3_server, name).load(f"s3://{bucket}/{name}")
    with s3_server.log.capture() as cap:
        rows = df.where("day = '2026-03-02'").collect()
    assert sorted(r.note for r in rows) == [f"day 2026-03-02 row {i}" for i in range(4)]
    assert cap.count("LIST") == 1 and cap.count("GET") == 1


def fixed_width_bytes(day: str, n: int) -> bytes:
    lines = ["id  code amount"] + [f"{i:<4}{'abcd'[i % 4]:<5}{i * 2:>6}" for i in range(n)]
    return ("\n".join(lines) + "\n").encode()


def test_custom_format_instance_through_to_spark(spark, s3_server, bucket):
    name = fresh_name("fw")
    # a user's subclass, defined here: the workers get it (and its base) by value
    fmt_class = type(f"FixedWidth_{name}", (FixedWidthFormat,), {"name": name})
    s3_server.put_objects_fast(bucket, {
        f"{name}/day={d}/part-0.txt": fixed_width_bytes(d, 6) for d in DAYS})
    table = ListingTable.open(f"s3://{bucket}/{name}", format=fmt_class(),
                              storage_options=s3_server.storage_options)
    assert table.schema.names == ["id", "code", "amount", "day"]
    df = listing.to_spark(table, spark, columns=["id", "code", "day"], where="day >= '2026-03-02'")
    rows = df.collect()
    assert len(rows) == 12 and {str(r.day) for r in rows} == {"2026-03-02", "2026-03-03"}
    assert sorted({r.code for r in rows}) == ["a", "b", "c", "d"]


PLUGIN = """
from listing.formats.csv import CsvFormat


class PipeFormat(CsvFormat):
    name = "{name}"
    extensions = (".{name}",)
    option_defaults = {{**CsvFormat.option_defaults, "delimiter": "|"}}
"""


def plugin_zip(folder: Path, name: str) -> Path:
    """An installed package declaring format ``name`` as a ``listing.formats`` entry
    point, as a zip Spark puts on every Python worker's path (``addPyFile``)."""
    path = folder / f"{name}_plugin.zip"
    dist = f"{name}_plugin-0.1.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}_plugin/__init__.py", PLUGIN.format(name=name))
        zf.writestr(f"{dist}/METADATA",
                    f"Metadata-Version: 2.1\nName: {name}-plugin\nVersion: 0.1\n")
        zf.writestr(f"{dist}/entry_points.txt",
                    f"[{formats.ENTRY_POINT_GROUP}]\n{name} = {name}_plugin:PipeFormat\n")
    return path


def test_entry_point_format_by_name(spark, s3_server, bucket, tmp_path):
    name = fresh_name("psv")  # its own extension too: no other test's files match it
    spark.sparkContext.addPyFile(str(plugin_zip(tmp_path, name)))
    register(spark)  # a Python source carries the py-files of the moment it was registered
    assert name not in formats.registered()  # found as an entry point, not registered
    body = "id|note\n" + "".join(f"{i}|row {i}\n" for i in range(3))
    s3_server.put_objects_fast(bucket, {
        f"{name}/day={d}/part-0.{name}": body.encode() for d in DAYS})
    rows = (options(spark, s3_server, name).load(f"s3://{bucket}/{name}")
            .where("day = '2026-03-03'").collect())
    assert sorted((r.id, r.note) for r in rows) == [(i, f"row {i}") for i in range(3)]


def test_corrupt_file_is_named_or_counted_in_spark(spark, s3_server, bucket):
    good = datasets.encode(pa.table({"id": [1, 2]}), "parquet")
    s3_server.put_objects_fast(bucket, {"bad/k=1/a.parquet": good,
                                        "bad/k=2/b.parquet": b"PAR1 garbage"})
    reader = options(spark, s3_server, "parquet").schema("id long, k int")
    with pytest.raises(Exception, match="k=2/b.parquet"):
        reader.load(f"s3://{bucket}/bad").collect()
    rows = reader.option("ignoreCorruptFiles", "true").load(f"s3://{bucket}/bad").collect()
    assert sorted(r.id for r in rows) == [1, 2]


def test_user_format_subclassing_a_user_format_ships_both_by_value(tmp_path, monkeypatch):
    """A format class whose base is also from the user's project folder reaches a Python
    process that cannot import either (Spark's workers), not only its own module."""
    from pyspark import cloudpickle

    from listing.spark.source import ship_by_value

    tag = uuid.uuid4().hex[:8]
    (tmp_path / f"base_{tag}.py").write_text(
        "from listing.formats.csv import CsvFormat\n\n\n"
        "class Base(CsvFormat):\n    option_defaults = {**CsvFormat.option_defaults, "
        "'delimiter': ';'}\n")
    (tmp_path / f"child_{tag}.py").write_text(
        f"from base_{tag} import Base\n\n\nclass Child(Base):\n    name = 'child'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    child = __import__(f"child_{tag}").Child
    ship_by_value(child)
    payload = tmp_path / "child.pickle"
    payload.write_bytes(cloudpickle.dumps(child))
    code = ("import pickle, sys; c = pickle.loads(open(sys.argv[1], 'rb').read()); "
            "print(c.name, c().options['delimiter'])")
    proc = subprocess.run([sys.executable, "-c", code, str(payload)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, check=False)
    assert (proc.returncode, proc.stdout.strip()) == (0, "child ;"), proc.stderr
