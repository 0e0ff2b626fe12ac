"""``AWS_PROFILE`` (the environment's choice, trusted) picks the credentials of a profile in
the shared credentials file, as botocore does, when the storage options give none; the
storage option ``profile`` (an option string's choice, not trusted) is refused, before
any request, saying what to do instead (docs/security.md, docs/troubleshooting.md)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from listing import ListingTable
from listing.errors import StorageConfigError
from listing.testing import datasets

#: what botocore would otherwise take from this process's environment
_CREDENTIAL_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                    "AWS_SECURITY_TOKEN", "AWS_DEFAULT_PROFILE", "AWS_PROFILE",
                    "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")


@pytest.fixture
def profile_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A credentials file and a config file holding the profile ``moto`` (moto's dummy
    keys), and an environment with no other credentials (nor the instance's)."""
    credentials = tmp_path / "credentials"
    credentials.write_text("[moto]\naws_access_key_id = testing\n"
                           "aws_secret_access_key = testing\n")
    config = tmp_path / "config"
    config.write_text("[profile moto]\nregion = us-east-1\n")
    for name in _CREDENTIAL_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_aws_profile_chooses_the_credentials(s3_server, s3_bucket, profile_files,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    s3_server.put_objects_fast(s3_bucket, {"t/day=a/part-0.parquet":
                                           datasets.encode(pa.table({"id": [1]}), "parquet")})
    url = f"s3://{s3_bucket}/t/"
    # no key, no secret: the credentials come from the profile (a backoff of its own keeps
    # this test's filesystem out of the per-process cache of the others')
    options = {"endpoint_url": s3_server.endpoint_url, "retry_max_backoff": "13s"}
    monkeypatch.setenv("AWS_PROFILE", "moto")
    table = ListingTable.open(url, storage_options=options)
    assert table.scan().to_arrow().column("id").to_pylist() == [1]
    # the control: a profile the files do not hold fails, so the one above was used
    monkeypatch.setenv("AWS_PROFILE", "not-there")
    with pytest.raises(StorageConfigError, match=r"profile \(not-there\) could not be found"):
        ListingTable.open(url, storage_options={**options, "retry_max_backoff": "14s"})


def test_the_profile_storage_option_is_refused_before_any_request(s3_server, s3_bucket
                                                                   ) -> None:
    options = {**s3_server.storage_options, "profile": "admin-9f2c"}
    with s3_server.log.capture() as cap, pytest.raises(StorageConfigError) as err:
        ListingTable.open(f"s3://{s3_bucket}/t/", storage_options=options)
    message = str(err.value)
    assert "storage option 'profile' is not accepted for s3://: an option string may not " \
           "choose an AWS profile" in message
    assert "set AWS_PROFILE" in message and "S3FileSystem(profile=...)" in message
    assert "admin-9f2c" not in message
    assert cap.entries() == []
