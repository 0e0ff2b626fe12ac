"""The built wheel, installed into a fresh virtualenv, next to a user project that has its
own ``fixtures`` and ``formats`` packages.

An editable install hides packaging mistakes (it maps the source folders wherever they
are), so this builds a real wheel from a copy of the repository, installs it into a new
venv and runs pytest there. The new venv sees the dev venv's site-packages through a
``.pth`` line, so pyspark, pyarrow, moto... are not installed again; a plain path line in
a ``.pth`` file only extends ``sys.path`` (``.pth`` files inside that directory, such as
the editable install's finder hook, are not processed), so the project itself is visible
in the new venv only as the installed wheel. Everything here runs in subprocesses: this
module does not import ``listing``.
"""

from __future__ import annotations

import ast
import configparser
import email.parser
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import tomllib
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]

# source folder in the repository -> where its files must land in the wheel
SOURCE_DIRS = {"listing": "listing", "formats": "listing/formats", "fixtures": "listing/testing"}
# files of those folders that must ship (anything else there is not package content)
SHIPPED_SUFFIXES = (".py", ".pyi", ".typed")
REQUIRED_IN_WHEEL = (
    "listing/__init__.py",
    "listing/py.typed",
    "listing/formats/__init__.py",
    "listing/formats/parquet.py",
    "listing/formats/py.typed",
    "listing/testing/__init__.py",
    "listing/testing/pytest_plugin.py",
    "listing/testing/s3.py",
    "listing/testing/datasets.py",
    "listing/testing/py.typed",
    # the S3A connector's POMs (`python -m listing.spark.s3a`): Hadoop 3.4+ and Hadoop 3.3
    "listing/spark/connector/pom.xml",
    "listing/spark/connector/pom-hadoop-3.3.xml",
)
BUILD_TIMEOUT = 300
RUN_TIMEOUT = 300


@dataclass(frozen=True)
class Installed:
    tmp: Path
    version: str
    wheel: Path
    wheel_names: list[str] = field(repr=False)
    venv: Path
    python: Path
    pytest: Path
    site_packages: Path
    env: dict[str, str] = field(repr=False)


def _clean_env(venv: Path | None = None) -> dict[str, str]:
    """This process's environment without anything that would steer Python, pytest or
    botocore (PYTHONPATH, PYTHONSAFEPATH, PYTEST_ADDOPTS, AWS_PROFILE, ...), with moto's
    dummy credentials. pip's own settings (PIP_*) stay: they name the package index."""
    drop = ("PYTHON", "PYTEST_", "AWS_", "VIRTUAL_ENV", "CONDA_PREFIX", "__PYVENV_LAUNCHER__")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        PYTHONDONTWRITEBYTECODE="1",  # do not write __pycache__ into the dev venv
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true",
    )
    if venv is not None:
        env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", os.defpath)])
    return env


def _run(cmd: Sequence[str | Path], cwd: Path, env: dict[str, str], timeout: float = RUN_TIMEOUT,
         check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
    proc = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip
    if check and proc.returncode != 0:
        pytest.fail(
            f"command failed with exit code {proc.returncode}: {' '.join(map(str, cmd))}\n"
            f"cwd: {cwd}\n--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n"
            f"{proc.stderr[-6000:]}",
            pytrace=False,
        )
    return proc


def _base_python() -> Path:
    """The interpreter the dev venv was made from."""
    base = getattr(sys, "_base_executable", None)
    if base and Path(base).exists():
        return Path(base)
    return Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.fixture(scope="module")
def installed(built_wheel: Any) -> Iterator[Installed]:
    """One venv with the wheel (plus pytest's console script)."""
    tmp = Path(tempfile.mkdtemp(prefix="spark-listing-install-"))
    try:
        yield _install(tmp, built_wheel)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _install(tmp: Path, built: Any) -> Installed:
    env = _clean_env()

    project_version = tomllib.loads((built.src / "pyproject.toml").read_text())["project"][
        "version"]
    # setuptools' 40-line warning when a data folder looks like a package (the Java sources
    # once sat in listing/spark/java/): none, the build output stays readable
    assert "would be ignored" not in built.output
    wheels = [built.wheel]
    assert [w.name for w in wheels] == [f"spark_listing-{project_version}-py3-none-any.whl"]
    with zipfile.ZipFile(wheels[0]) as zf:
        wheel_names = zf.namelist()

    venv = tmp / "venv"
    _run([_base_python(), "-m", "venv", "--without-pip", venv], cwd=tmp, env=env)
    python = venv / "bin" / "python"
    site_packages = Path(
        _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
             cwd=tmp, env=env).stdout.strip()
    )  # fmt: skip
    dev_site = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site_packages / "dev-venv-site-packages.pth").write_text("".join(f"{p}\n" for p in dev_site))

    # pip itself comes from the dev site-packages; it installs into the running venv.
    # --ignore-installed: the dev venv's editable spark-listing and its pytest are visible
    # through the .pth and must neither satisfy the requirement nor be uninstalled.
    pip = [python, "-m", "pip", "install", "--no-deps", "--ignore-installed", "--no-compile"]
    _run([*pip, wheels[0]], cwd=tmp, env=env)
    # the console script `pytest` (same version as the dev venv's, from the package index)
    _run([*pip, f"pytest=={version('pytest')}"], cwd=tmp, env=env, timeout=BUILD_TIMEOUT)
    assert (venv / "bin" / "pytest").is_file()

    return Installed(tmp, project_version, wheels[0], wheel_names, venv, python,
                     venv / "bin" / "pytest", site_packages, _clean_env(venv))  # fmt: skip


