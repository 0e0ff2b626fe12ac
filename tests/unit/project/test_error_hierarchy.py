"""Every exception the toolkit defines or exports is a :class:`~listing.errors.ListingError`,
so ``except ListingError`` (and the CLI's one ``error: …`` line) covers all of them: found by
walking every module of ``listing`` and ``listing.formats``. The exceptions that are not are
listed here with why: signals caught where they are raised, never seen by a caller."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import listing
import listing.formats
from listing.errors import ListingError, SparkSetupError

#: exceptions outside ListingError on purpose, each caught inside the module that raises it
INTERNAL = {
    "listing.storage.errors.BodyCut": "raise_as turns it into a StorageError",
    "listing.storage.reading._NotAsListed": "the read turns it into a FileChangedError",
    "listing.storage.s3_pages._Declined": "the page is read by botocore instead",
    # the walk imports nothing of listing's: a worker process runs it on its own
    "listing.storage.local_walk.WalkError": "local_pages turns it into a StorageError",
}
#: the Spark setup errors, under SparkSetupError
SETUP = ("listing.spark.lines.UnsupportedSparkError", "listing.spark.lines.SparkClasspathError",
         "listing.spark.s3a.S3AFetchError", "listing.spark.extension.ExtensionBuildError",
         "listing.spark.extension.ExtensionVersionError", "listing.spark.javac.JavacError",
         "listing.spark.java_runtime.JavaMissingError")


def _modules() -> list[ModuleType]:
    """Every module of listing and listing.formats (not listing.testing: the test fixtures),
    imported (importing starts nothing: no JVM, no server)."""
    found = []
    for package in (listing, listing.formats):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if info.name.endswith("__main__") or info.name.startswith("listing.testing"):
                continue
            found.append(importlib.import_module(info.name))
    return [listing, listing.formats, *found]


def _exception_classes() -> dict[str, type]:
    """``module.Name`` of every exception class a module defines or names in ``__all__``."""
    classes: dict[str, type] = {}
    for module in MODULES:
        exported = set(getattr(module, "__all__", ()))
        for name, obj in vars(module).items():
            if not (inspect.isclass(obj) and issubclass(obj, BaseException)):
                continue
            if obj.__module__ == module.__name__ or name in exported:
                classes[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return classes


MODULES = _modules()
CLASSES = _exception_classes()


@pytest.mark.parametrize("name", sorted(set(CLASSES) - set(INTERNAL)))
def test_every_exception_is_a_listing_error(name: str) -> None:
    assert issubclass(CLASSES[name], ListingError), (
        f"{name} is not a ListingError: derive it from one (listing/errors.py), or list it "
        "in INTERNAL with why no caller sees it")


def test_the_walk_finds_what_it_must() -> None:
    """Positive control: the walk reaches the errors module, the write package, the Spark
    edge and the formats; every INTERNAL entry still exists and is still outside."""
    assert {"listing.errors.CommitError", "listing.write.manifest.ManifestRefusedError",
            "listing.storage.store.NotAPlainFile", *SETUP} <= CLASSES.keys()
    assert {"listing.formats.parquet", "listing.spark.s3a"} <= {m.__name__ for m in MODULES}
    for name in INTERNAL:
        assert name in CLASSES and not issubclass(CLASSES[name], ListingError), name


@pytest.mark.parametrize("name", SETUP)
def test_spark_setup_errors_share_one_base(name: str) -> None:
    """Catchable as SparkSetupError, and still as the RuntimeError they were before."""
    assert issubclass(CLASSES[name], SparkSetupError)
    assert issubclass(CLASSES[name], RuntimeError)


def test_build_loads_lines_and_javac_without_the_package() -> None:
    """The wheel build loads lines.py and javac.py by path with the standard library only
    (build_support/listing_build.py): there their errors fall back to RuntimeError."""
    spark_dir = Path(listing.__file__).parent / "spark"
    script = (
        "import importlib.util, sys\n"
        "for name in ('lines', 'javac'):\n"
        f"    path = {str(spark_dir)!r} + f'/{{name}}.py'\n"
        "    spec = importlib.util.spec_from_file_location(f'_listing_{name}', path)\n"
        "    module = importlib.util.module_from_spec(spec)\n"
        "    sys.modules[spec.name] = module\n"
        "    spec.loader.exec_module(module)\n"
        "    assert 'listing' not in sys.modules, name\n"
        "    print(name, module.SparkSetupError.__name__)\n")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", script], capture_output=True,
                         text=True, check=True).stdout
    assert out.split() == ["lines", "RuntimeError", "javac", "RuntimeError"]
