"""Storage secrets are masked in every Spark text that carries a listing table's options:
plans of CREATE TABLE / TEMPORARY VIEW / VIEW / CACHE TABLE / INSERT, EXPLAIN EXTENDED, a read's
and a write's plans, DESCRIBE TABLE EXTENDED, SHOW CREATE TABLE, the SQL tab's status store
(plan descriptions and plan graphs) and the event log. A session of its own, with the event
log on (tests/jobs/secrets_job.py), runs every command, once per catalog (in memory, Hive); each
text is checked for every secret value and for a non-secret value that shows the options
reached it, and each command's query proves it ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from listing.options import storage_options
from listing.spark import redaction
from listing.write import write_table

JOB = Path(__file__).resolve().parents[1] / "jobs" / "secrets_job.py"
ROWS = 3


def _secret(name: str) -> str:
    return f"{name.upper()}{uuid.uuid4().hex[:12].upper()}"


SECRETS = {name: _secret(name) for name in (
    "key", "secret", "token", "sse_c", "json_key", "json_secret", "json_token",
    "account_key", "sas_token", "client_secret", "connection")}


@pytest.fixture(scope="module", params=["in-memory", "hive"])
def job(s3_server, tmp_path_factory, request):
    """The texts and query results of tests/jobs/secrets_job.py, run once per catalog: Spark's
    default (in memory) and a Hive metastore."""
    bucket = f"secrets-{uuid.uuid4().hex[:12]}"
    s3_server.create_bucket(bucket)
    root = f"s3://{bucket}/t"
    write_table(root, pa.table({"id": list(range(ROWS)), "p": ["a", "b", "c"]}),
                partition_by=["p"], storage_options=s3_server.storage_options)
    work = tmp_path_factory.mktemp("secrets")
    local = work / "local" / "p=a"
    local.mkdir(parents=True)
    pq.write_table(pa.table({"id": [1, 2]}), local / "part-0.parquet")
    out = work / "texts.json"
    run = subprocess.run(
        [sys.executable, str(JOB), str(out), str(work), request.param, s3_server.endpoint_url,
         root, str(work / "local"), json.dumps(SECRETS)],
        capture_output=True, text=True, timeout=600, cwd=work, env=dict(os.environ))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-6000:]
    data = json.loads(out.read_text())
    yield {"root": root, "endpoint": s3_server.endpoint_url, **data}
    s3_server.drop_bucket(bucket)


def _leaked(text: str) -> list[str]:
    return [name for name, value in SECRETS.items() if value in text]


#: each text: a non-secret value of the same command that must show in it (the options
#: reached the text), and the secrets it carried (each masked)
CARRIED = {
    "explain_create_table": ['"region_name": "us-east-1"', "parquet"],
    "explain_create_json": ["storage_options"],
    "explain_create_azure": ["visibleaccount"],
    "explain_temp_view": ['"region_name": "us-east-1"', "parquet"],
    "explain_insert": ["partition_by=p"],
    "explain_cache": ["listing"],
    "read_explain": ["{root}"],
    "status_store_plans": ['"region_name": "us-east-1"', "visibleaccount", "partition_by=p"],
    "status_store_graphs": ['\\"region_name\\": \\"us-east-1\\"', "engine -> python"],
    "event_log": ["region_name", "visibleaccount", "partition_by=p", "engine -> python"],
}


@pytest.mark.parametrize("label", sorted(CARRIED))
def test_text_masks_every_secret_it_carries(job, label):
    text = job["texts"][label]
    for shown in CARRIED[label]:
        assert shown.format(root=job["root"]) in text, (label, shown)  # positive control
    assert _leaked(text) == [], (label, _leaked(text))


@pytest.mark.parametrize("label", ["create_table", "create_table_json", "temp_view", "view",
                                   "cache_table", "create_local"])
def test_each_command_ran_with_its_options(job, label):
    """The commands whose texts are checked ran: their tables read every row (the S3 tables
    only through the endpoint the options name)."""
    assert job["counts"][label] == (2 if label == "create_local" else ROWS)


def test_insert_and_write_ran_with_their_options(job):
    assert job["counts"]["insert"] == ROWS + 1  # INSERT INTO t WITH (storage options)
    assert job["counts"]["read_explain"] == ROWS + 1
    assert job["counts"]["write"] == ROWS + 1  # df.write with storage options, read back


def test_describe_and_show_create_table_hold_no_secret(job):
    describe, show = job["texts"]["describe"], job["texts"]["show_create"]
    assert "CREATE TABLE" in show and "id BIGINT" in show  # positive control: the table's
    assert "# Detailed Table Information" in describe  # ...own texts
    assert _leaked(describe) == [] and _leaked(show) == []


def test_every_secret_reached_some_command(job):
    """Each secret value was given to a command that ran or was explained: the masked marker
    stands where each name's value would be, in the status store's plans."""
    plans = job["texts"]["status_store_plans"]
    for name in ("storage.key", "storage.secret", "storage.token", "storage.account_key",
                 "storage.sas_token", "storage.client_secret", "storage.connection_string"):
        assert any(f"{name}{sep}*********(redacted)" in plans for sep in (" -> ", ",", "=")), name
    assert '"SSECustomerKey": "*********(redacted)"' in plans


def test_patterns_name_every_secret_of_the_allowlist():
    """One list owns the names: every secret option of every protocol is in both patterns."""
    for name in storage_options.all_secret_names():
        assert name in redaction.options_pattern() and name in redaction.string_pattern()


def test_register_sets_the_sql_redaction_settings_and_keeps_the_sessions_own(spark):
    options = spark.conf.get(redaction.OPTIONS_CONF)
    assert redaction.options_pattern() in options and "url" in options  # Spark's default kept
    assert redaction.string_pattern() in spark.conf.get(redaction.STRING_CONF)
    old = spark.conf.get(redaction.STRING_CONF)
    spark.conf.set(redaction.STRING_CONF, "mine")
    try:
        redaction.apply(spark)
        assert spark.conf.get(redaction.STRING_CONF) == (
            f"(?:mine)|(?:{redaction.string_pattern()})")
        redaction.apply(spark)  # once only
        assert spark.conf.get(redaction.STRING_CONF).count(redaction.string_pattern()) == 1
    finally:
        spark.conf.set(redaction.STRING_CONF, old)