# --- the wheel ---------------------------------------------------------------------------


def test_wheel_installs_one_top_level_package(installed: Installed) -> None:
    names = installed.wheel_names
    top = {name.split("/", 1)[0] for name in names}
    assert top == {"listing", f"spark_listing-{installed.version}.dist-info"}
    assert not [n for n in names if n.startswith(("fixtures/", "formats/"))]
    missing = [name for name in REQUIRED_IN_WHEEL if name not in names]
    assert not missing, f"missing from the wheel: {missing}"
    # the Spark extension ships compiled, one jar per Spark line, each against its own
    # Spark: no sources, no JDK needed
    assert not [n for n in names if n.endswith(".java")]
    jars = sorted(n for n in names if n.endswith(".jar"))
    assert jars == [f"listing/spark/listing-extension-spark-{minor}.jar"
                    for minor in ("3.5", "4.0", "4.1", "4.2", "4.3")]
    for name in jars:
        minor = name.rsplit("-", 1)[1].removesuffix(".jar")
        with zipfile.ZipFile(installed.wheel) as zf, zf.open(name) as jar, \
                zipfile.ZipFile(jar) as inner:
            manifest = inner.read("META-INF/MANIFEST.MF").decode()
            classes = inner.namelist()
        built_for = next(line.split(": ", 1)[1] for line in manifest.splitlines()
                         if line.startswith("Listing-Spark-Version: "))
        assert built_for.startswith(f"{minor}."), (name, built_for)
        assert "io/github/listing/ListingSparkExtensions.class" in classes
        assert "io/github/listing/SparkShim.class" in classes
        # the JVM `listing` source is 3.5's only: on Spark 4 the name is the Python source
        service = "META-INF/services/org.apache.spark.sql.sources.DataSourceRegister"
        assert (service in classes) == (minor == "3.5"), name

    with zipfile.ZipFile(installed.wheel) as zf:
        dist_info = f"spark_listing-{installed.version}.dist-info"
        assert zf.read(f"{dist_info}/top_level.txt").decode().split() == ["listing"]
        # the license the metadata names, as its text
        assert "Apache License" in zf.read(f"{dist_info}/licenses/LICENSE").decode()[:200]
        entry_points = configparser.ConfigParser()
        entry_points.read_string(zf.read(f"{dist_info}/entry_points.txt").decode())
    assert dict(entry_points["pytest11"]) == {"listing_s3": "listing.testing.pytest_plugin"}
    assert dict(entry_points["console_scripts"]) == {"listing": "listing.cli:main"}


def test_wheel_ships_every_source_file(installed: Installed) -> None:
    """Every module (and py.typed) under listing/, formats/ and fixtures/
    lands in the wheel at its mapped place: a subpackage missing from
    ``[tool.setuptools] packages`` in pyproject.toml shows up here by name."""
    expected = set()
    for folder, target in SOURCE_DIRS.items():
        for path in (ROOT / folder).rglob("*"):
            shipped = path.suffix in SHIPPED_SUFFIXES and "__pycache__" not in path.parts
            if shipped and path.is_file():
                expected.add(f"{target}/{path.relative_to(ROOT / folder).as_posix()}")
    missing = sorted(expected - set(installed.wheel_names))
    assert not missing, (
        f"in the source tree but not in the wheel: {missing} (is the subpackage listed in "
        "[tool.setuptools] packages / package-dir, and its data in package-data?)"
    )


def _imported_modules(folder: Path) -> set[str]:
    """Top-level names of every module the files under ``folder`` import (any depth)."""
    names = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"listing", "__future__"}


