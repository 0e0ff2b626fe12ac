"""Build and install the JVM-side stale-pushdown guard (a Catalyst pre-CBO rule).

Why: in pyspark 4.3.0 the planned read of a Python data source (reader + partitions) is cached
on the ``PythonDataSourceV2`` shared by every query on a DataFrame or temp view, and filter
push-down overwrites it. A later unfiltered query, or a second scan of the same relation within
one query (union, self-join), then silently reads another query's pruned partitions. The rule in
``java/io/github/listing/StalePushdownGuard.java`` gives each scan a private data source right
before push-down. There is no Scala compiler here, so it is Java, compiled on first use with the
local JDK against pyspark's own jars and cached by content.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pyspark

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "GUARD_EXTENSION_CLASS",
    "GUARD_RULE_CLASS",
    "GuardBuildError",
    "build_guard_jar",
    "guard_conf",
    "is_guard_active",
]

GUARD_EXTENSION_CLASS = "io.github.listing.ListingSparkExtensions"
"""Value for ``spark.sql.extensions``: installs the guard rule into every new session."""

GUARD_RULE_CLASS = "io.github.listing.StalePushdownGuard"
"""The Catalyst rule itself, as found in the optimizer's pre-CBO rules once installed.

Also its rule name: listing it in the runtime conf ``spark.sql.optimizer.excludedRules``
switches the guard off for later queries (a kill switch, and how the tests show the bug).
"""

JAVA_SOURCES = Path(__file__).parent / "java"
DEFAULT_CACHE_DIR = Path.home() / ".cache" / "spark-listing"
_JDK_HINT = "install a JDK 17 (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME"


class GuardBuildError(RuntimeError):
    """The guard jar could not be built: no JDK tools, or the Java sources failed to compile."""


def pyspark_jars_dir() -> Path:
    """The jars pyspark's JVM runs with; the guard must compile against exactly these."""
    return Path(pyspark.__file__).parent / "jars"


def _java_sources() -> list[Path]:
    return sorted(JAVA_SOURCES.rglob("*.java"))


def _cache_key() -> str:
    """Hash of the Java sources and the pyspark version, so a change to either rebuilds."""
    digest = hashlib.sha256(f"pyspark={pyspark.__version__}\n".encode())
    for src in _java_sources():
        digest.update(src.relative_to(JAVA_SOURCES).as_posix().encode() + b"\0")
        digest.update(src.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _jdk_tool(name: str) -> str:
    """Path of ``javac``/``jar``, preferring ``$JAVA_HOME/bin``; a clear error if absent."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise GuardBuildError(f"`{name}` not found, needed for the Spark guard jar: {_JDK_HINT}")
    return found


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip()
        raise GuardBuildError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{output}")


def build_guard_jar(force: bool = False, cache_dir: Path | None = None) -> Path:
    """Compile the guard with ``javac --release 17`` and return the cached jar's path.

    The jar is keyed by the sources and pyspark version, and published with an atomic rename,
    so concurrent builders (pytest-xdist workers, several sessions) never see a partial jar.
    """
    cache = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE_DIR
    sources = _java_sources()
    if not sources:
        raise GuardBuildError(f"no Java sources under {JAVA_SOURCES}")
    target = cache / f"listing-guard-{_cache_key()}.jar"
    if target.is_file() and not force:
        return target
    javac, jar = _jdk_tool("javac"), _jdk_tool("jar")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".build-", dir=cache) as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        classpath = str(pyspark_jars_dir() / "*")  # javac expands the wildcard itself
        flags = ["--release", "17", "-nowarn", "-encoding", "UTF-8"]
        _run([javac, *flags, "-cp", classpath, "-d", str(classes), *map(str, sources)], "javac")
        staged = Path(tmp) / target.name
        _run([jar, "--create", "--file", str(staged), "-C", str(classes), "."], "jar")
        os.replace(staged, target)
    return target


def guard_conf(jar_path: Path | str) -> dict[str, str]:
    """Static Spark confs installing the guard; they only take effect when the JVM starts.

    ``spark.jars`` alone makes the extension loadable at session start in local/client mode
    (spark-submit puts it on the driver's class loader; verified on 4.3.0), so
    ``spark.driver.extraClassPath`` is not needed. Both values are single entries: if the caller
    already sets ``spark.jars`` or ``spark.sql.extensions``, join the values with commas.
    """
    return {
        "spark.jars": str(Path(jar_path).resolve()),
        "spark.sql.extensions": GUARD_EXTENSION_CLASS,
    }


def is_guard_active(spark: SparkSession) -> bool:
    """Whether this session's optimizer really runs the guard rule.

    Checking the conf is not enough: Spark only logs a warning when an extension class fails to
    load, and static confs passed to ``getOrCreate`` on an already-running JVM are ignored.
    False too when the rule is listed in ``spark.sql.optimizer.excludedRules``. A Spark
    Connect client has no JVM to look into: there the server's own confs decide (the
    extension is a static conf, set where the server starts), so the session counts as
    guarded when the server reports the extension and does not exclude the rule.
    """
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return _connect_server_has_guard(spark)
    try:
        configured = spark.conf.get("spark.sql.extensions", "") or ""
        if GUARD_EXTENSION_CLASS not in {name.strip() for name in configured.split(",")}:
            return False
        excluded = spark.conf.get("spark.sql.optimizer.excludedRules", "") or ""
        if GUARD_RULE_CLASS in {name.strip() for name in excluded.split(",")}:
            return False
        rules = jsession.sessionState().optimizer().preCBORules().iterator()
        while rules.hasNext():
            if rules.next().getClass().getName() == GUARD_RULE_CLASS:
                return True
    except Exception:  # py4j errors, a stopped session: treat as not installed
        return False
    return False


def _connect_server_has_guard(spark: SparkSession) -> bool:
    try:
        configured = spark.conf.get("spark.sql.extensions", "") or ""
        excluded = spark.conf.get("spark.sql.optimizer.excludedRules", "") or ""
    except Exception:  # noqa: BLE001 - not a session we can ask: treat as not installed
        return False
    names = {name.strip() for name in configured.split(",")}
    return GUARD_EXTENSION_CLASS in names and GUARD_RULE_CLASS not in {
        name.strip() for name in excluded.split(",")}
