"""Azure's own URL form, ``abfs[s]://container@account.dfs.core.windows.net/path``: the
container and account are read from it (no credential); a real ``user:password@`` is still
refused without being echoed. adlfs is not a dependency and no Azure emulator runs here, so
the store is a recording stand-in registered for ``abfs``: it shows what adlfs would be
built with and asked for."""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

import fsspec
import pytest

from listing import ListingTable
from listing.errors import ListingError, StorageConfigError, TableNotFoundError
from listing.redact import redact_url
from listing.url import TableUrl

URL = "abfss://events@lakeacct.dfs.core.windows.net/tables/sales"


@pytest.mark.parametrize(("url", "root", "options"), [
    (URL, "events/tables/sales", {"account_name": "lakeacct"}),
    ("abfs://events@lakeacct.blob.core.windows.net/t", "events/t",
     {"account_name": "lakeacct"}),
    ("abfss://events@lakeacct.dfs.core.chinacloudapi.cn/t", "events/t",
     {"account_name": "lakeacct", "account_host": "lakeacct.blob.core.chinacloudapi.cn"}),
    ("az://events/t", "events/t", {}),  # adlfs's own form: the account as an option
    ("abfs://events/t", "events/t", {}),
])
def test_azure_urls_parse_to_container_paths(url: str, root: str, options: dict) -> None:
    parsed = TableUrl.parse(url)
    assert parsed.root == root
    assert parsed.protocol in ("abfs", "az")
    assert parsed.storage_options(None) == options


def test_abfss_globs_keep_their_pattern() -> None:
    parsed = TableUrl.parse(URL + "/date=2026-03-*")
    assert (parsed.root, parsed.pattern) == ("events/tables/sales", "date=2026-03-*")
    assert parsed.storage_options({}) == {"account_name": "lakeacct"}


def test_an_account_given_twice_must_agree() -> None:
    parsed = TableUrl.parse(URL)
    assert parsed.storage_options({"account_name": "lakeacct", "anon": True}) == {
        "account_name": "lakeacct", "anon": True}
    with pytest.raises(ListingError, match="names account_name 'lakeacct' but storage "
                                           "option account_name is 'other'"):
        parsed.storage_options({"account_name": "other"})


@pytest.mark.parametrize("url", [
    "abfss://user:S3CRETPASS@lakeacct.dfs.core.windows.net/t",
    "abfss://TOKENVALUE99@example.com/t",  # not an Azure host: a token, not a container
    "s3://AKIAKEYID:S3CRETPASS@bucket/t",
    "gs://TOKENVALUE99@bucket/t",
])
def test_credentials_in_urls_are_still_refused_and_never_echoed(url: str) -> None:
    with pytest.raises(ListingError, match="carries credentials") as err:
        TableUrl.parse(url)
    text = str(err.value)
    assert "S3CRETPASS" not in text and "TOKENVALUE99" not in text and "AKIAKEYID" not in text


def test_redaction_keeps_the_container_and_hides_userinfo() -> None:
    assert redact_url(URL) == URL
    assert redact_url("abfss://u:pw@lakeacct.dfs.core.windows.net/t") == \
        "abfss://***@lakeacct.dfs.core.windows.net/t"
    assert redact_url("https://tok@host/x") == "https://***@host/x"


class RecordingAzure(fsspec.AbstractFileSystem):
    """Stands in for adlfs: records the options it was built with and the paths asked."""

    protocol = ("abfs", "az")
    made: ClassVar[list[dict[str, Any]]] = []
    asked: ClassVar[list[str]] = []

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        RecordingAzure.made.append(kwargs)

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list:
        RecordingAzure.asked.append(path)
        return []

    def find(self, path: str, *args: Any, **kwargs: Any) -> Any:
        RecordingAzure.asked.append(path)
        return {} if kwargs.get("detail") else []


@pytest.fixture
def recording_azure(monkeypatch: pytest.MonkeyPatch) -> type[RecordingAzure]:
    registry = importlib.import_module("fsspec.registry")  # the module, not fsspec.registry
    monkeypatch.setitem(registry._registry, "abfs", RecordingAzure)
    RecordingAzure.made.clear()
    RecordingAzure.asked.clear()
    return RecordingAzure


def test_a_table_at_an_abfss_url_builds_its_store_for_the_account(
        recording_azure: type[RecordingAzure]) -> None:
    with pytest.raises(TableNotFoundError, match="abfs://events/tables/sales/") as err:
        ListingTable.open(URL, storage_options={"account_key": "ACCOUNTKEY123"}).to_arrow()
    assert "ACCOUNTKEY123" not in str(err.value)
    assert any(made.get("account_name") == "lakeacct"
               and made.get("account_key") == "ACCOUNTKEY123" for made in recording_azure.made)
    assert recording_azure.asked
    # the table's prefix in the container, then (on this error only) the container's root,
    # to say whether it is empty
    assert recording_azure.asked[0].lstrip("/").startswith("events/tables/sales")
    assert [p.strip("/") for p in recording_azure.asked[1:]] == ["events"]
    assert str(err.value).endswith(": container 'events' is empty")


def test_without_adlfs_the_error_names_the_package() -> None:
    try:
        import adlfs  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("adlfs is installed: the missing-package error cannot show")
    with pytest.raises(StorageConfigError, match="adlfs") as err:
        ListingTable.open(URL, storage_options={"account_key": "ACCOUNTKEY123"})
    assert "ACCOUNTKEY123" not in str(err.value)
