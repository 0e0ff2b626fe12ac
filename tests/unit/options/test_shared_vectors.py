"""Rules Python and the JVM extension both apply, held to one set of cases (tests/vectors/).

Where the extension decides something itself (it sees Spark's raw options before any Python
runs), each rule's cases live once in ``tests/vectors/*.json`` with the expected answer: the
Python function is held to them here, and the Java method too, by compiling
``tests/java/io/github/listing/SharedVectors.java`` against the built extension jar and
running it (a JVM, no Spark session). The rest of what the JVM needs travels in the
registry JSON; the last test holds the Java sources to spelling none of it themselves.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from listing.errors import ListingError, OptionError, StorageConfigError
from listing.formats.csv import CsvFormat, CsvOptions
from listing.formats.text import strip_line
from listing.options import parse_char, registry, storage_options
from listing.spark import extension
from listing.spark.config import SourceConfig, registry_json
from listing.url import TableUrl

TESTS = Path(__file__).resolve().parents[2]
VECTORS = TESTS / "vectors"
JAVA_TEST = TESTS / "java" / "io" / "github" / "listing" / "SharedVectors.java"
JAVA_SOURCES = TESTS.parent / "java"


def cases(name: str) -> list[dict[str, Any]]:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))["cases"]


def _ids(name: str, key: str) -> list[str]:
    return [repr(c[key]) for c in cases(name)]


# --- Python's side ---------------------------------------------------------------------

@pytest.mark.parametrize("case", cases("catalog_copies.json"),
                         ids=_ids("catalog_copies.json", "options"))
def test_python_folds_catalog_copies_as_the_vectors_say(case: dict[str, Any]) -> None:
    config = SourceConfig.parse(case["options"])
    assert (config.url, config.format) == (case["path"], case["format"])


def _expected_root(root: str) -> str:
    return root.replace("{cwd}", os.getcwd()).replace("{home}", os.path.expanduser("~"))


@pytest.mark.parametrize("case", cases("table_paths.json"), ids=_ids("table_paths.json", "path"))
def test_python_parses_table_paths_as_the_vectors_say(case: dict[str, Any]) -> None:
    want = case["table"]
    if "error" in want:
        with pytest.raises(ListingError, match=want["error"]):
            TableUrl.parse(case["path"])
        return
    url = TableUrl.parse(case["path"])
    assert (url.protocol, url.root) == (want["protocol"], _expected_root(want["root"]))


@pytest.mark.parametrize("case", cases("table_paths.json"), ids=_ids("table_paths.json", "path"))
def test_spark_is_handed_the_location_python_reads(case: dict[str, Any]) -> None:
    """Where the JVM hands a path to Spark's reader, it names the root Python lists."""
    spark, table = case["spark"], case["table"]
    if spark is None:
        return
    assert "error" not in table
    spelled = spark.strip()
    if table["protocol"] == "s3":
        assert spelled.removeprefix("s3a://").rstrip("/") == table["root"]
    else:
        assert table["protocol"] == "file"
        below = spelled.removeprefix("file:").lstrip("/").rstrip("/")
        assert "/" + below == table["root"]


@pytest.mark.parametrize("case", cases("characters.json"), ids=_ids("characters.json", "value"))
def test_python_reads_character_options_as_the_vectors_say(case: dict[str, Any]) -> None:
    try:
        got = parse_char(case["value"], "delimiter", allow_none=True)
    except OptionError:
        got = None
    assert got == case["char"]


@pytest.mark.parametrize("case", cases("csv_headers.json"), ids=_ids("csv_headers.json", "line"))
def test_python_reads_csv_headers_as_the_vectors_say(case: dict[str, Any]) -> None:
    options = CsvOptions.parse(CsvFormat(delimiter=case["sep"], quote=case["quote"]).options)
    line = strip_line(case["line"].encode("utf-8"), first=True)
    assert options.split_fields(line) == case["fields"]


def python_typed(kind: str, value: Any) -> Any:
    """``value`` as Python types an option of ``kind`` that the JVM reads too: a storage
    option's (the allowlist's parse, through the one kind parser), or for a choice the
    registry's (``engine``); None where it is refused."""
    try:
        if kind == "choice":
            return registry.option("engine").parse(value)
        option = storage_options.StorageOption("option", kind, "")  # type: ignore[arg-type]
        return storage_options._value(option, value, "option", "s3://")  # noqa: SLF001
    except (OptionError, StorageConfigError):
        return None


@pytest.mark.parametrize("case", cases("option_values.json"),
                         ids=[f"{c['kind']}:{c['value']!r}" for c in cases("option_values.json")])
def test_python_types_option_values_as_the_vectors_say(case: dict[str, Any]) -> None:
    got = python_typed(case["kind"], case["value"])
    assert got == case["typed"] and type(got) is type(case["typed"]), got


def _kinds_the_jvm_reads() -> set[str]:
    """Every kind whose values the JVM extension reads (from the registry it is handed): the
    s3 options it maps to S3A, the options only whose false value hands off or that become
    Spark's own, and the source options it parses itself (limit, recursiveFileLookup,
    engine). A ``list`` (nullValue) is not parsed there: Spark takes its one value as is."""
    kinds = {o.kind for _, o in storage_options.leaves("s3") if o.s3a.use != "python"}
    kinds |= {o.kind for o in registry.OPTIONS if o.native in ("false_only", "spark")}
    kinds |= {registry.option(n).kind for n in ("limit", "recursivefilelookup", "engine")}
    return kinds - {"list"}


