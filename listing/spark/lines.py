"""The Spark lines the listing extension supports, and what each jar is compiled from.

Standard library only: the wheel's build backend (``build_support/listing_build.py``) loads
this file by path, before the package's dependencies exist (its errors are then plain
:class:`RuntimeError`; installed, they are :class:`~listing.errors.SparkSetupError`).

One source tree: ``java/io/`` holds the sources the lines share, ``java/scala-<version>/`` the
conversions between Java and Scala collections (Spark 3.5 runs Scala 2.12, Spark 4 Scala
2.13), ``java/shims/<folder>/`` the few calls whose signatures differ (one ``SparkShim``
class per folder) and the classes only that line has. A line's jar is its shared sources (all
of ``java/io/``, or the subset it names: Spark 3.5 lacks the Python data source classes most
of them use), its Scala folder and its one shim folder, compiled against that line's own
Spark: the Spark artifacts from Maven Central (``java/shims/pom.xml``, resolved by ``mvn
dependency:build-classpath`` and cached by version), or, for the line pyspark is pinned to at
build time, that pyspark's jars. A shim folder's ``resources/`` (a service file) goes into
its jar as it is. Invariant: every line here has a shim folder and a jar in the
wheel; a Spark outside these lines is refused with :class:`UnsupportedSparkError`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

try:
    from listing.errors import SparkSetupError
except ImportError:  # loaded by path by the wheel build (see above): no package there
    SparkSetupError = RuntimeError  # type: ignore[misc,assignment]

__all__ = [
    "LINES",
    "SUPPORTED",
    "SparkClasspathError",
    "SparkLine",
    "UnsupportedSparkError",
    "jar_name",
    "line_of",
    "maven_classpath",
    "resources",
    "sources",
]


@dataclass(frozen=True)
class SparkLine:
    """One Spark minor line: its shim folder and the Spark release its jar compiles against
    (``None``: the installed pyspark's own jars, for a line not on Maven Central), the Scala
    binary version that Spark runs, the files of ``java/io/github/listing/`` its jar
    compiles (``None``: all of them), and whether that Spark has Python data sources
    (``pyspark.sql.datasource``, Spark 4): without them ``listing`` is the jar's JVM source."""

    minor: str
    shims: str
    maven_version: str | None
    scala: str = "2.13"
    shared: tuple[str, ...] | None = None
    python_sources: bool = True


#: the shared sources Spark 3.5's jar compiles: the file index our planner feeds, the
#: hand-off's decision and relation (ListingNativeEngine) and what they read; the others use
#: Spark 4's Python data source classes, which 3.5 has not
SHARED_3_5 = ("FilterJson.java", "ListedOpens.java", "ListingFileIndex.java",
              "ListingNativeEngine.java", "NodeRewrite.java", "OptionRegistry.java",
              "OptionValues.java", "S3ASettings.java", "SessionTimeZone.java")


LINES: tuple[SparkLine, ...] = (
    SparkLine("3.5", "spark-3.5", "3.5.6", scala="2.12", shared=SHARED_3_5,
              python_sources=False),
    SparkLine("4.0", "spark-4.0", "4.0.4"),
    SparkLine("4.1", "spark-4.1", "4.1.3"),
    SparkLine("4.2", "spark-4.2-4.3", "4.2.0"),
    SparkLine("4.3", "spark-4.2-4.3", None),
)
SUPPORTED = ", ".join(f"{line.minor}.x" for line in LINES)
"""The supported lines, as error messages name them."""


class UnsupportedSparkError(SparkSetupError):
    """The running Spark is not one of :data:`LINES`."""


class SparkClasspathError(SparkSetupError):
    """A line's Spark artifacts could not be resolved with Maven."""


def line_of(version: str) -> SparkLine:
    """The line serving Spark ``version`` (a clear error naming the supported ones)."""
    minor = ".".join(version.split(".")[:2])
    for line in LINES:
        if line.minor == minor:
            return line
    raise UnsupportedSparkError(f"spark-listing supports Spark {SUPPORTED}; this Spark is "
                                f"{version}")


def jar_name(line: SparkLine) -> str:
    """The file name of ``line``'s jar (in the wheel, beside this module)."""
    return f"listing-extension-spark-{line.minor}.jar"


def sources(java_root: Path, line: SparkLine) -> list[Path]:
    """The Java files ``line``'s jar compiles: its shared ones, its Scala folder's and its
    shim folder's."""
    shared = sorted((java_root / "io").rglob("*.java"))
    if line.shared is not None:
        missing = set(line.shared) - {f.name for f in shared}
        if missing:
            raise SparkSetupError(f"Spark {line.minor}'s jar names shared sources that do "
                                  f"not exist: {', '.join(sorted(missing))}")
        shared = [f for f in shared if f.name in line.shared]
    scala = sorted((java_root / f"scala-{line.scala}").rglob("*.java"))
    shims = sorted((java_root / "shims" / line.shims).rglob("*.java"))
    return shared + scala + shims


def resources(java_root: Path, line: SparkLine) -> Path | None:
    """The folder whose files go into ``line``'s jar as they are (None: it has none)."""
    folder = java_root / "shims" / line.shims / "resources"
    return folder if folder.is_dir() else None


def maven_classpath(java_root: Path, version: str, cache: Path,
                    scala: str = "2.13") -> list[Path]:
    """The jars of Spark ``version`` (``spark-sql_<scala>`` and what it depends on), resolved
    by Maven from ``java/shims/pom.xml`` into the local Maven repository; the resolved list is
    cached in ``cache`` keyed by the POM, version and Scala version, and resolved again when a
    jar is gone."""
    pom = java_root / "shims" / "pom.xml"
    key = hashlib.sha256(pom.read_bytes() + f"{version}/{scala}".encode()).hexdigest()[:12]
    listing = cache / f"spark-classpath-{version}-{key}.txt"
    if listing.is_file():
        jars = [Path(p) for p in listing.read_text().split(os.pathsep) if p]
        if jars and all(j.is_file() for j in jars):
            return jars
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SparkClasspathError(f"`mvn` not found, needed to fetch Spark {version}'s jars "
                                  "from Maven Central to compile its extension jar: "
                                  "apt-get install -y maven")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".classpath-", dir=cache) as tmp:
        out = Path(tmp) / "classpath.txt"
        cmd = [mvn, "-B", "-q", "-f", str(pom), "dependency:build-classpath",
               f"-Dspark.version={version}", f"-Dscala.binary.version={scala}",
               f"-Dmdep.outputFile={out}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not out.is_file():
            raise SparkClasspathError(f"resolving Spark {version}'s jars failed (exit "
                                      f"{proc.returncode}): {' '.join(cmd)}\n"
                                      f"{(proc.stdout + proc.stderr).strip()[-4000:]}")
        os.replace(out, listing)
    return [Path(p) for p in listing.read_text().split(os.pathsep) if p]
