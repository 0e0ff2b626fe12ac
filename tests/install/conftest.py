"""The wheel the install tests install: built once a run, from a copy of the repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT = 300
# what a copy of the repository leaves out: the venv, VCS data, build output, caches
TOP_LEVEL_IGNORE = {".venv", ".git", "build", "dist", "spark-warehouse", ".lint", "site"}
ANYWHERE_IGNORE = shutil.ignore_patterns(
    "*.egg-info", "__pycache__", "*.pyc", ".pytest_cache", ".ruff_cache", ".mypy_cache",
    ".hypothesis",
)  # fmt: skip


@dataclass(frozen=True)
class Built:
    """The release wheel (``python -m build``: the sdist, then the wheel from the sdist) and
    what the build printed."""

    src: Path
    wheel: Path
    output: str


def _copy_ignore(directory: str, names: list[str]) -> set[str]:
    ignored = set(ANYWHERE_IGNORE(directory, names))
    if Path(directory) == ROOT:
        ignored |= TOP_LEVEL_IGNORE.intersection(names)
    return ignored


def _copy_repository(dest: Path) -> Path:
    """A copy of the repository without its venv, VCS data, build output and caches."""
    shutil.copytree(ROOT, dest, ignore=_copy_ignore)
    return dest


@pytest.fixture(scope="session")
def copy_repository() -> Callable[[Path], Path]:
    """Copies the repository to a folder (:func:`_copy_repository`)."""
    return _copy_repository


@pytest.fixture(scope="session")
def built_wheel() -> Iterator[Built]:
    """Built from a copy: building in the repository writes build/ and *.egg-info there, and
    setuptools reuses a stale build/lib (modules deleted since would still ship)."""
    tmp = Path(tempfile.mkdtemp(prefix="spark-listing-wheel-"))
    try:
        src = _copy_repository(tmp / "src")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTHON", "PYTEST_", "VIRTUAL_ENV"))}
        proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(tmp / "dist"),
                               str(src)], cwd=tmp, env=env, capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT, check=False)
        if proc.returncode != 0:
            pytest.fail(f"python -m build failed ({proc.returncode}):\n{proc.stdout[-6000:]}\n"
                        f"{proc.stderr[-6000:]}", pytrace=False)
        wheels = sorted((tmp / "dist").glob("*.whl"))
        assert len(wheels) == 1, wheels
        yield Built(src, wheels[0], proc.stdout + proc.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