def test_the_vectors_cover_every_kind_the_jvm_reads() -> None:
    """A kind the JVM reads without vectors would let Java and Python disagree unseen:
    characters have their own file, every other kind cases in option_values.json."""
    covered = {c["kind"] for c in cases("option_values.json")} | {"char"}
    assert _kinds_the_jvm_reads() <= covered, _kinds_the_jvm_reads() - covered
    assert {"bool", "int", "duration", "url"} <= _kinds_the_jvm_reads()  # positive control


# --- the JVM's side --------------------------------------------------------------------

@pytest.fixture(scope="module")
def java_answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    """SharedVectors.java compiled against the extension jar and run on the vectors."""
    jar = extension.extension_jar()
    spark_jars = extension.pyspark_jars_dir()
    out = tmp_path_factory.mktemp("shared-vectors")
    classpath = os.pathsep.join([str(jar), str(spark_jars / "*")])
    javac = extension._jdk_tool("javac")  # noqa: SLF001 - the extension's own JDK lookup
    subprocess.run([javac, "--release", "17", "-nowarn", "-encoding", "UTF-8", "-cp",
                    classpath, "-d", str(out / "classes"), str(JAVA_TEST)],
                   check=True, capture_output=True, text=True)
    table = out / "registry.json"
    table.write_text(registry_json(), encoding="utf-8")
    java = str(Path(javac).with_name("java"))
    run = subprocess.run(
        [java, "-cp", os.pathsep.join([str(out / "classes"), classpath]),
         "io.github.listing.SharedVectors", str(table), str(VECTORS)],
        check=False, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    answers: dict[str, list[Any]] = json.loads(run.stdout.strip().splitlines()[-1])
    return answers


def test_java_folds_catalog_copies_as_the_vectors_say(java_answers: dict[str, Any]) -> None:
    want = [{"path": c["path"], "format": c["format"]} for c in cases("catalog_copies.json")]
    assert java_answers["catalog_copies"] == want


def test_java_hands_spark_the_paths_the_vectors_say(java_answers: dict[str, Any]) -> None:
    table = cases("table_paths.json")
    got = dict(zip([c["path"] for c in table], java_answers["table_paths"], strict=True))
    assert got == {c["path"]: c["spark"] for c in table}


def test_java_reads_character_options_as_the_vectors_say(java_answers: dict[str, Any]) -> None:
    table = cases("characters.json")
    got = dict(zip([c["value"] for c in table], java_answers["characters"], strict=True))
    assert got == {c["value"]: c["char"] for c in table}


def test_java_types_option_values_as_the_vectors_say(java_answers: dict[str, Any]) -> None:
    """The JVM reads each value as Python does (a double's integral value as a float)."""
    table = cases("option_values.json")
    got = [(c["kind"], c["value"], v) for c, v in
           zip(table, java_answers["option_values"], strict=True)]
    want = [(c["kind"], c["value"], c["typed"]) for c in table]
    assert [g for g, w in zip(got, want, strict=True) if g != w] == []
    assert set(java_answers["value_kinds"]) == {c["kind"] for c in table}


def test_java_reads_csv_headers_as_the_vectors_say(java_answers: dict[str, Any]) -> None:
    table = cases("csv_headers.json")
    got = dict(zip([c["line"] for c in table], java_answers["csv_headers"], strict=True))
    assert got == {c["line"]: c["fields"] for c in table}


# --- what the JVM reads from the registry, it spells nowhere ------------------------------

def _spelled(text: str) -> list[str]:
    """Java source text that spells a rule the registry JSON hands the JVM: a partition mark,
    the catalog-copy or storage prefix, or a test for a glob wildcard."""
    marks = [m.encode("unicode_escape").decode() for m in registry.PARTITION_MARKS.values()]
    visible = [m.strip("\x1e") for m in registry.PARTITION_MARKS.values() if m.strip("\x1e")]
    literals = re.findall(r'"(?:[^"\\\n]|\\.)*"', text)
    found = [s for s in literals
             if any(m.replace("\\x", "\\u00") in s or m in s for m in marks if m)
             or any(v in s for v in visible)
             or s in (f'"{registry.CATALOG_COPY_PREFIX}"', f'"{registry.STORAGE_PREFIX}"')]
    found += re.findall(r"0x1[eE]\b", text)
    found += re.findall(r"""\b(?:contains|indexOf)\(\s*["'](?:\\\\|[*?\[{])["']\s*\)""", text)
    return found


def test_no_java_source_spells_what_the_registry_hands_it() -> None:
    offending = {str(p.relative_to(JAVA_SOURCES)): found for p in sorted(
        JAVA_SOURCES.rglob("*.java")) if (found := _spelled(p.read_text(encoding="utf-8")))}
    assert offending == {}


def test_the_spelling_check_finds_each_former_copy() -> None:
    """Positive control: the lines the registry JSON replaced are each caught."""
    for line in ('static final String MARK = "\\u001elisting-scan:";',
                 'static final String MARK = "\\u001elisting-key:";',
                 "static final byte END = 0x1e;",
                 'if (p.contains("*") || p.contains("?")) {',
                 'String copy = "option.";'):
        assert _spelled(line), line
