"""Find (or, in a source checkout, build) and install the listing Spark extension.

Why: in pyspark 4.3.0 the planned read of a Python data source (reader + partitions) is cached
on the ``PythonDataSourceV2`` shared by every query on a DataFrame or temp view, and filter
push-down overwrites it. A later unfiltered query, or a second scan of the same relation within
one query (union, self-join), then silently reads another query's pruned partitions. The rule in
``java/io/github/listing/StalePushdownGuard.java`` gives each scan a private data source right
before push-down (the extension installs it with the other listing rules).

The wheel ships the extension compiled, one jar per supported Spark line
(``listing/spark/listing-extension-spark-4.1.jar``, ..., see :mod:`listing.spark.lines`): a
session needs a JRE only, and uses the jar of the running Spark's major.minor line. A source
checkout (editable install) has no jar: there the shared sources in ``java/io/`` and the
running line's shims are compiled on first use with the local JDK, against pyspark's own jars
(or, for another line, that line's Spark from Maven Central), and cached by content.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyspark

from listing.errors import SparkSetupError
from listing.spark.javac import JavacError, compile_jar, jar_spark_version
from listing.spark.lines import (
    SparkClasspathError,
    SparkLine,
    UnsupportedSparkError,
    jar_name,
    line_of,
    maven_classpath,
    resources,
    sources,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "EXTENSION_CLASS",
    "GUARD_RULE_CLASS",
    "JVM_SOURCE_CLASS",
    "ExtensionVersionError",
    "ExtensionBuildError",
    "UnsupportedSparkError",
    "add_to_running_driver",
    "check_supported",
    "build_extension_jar",
    "extension_jar",
    "extension_conf",
    "is_guard_active",
    "jvm_source_loaded",
    "running_spark_version",
]

log = logging.getLogger("listing.spark")

EXTENSION_CLASS = "io.github.listing.ListingSparkExtensions"
"""Value for ``spark.sql.extensions``: installs the listing rules (the guard among them) into
every new session."""

GUARD_RULE_CLASS = "io.github.listing.StalePushdownGuard"
"""The Catalyst rule itself, as found in the optimizer's pre-CBO rules once installed.

Also its rule name: listing it in the runtime conf ``spark.sql.optimizer.excludedRules``
switches the guard off for later queries (a kill switch, and how the tests show the bug).
"""

SHIPPED_DIR = Path(__file__).parent
"""Where a wheel's jars are, one per Spark line (none in a source checkout)."""
JAVA_SOURCES = Path(__file__).resolve().parents[2] / "java"
"""The Java sources of a source checkout (not in the wheel)."""
DEFAULT_CACHE_DIR = Path.home() / ".cache" / "spark-listing"
_JDK_HINT = "install a JDK 17 (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME"
_SPARK_JAR = re.compile(r"^spark-core_[\d.]+-(\d+\.\d+\.\d+[^/]*)\.jar$")


class ExtensionBuildError(SparkSetupError):
    """No usable extension jar: none shipped and the Java sources could not be compiled."""


class ExtensionVersionError(ExtensionBuildError):
    """The shipped jar was built for another Spark version than the one running."""


def pyspark_jars_dir() -> Path:
    """The jars pyspark's JVM runs with; the extension must compile against exactly these.

    ``$SPARK_HOME/jars`` when set (spark-submit runs its JVM from there), else the ``jars``
    folder of the pyspark package, found above the module even where Python imports pyspark
    from ``pyspark/python/lib/pyspark.zip`` (a spark-submit job's Python path)."""
    home = os.environ.get("SPARK_HOME")
    if home and (Path(home) / "jars").is_dir():
        return Path(home) / "jars"
    package = Path(pyspark.__file__).parent
    for folder in (package, *package.parents):
        if (folder / "jars").is_dir():
            return folder / "jars"
    return package / "jars"


