"""The Java runtime Spark's driver needs, checked before Spark launches it.

Without it, PySpark fails late and vaguely (``JAVA_GATEWAY_EXITED``). :func:`require_java`
finds ``java`` where Spark's launcher (``bin/spark-class``) looks for it: ``$JAVA_HOME/bin/java``
when ``JAVA_HOME`` is set (a set but broken ``JAVA_HOME`` is not rescued by a ``java`` on
``PATH``: Spark would not use that one either), else ``java`` on ``PATH``; it runs
``java -version`` once and requires :data:`MINIMUM_JAVA` (the extension's jar is compiled
for it: ``javac --release 17``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from listing.errors import SparkSetupError

__all__ = ["MINIMUM_JAVA", "JavaMissingError", "find_java", "java_major", "require_java"]

#: the oldest Java the toolkit's Spark extension runs on (its jar targets Java 17)
MINIMUM_JAVA = 17

INSTALL_HINT = (
    f"install a Java {MINIMUM_JAVA} or later runtime (Debian/Ubuntu: `sudo apt-get install "
    f"openjdk-{MINIMUM_JAVA}-jre-headless`; macOS: `brew install openjdk@{MINIMUM_JAVA}`; "
    f"conda: `conda install -c conda-forge openjdk={MINIMUM_JAVA}`) and put its `bin` on "
    "PATH or set JAVA_HOME to its home folder")

_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?')


class JavaMissingError(SparkSetupError):
    """Spark's driver cannot start: no ``java`` where Spark looks for it, a ``JAVA_HOME``
    that holds none, or one that does not run or is older than :data:`MINIMUM_JAVA`.
    Names where it looked and how to install one."""


def find_java(env: dict[str, str] | None = None) -> tuple[Path | None, str]:
    """The ``java`` Spark's launcher would run under ``env`` (default: this process's
    environment) and where it was looked for; ``None`` when there is none there."""
    env = dict(os.environ) if env is None else env
    home = env.get("JAVA_HOME", "").strip()
    if home:
        java = Path(home) / "bin" / "java"
        where = f"JAVA_HOME={home} (so {java})"
        return (java if java.is_file() and os.access(java, os.X_OK) else None), where
    found = shutil.which("java", path=env.get("PATH", ""))
    return (Path(found) if found else None), "`java` on PATH (JAVA_HOME is not set)"


def java_major(version_output: str) -> int | None:
    """The major version ``java -version`` printed (``1.8.0_392`` is 8), or None."""
    m = _VERSION.search(version_output)
    if m is None:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def require_java(env: dict[str, str] | None = None) -> Path | None:
    """The ``java`` Spark will launch (see the module), checked to run and to be Java
    :data:`MINIMUM_JAVA` or later; else :class:`JavaMissingError` saying what is wrong
    and how to install one. Runs ``java -version`` once (well under a second). None,
    without looking, under ``spark-submit``: PySpark then joins the JVM that launched it
    (``PYSPARK_GATEWAY_PORT``) and starts none."""
    if (os.environ if env is None else env).get("PYSPARK_GATEWAY_PORT"):
        return None
    java, where = find_java(env)
    if java is None:
        raise JavaMissingError(f"Spark needs Java, and there is none at {where}: {INSTALL_HINT}")
    try:
        proc = subprocess.run([str(java), "-version"], capture_output=True, text=True,
                              timeout=60, check=False, env=env)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise JavaMissingError(f"Spark needs Java, and {java} (from {where}) does not run: "
                               f"{err}; {INSTALL_HINT}") from None
    output = (proc.stderr + proc.stdout).strip()
    major = java_major(output)
    if proc.returncode != 0 or major is None:
        first = output.splitlines()[0] if output else f"exit status {proc.returncode}"
        raise JavaMissingError(f"Spark needs Java, and `{java} -version` (from {where}) "
                               f"failed: {first}; {INSTALL_HINT}")
    if major < MINIMUM_JAVA:
        raise JavaMissingError(f"Spark needs Java {MINIMUM_JAVA} or later, and {java} (from "
                               f"{where}) is Java {major}: {INSTALL_HINT}")
    return java
