"""An unknown option's error offers the closest valid name ("did you mean"), for source,
listing, format and storage options alike, and offers none when nothing is close."""

from __future__ import annotations

import pytest

from listing import ListingTable
from listing.errors import OptionError, StorageConfigError
from listing.options import did_you_mean, storage_options
from listing.spark.config import _check_format_options
from listing.testing import datasets


@pytest.mark.parametrize(("fmt", "typo", "meant"), [
    ("parquet", "partiton_cols", "partition_cols"),    # a source option
    ("parquet", "ignore_corupt_files", "ignore_corrupt_files"),  # a listing option
    ("csv", "delimeter", "delimiter"),                 # the format's own
    ("csv", "pathglobfiltr", "pathGlobFilter"),        # Spark's spelling, in Spark's case
])
def test_the_source_names_the_option_meant(fmt: str, typo: str, meant: str) -> None:
    with pytest.raises(OptionError) as err:
        _check_format_options(fmt, {typo: "x"})
    message = str(err.value)
    assert f"unknown option(s) {typo} " in message
    assert f"(did you mean {meant!r}?)" in message
    assert "Source options:" in message  # every valid name is still listed


def test_no_hint_when_nothing_is_close() -> None:
    with pytest.raises(OptionError) as err:
        _check_format_options("parquet", {"zzzzqqqq": "x"})
    assert "did you mean" not in str(err.value)  # the control: the hint is not a constant
    assert did_you_mean("Header", ["header", "quote"]) == " (did you mean 'header'?)"
    assert did_you_mean("zzzz", ["header", "quote"]) == ""


def test_a_format_and_the_python_api_name_the_option_meant(tmp_path) -> None:
    ds = datasets.daily(str(tmp_path / "t"), format="csv", days=1)
    with pytest.raises(OptionError, match=r"did you mean 'header'\?"):
        ListingTable.open(ds.root, format="csv", hedaer=True)
    assert ListingTable.open(ds.root, format="csv", header=True).schema  # the control


def test_storage_options_use_the_same_hint() -> None:
    with pytest.raises(StorageConfigError, match=r"did you mean 'endpoint_url'\?"):
        storage_options.check("s3", {"endpoint_ur": "http://127.0.0.1:1"})


@pytest.mark.parametrize(("typo", "meant"), [
    ("partiton_cols", "partition_cols"),   # a keyword of ListingTable.open
    ("fromat", "format"),
    ("ignore_corupt_files", "ignore_corrupt_files"),  # a listing option
    ("merge_schma", "merge_schema"),       # the format's own
])
def test_listing_table_open_names_the_option_meant(tmp_path, typo: str, meant: str) -> None:
    ds = datasets.daily(str(tmp_path / "t"), days=1)
    with pytest.raises(OptionError) as err:
        ListingTable.open(ds.root, **{typo: "x"})
    message = str(err.value)
    assert message.startswith(f"unknown option {typo!r} for ListingTable.open "
                              f"(did you mean {meant!r}?)")
    assert "listing options: batch_size" in message and "parquet options: merge_schema" in message
    assert ListingTable.open(ds.root, **{meant: ds.partition_cols} if meant == "partition_cols"
                             else {}).schema  # the control


def test_write_table_names_the_option_meant_before_any_request(tmp_path) -> None:
    import pyarrow as pa

    from listing.write.api import write_table

    data = pa.table({"id": [1], "day": ["a"]})
    target = tmp_path / "t"
    for typo, meant in (("partiton_by", "partition_by"), ("comit_protocol", "commit_protocol"),
                        ("delimeter", "delimiter")):
        with pytest.raises(OptionError, match=rf"^unknown option {typo!r} for write_table "
                           rf"\(did you mean {meant!r}\?\)"):
            write_table(str(target), data, format="csv", **{typo: "x"})
    assert not target.exists()  # refused before the table was looked at or written
    done = write_table(str(target), data, format="csv", partition_by=["day"],
                       commit_protocol="copy", delimiter=";")
    assert done.rows == 1 and done.partitions == ["day=a/"]  # the control


@pytest.mark.parametrize(("args", "hint"), [
    (["--partiton-cols", "day"], " (did you mean '--partition-cols'?)"),
    (["--partiton-cols=day"], " (did you mean '--partition-cols'?)"),
    (["--zzzzqqqq"], ""),  # the control: no hint when nothing is close
])
def test_the_cli_names_the_flag_meant(tmp_path, capsys, args: list[str], hint: str) -> None:
    from listing import cli

    with pytest.raises(SystemExit) as done:
        cli.main(["ls", str(tmp_path), *args])
    assert done.value.code == 2
    assert capsys.readouterr().err == (f"error: unrecognized arguments: {' '.join(args)}"
                                       f"{hint} (see: listing ls --help)\n")


def test_the_profile_option_is_refused_saying_what_to_do_instead() -> None:
    """``profile`` is withheld from s3 on purpose (docs/security.md): the refusal says why
    and names AWS_PROFILE; elsewhere it is an unknown name like any other."""
    with pytest.raises(StorageConfigError) as err:
        storage_options.check("s3", {"profile": "prod-admin"})
    assert "may not choose an AWS profile" in str(err.value) and "AWS_PROFILE" in str(err.value)
    assert "prod-admin" not in str(err.value)
    with pytest.raises(StorageConfigError) as err:  # the control: gcs has no such reason
        storage_options.check("gcs", {"profile": "prod-admin"})
    assert "AWS" not in str(err.value) and "valid options:" in str(err.value)