def test_every_import_is_a_declared_dependency(installed: Installed) -> None:
    """What the package imports comes with a plain install (the test fixtures' imports
    with the ``testing`` extra): e.g. numpy, which listing.write uses, is declared."""
    with zipfile.ZipFile(installed.wheel) as zf:
        meta = email.parser.Parser().parsestr(
            zf.read(f"spark_listing-{installed.version}.dist-info/METADATA").decode())
    declared: dict[str, set[str]] = {}
    connect: list[Requirement] = []
    for text in meta.get_all("Requires-Dist") or []:
        req = Requirement(text)
        extra = re.search(r"extra\s*==\s*[\"']([\w-]+)", str(req.marker or ""))
        declared.setdefault(extra.group(1) if extra else "", set()).add(
            canonicalize_name(req.name))
        if extra and extra.group(1) == "connect":
            connect.append(req)
    dists = importlib.metadata.packages_distributions()

    def undeclared(modules: set[str], allowed: set[str]) -> list[str]:
        return sorted(m for m in modules
                      if not {canonicalize_name(d) for d in dists.get(m, [m])} & allowed)

    core = declared[""]
    package = _imported_modules(ROOT / "listing") | _imported_modules(ROOT / "formats")
    assert "numpy" in package  # positive control: the scan sees listing.write's import
    assert undeclared(package, core) == []
    # the pytest plugin only loads under pytest; moto pulls werkzeug and boto3 botocore
    testing = core | declared["testing"] | {"pytest", "werkzeug", "botocore"}
    assert undeclared(_imported_modules(ROOT / "fixtures"), testing) == []
    # Spark Connect clients: pyspark's own connect extra (grpcio, ...) and pandas
    assert {(r.name, frozenset(r.extras)) for r in connect} >= {
        ("pyspark", frozenset({"connect"})), ("pandas", frozenset())}


# --- the installed package ---------------------------------------------------------------

_PROBE = """
import importlib, json, sys
out = {"imported": {}, "absent": {}}
for module in sys.argv[1:]:
    out["imported"][module] = importlib.import_module(module).__file__
for name in ("fixtures", "formats"):
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError:
        out["absent"][name] = True
    else:
        out["absent"][name] = module.__file__
print(json.dumps(out))
"""


def test_installed_package_comes_from_the_wheel(installed: Installed) -> None:
    """Import every module of the wheel in the new venv (from an empty directory): each
    resolves inside the venv, and there is no top-level ``fixtures`` or ``formats``."""
    modules = sorted(
        name[: -len(".py")].replace("/", ".").removesuffix(".__init__")
        for name in installed.wheel_names
        if name.endswith(".py")
    )
    assert "listing.testing.pytest_plugin" in modules
    empty = installed.tmp / "empty"
    empty.mkdir(exist_ok=True)
    proc = _run([installed.python, "-c", _PROBE, *modules], cwd=empty, env=installed.env)
    result = json.loads(proc.stdout.strip().splitlines()[-1])

    site = installed.site_packages.resolve()
    for module, file in result["imported"].items():
        path = Path(file).resolve()
        assert path.is_relative_to(site), f"{module} imported from {path}, not from {site}"
        assert not path.is_relative_to(ROOT), f"{module} imported from the repository"
    assert Path(result["imported"]["listing"]).resolve() == site / "listing" / "__init__.py"
    assert result["absent"] == {"fixtures": True, "formats": True}


# --- a user's pyspark stays as it is ------------------------------------------------------

#: the pyspark releases a user may hold (the first is what pip picks alone): the newest of
#: the range (4.3), of 4.0 and of 3.5 (EMR 7's 3.5.6, pinning py4j 0.10.9.7 exactly). 4.1 and
#: 4.2 declare the very dependencies 4.0 and 4.3 do (py4j >=0.10.9.7,<0.10.9.10), so pip
#: resolves them alike; .ci/test-spark installs the project beside each and fails when pip
#: replaced it.
USER_PYSPARKS = ("4.3.0", "4.0.5", "3.5.6")


def _pyspark_version(python: Path, env: dict[str, str], cwd: Path) -> str:
    return _run([python, "-c", "import pyspark; print(pyspark.__version__)"], cwd=cwd,
                env=env).stdout.strip()


