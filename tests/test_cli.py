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


def test_ls_prints_matching_files_and_counts(table, capsys):
    ds, args = table
    assert main(["ls", *args, "--where", "date = '2025-01-03'"]) == 0
    out, err = capsys.readouterr()
    want = [f.path for f in ds.files if str(f.partition_values["date"]) == "2025-01-03"]
    assert sorted(line.split()[-1] for line in out.splitlines()) == sorted(want)
    assert "1 LIST requests" in err and "listed" in err  # summary and progress
    assert main(["ls", *args, "--partitions", "-q"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 40


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
