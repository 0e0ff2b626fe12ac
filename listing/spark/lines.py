"""The Spark lines the listing extension supports, and what each jar is compiled from.

Standard library only: the wheel's build backend (``build_support/listing_build.py``) loads
this file by path, before the package's dependencies exist (its errors are then plain
:class:`RuntimeError`; installed, they are :class:`~listing.errors.SparkSetupError`).

One source tree: ``java/io/`` holds the sources every line shares, ``java/shims/<folder>/`` the
few calls whose signatures differ (one ``SparkShim`` class per folder). A line's jar is the
shared sources plus its one shim folder, compiled against that line's own Spark: the Spark
artifacts from Maven Central (``java/shims/pom.xml``, resolved by ``mvn
dependency:build-classpath`` and cached by version), or, for the line pyspark is pinned to at
build time, that pyspark's jars. Invariant: every line here has a shim folder and a jar in the
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
    "sources",
]


@dataclass(frozen=True)
class SparkLine:
    """One Spark minor line: its shim folder and the Spark release its jar compiles against
    (``None``: the installed pyspark's own jars, for a line not on Maven Central)."""

    minor: str
    shims: str
    maven_version: str | None


LINES: tuple[SparkLine, ...] = (
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
    """The Java files ``line``'s jar compiles: the shared ones and its shim folder's."""
    shared = sorted((java_root / "io").rglob("*.java"))
    shims = sorted((java_root / "shims" / line.shims).rglob("*.java"))
    return shared + shims


def maven_classpath(java_root: Path, version: str, cache: Path) -> list[Path]:
    """The jars of Spark ``version`` (``spark-sql_2.13`` and what it depends on), resolved by
    Maven from ``java/shims/pom.xml`` into the local Maven repository; the resolved list is
    cached in ``cache`` keyed by the POM and version, and resolved again when a jar is gone."""
    pom = java_root / "shims" / "pom.xml"
    key = hashlib.sha256(pom.read_bytes() + version.encode()).hexdigest()[:12]
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
               f"-Dspark.version={version}", f"-Dmdep.outputFile={out}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not out.is_file():
            raise SparkClasspathError(f"resolving Spark {version}'s jars failed (exit "
                                      f"{proc.returncode}): {' '.join(cmd)}\n"
                                      f"{(proc.stdout + proc.stderr).strip()[-4000:]}")
        os.replace(out, listing)
    return [Path(p) for p in listing.read_text().split(os.pathsep) if p]