def test_installing_the_wheel_keeps_the_user_s_pyspark(installed: Installed) -> None:
    """A user's virtualenv holding pyspark 3.5 or 4.0-4.3: ``pip install`` of the wheel (with its
    dependencies, as users run it, by the base interpreter's pip) leaves that pyspark as it
    is, and resolves without backtracking. Positive control: in a virtualenv without
    pyspark the same install brings the newest supported one."""
    tmp = installed.tmp / "users-pyspark"
    tmp.mkdir()
    env = _clean_env()
    venv = tmp / "venv"
    _run([_base_python(), "-m", "venv", venv], cwd=tmp, env=env)
    python = venv / "bin" / "python"
    pip = [python, "-m", "pip", "install", "--no-compile"]
    seen = {}
    for wanted in USER_PYSPARKS:
        if wanted != USER_PYSPARKS[0]:  # the user's own pyspark, installed before ours
            _run([python, "-m", "pip", "uninstall", "-y", "spark-listing"], cwd=tmp, env=env)
            _run([*pip, f"pyspark=={wanted}"], cwd=tmp, env=env, timeout=BUILD_TIMEOUT)
        out = _run([*pip, installed.wheel], cwd=tmp, env=env, timeout=BUILD_TIMEOUT)
        assert "looking at multiple versions" not in out.stdout + out.stderr  # no backtracking
        assert "Uninstalling pyspark" not in out.stdout, out.stdout
        seen[wanted] = _pyspark_version(python, env, tmp)
        _run([python, "-m", "pip", "check"], cwd=tmp, env=env)
    assert seen == {v: v for v in USER_PYSPARKS}


# --- a user project with its own `fixtures` and `formats` ---------------------------------

_USER_TESTS = """
import os
from pathlib import Path

import fixtures
import formats
from fixtures import WHO

import listing
import listing.testing.pytest_plugin as plugin

PROJECT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ["SPARK_LISTING_SITE_PACKAGES"]).resolve()


def test_own_packages():
    assert WHO == "user fixtures"
    assert formats.WHO == "user formats"
    assert Path(fixtures.__file__).resolve() == PROJECT / "fixtures" / "__init__.py"
    assert Path(formats.__file__).resolve() == PROJECT / "formats" / "__init__.py"
    assert Path(listing.__file__).resolve().is_relative_to(SITE)
    from listing.formats import parquet

    assert Path(parquet.__file__).resolve() == SITE / "listing" / "formats" / "parquet.py"


def test_s3_roundtrip(s3_server, s3_bucket, request):
    from listing import ListingTable
    from listing.testing import datasets

    # the fixtures come from the installed plugin, registered once, under the entry
    # point's name (an explicit pytest_plugins / -p spelling is then a no-op)
    assert Path(plugin.__file__).resolve().is_relative_to(SITE)
    registered = [n for n, p in request.config.pluginmanager.list_name_plugin() if p is plugin]
    assert registered == ["listing_s3"], registered

    root = f"s3://{s3_bucket}/events"
    ds = datasets.daily(root, s3_server.storage_options, days=4)
    assert ds.num_rows == 4 * 2 * 3 and len(ds.files) == 8
    table = ListingTable.open(root + "/", format="parquet",
                              storage_options=s3_server.storage_options)
    assert table.to_arrow().num_rows == ds.num_rows
    day = table.scan(where="date = '2025-01-02'").to_arrow()
    expected = sum(f.num_rows for f in ds.files if str(f.partition_values["date"]) == "2025-01-02")
    assert day.num_rows == expected == 6
    assert s3_server.log.count("LIST", bucket=s3_bucket) >= 1
"""

_ENTRY_POINT_CONFTEST = '''
"""The user's conftest: the S3 fixtures come from the installed entry point."""
'''

_EXPLICIT_CONFTEST = '''
"""The user's conftest, also naming the plugin explicitly."""

pytest_plugins = ["listing.testing.pytest_plugin"]
'''

OWN = "tests/test_user.py::test_own_packages"
S3 = "tests/test_user.py::test_s3_roundtrip"
LAUNCHERS = ["python -m pytest", "pytest"]


def _user_project(installed: Installed, conftest: str) -> Path:
    project = Path(tempfile.mkdtemp(prefix="user-project-", dir=installed.tmp))
    files = {
        "pytest.ini": "[pytest]\ntestpaths = tests\n",
        "conftest.py": conftest,
        "fixtures/__init__.py": 'WHO = "user fixtures"\n',
        "formats/__init__.py": 'WHO = "user formats"\n',
        "tests/test_user.py": _USER_TESTS,
    }
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(textwrap.dedent(text).lstrip())
    return project


@dataclass(frozen=True)
class PytestRun:
    returncode: int
    outcomes: dict[str, str]  # node id -> PASSED / FAILED / ERROR / SKIPPED ...
    summary: dict[str, int]  # the final line: {"passed": 2, "deselected": 1, ...}
    output: str = field(repr=False)


