"""Options are data: no option string (API, CLI, Spark, SQL) imports, calls or unpickles code.

Each test plants a payload that would create a file if it ran, and checks both that the
request is refused with a clear error and that the file does not exist.
"""

from __future__ import annotations

import base64
import json
import os
import pickle

import pytest

from listing import ListingTable
from listing.cli import main
from listing.errors import OptionError
from listing.testing import datasets


class _Payload:
    """Unpickling this runs a shell command (what a crafted pickle option could do)."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


@pytest.fixture
def table_root(s3_server, s3_bucket):
    ds = datasets.daily(f"s3://{s3_bucket}/events", s3_server.storage_options, days=2,
                        put=datasets.fast_writer(s3_server))
    return ds


@pytest.mark.parametrize("fmt", ["os:system", "os.system", "subprocess:run",
                                 "listing.formats.parquet:ParquetFormat"])
def test_python_api_format_names_never_import(table_root, tmp_path, fmt):
    marker = tmp_path / "pwned"
    with pytest.raises(OptionError, match=f"unknown format {fmt!r}"):
        ListingTable.open(table_root.root, format=fmt, command=f"touch {marker}",
                          storage_options=table_root.storage_options)
    assert not marker.exists()


def test_cli_format_never_imports(table_root, tmp_path, capsys):
    marker = tmp_path / "pwned"
    opts = [f"--storage-option={k}={v}" for k, v in table_root.storage_options.items()
            if isinstance(v, str)]
    assert main(["schema", table_root.root, "--format", "os:system", *opts]) == 2
    assert "unknown format 'os:system'" in capsys.readouterr().err
    assert not marker.exists()


def _view(spark, name: str, source: str, options: dict[str, str]) -> None:
    text = ", ".join(f"{k} '{v}'" for k, v in options.items())
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} USING {source} OPTIONS ({text})")


def test_sql_format_option_never_runs_code(spark, table_root, tmp_path):
    marker = tmp_path / "pwned"
    storage = json.dumps(table_root.storage_options)
    with pytest.raises(Exception, match="unknown format 'os:system'"):
        _view(spark, "pwn_format", "listing", {
            "path": table_root.root, "format": "os:system", "command": f"touch {marker}",
            "storage_options": storage})
        spark.sql("SELECT count(*) FROM pwn_format").collect()
    assert not marker.exists()


@pytest.mark.parametrize("source", ["listing", "listing_table"])
@pytest.mark.parametrize("option", ["table_object", "table_spec"])
def test_sql_crafted_pickle_option_is_refused(spark, table_root, tmp_path, source, option):
    """The old to_spark option carried a pickle; a SQL user could forge one. Neither that
    name nor the new data-only ``table_spec`` unpickles anything."""
    from listing.spark.source import register_table_source

    register_table_source(spark)
    marker = tmp_path / "pwned"
    crafted = base64.b64encode(pickle.dumps(_Payload(f"touch {marker}"))).decode()
    with pytest.raises(Exception, match=f"{option}|table spec|unknown option"):
        _view(spark, "pwn_pickle", source, {
            "path": table_root.root, option: crafted,
            "storage_options": json.dumps(table_root.storage_options)})
        spark.sql("SELECT count(*) FROM pwn_pickle").collect()
    assert not marker.exists()


def test_table_spec_names_only_registered_formats(spark, table_root, tmp_path):
    """A hand-written spec is data: its format is a registry name like any option."""
    from listing.spark.dataframe import table_options
    from listing.spark.source import register_table_source

    table = ListingTable.open(table_root.root, storage_options=table_root.storage_options)
    options = table_options(table, [], None)
    spec = json.loads(options["table_spec"])
    spec["format"] = "os:system"
    spec["format_options"] = {"command": f"touch {tmp_path / 'pwned'}"}
    options["table_spec"] = json.dumps(spec)
    register_table_source(spark)
    with pytest.raises(Exception, match="unknown format 'os:system'"):
        spark.read.format("listing_table").options(**options).load().collect()
    assert not (tmp_path / "pwned").exists()
    # the untampered spec reads the table
    good = table_options(table, [], None)
    assert spark.read.format("listing_table").options(**good).load().count() == \
        table_root.num_rows


def test_table_spec_column_sizes_are_checked_numbers(table_root):
    """The sampled footer's column sizes travel in the spec as numbers; anything else in
    their place is refused, naming the option."""
    from listing.errors import OptionError
    from listing.spark.dataframe import TableSpec, table_options

    table = ListingTable.open(table_root.root, storage_options=table_root.storage_options)
    spec = json.loads(table_options(table, [], None)["table_spec"])
    assert TableSpec.parse(json.dumps(spec)).column_bytes == table.column_bytes
    assert table.column_bytes and set(table.column_bytes) <= set(table.file_schema.names)
    for bad in ("os:system", [1], {"id": "1"}, {"id": -1}, {"id": True}, {"id": 1.5}):
        with pytest.raises(OptionError, match="table_spec.*column_bytes"):
            TableSpec.parse(json.dumps({**spec, "column_bytes": bad}))


def test_secrets_by_name_pattern_stay_out_of_repr_explain_and_cli(table_root, capsys):
    # credentials only inside client_kwargs (moto accepts any), as botocore's names
    options = {"endpoint_url": table_root.storage_options["endpoint_url"],
               "client_kwargs": {"region_name": "us-east-1",
                                 "aws_access_key_id": "AKIA-SECRET-ID",
                                 "aws_secret_access_key": "SECRET-ACCESS",
                                 "aws_session_token": "SESSION-TOKEN"}}
    table = ListingTable.open(table_root.root, storage_options=options)
    text = repr(table) + table.scan().explain() + repr(table.scan().source)
    args = ["explain", table_root.root, "-q",
            "--storage-option", f"client_kwargs={json.dumps(options['client_kwargs'])}",
            "--storage-option", f"endpoint_url={options['endpoint_url']}"]
    assert main(args) == 0
    text += capsys.readouterr().out
    for secret in ("AKIA-SECRET-ID", "SECRET-ACCESS", "SESSION-TOKEN"):
        assert secret not in text
    assert "us-east-1" in text  # only secrets are hidden


def test_source_config_repr_hides_secrets():
    from listing.spark.config import SourceConfig

    config = SourceConfig.parse({"path": "s3://b/t/", "storage.key": "KEY-VALUE",
                                 "storage.secret": "SECRET-VALUE", "storage.token": "TOK"})
    text = repr(config)
    assert "KEY-VALUE" not in text and "SECRET-VALUE" not in text and "TOK'" not in text
    assert "s3://b/t/" in text


def test_credentials_in_a_url_are_refused_without_being_echoed():
    from listing.errors import ListingError

    with pytest.raises(ListingError) as err:
        ListingTable.open("s3://AKIAXXXX:SECRETYYYY@bucket/events/")
    assert "storage options" in str(err.value)
    assert "AKIAXXXX" not in str(err.value) and "SECRETYYYY" not in str(err.value)