def running_spark_version() -> str:
    """The version of the Spark a session here runs: the active SparkContext's, else the
    one in ``SPARK_HOME`` (spark-submit and pyspark start that one), else pyspark's."""
    from pyspark import SparkContext

    active = SparkContext._active_spark_context
    if active is not None:
        return str(active.version)
    home = os.environ.get("SPARK_HOME")
    if home and Path(home).resolve() != Path(pyspark.__file__).resolve().parent:
        for jar in sorted((Path(home) / "jars").glob("spark-core_*.jar")):
            match = _SPARK_JAR.match(jar.name)
            if match:
                return match.group(1)
    return str(pyspark.__version__)


def _major_minor(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])


def check_supported(spark_version: str | None = None) -> SparkLine:
    """The line of the running Spark (or ``spark_version``); :class:`UnsupportedSparkError`,
    one line naming the supported versions, for any other Spark."""
    return line_of(spark_version or running_spark_version())


def shipped_jars() -> list[Path]:
    """The jars an installed wheel ships (empty in a source checkout)."""
    return sorted(SHIPPED_DIR.glob("listing-extension-spark-*.jar"))


def extension_jar(spark_version: str | None = None) -> Path:
    """The extension jar for the running Spark (or ``spark_version``).

    An installed wheel's jar for that Spark's major.minor line (an
    :class:`UnsupportedSparkError` for a Spark outside :data:`~listing.spark.lines.LINES`,
    an :class:`ExtensionVersionError` when the jar was built for another line); in a source
    checkout, the sources compiled with the local JDK (:func:`build_extension_jar`).
    """
    version = spark_version or running_spark_version()
    line = line_of(version)
    if shipped_jars():
        jar = SHIPPED_DIR / jar_name(line)
        if not jar.is_file():
            raise ExtensionBuildError(f"this install of spark-listing has no extension jar "
                                      f"for Spark {line.minor} ({jar}): reinstall the wheel")
        built_for = jar_spark_version(jar) or "an unrecorded version"
        if _major_minor(built_for) != _major_minor(version):
            raise ExtensionVersionError(
                f"the listing Spark extension {jar} was built for Spark {built_for}, but this "
                f"Spark is {version}"
                + (f" (SPARK_HOME={os.environ['SPARK_HOME']})"
                   if os.environ.get("SPARK_HOME") else "")
                + ": reinstall the wheel, or run without the extension: "
                "listing.session(guard=False) (the source then lists whole tables unless "
                "the filter comes as 'where' or through to_spark)")
        return jar
    if JAVA_SOURCES.is_dir():
        return build_extension_jar(spark_version=version)
    raise ExtensionBuildError(f"this install of spark-listing has no extension jar in "
                              f"{SHIPPED_DIR} and no Java sources to build it from: "
                              "reinstall the wheel")


def _cache_key(files: list[Path], built_against: str) -> str:
    """Hash of the Java sources and the Spark version compiled against, so a change to
    either rebuilds (and of the jar layout: its manifest records the Spark version)."""
    digest = hashlib.sha256(f"spark={built_against}\nmanifest=1\n".encode())
    for src in files:
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
        raise ExtensionBuildError(f"`{name}` not found, needed to build the listing Spark "
                                  f"extension from source (a development install): {_JDK_HINT}")
    return found


def build_extension_jar(force: bool = False, cache_dir: Path | None = None,
                        spark_version: str | None = None) -> Path:
    """Compile the sources of a checkout for the running Spark's line (or ``spark_version``'s)
    with ``javac --release 17`` (development installs only: a wheel ships the jars) and
    return the cached jar's path.

    Compiled against pyspark's own jars when pyspark is of that line, else against the
    line's Spark from Maven Central. The jar is keyed by the sources and that Spark version,
    and published with an atomic rename, so concurrent builders (pytest-xdist workers,
    several sessions) never see a partial jar.
    """
    cache = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE_DIR
    line = line_of(spark_version or running_spark_version())
    files = sources(JAVA_SOURCES, line)
    if not files:
        raise ExtensionBuildError(f"no Java sources under {JAVA_SOURCES}")
    if _major_minor(pyspark.__version__) == _major_minor(line.minor):
        built_against, classpath = pyspark.__version__, [pyspark_jars_dir()]
    elif line.maven_version is not None:
        built_against = line.maven_version
        try:
            classpath = maven_classpath(JAVA_SOURCES, line.maven_version, cache, line.scala)
        except SparkClasspathError as err:
            raise ExtensionBuildError(str(err)) from None
    else:
        raise ExtensionBuildError(f"the extension for Spark {line.minor} compiles against "
                                  f"pyspark {line.minor}'s jars; this pyspark is "
                                  f"{pyspark.__version__}")
    extra = resources(JAVA_SOURCES, line)
    keyed = files + (sorted(f for f in extra.rglob("*") if f.is_file()) if extra else [])
    target = cache / f"listing-extension-{_cache_key(keyed, built_against)}.jar"
    if target.is_file() and not force:
        return target
    javac, jar = _jdk_tool("javac"), _jdk_tool("jar")
    try:
        return compile_jar(files, classpath, built_against, target, javac, jar, extra)
    except JavacError as err:
        raise ExtensionBuildError(str(err)) from None


