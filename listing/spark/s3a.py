"""Spark's S3A connector (``hadoop-aws`` and the AWS SDK it needs) for a local session.

pyspark ships the Hadoop client but not its S3 connector. A POM in ``connector/`` names the
connector: hadoop-aws at the Hadoop version of the installed pyspark's client (passed to
Maven) with the AWS SDK that Hadoop line is written against. ``pom.xml``, for Hadoop 3.4
and later (pyspark 4.x), takes the SDK v2 modules S3A uses under the SDK's BOM, nothing
pyspark already ships; ``pom-hadoop-3.3.xml``, for Hadoop 3.3 (pyspark 3.5.x, Hadoop
3.3.4), the SDK v1 bundle hadoop-aws declares. :func:`fetch` resolves the one for the
running pyspark's Hadoop with Maven into a cache folder, once per POM and Hadoop version.
``listing.session()`` puts the fetched jars on the classpath when they are there
(:func:`connector_jars`); nothing is downloaded when the package is imported or a session
starts. Clusters that have S3A already use theirs.

    python -m listing.spark.s3a          # fetch (needs `mvn` and Maven Central), print the folder

Invariant: a cache folder holds a complete set or is absent (the set is copied to a temporary
folder and renamed into place), and it is keyed by its POM's content, so a changed POM fetches
anew, and a pyspark of another Hadoop version its own.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from listing.errors import SparkSetupError
from listing.spark.extension import DEFAULT_CACHE_DIR, pyspark_jars_dir

__all__ = ["CONNECTOR_POM", "CONNECTOR_POM_HADOOP_33", "S3AFetchError", "cache_dir",
           "connector_jars", "connector_pom", "fetch"]

#: the connector for Hadoop 3.4 and later (AWS SDK v2)
CONNECTOR_POM = Path(__file__).parent / "connector" / "pom.xml"
#: the connector for Hadoop 3.3 (AWS SDK v1; pyspark 3.5.x bundles Hadoop 3.3.4)
CONNECTOR_POM_HADOOP_33 = Path(__file__).parent / "connector" / "pom-hadoop-3.3.xml"
#: environment variable naming another cache root (default ~/.cache/spark-listing)
CACHE_ENV = "LISTING_S3A_CACHE"
_MANIFEST = "jars.txt"  # written last: its presence means the set is complete


class S3AFetchError(SparkSetupError):
    """The connector could not be fetched: no ``mvn``, no network, or a jar clash."""


def hadoop_version() -> str:
    """The Hadoop version of the client pyspark ships (``hadoop-client-api-<v>.jar``)."""
    for jar in sorted(pyspark_jars_dir().glob("hadoop-client-api-*.jar")):
        return jar.name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    raise S3AFetchError(f"no hadoop-client-api jar in {pyspark_jars_dir()}")


def _release(version: str) -> tuple[int, ...]:
    """``3.3.4`` -> ``(3, 3, 4)`` (the leading numbers; a suffix such as ``-amzn-1`` ends it)."""
    return tuple(int(n) for n in re.findall(r"\d+", version.split("-", 1)[0])[:3])


def connector_pom(hadoop: str | None = None) -> Path:
    """The POM naming the connector for Hadoop ``hadoop`` (default: pyspark's): hadoop-aws
    3.4 and later use the AWS SDK v2 (:data:`CONNECTOR_POM`), 3.3 the SDK v1 bundle
    (:data:`CONNECTOR_POM_HADOOP_33`)."""
    release = _release(hadoop or hadoop_version())
    return CONNECTOR_POM_HADOOP_33 if release < (3, 4) else CONNECTOR_POM


def _pom_hadoop(pom: Path) -> str:
    """The Hadoop version a POM names (the one its pinned pyspark bundles)."""
    found = re.search(r"<hadoop.version>([^<]+)</hadoop.version>", pom.read_text())
    if found is None:
        raise S3AFetchError(f"{pom} names no <hadoop.version>")
    return found.group(1)


def cache_dir(root: Path | None = None) -> Path:
    """The folder the connector's jars live in, keyed by its POM's content and the Hadoop
    version (the key of the Hadoop version a POM names is the POM's alone)."""
    base = root or Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR)
    hadoop = hadoop_version()
    pom = connector_pom(hadoop)
    key = hashlib.sha256(pom.read_bytes()).hexdigest()[:12]
    return base / (f"s3a-{key}" if hadoop == _pom_hadoop(pom) else f"s3a-{key}-hadoop-{hadoop}")


def connector_jars(root: Path | None = None) -> list[Path]:
    """The fetched connector's jars, or ``[]`` when it was not fetched (never fetches)."""
    folder = cache_dir(root)
    manifest = folder / _MANIFEST
    if not manifest.is_file():
        return []
    jars = [folder / name for name in manifest.read_text().split()]
    return jars if all(j.is_file() for j in jars) else []


#: artifact names two projects share without sharing classes: the AWS SDK's
#: ``software.amazon.awssdk:annotations`` and JetBrains' ``annotations`` (pyspark 4.0)
_NOT_A_CLASH = {"annotations"}


def _artifact(jar: str) -> str:
    """``hadoop-client-api-3.5.0.jar`` -> ``hadoop-client-api`` (the name without version)."""
    return re.sub(r"-\d[\w.\-]*\.jar$", "", jar)


def fetch(root: Path | None = None, force: bool = False, quiet: bool = True) -> Path:
    """Resolve the connector with Maven into :func:`cache_dir` and return that folder.

    Refuses a set holding an artifact pyspark already ships (two versions of a class on one
    classpath): the POM's exclusions must cover it."""
    target = cache_dir(root)
    if connector_jars(root) and not force:
        return target
    pom = connector_pom()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise S3AFetchError("`mvn` not found, needed to fetch Spark's S3A connector from Maven "
                            "Central: apt-get install -y maven")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".s3a-", dir=target.parent) as tmp:
        staged = Path(tmp) / "jars"
        cmd = [mvn, "-B", *(["-q"] if quiet else []), "-f", str(pom),
               "dependency:copy-dependencies", "-DincludeScope=runtime",
               f"-Dhadoop.version={hadoop_version()}",
               f"-DoutputDirectory={staged}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise S3AFetchError(f"fetching Spark's S3A connector failed (exit "
                                f"{proc.returncode}): {' '.join(cmd)}\n"
                                f"{(proc.stdout + proc.stderr).strip()[-4000:]}")
        names = sorted(p.name for p in staged.glob("*.jar"))
        shipped = {_artifact(p.name) for p in pyspark_jars_dir().glob("*.jar")}
        clash = sorted(n for n in names if _artifact(n) in shipped - _NOT_A_CLASH)
        if clash:
            raise S3AFetchError(f"the S3A connector set holds jars pyspark already ships: "
                                f"{', '.join(clash)}; exclude them in {pom}")
        if not any(n.startswith("hadoop-aws-") for n in names):
            raise S3AFetchError(f"no hadoop-aws jar among {names}")
        (staged / _MANIFEST).write_text("\n".join(names) + "\n")
        if target.exists():
            shutil.rmtree(target)
        os.replace(staged, target)
    return target


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] not in ("fetch", "--force"):
        print("usage: python -m listing.spark.s3a [fetch] [--force]", file=sys.stderr)
        return 2
    try:
        folder = fetch(force="--force" in args)
    except S3AFetchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
