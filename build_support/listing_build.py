"""The wheel's build backend: setuptools, plus the listing Spark extension compiled in.

A wheel carries one jar per supported Spark line (``listing/spark/listing-extension-spark-
4.1.jar``, ..., see ``listing/spark/lines.py``), compiled by ``javac`` (a JDK is needed to
build the wheel, never to use it), each against its own Spark: the artifacts Maven resolves
from Maven Central (``mvn`` is needed to build), or for the newest line the jars of the
pyspark the build asks for (``get_requires_for_build_wheel``). :class:`BuildPy` compiles them
into the wheel's build directory.
Editable installs (a source checkout) skip it: there ``listing.spark.extension`` compiles the
sources on first use. Every other hook is setuptools' own.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import tomllib
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 - every other hook as setuptools has it
from setuptools.command.build_py import build_py as _build_py
from setuptools.warnings import InformationOnly

# setuptools' ten-line note on every editable install (`make` installs this checkout
# editable) that folders named like the package may take precedence during imports: here
# they are the package (listing/, and formats/ and fixtures/ mapped as listing.formats and
# listing.testing); pip printed it on every `make`. Only this informational note is muted.
warnings.filterwarnings("ignore", message="Editable installation", category=InformationOnly)

ROOT = Path(__file__).resolve().parents[1]


def _module(name: str) -> ModuleType:
    """``listing/spark/<name>.py`` on its own (the package's dependencies are not here)."""
    spec = importlib.util.spec_from_file_location(f"_listing_{name}",
                                                  ROOT / "listing" / "spark" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def spark_requirement() -> str:
    """The pyspark whose jars the lines not on Maven Central compile against: the newest
    line the project's pyspark dependency allows."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    found = [d for d in deps if re.match(r"pyspark\b(?!\[)", d)]
    if len(found) != 1:
        raise RuntimeError(f"expected one pyspark dependency in pyproject.toml, got {found}")
    local = [line.minor for line in _module("lines").LINES if line.maven_version is None]
    if not local:
        return found[0]
    major, minor = local[-1].split(".")
    return f"pyspark>={major}.{minor}.0,<{major}.{int(minor) + 1}"


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return [*_setuptools.get_requires_for_build_wheel(config_settings), spark_requirement()]


def _jdk_tool(name: str) -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / name).is_file():
        return str(Path(java_home) / "bin" / name)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"`{name}` not found: building the spark-listing wheel compiles its "
                           "Spark extension and needs a JDK 17 (e.g. apt-get install "
                           "openjdk-17-jdk-headless, or set JAVA_HOME)")
    return found


class BuildPy(_build_py):
    """setuptools' build_py, then the extension jar into ``listing/spark/`` of the build."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        import pyspark  # the build requirement: the newest line's jars

        javac, lines = _module("javac"), _module("lines")
        cache = Path(os.environ.get("LISTING_CACHE") or Path.home() / ".cache" / "spark-listing")
        for line in lines.LINES:
            if line.maven_version is None:
                if ".".join(pyspark.__version__.split(".")[:2]) != line.minor:
                    raise RuntimeError(f"the Spark {line.minor} jar compiles against pyspark "
                                       f"{line.minor}; the build has {pyspark.__version__}")
                version, classpath = pyspark.__version__, [Path(pyspark.__file__).parent / "jars"]
            else:
                version = line.maven_version
                classpath = lines.maven_classpath(ROOT / "java", version, cache, line.scala)
            target = Path(self.build_lib) / "listing" / "spark" / lines.jar_name(line)
            javac.compile_jar(lines.sources(ROOT / "java", line), classpath, version, target,
                              _jdk_tool("javac"), _jdk_tool("jar"),
                              lines.resources(ROOT / "java", line))
            self.announce(f"compiled {target} against Spark {version}", level=2)
