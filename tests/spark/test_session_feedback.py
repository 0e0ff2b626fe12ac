"""Spark's own feedback stays on: ``listing.session()`` leaves the UI and the console
progress bar as Spark sets them, and a long listing reports progress in the driver log."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import pytest

from listing.spark import progress as progress_mod
from listing.spark import session as session_mod
from listing.spark.progress import ListingProgress
from listing.spark.source import ListingDataSource
from listing.testing import datasets

UI_CONFS = ("spark.ui.enabled", "spark.ui.showConsoleProgress")


class _Built(Exception):
    pass


class RecordingBuilder:
    """Records the confs ``session()`` gives the builder; stops at ``getOrCreate``."""

    def __init__(self) -> None:
        self.confs: dict[str, str] = {}

    def appName(self, name: str) -> RecordingBuilder:  # noqa: N802 - Spark's name
        return self

    def master(self, master: str) -> RecordingBuilder:
        return self

    def config(self, key: str, value: str) -> RecordingBuilder:
        self.confs[key] = value
        return self

    def getOrCreate(self) -> Any:  # noqa: N802 - Spark's name
        raise _Built


def built_confs(monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> dict[str, str]:
    builder = RecordingBuilder()
    monkeypatch.setattr(session_mod, "SparkSession", type("S", (), {"builder": builder}))
    monkeypatch.setattr(session_mod, "require_java", lambda: None)  # no JVM starts here
    with pytest.raises(_Built):
        session_mod.session(guard=False, **kwargs)
    return builder.confs


def test_session_leaves_spark_ui_and_progress_bar_to_spark(monkeypatch):
    confs = built_confs(monkeypatch)
    assert session_mod.PUSHDOWN_CONF in confs  # positive control: the confs were recorded
    assert not [k for k in UI_CONFS if k in confs]


def test_ui_false_turns_both_off(monkeypatch):
    confs = built_confs(monkeypatch, ui=False)
    assert [confs[k] for k in UI_CONFS] == ["false", "false"]
    # a caller's conf still wins
    confs = built_confs(monkeypatch, ui=False, conf={"spark.ui.enabled": "true"})
    assert confs["spark.ui.enabled"] == "true"


def test_progress_speaks_after_first_seconds_then_every_period(caplog):
    now = [100.0]
    progress = ListingProgress("s3://b/t", first=5, every=10, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="listing.progress"):
        for t, keys in [(101, 1000), (104.9, 2000), (105, 3000), (110, 4000), (115.5, 5000)]:
            now[0] = t
            progress(keys // 1000, keys)
        now[0] = 120
        progress.done()
    lines = [r.getMessage() for r in caplog.records if r.name == "listing.progress"]
    assert lines == [
        "listing s3://b/t: 3,000 keys in 3 requests so far (5 s)",
        "listing s3://b/t: 5,000 keys in 5 requests so far (16 s)",
        "listing s3://b/t: done, 5,000 keys in 5 requests (20.0 s)",
    ]


def test_a_short_listing_says_nothing(caplog):
    progress = ListingProgress("s3://b/t", first=5, clock=lambda: 0.0)
    with caplog.at_level(logging.INFO, logger="listing.progress"):
        progress(1, 10)
        progress.done()
    assert not [r for r in caplog.records if r.name == "listing.progress"]


def test_a_spark_scan_plans_with_progress(s3_server, monkeypatch, caplog):
    """The reader Spark's planning worker runs reports its listing (here in-process,
    with the first report due at once)."""
    bucket = s3_server.create_bucket(f"progress-{uuid.uuid4().hex[:8]}")
    ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options, days=3,
                        put=datasets.fast_writer(s3_server))
    monkeypatch.setattr(progress_mod, "FIRST_REPORT_S", 0.0)
    source = ListingDataSource({"path": ds.root, "format": "parquet",
                                "storage_options": json.dumps(s3_server.storage_options)})
    with caplog.at_level(logging.INFO, logger="listing.progress"):
        parts = source.reader(source.schema()).partitions()
    assert parts
    lines = [r.getMessage() for r in caplog.records if r.name == "listing.progress"]
    assert lines and lines[-1].startswith(f"listing {ds.root}") and "done, 6 keys" in lines[-1]


def test_the_callers_jars_and_extensions_are_kept_and_ours_listed_once(monkeypatch):
    from listing.spark.extension import EXTENSION_CLASS, extension_jar
    from listing.spark.s3a import connector_jars

    builder = RecordingBuilder()
    monkeypatch.setattr(session_mod, "SparkSession", type("S", (), {"builder": builder}))
    monkeypatch.setattr(session_mod, "require_java", lambda: None)  # no JVM starts here
    with pytest.raises(_Built):
        session_mod.session(conf={"spark.jars": "/opt/other.jar",
                                  "spark.sql.extensions": f"a.B, {EXTENSION_CLASS}"})
    assert builder.confs["spark.sql.extensions"] == f"a.B,{EXTENSION_CLASS}"
    s3a = [str(j) for j in connector_jars()]  # Spark's S3A connector, when fetched
    assert builder.confs["spark.jars"] == ",".join(
        ["/opt/other.jar", *s3a, str(extension_jar().resolve())])


def test_registering_without_pandas_prints_no_warning(spark, monkeypatch):
    """The wheel needs no pandas; registering the source must not warn that it is missing
    (pyspark's Arrow UDTFs want pandas, and pyspark 4.3 turns them on by default)."""
    import warnings

    from pyspark.sql import udtf as udtf_mod

    def no_pandas() -> None:
        raise ImportError("Pandas >= 2.2.0 must be installed; however, it was not found.")

    monkeypatch.setattr(udtf_mod, "require_minimum_pandas_version", no_pandas)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        session_mod.register(spark)
