"""``listing.session()``'s Java check (listing.spark.java_runtime): no ``java`` where Spark's
launcher looks, a ``JAVA_HOME`` without one or with one that does not run, and a Java older
than 17 each say what is wrong and how to install Java, instead of Spark's
``JAVA_GATEWAY_EXITED``. The ``java`` here are scripts printing what a JDK prints, so no JVM
starts (a unit test); the real one passes in every Spark session's start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from listing.errors import SparkSetupError
from listing.spark.java_runtime import JavaMissingError, java_major, require_java


def fake_java(folder: Path, version: str = '"17.0.15" 2025-04-15', status: int = 0) -> Path:
    """A JDK home whose ``bin/java -version`` prints ``version`` as OpenJDK does."""
    java = folder / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho 'openjdk version {version}' >&2\nexit {status}\n")
    java.chmod(0o755)
    return java


def test_no_java_anywhere_names_the_fix_in_a_fresh_process(tmp_path: Path) -> None:
    """The check as a user meets it, in ``listing.session()``: PATH without java, JAVA_HOME
    unset, in a subprocess (no JVM starts: the check comes first)."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PYSPARK_GATEWAY_PORT")}
    env["PATH"] = str(tmp_path)  # holds no java
    code = ("import listing\n"
            "try:\n    listing.session()\n"
            "except Exception as err:\n    print(type(err).__name__, err)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, timeout=60).stdout
    assert out.startswith("JavaMissingError Spark needs Java, and there is none at `java` on "
                          "PATH (JAVA_HOME is not set)"), out
    assert "apt-get install openjdk-17-jre-headless" in out and "JAVA_HOME" in out
    # the control (here, not in a second process): a java on that PATH is found
    java = fake_java(tmp_path / "jdk")
    assert require_java({"PATH": f"{tmp_path}{os.pathsep}{java.parent}"}) == java


def test_a_java_home_without_java_is_not_rescued_by_path(tmp_path: Path) -> None:
    """Spark's launcher runs $JAVA_HOME/bin/java when JAVA_HOME is set, so the check does."""
    on_path = fake_java(tmp_path / "path_jdk")
    env = {"JAVA_HOME": str(tmp_path / "empty_home"), "PATH": str(on_path.parent)}
    with pytest.raises(JavaMissingError, match=r"none at JAVA_HOME=.*empty_home \(so "
                       r".*empty_home/bin/java\): install a Java 17"):
        require_java(env)
    assert require_java({"PATH": str(on_path.parent)}) == on_path  # the control


def test_a_java_that_does_not_run_or_is_too_old(tmp_path: Path) -> None:
    broken = fake_java(tmp_path / "broken", status=1)
    with pytest.raises(JavaMissingError, match=r"-version` \(from JAVA_HOME=.*\) failed: "
                       r"openjdk version"):
        require_java({"JAVA_HOME": str(broken.parent.parent)})
    old = fake_java(tmp_path / "old", version='"1.8.0_392"')
    with pytest.raises(JavaMissingError, match=r"Java 17 or later, .* is Java 8: install"):
        require_java({"JAVA_HOME": str(old.parent.parent)})
    newer = fake_java(tmp_path / "new", version='"21.0.2" 2024-01-16')
    assert require_java({"JAVA_HOME": str(newer.parent.parent)}) == newer  # the control


def test_the_error_is_a_spark_setup_error_and_versions_parse() -> None:
    assert issubclass(JavaMissingError, SparkSetupError)
    assert java_major('openjdk version "17.0.15" 2025-04-15') == 17
    assert java_major('java version "1.8.0_392"') == 8
    assert java_major('openjdk version "21" 2023-09-19') == 21
    assert java_major("no version here") is None


def test_under_spark_submit_the_jvm_is_already_there(tmp_path: Path) -> None:
    """PySpark joins the JVM that started it (PYSPARK_GATEWAY_PORT): nothing to look for."""
    assert require_java({"PYSPARK_GATEWAY_PORT": "4040", "PATH": str(tmp_path)}) is None
    with pytest.raises(JavaMissingError):  # the control: the same env without the port
        require_java({"PATH": str(tmp_path)})
