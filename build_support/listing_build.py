"""The wheel's build backend: setuptools, plus the listing Spark extension compiled in.

A wheel carries ``listing/spark/listing-extension.jar``, compiled by ``javac`` (a JDK is
needed to build the wheel, never to use it) against the jars of the pyspark the project
depends on: building a wheel asks for that pyspark (``get_requires_for_build_wheel``), and
:class:`BuildPy` compiles the sources in ``java/`` into the wheel's build directory.
Editable installs (a source checkout) skip it: there ``listing.spark.extension`` compiles the
sources on first use. Every other hook is setuptools' own.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
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


def _javac_module() -> ModuleType:
    """``listing/spark/javac.py`` on its own (the package's dependencies are not here)."""
    spec = importlib.util.spec_from_file_location("_listing_javac",
                                                  ROOT / "listing" / "spark" / "javac.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def spark_requirement() -> str:
    """The project's pyspark dependency, as pyproject.toml declares it."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    found = [d for d in deps if re.match(r"pyspark\b(?!\[)", d)]
    if len(found) != 1:
        raise RuntimeError(f"expected one pyspark dependency in pyproject.toml, got {found}")
    return found[0]


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
        import pyspark  # the build requirement: the pinned Spark's jars

        javac = _javac_module()
        target = Path(self.build_lib) / "listing" / "spark" / javac.JAR_NAME
        javac.compile_jar(ROOT / "java", Path(pyspark.__file__).parent / "jars",
                          pyspark.__version__, target, _jdk_tool("javac"), _jdk_tool("jar"))
        self.announce(f"compiled {target} against pyspark {pyspark.__version__}", level=2)
