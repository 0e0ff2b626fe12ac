"""Compile the listing Spark extension's Java sources into a jar (standard library only).

Used twice: by the wheel build (``build_support/listing_build.py`` loads this file by path,
before the package's dependencies exist; its :class:`JavacError` is then a plain
:class:`RuntimeError`, installed a :class:`~listing.errors.SparkSetupError`) to ship one jar
per Spark line (:mod:`listing.spark.lines`), and by
:func:`listing.spark.extension.build_extension_jar` in a source checkout. The jar's manifest
records the Spark version whose jars it was compiled against (``Listing-Spark-Version``).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

try:
    from listing.errors import SparkSetupError
except ImportError:  # loaded by path by the wheel build (see above): no package there
    SparkSetupError = RuntimeError  # type: ignore[misc,assignment]

__all__ = ["SPARK_VERSION_ATTRIBUTE", "JavacError", "compile_jar", "jar_spark_version"]

SPARK_VERSION_ATTRIBUTE = "Listing-Spark-Version"


class JavacError(SparkSetupError):
    """``javac`` or ``jar`` failed, or the sources are missing."""


def _run(cmd: list[str], what: str) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise JavacError(f"`{cmd[0]}` not found") from None
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip()
        raise JavacError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{output}")


def compile_jar(files: Sequence[Path], classpath: Sequence[Path], spark_version: str,
                target: Path, javac: str = "javac", jar: str = "jar",
                resources: Path | None = None) -> Path:
    """Compile ``files`` with ``javac --release 17`` against ``classpath`` (jars, or folders
    whose every jar counts) and write the jar to ``target`` (atomically: a concurrent reader
    never sees a partial jar), with the files under ``resources`` (a service file) at their
    paths below it."""
    if not files:
        raise JavacError("no Java sources to compile")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".build-", dir=target.parent) as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        flags = ["--release", "17", "-nowarn", "-encoding", "UTF-8"]
        # javac expands a folder's wildcard itself
        cp = os.pathsep.join(str(p / "*") if p.is_dir() else str(p) for p in classpath)
        _run([javac, *flags, "-cp", cp, "-d", str(classes), *map(str, files)], "javac")
        manifest = Path(tmp) / "MANIFEST.MF"
        manifest.write_text(f"{SPARK_VERSION_ATTRIBUTE}: {spark_version}\n")
        staged = Path(tmp) / target.name
        _run([jar, "--create", "--file", str(staged), "--manifest", str(manifest),
              "-C", str(classes), ".",
              *(["-C", str(resources), "."] if resources is not None else [])], "jar")
        os.replace(staged, target)
    return target


def jar_spark_version(path: Path) -> str | None:
    """The Spark version ``path`` was compiled against (None: not recorded)."""
    with zipfile.ZipFile(path) as zf:
        text = zf.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == SPARK_VERSION_ATTRIBUTE:
            return value.strip()
    return None
