"""Every way storage can fail is one ListingError naming the URL or file, the operation and
the cause, raised from ``ListingTable.open``, ``scan`` or ``to_arrow``; never a client's
raw exception, never a secret. Retry options map onto botocore and s3fs."""

from __future__ import annotations

import re
import socket
import uuid

import pyarrow as pa
import pytest

from listing import ListingTable
from listing.errors import (
    ListingError,
    OptionError,
    StorageConfigError,
    StorageError,
    TableNotFoundError,
)
from listing.storage import StorageSettings, StorageSpec
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
    """They are checked and read as our settings, like for any store, but never handed to
    the local filesystem (which would take any keyword silently)."""
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [1]}), tmp_path / "a.parquet")
    given = {"max_retries": 0, "retry_mode": "adaptive", "retry_max_backoff": "2s",
             "on_file_change": "read"}
    table = ListingTable.open(str(tmp_path), storage_options=given)
    assert table.to_arrow().num_rows == 1
    assert table.storage.settings == StorageSettings(max_retries=0, retry_mode="adaptive",
                                                     retry_max_backoff=2.0,
                                                     on_file_change="read")
    fs = table.storage.filesystem()
    assert fs.protocol[0] == "file" and fs.storage_options == {}
    assert table.storage.resolve()[1] == {}
    with pytest.raises(StorageConfigError, match="max_retries=-1 must be at least 0"):
        ListingTable.open(str(tmp_path), storage_options={"max_retries": -1})


@pytest.fixture
def denied_reader(s3_server):
    """Storage options of a real IAM user of moto's with no policy, and a context in which
    moto checks every request's signature and permissions (off otherwise)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.iam.models import iam_backends

    iam = iam_backends[DEFAULT_ACCOUNT_ID]["global"]
    name = f"reader-{uuid.uuid4().hex[:8]}"
    iam.create_user("us-east-1", name)
    key = iam.create_access_key(name)
    options = {**s3_server.storage_options, "key": key.access_key_id,
               "secret": key.secret_access_key}
    yield options, ActionAuthenticatorMixin.set_initial_no_auth_action_count(0)
    iam.delete_access_key(key.access_key_id, name)
    iam.delete_user(name)


def test_every_storage_error_is_a_listing_error(s3_server, small, denied_reader):
    """Real failures of the store, each raised as our error naming the URL or file, the
    operation and the store's own cause; never the client's exception."""
    options, checking = denied_reader
    plan = ListingTable.open(small.root, storage_options=options).scan()  # not checked yet
    errors: dict[str, BaseException] = {}

    def catch(case, call):
        with pytest.raises(ListingError) as err:
            call()
        errors[case] = err.value

    missing = f"s3://missing-{uuid.uuid4().hex[:8]}/t"
    catch("missing bucket",
          lambda: ListingTable.open(missing, storage_options=s3_server.storage_options))

    @checking
    def denied() -> None:
        catch("list denied", lambda: ListingTable.open(small.root, storage_options=options))
        catch("unknown key", lambda: ListingTable.open(
            small.root, storage_options={**options, "key": KEY_ID, "secret": SECRET}))
        catch("read denied", plan.to_arrow)
    denied()
    with FaultProxy(s3_server.endpoint_url) as proxy:
        proxy.add_rule("LIST", "500")
        catch("fault", lambda: ListingTable.open(small.root, storage_options={
            **proxy.storage_options, "max_retries": 1, "retry_max_backoff": 0.01}))
    assert ListingTable.open(small.root, storage_options=options).to_arrow().num_rows > 0

    root = small.root + "/"
    expected = {
        "missing bucket": (TableNotFoundError, rf"bucket 'missing-\w+' does not exist "
                           rf"\(listing {missing}/\): NoSuchBucket \(HTTP 404\)"),
        "list denied": (StorageError, rf"listing {root} failed after 1 attempt "
                        r"\(max_retries=4\): AccessDenied \(HTTP 403\): Access Denied"),
        "unknown key": (StorageError, rf"listing {root} failed after 1 attempt "
                        r"\(max_retries=4\): InvalidAccessKeyId \(HTTP 403\)"),
        "read denied": (StorageError, r"reading s3://\S+/events/date=\S+\.parquet failed "
                        r"after 1 attempt \(max_retries=4\): AccessDenied \(HTTP 403\)"),
        "fault": (StorageError, rf"listing {root} failed after 2 attempts "
                  r"\(max_retries=1\): InternalError \(HTTP 500\)"),
    }
    for case, (kind, message) in expected.items():
        err = errors[case]
        assert type(err) is kind and type(err).__module__ == "listing.errors", case
        assert re.match(message, str(err)), (case, str(err))
        assert_clean(err)
    assert any(f.path in str(errors["read denied"]) for f in plan.files)  # the file it read
    assert options["secret"] not in "".join(map(str, errors.values()))
    assert not issubclass(StorageConfigError, StorageError)  # retrying does not fix it
