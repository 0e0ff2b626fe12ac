"""The ``listing`` command against the S3 server."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from listing.cli import main
from listing.testing import datasets


@pytest.fixture(scope="module")
def table(s3_server):
    bucket = s3_server.create_bucket(f"cli-{uuid.uuid4().hex[:8]}")
    ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options, days=20,
                        put=datasets.fast_writer(s3_server))
    args = [ds.root, "--storage-option", f"endpoint_url={s3_server.endpoint_url}",
            "--storage-option", "key=testing", "--storage-option", "secret=SECRET-VALUE"]
    yield ds, args
    s3_server.drop_bucket(bucket)


def test_schema(table, capsys):
    _, args = table
    assert main(["schema", *args]) == 0
    out = capsys.readouterr().out
    assert "date: date32[day]  (partition)" in out and "amount: double" in out


def test_ls_prints_matching_files_and_counts(table, capsys, s3_server):
    ds, args = table
    assert main(["ls", *args, "--where", "date = '2025-01-03'"]) == 0
    out, err = capsys.readouterr()
    want = [f.path for f in ds.files if str(f.partition_values["date"]) == "2025-01-03"]
    assert sorted(line.split()[-1] for line in out.splitlines()) == sorted(want)
    assert "1 LIST requests" in err and "listed" in err  # summary and progress
    assert main(["ls", *args, "--partitions", "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 40
    first = [f for f in ds.files if str(f.partition_values["date"]) == "2025-01-01"
             and f.partition_values["region"] == "eu"]
    client = s3_server.client()  # the sizes as the store reports them
    size = sum(client.head_object(Bucket=f.path.split("/")[2],
                                  Key=f.path.split("/", 3)[3])["ContentLength"] for f in first)
    assert f"date=2025-01-01/region=eu\t{len(first)} files\t{size:,} bytes" in lines


def test_explain_hides_secrets(table, capsys):
    _, args = table
    assert main(["explain", *args, "--where", "region = 'us' AND amount > 5", "-q"]) == 0
    out = capsys.readouterr().out
    assert "partition filter (exact): region = 'us'" in out and "SECRET-VALUE" not in out


def test_errors_are_reported_not_raised(table, capsys):
    _, args = table
    assert main(["ls", *args, "--where", "nope = 1"]) == 2
    assert "unknown column 'nope'" in capsys.readouterr().err


def test_help_explains_every_option():
    out = subprocess.run([sys.executable, "-m", "listing.cli", "ls", "--help"],
                         capture_output=True, text=True, check=True).stdout
    for option in ("--where", "--format", "--storage-option", "--partition-cols",
                   "--partitions", "--quiet"):
        assert option in out


# --- storage failures: one line, exit status 2, no traceback, no secret -------------------

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"


def _closed_port() -> int:
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.mark.parametrize(("url", "options", "message"), [
    ("{root}", ["endpoint_url=http://127.0.0.1:{port}", "max_retries=0"],
     r"error: listing s3://\S+/events/ failed \(max_retries=0\): EndpointConnectionError"),
    ("{root}", ["bogus=1"], r"error: cannot open s3://\S+: storage option 'bogus' is not "
                            r"accepted for s3://"),
    ("s3://Bad_Bucket!/x/", [], r"error: listing s3://Bad_Bucket!/x/ failed: .*Invalid bucket "
                                r"name"),
    ("nosuch://x/y", [], r"error: cannot open nosuch://x/y/: storage protocol 'nosuch' is not "
                         r"supported"),
    ("https://example.com/data/", [], r"error: table URL 'https://example.com/data/': https:// "
                                      r"cannot be listed"),
])
def test_storage_failures_are_one_line_errors(table, capsys, url, options, message):
    import re

    ds, args = table
    base = args[1:]  # the storage options of the fixture (endpoint, key, secret)
    extra = [a for o in options for a in ("--storage-option", o.format(port=_closed_port()))]
    code = main(["ls", url.format(root=ds.root), *base, "--storage-option", f"secret={SECRET}",
                 *extra])
    err = capsys.readouterr().err
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert re.fullmatch(message + ".*", lines[-1]), err
    assert "Traceback" not in err and SECRET not in err


def test_storage_failure_exit_status_from_the_shell(table):
    ds, args = table
    result = subprocess.run([sys.executable, "-m", "listing.cli", "schema", ds.root, *args[1:],
                             "--storage-option", f"endpoint_url=http://127.0.0.1:{_closed_port()}",
                             "--storage-option", "max_retries=0", "-q"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: listing s3://")
    assert "Traceback" not in result.stderr and "SECRET-VALUE" not in result.stderr


def test_version_and_demo_help(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("listing 0.")
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    assert "moto S3 server" in capsys.readouterr().out


def test_ls_and_explain_say_what_was_listed(table, capsys):
    _, args = table
    assert main(["ls", *args, "--where", "date = '2025-01-03'", "-q"]) == 0
    err = capsys.readouterr().err
    assert "partitions pruned" not in err  # never-listed partitions are not "pruned" ones
    assert "plan: list " in err and "date=2025-01-03/" in err


def test_plans_without_an_estimate_say_so():
    import math

    from listing.planner.nodes import Flat, describe

    assert describe(Flat("b/t/date=", 0, {}, math.inf)) == ["list 'b/t/date=' (size unknown)"]
    assert describe(Flat("b/t/", 0, {}, math.nan)) == ["list 'b/t/' (size unknown)"]
    assert describe(Flat("b/t/", 0, {}, 2)) == ["list 'b/t/' (est. 2 requests)"]


def test_watch_prints_new_files_and_resumes_from_its_offset_file(s3_server, s3_bucket,
                                                                  tmp_path, capsys):
    ds = datasets.daily(f"s3://{s3_bucket}/events", s3_server.storage_options, days=3,
                        put=datasets.fast_writer(s3_server))
    args = [ds.root, "--storage-option", f"endpoint_url={s3_server.endpoint_url}",
            "--storage-option", "key=testing", "--storage-option", "secret=testing",
            "--offset-file", str(tmp_path / "offset.json"), "--count", "1",
            "--starting", "earliest", "--reconcile-every", "0"]
    assert main(["watch", *args]) == 0
    out, err = capsys.readouterr()
    assert sorted(line.split()[-1] for line in out.splitlines()) == sorted(
        f.path for f in ds.files)
    assert f"trigger 1: {len(ds.files)} new files" in err

    key = "events/date=2025-01-04/region=us/part-0.parquet"
    s3_server.put_objects_fast(s3_bucket, {key: datasets.encode(ds.files[0].table, "parquet")})
    assert main(["watch", *args]) == 0  # resumes: only the new file, for one LIST
    out, err = capsys.readouterr()
    assert [line.split()[-1] for line in out.splitlines()] == [f"s3://{s3_bucket}/{key}"]
    assert "1 new files (0 late), 1 LIST requests" in err


@pytest.mark.parametrize("days", [1, 30, 450])
def test_demo_query_has_rows_for_any_number_of_days(s3_server, days):
    """`listing demo --days 30` printed 0 rows: its filter named March 2026 only."""
    from listing import ListingTable
    from listing.cli import DEMO_WHERE, demo_where

    bucket = s3_server.create_bucket(f"demo-{uuid.uuid4().hex[:8]}")
    ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options, days=days,
                        files_per_partition=2, rows_per_file=20,
                        put=datasets.fast_writer(s3_server))
    where = demo_where(days)
    assert (where == DEMO_WHERE) == (days == 450)
    table = ListingTable.open(ds.root, storage_options=s3_server.storage_options)
    assert table.to_arrow(where=where).num_rows > 0
    s3_server.drop_bucket(bucket)


@pytest.mark.parametrize(("argv", "fault"), [
    (["ls", "s3://lake/x", "--bogus"], "unrecognized arguments: --bogus"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["ls"], "the following arguments are required: url"),
    (["explain", "s3://lake/x", "--limit", "many"], "argument --limit: invalid int value"),
])
def test_usage_errors_are_one_line(argv, fault, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and fault in err, err
    assert "--help" in err  # where to look next


def test_malformed_storage_option_is_an_error_line(capsys):
    assert main(["ls", "s3://lake/x", "--storage-option", "endpoint_url"]) == 2
    err = capsys.readouterr().err
    assert err == "error: --storage-option wants KEY=VALUE, got 'endpoint_url'\n"


def test_unreadable_offset_file_is_an_error_line(tmp_path, capsys):
    datasets.daily(str(tmp_path / "t"), days=1)
    assert main(["watch", str(tmp_path / "t"), "--count", "1", "--offset-file",
                 str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"error: --offset-file {tmp_path}: ")


def test_output_piped_into_head_ends_quietly(tmp_path):
    """`listing ls … | head -1`: the reader goes away while ls still prints."""
    ds = datasets.daily(str(tmp_path / "t"), days=600)  # ~90 kB of output: past a pipe's buffer
    proc = subprocess.Popen([sys.executable, "-m", "listing.cli", "ls", ds.root, "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().strip().endswith(b".parquet")
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
