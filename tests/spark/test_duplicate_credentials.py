"""Two spellings of one storage setting (``key`` with ``client_kwargs.aws_access_key_id``, ...)
are refused by name, never quoting a value: from Python, the CLI and Spark options."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from listing import ListingTable
from listing.cli import main
from listing.errors import StorageConfigError
from listing.options import storage_options
from listing.write import write_table

PAIRS = storage_options.SAME_SETTING["s3"]
VALUE_A, VALUE_B = "DUPVALUEAAAA1234", "DUPVALUEBBBB5678"


def _value(name: str, value: str) -> object:
    option = dict(storage_options.leaves("s3"))[name]
    return {"bool": True, "url": f"http://{value.lower()}.example:1"}.get(option.kind, value)


def _given(*names_values: tuple[str, str]) -> dict:
    """Options giving each dotted name its value."""
    out: dict = {}
    for name, value in names_values:
        *parents, leaf = name.split(".")
        where = out
        for p in parents:
            where = where.setdefault(p, {})
        where[leaf] = _value(name, value)
    return out


def test_every_pair_names_allowlisted_options():
    names = {n for n, _ in storage_options.leaves("s3")}
    assert PAIRS and all(a in names and b in names for a, b in PAIRS)


@pytest.mark.parametrize(("top", "nested"), PAIRS)
def test_python_refuses_both_spellings_naming_them_without_values(top, nested):
    with pytest.raises(StorageConfigError) as err:
        storage_options.check("s3", _given((top, VALUE_A), (nested, VALUE_B)))
    text = str(err.value)
    assert top in text and nested in text
    assert VALUE_A not in text and VALUE_B not in text and VALUE_A.lower() not in text
    for alone in (top, nested):  # positive control: either spelling alone is accepted
        assert storage_options.check("s3", _given((alone, VALUE_A)))


def test_open_and_write_refuse_before_any_request(tmp_path):
    options = {"key": VALUE_A, "client_kwargs": {"aws_access_key_id": VALUE_B}}
    with pytest.raises(StorageConfigError, match="key and client_kwargs.aws_access_key_id"):
        ListingTable.open("s3://bucket/t", storage_options=options)
    with pytest.raises(StorageConfigError, match="token and client_kwargs.aws_session_token"):
        write_table("s3://bucket/t", pa.table({"a": [1]}),
                    storage_options={"token": VALUE_A,
                                     "client_kwargs": {"aws_session_token": VALUE_B}})


def test_cli_one_error_line_exit_2(capsys):
    code = main(["ls", "s3://bucket/t", "--storage-option", f"key={VALUE_A}",
                 "--storage-option",
                 "client_kwargs=" + json.dumps({"aws_access_key_id": VALUE_B})])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "key and client_kwargs.aws_access_key_id" in err
    assert VALUE_A not in err and VALUE_B not in err


def test_spark_options_refused_naming_both(spark, s3_server, s3_bucket):
    url = f"s3://{s3_bucket}/t"
    write_table(url, pa.table({"id": [1, 2]}), storage_options=s3_server.storage_options)
    reader = (spark.read.format("listing").option("storage.endpoint_url", s3_server.endpoint_url)
              .option("storage.client_kwargs", json.dumps({"region_name": "us-east-1"})))
    assert reader.option("storage.key", "any").option("storage.secret", "any").load(
        url).count() == 2  # positive control: one spelling each reads
    bad = reader.option("storage.secret", VALUE_A).option(
        "storage.client_kwargs", json.dumps({"region_name": "us-east-1",
                                             "aws_secret_access_key": VALUE_B}))
    with pytest.raises(Exception, match="secret and client_kwargs.aws_secret_access_key") as err:
        bad.option("storage.key", "any").load(url).count()
    assert VALUE_A not in str(err.value) and VALUE_B not in str(err.value)
