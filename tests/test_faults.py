"""The toolkit against a misbehaving store: the moto server behind a fault-injecting proxy.

A transient storage failure is never a "corrupt file" to skip: after the client's retries
it fails the read with an error naming the file; under a rate of transient faults that
the retries absorb, results are exact.
"""

from __future__ import annotations

import pytest

from listing import ListingTable
from listing.errors import StorageError
from listing.testing import datasets
from listing.testing.faults import FaultProxy

# botocore's retries kept short so a test never waits on its backoff for long
FEW_RETRIES = {"config_kwargs": {"retries": {"total_max_attempts": 2, "mode": "standard"}}}


@pytest.fixture
def proxy(s3_server):
    with FaultProxy(s3_server.endpoint_url) as p:
        yield p


@pytest.fixture
def small(s3_server, s3_bucket):
    return datasets.daily(f"s3://{s3_bucket}/events", s3_server.storage_options, days=4,
                          put=datasets.fast_writer(s3_server))


@pytest.mark.parametrize("fault", ["500", "reset"])
def test_transient_failure_is_not_skipped_as_corrupt(proxy, small, fault):
    victim = small.files[1].path.split("/", 3)[3]
    table = ListingTable.open(small.root, storage_options={**proxy.storage_options,
                                                           **FEW_RETRIES},
                              ignore_corrupt_files=True, ignore_missing_files=True)
    plan = table.scan()
    proxy.add_rule("GET", fault, path_contains=victim)
    with pytest.raises(StorageError, match=victim.replace("=", ".")):
        plan.to_arrow()
    assert proxy.stats.faults(op="GET", fault=fault) >= 1
    assert plan.metrics.get("files_skipped_corrupt", 0) == 0
    proxy.clear_rules()
    assert plan.to_arrow().num_rows == small.num_rows  # the same plan reads once it recovers


def test_retries_absorb_a_rate_of_503s(proxy, small):
    table = ListingTable.open(small.root, storage_options=proxy.storage_options)
    plan = table.scan(where="date >= '2025-01-02'")
    want = sum(f.table.num_rows for f in small.files
               if str(f.partition_values["date"]) >= "2025-01-02")
    proxy.add_rule("GET", "503", rate=0.3, seed=3)
    assert plan.to_arrow().num_rows == want
    assert proxy.stats.faults(op="GET", fault="503") >= 1
