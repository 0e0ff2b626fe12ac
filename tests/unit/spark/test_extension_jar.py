"""Which extension jar a session uses: the wheel's jar for the running Spark's line.

Pure logic on jars written here (a manifest is all the check reads); the wheel's real jar
and a session that needs a JRE only are covered by ``tests/install/test_clean_install.py``.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyspark
import pytest
from pyspark import SparkContext

from listing.spark import extension
from listing.spark.javac import SPARK_VERSION_ATTRIBUTE, jar_spark_version


def fake_jar(path: Path, spark_version: str | None) -> Path:
    manifest = "Manifest-Version: 1.0\n"
    if spark_version is not None:
        manifest += f"{SPARK_VERSION_ATTRIBUTE}: {spark_version}\n"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("META-INF/MANIFEST.MF", manifest)
    return path


@pytest.fixture
def shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An install with jars and no Java sources (as from the wheel): the folder."""
    monkeypatch.setattr(extension, "SHIPPED_DIR", tmp_path)
    monkeypatch.setattr(extension, "JAVA_SOURCES", tmp_path / "no-sources")
    return tmp_path


def shipped_jar(folder: Path, minor: str) -> Path:
    return folder / f"listing-extension-spark-{minor}.jar"


def test_each_line_gets_the_jar_built_for_it(shipped: Path) -> None:
    for minor, built_for in [("3.5", "3.5.6"), ("4.0", "4.0.4"), ("4.1", "4.1.3"),
                             ("4.2", "4.2.0"), ("4.3", "4.3.0")]:
        fake_jar(shipped_jar(shipped, minor), built_for)
    assert jar_spark_version(shipped_jar(shipped, "4.3")) == "4.3.0"
    assert extension.extension_jar("4.3.0") == shipped_jar(shipped, "4.3")
    assert extension.extension_jar("4.3.2") == shipped_jar(shipped, "4.3")  # same binary API
    assert extension.extension_jar("4.1.4") == shipped_jar(shipped, "4.1")
    assert extension.extension_jar("4.0.5") == shipped_jar(shipped, "4.0")
    assert extension.extension_jar("3.5.4") == shipped_jar(shipped, "3.5")  # Scala 2.12's


@pytest.mark.parametrize("version", ["3.4.4", "4.4.0", "5.0.0"])
def test_a_spark_outside_the_supported_lines_is_one_line_naming_them(
        shipped: Path, version: str) -> None:
    fake_jar(shipped_jar(shipped, "4.3"), "4.3.0")
    with pytest.raises(extension.UnsupportedSparkError) as err:
        extension.extension_jar(version)
    assert str(err.value) == (f"spark-listing supports Spark 3.5.x, 4.0.x, 4.1.x, 4.2.x, 4.3.x; "
                              f"this Spark is {version}")


@pytest.mark.parametrize("built_for", ["4.2.1", None])
def test_a_jar_built_for_another_spark_is_a_clear_error_saying_what_to_do(
        shipped: Path, built_for: str | None) -> None:
    fake_jar(shipped_jar(shipped, "4.3"), built_for)
    with pytest.raises(extension.ExtensionVersionError) as err:
        extension.extension_jar("4.3.0")
    message = str(err.value)
    assert f"built for Spark {built_for or 'an unrecorded version'}" in message
    assert "this Spark is 4.3.0" in message and "listing.session(guard=False)" in message


def test_a_missing_line_s_jar_asks_for_a_reinstall(shipped: Path) -> None:
    fake_jar(shipped_jar(shipped, "4.3"), "4.3.0")
    with pytest.raises(extension.ExtensionBuildError, match="no extension jar for Spark 4.1"):
        extension.extension_jar("4.1.4")


def test_no_jar_and_no_sources_asks_for_a_reinstall(shipped: Path) -> None:
    with pytest.raises(extension.ExtensionBuildError, match="no extension jar"):
        extension.extension_jar("4.3.0")


def test_a_source_checkout_compiles_the_sources(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    """Positive control for the fallback: no shipped jar, the checkout's sources."""
    monkeypatch.setattr(extension, "SHIPPED_DIR", tmp_path)
    assert extension.JAVA_SOURCES.is_dir()
    jar = extension.extension_jar()
    assert jar.parent == extension.DEFAULT_CACHE_DIR
    assert jar_spark_version(jar) == pyspark.__version__


def test_running_spark_is_spark_home_s_when_it_is_another_spark(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / "spark-core_2.13-4.2.1.jar").write_bytes(b"")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    assert extension.running_spark_version() == "4.2.1"
    monkeypatch.delenv("SPARK_HOME")
    assert extension.running_spark_version() == pyspark.__version__


def test_session_and_register_refuse_another_spark_in_one_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before anything is started or registered: no JVM here, no source on the session."""
    from types import SimpleNamespace

    from listing.spark import session as spark_session

    monkeypatch.setattr(extension, "running_spark_version", lambda: "3.4.4")
    want = ("spark-listing supports Spark 3.5.x, 4.0.x, 4.1.x, 4.2.x, 4.3.x; this Spark is "
            "3.4.4")
    with pytest.raises(extension.UnsupportedSparkError) as err:
        spark_session.session()
    assert str(err.value) == want
    with pytest.raises(extension.UnsupportedSparkError) as err:
        spark_session.register(SimpleNamespace(version="3.4.4"))  # type: ignore[arg-type]
    assert str(err.value) == want