def add_to_running_driver(jar_path: Path | str) -> bool:
    """Put the jar on the class loader of a driver JVM that already runs (``spark-submit``
    starts it before the script, so ``spark.jars`` set by the script reaches the executors
    but not the driver, which loads ``spark.sql.extensions``). True when it did; False when
    no JVM runs yet (``spark.jars`` then reaches it at start) or its loader takes no jars."""
    from pyspark import SparkContext

    if SparkContext._jvm is None and not os.environ.get("PYSPARK_GATEWAY_PORT"):
        return False
    SparkContext._ensure_initialized()  # connects to spark-submit's gateway; starts nothing
    jvm = SparkContext._jvm
    if jvm is None:
        return False
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    if loader.getClass().getName() not in _ADDABLE_LOADERS:
        return False
    loader.addURL(jvm.java.io.File(str(Path(jar_path).resolve())).toURI().toURL())
    return True


#: the driver class loaders spark-submit installs (both have a public addURL)
_ADDABLE_LOADERS = {"org.apache.spark.util.MutableURLClassLoader",
                    "org.apache.spark.util.ChildFirstURLClassLoader"}


def extension_conf(jar_path: Path | str) -> dict[str, str]:
    """Static Spark confs installing the extension; they only take effect when the JVM starts.

    ``spark.jars`` alone makes the extension loadable at session start in local/client mode
    (spark-submit puts it on the driver's class loader; verified on 4.3.0), so
    ``spark.driver.extraClassPath`` is not needed. Both values are single entries: if the caller
    already sets ``spark.jars`` or ``spark.sql.extensions``, join the values with commas.
    """
    return {
        "spark.jars": str(Path(jar_path).resolve()),
        "spark.sql.extensions": EXTENSION_CLASS,
    }


#: the JVM ``listing`` source of the lines without Python data sources (Spark 3.5's jar)
JVM_SOURCE_CLASS = "io.github.listing.ListingRelationProvider"


def jvm_source_loaded(spark: SparkSession) -> bool:
    """Whether ``format("listing")`` resolves, in this session's JVM, to the extension jar's
    JVM source (Spark 3.5: the jar is on the driver's classpath); False on a session without
    a JVM of its own (Spark Connect)."""
    jsession = getattr(spark, "_jsparkSession", None)
    jvm: Any = getattr(spark, "_jvm", None)
    if jsession is None or jvm is None:
        return False
    try:
        found = jvm.org.apache.spark.sql.execution.datasources.DataSource
        cls = found.lookupDataSource("listing", jsession.sessionState().conf())
        return bool(cls.getName() == JVM_SOURCE_CLASS)
    except Exception as err:  # noqa: BLE001 - no such class on this classpath
        log.debug("listing: no JVM listing source: %s", err)
        return False


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
        if EXTENSION_CLASS not in {name.strip() for name in configured.split(",")}:
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
    return EXTENSION_CLASS in names and GUARD_RULE_CLASS not in {
        name.strip() for name in excluded.split(",")}


if __name__ == "__main__":  # the jar's path, for spark-submit --jars or a Connect server
    sys.stdout.write(f"{extension_jar()}\n")