def _pytest(installed: Installed, project: Path, launcher: str, *args: str) -> PytestRun:
    cmd: list[str | Path] = (
        [installed.python, "-m", "pytest"] if launcher == "python -m pytest" else
        [installed.pytest]
    )  # fmt: skip
    env = {**installed.env, "SPARK_LISTING_SITE_PACKAGES": str(installed.site_packages)}
    proc = _run([*cmd, "-rA", "-p", "no:cacheprovider", *args], cwd=project, env=env,
                check=False)  # fmt: skip
    output = proc.stdout + proc.stderr
    outcomes = {
        m["node"]: m["outcome"]
        for m in re.finditer(
            r"^(?P<outcome>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (?P<node>\S+)",
            proc.stdout, re.MULTILINE,
        )
    }  # fmt: skip
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    summary = {
        word if word != "error" else "errors": int(n)
        for n, word in re.findall(r"(\d+) (\w+)", last)
        if word not in ("warning", "warnings")
    }
    return PytestRun(proc.returncode, outcomes, summary, output)


def _describe(run: PytestRun) -> str:
    return f"exit code {run.returncode}\n{run.output[-8000:]}"


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_user_project_keeps_its_own_packages(installed: Installed, launcher: str) -> None:
    """Both ways of starting pytest: `python -m pytest` puts the project directory first
    on sys.path (the old top-level `fixtures` made pytest abort loading the plugin);
    `pytest` does not (the old one then shadowed the user's `from fixtures import ...`)."""
    project = _user_project(installed, _ENTRY_POINT_CONFTEST)
    run = _pytest(installed, project, launcher)
    assert run.returncode == 0, _describe(run)
    assert run.outcomes == {OWN: "PASSED", S3: "PASSED"}, _describe(run)
    assert run.summary == {"passed": 2}, _describe(run)


def test_user_project_without_the_s3_plugin(installed: Installed) -> None:
    project = _user_project(installed, _ENTRY_POINT_CONFTEST)
    for args in (["-k", "own_packages"], ["-p", "no:listing_s3", "-k", "own_packages"]):
        run = _pytest(installed, project, "python -m pytest", *args)
        assert run.returncode == 0, f"{args}: {_describe(run)}"
        assert run.outcomes == {OWN: "PASSED"}, f"{args}: {_describe(run)}"
        assert run.summary == {"passed": 1, "deselected": 1}, f"{args}: {_describe(run)}"

    # with the entry point disabled, nothing else provides the S3 fixtures
    run = _pytest(installed, project, "python -m pytest", "-p", "no:listing_s3",
                  "-k", "s3_roundtrip")  # fmt: skip
    assert run.returncode == 1, _describe(run)
    assert run.outcomes == {S3: "ERROR"}, _describe(run)
    assert re.search(r"fixture 's3_(server|bucket)' not found", run.output), _describe(run)


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_explicit_pytest_plugins_alongside_entry_point(installed: Installed, launcher: str) -> None:
    project = _user_project(installed, _EXPLICIT_CONFTEST)
    run = _pytest(installed, project, launcher)
    assert run.returncode == 0, _describe(run)
    assert run.outcomes == {OWN: "PASSED", S3: "PASSED"}, _describe(run)
    assert run.summary == {"passed": 2}, _describe(run)
    assert "already registered" not in run.output, _describe(run)


def test_explicit_dash_p_alongside_entry_point(installed: Installed) -> None:
    project = _user_project(installed, _ENTRY_POINT_CONFTEST)
    run = _pytest(installed, project, "python -m pytest", "-p", "listing.testing.pytest_plugin",
                  "-k", "own_packages")  # fmt: skip
    assert run.returncode == 0, _describe(run)
    assert run.outcomes == {OWN: "PASSED"}, _describe(run)
    assert "already registered" not in run.output, _describe(run)


def test_editable_install_prints_no_setuptools_note(tmp_path: Path,
                                                    copy_repository: Any) -> None:
    """`make` installs the checkout editable: pip's output stays free of setuptools'
    'Editable installation … folders with the same name as your package' note."""
    env = _clean_env()
    src = copy_repository(tmp_path / "src")
    venv = tmp_path / "venv"
    _run([_base_python(), "-m", "venv", "--without-pip", venv], cwd=tmp_path, env=env)
    out = _run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install",
                "--no-deps", "--no-compile", "-e", src], cwd=tmp_path, env=env,
               timeout=BUILD_TIMEOUT)  # the dev venv's pip, as `make` upgrades pip first
    assert "Editable installation" not in out.stdout + out.stderr, out.stderr[-3000:]
    assert "Successfully installed spark-listing" in out.stdout
