"""Every way storage can fail is one ListingError naming the URL or file, the operation and
the cause, raised from ``ListingTable.open``, ``scan`` or ``to_arrow``; never a client's
raw exception, never a secret. Retry options map onto botocore and s3fs."""

from __future__ import annotations

import socket

import pyarrow as pa
import pytest

from listing import ListingTable
from listing.errors import ListingError, OptionError, StorageConfigError, StorageError
from listing.storage import StorageSpec
from listing.testing import datasets
from listing.testing.faults import FaultProxy

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
KEY_ID = "AKIAIOSFODNN7EXAMPLE"
SCHEMA = pa.schema([("id", pa.int64())])


def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture
def small(s3_server, s3_bucket):
    return datasets.daily(f"s3://{s3_bucket}/events", s3_server.storage_options, days=2,
                          put=datasets.fast_writer(s3_server))


def unreachable(**extra):
    return {"endpoint_url": f"http://127.0.0.1:{closed_port()}", "key": KEY_ID, "secret": SECRET,
            "client_kwargs": {"region_name": "us-east-1"}, "max_retries": 1,
            "retry_max_backoff": 0.01, **extra}


def assert_clean(err: BaseException) -> None:
    text = str(err)
    assert "\n" not in text
    assert SECRET not in text and KEY_ID not in text and "pa55word" not in text


# --- open / scan / to_arrow -------------------------------------------------------------

def test_unreachable_endpoint_on_open(small):
    with pytest.raises(StorageError, match=r"listing s3://[^ ]+/events/ failed "
                                           r"\(max_retries=1\): EndpointConnectionError") as err:
        ListingTable.open(small.root, storage_options=unreachable())
    assert_clean(err.value)


def test_unreachable_endpoint_on_scan(small):
    table = ListingTable.open(small.root, storage_options=unreachable(), schema=SCHEMA,
                              partition_cols=[("date", "date"), ("region", "string")])
    with pytest.raises(StorageError, match=r"listing s3://[^ ]+/events/ failed") as err:
        table.scan()
    assert_clean(err.value)


def test_unreachable_endpoint_on_to_arrow(s3_server, small):
    with FaultProxy(s3_server.endpoint_url) as proxy:
        options = {**proxy.storage_options, "max_retries": 1, "retry_max_backoff": 0.01}
        plan = ListingTable.open(small.root, storage_options=options).scan()
    # the proxy is gone: every GET is refused
    with pytest.raises(StorageError, match=rf"reading {small.root}/[^ ]+ failed") as err:
        plan.to_arrow()
    assert "EndpointConnectionError" in str(err.value)


def test_credentials_in_the_endpoint_url_are_never_shown(small):
    options = unreachable(endpoint_url=f"http://admin:pa55word@127.0.0.1:{closed_port()}")
    with pytest.raises(StorageError, match=r"listing s3://[^ ]+/events/ failed") as err:
        ListingTable.open(small.root, storage_options=options)
    assert_clean(err.value)


@pytest.mark.parametrize(("options", "message"), [
    ({"bogus": 1}, r"storage option 'bogus' is not accepted for s3://; valid options: anon, "),
    ({"endpoint_ur": "http://x"}, r"'endpoint_ur' is not accepted for s3:// \(did you mean "
                                  r"'endpoint_url'\?\)"),
    ({"client_kwargs": {"region": "x"}}, r"'client_kwargs.region' is not accepted for s3:// "
                                         r"\(did you mean 'region_name'\?\); valid keys of "
                                         r"client_kwargs: "),
    ({"config_kwargs": {"retry": 1}}, r"'config_kwargs.retry' is not accepted"),
    ({"config_kwargs": {"retries": {"mode": "sometimes"}}},
     r"config_kwargs.retries.mode='sometimes' must be one of legacy, standard, adaptive"),
    ({"max_retries": "many"}, "max_retries='many' must be an integer"),
    ({"max_retries": -1}, "max_retries=-1 must be at least 0"),
    ({"retry_mode": "legacy"}, "retry_mode='legacy' must be one of standard, adaptive"),
    ({"retry_max_backoff": "soon"}, "retry_max_backoff='soon' must be a duration"),
    ({"on_file_change": "ignore"}, "on_file_change='ignore' must be one of error, read"),
    ({"max_retries": 2, "config_kwargs": {"retries": {"mode": "standard"}}}, "not both"),
])
def test_bad_storage_options_are_named_before_any_request(s3_server, options, message):
    base = {**s3_server.storage_options, "secret": SECRET}
    with pytest.raises(StorageConfigError, match=message) as err:
        ListingTable.open("s3://any-bucket/t/", storage_options={**base, **options})
    assert str(err.value).startswith("cannot open s3://any-bucket/t/: ")
    assert isinstance(err.value, OptionError)
    assert_clean(err.value)


def test_unknown_protocol():
    with pytest.raises(StorageConfigError, match=r"cannot open nosuch://x/y/: storage protocol "
                                                 r"'nosuch' is not supported; supported: abfs, "):
        ListingTable.open("nosuch://x/y")


def test_bad_bucket_name(s3_server):
    with pytest.raises(StorageConfigError, match=r"listing s3://Bad_Bucket!/x/ failed: .*"
                                                 r"Invalid bucket name \"Bad_Bucket!\"") as err:
        ListingTable.open("s3://Bad_Bucket!/x/", storage_options=s3_server.storage_options)
    assert_clean(err.value)


# --- retry options ----------------------------------------------------------------------

def test_retry_options_map_to_botocore_and_switch_off_s3fs_retries(s3_server):
    base = s3_server.storage_options
    default = StorageSpec("s3", base).filesystem()
    assert default.config_kwargs["retries"] == {"mode": "standard", "total_max_attempts": 5}
    assert default.retries == 1 and type(default).retries == 5  # the instance's, not the class
    tuned = StorageSpec("s3", {**base, "max_retries": "2", "retry_mode": "adaptive",
                               "retry_max_backoff": "250ms"}).filesystem()
    assert tuned is not default
    assert tuned.config_kwargs["retries"] == {"mode": "adaptive", "total_max_attempts": 3}
    assert tuned._listing_settings.retry_max_backoff == 0.25
    assert StorageSpec("s3", {**base, "max_retries": 2, "retry_mode": "adaptive",
                              "retry_max_backoff": 0.25}).filesystem() is not default
    # botocore's own retries config is honoured, and our loops follow it
    own = StorageSpec("s3", {**base, "config_kwargs": {"retries": {"total_max_attempts": 7,
                                                                   "mode": "standard"}}})
    assert own.settings.max_retries == 6
    assert own.filesystem().config_kwargs["retries"]["total_max_attempts"] == 7


def test_retry_options_are_ignored_for_local_files(tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [1]}), tmp_path / "a.parquet")
    table = ListingTable.open(str(tmp_path), storage_options={"max_retries": 0,
                                                              "on_file_change": "read"})
    assert table.to_arrow().num_rows == 1


def test_every_storage_error_is_a_listing_error():
    assert issubclass(StorageError, ListingError) and issubclass(StorageConfigError, ListingError)
    assert not issubclass(StorageConfigError, StorageError)  # retrying does not fix it
