"""Which POM names Spark's S3A connector for a pyspark's Hadoop, and the cache folder it
lands in (listing.spark.s3a): Hadoop 3.3 (pyspark 3.5) needs hadoop-aws written against
the AWS SDK v1, 3.4 and later the SDK v2 modules. No Maven, no Spark: the Hadoop version
is given."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from listing.spark import s3a


def _key(pom: Path) -> str:
    return hashlib.sha256(pom.read_bytes()).hexdigest()[:12]


@pytest.mark.parametrize(("hadoop", "pom"), [
    ("3.3.4", s3a.CONNECTOR_POM_HADOOP_33),  # pyspark 3.5.x
    ("3.3.6", s3a.CONNECTOR_POM_HADOOP_33),
    ("3.4.1", s3a.CONNECTOR_POM),  # 4.0
    ("3.4.2", s3a.CONNECTOR_POM),  # 4.1
    ("3.5.0", s3a.CONNECTOR_POM),  # 4.2, 4.3
])
def test_the_pom_follows_the_hadoop_line(hadoop: str, pom: Path) -> None:
    assert s3a.connector_pom(hadoop) == pom


def test_each_pom_names_hadoop_aws_with_the_sdk_of_its_line() -> None:
    v2 = s3a.CONNECTOR_POM.read_text()
    v1 = s3a.CONNECTOR_POM_HADOOP_33.read_text()
    assert re.search(r"<hadoop.version>3\.3\.\d+</hadoop.version>", v1)
    assert "<artifactId>hadoop-aws</artifactId>" in v1 and "software.amazon.awssdk" not in v1
    assert "<groupId>software.amazon.awssdk</groupId>" in v2  # the control: v2 modules


@pytest.mark.parametrize(("hadoop", "pom", "suffix"), [
    ("3.3.4", s3a.CONNECTOR_POM_HADOOP_33, ""),  # the version the 3.3 POM names
    ("3.3.6", s3a.CONNECTOR_POM_HADOOP_33, "-hadoop-3.3.6"),
    ("3.5.0", s3a.CONNECTOR_POM, ""),  # the pinned pyspark's: the folder as before
    ("3.4.2", s3a.CONNECTOR_POM, "-hadoop-3.4.2"),
])
def test_the_cache_folder_is_keyed_by_its_pom_and_hadoop(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path, hadoop: str,
                                                          pom: Path, suffix: str) -> None:
    monkeypatch.setattr(s3a, "hadoop_version", lambda: hadoop)
    assert s3a.cache_dir(tmp_path) == tmp_path / f"s3a-{_key(pom)}{suffix}"
    assert s3a.connector_jars(tmp_path) == []  # never fetched here
