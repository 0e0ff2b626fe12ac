"""The stale-pushdown guard against real Spark, with a toy Python data source.

Why: pyspark 4.3.0 caches a Python data source's planned read on the object shared by every
query on a DataFrame / temp view, so a pushed filter leaks into later or sibling scans (silent
data loss). Everything runs in one guarded session (``spark.sql.extensions`` is a static conf,
fixed when the JVM starts); the unguarded behaviour is shown by excluding the rule at runtime.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from listing.spark.compat import HAS_FILTER_PUSHDOWN

if not HAS_FILTER_PUSHDOWN:
    pytest.skip("Spark 4.0 pushes no filters into Python data sources, so the toy source's "
                "pushFilters cannot show the bug; the listing source's stale-pushdown cases on "
                "4.0 (its filters handed over as an option) are in test_spark_versions.py",
                allow_module_level=True)

from pyspark import cloudpickle  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql.datasource import (  # noqa: E402
    DataSource,
    DataSourceReader,
    EqualTo,
    Filter,
    InputPartition,
)

from listing.spark.extension import (  # noqa: E402
    EXTENSION_CLASS,
    GUARD_RULE_CLASS,
    ExtensionBuildError,
    build_extension_jar,
    extension_conf,
    is_guard_active,
)
from listing.spark.s3a import connector_jars

# Python workers cannot import this test module; ship the toy classes by value instead.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

TOY = "guard_toy"  # distinctive name: the suite may later share one session
PARTS = (0, 1, 2, 3)
ROWS_PER_PART = 10
TOTAL = len(PARTS) * ROWS_PER_PART

BASE_CONF = {
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


class ToyReader(DataSourceReader):
    """One partition per value of p; accepts ``p = v`` and prunes partitions to match.

    The accepted filter is not handed back, so Spark does not re-check it: a reader whose pruning
    leaks into another query returns wrong rows instead of being silently corrected.
    """

    def __init__(self) -> None:
        self.parts = list(PARTS)

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:  # noqa: N802 (Spark API)
        for f in filters:
            if isinstance(f, EqualTo) and f.attribute == ("p",):
                self.parts = [p for p in self.parts if p == f.value]
            else:
                yield f

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(p) for p in self.parts]

    def read(self, partition: InputPartition) -> Iterator[tuple[int, int]]:
        for i in range(ROWS_PER_PART):
            yield (partition.value, i)


class ToyDataSource(DataSource):
    """Four partitions (p = 0..3) of ten rows each, with partition-pruning filter push-down."""

    @classmethod
    def name(cls) -> str:
        return TOY

    def schema(self) -> str:
        return "p int, i int"

    def reader(self, schema: object) -> DataSourceReader:
        return ToyReader()


def make_session(conf: dict[str, str]) -> SparkSession:
    """A local[2] session with the toy source registered; ``conf`` adds static confs.

    When this session is the run's first, it launches the JVM every later session of the
    run shares, and a jar joins the driver's classpath only at launch: so it carries the
    S3A connector as ``listing.session()`` does (else the S3 tests that run after it find
    no S3A filesystem)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = SparkSession.builder.master("local[2]").appName("test_spark_guard")
    jars = [conf.get("spark.jars", ""), *(str(j) for j in connector_jars())]
    conf = {**conf, "spark.jars": ",".join(filter(None, jars))}
    for key, value in {**BASE_CONF, **conf}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.dataSource.register(ToyDataSource)
    return spark


def p_counts(df: DataFrame) -> dict[int, int]:
    """Rows per value of p: shows both how many rows came back and from which partitions."""
    return dict(Counter(row.p for row in df.select("p").collect()))


def stale_pushdown_scenario(spark: SparkSession) -> dict[str, object]:
    """The bug's two shapes: a later query and a sibling scan re-using a pushed-down reader."""
    df = spark.read.format(TOY).load()
    filtered = df.where("p = 1").count()
    unfiltered = df.count()
    union = p_counts(df.where("p = 1").union(df.where("p = 2")))
    return {"filtered": filtered, "unfiltered": unfiltered, "union": union}


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """The guarded session; stopped afterwards only if this fixture started it."""
    preexisting = SparkSession.getActiveSession()
    session = make_session(extension_conf(build_extension_jar()))
    if not is_guard_active(session):
        pytest.fail(
            "guard not installed: a Spark session was already running without "
            f"spark.sql.extensions={EXTENSION_CLASS}"
        )
    yield session
    if preexisting is None:
        session.stop()


@pytest.fixture
def toy(spark: SparkSession) -> DataFrame:
    return spark.read.format(TOY).load()


def test_unguarded_spark_reuses_pushed_down_reader(spark: SparkSession) -> None:
    """Documents the Spark 4.3.0 behaviour the guard exists for.

    The guard is switched off with the runtime conf ``spark.sql.optimizer.excludedRules`` (the
    extension installs nothing else), so vanilla Spark's code path runs in this same JVM and no
    second session is needed. If this starts failing, Spark fixed the bug and the guard may no
    longer be needed.
    """
    spark.conf.set("spark.sql.optimizer.excludedRules", GUARD_RULE_CLASS)
    try:
        assert not is_guard_active(spark)
        result = stale_pushdown_scenario(spark)
    finally:
        spark.conf.unset("spark.sql.optimizer.excludedRules")
    assert result["filtered"] == ROWS_PER_PART
    # Stale: the unfiltered count re-uses the p = 1 reader.
    assert result["unfiltered"] == ROWS_PER_PART, result
    # Within one query both scans read the last pushed reader (p = 2), twice.
    assert result["union"] == {2: 2 * ROWS_PER_PART}, result


def test_guard_rule_runs_right_before_v2_pushdown(spark: SparkSession) -> None:
    """The rule must see DataSourceV2Relation nodes before V2ScanRelationPushDown builds scans."""
    assert is_guard_active(spark)
    batches = spark._jsparkSession.sessionState().optimizer().batches().iterator()
    order: list[tuple[str, str]] = []
    while batches.hasNext():
        batch = batches.next()
        order.append((batch.name(), batch.rules().mkString(",")))
    guard_at = [i for i, (_, rules) in enumerate(order) if GUARD_RULE_CLASS in rules]
    pushdown_at = [i for i, (_, rules) in enumerate(order) if "V2ScanRelationPushDown" in rules]
    assert len(guard_at) == 1 and len(pushdown_at) == 1, order
    assert order[guard_at[0]][0] == "Pre CBO Rules"
    assert guard_at[0] < pushdown_at[0]


def _data_source_class(jvm_python_table: object) -> str:
    """Class of the private ``PythonTable.ds``, read through Java reflection."""
    field = jvm_python_table.getClass().getDeclaredField("ds")
    field.setAccessible(True)
    return field.get(jvm_python_table).getClass().getName()


def test_pushdown_runs_on_an_isolated_data_source(toy: DataFrame) -> None:
    """Push-down wrote to the rule's private copy, never to the DataFrame's shared one."""
    qe = toy.where("p = 1")._jdf.queryExecution()
    analyzed = qe.analyzed().collectLeaves().head()
    scan = qe.optimizedPlan().collectLeaves().head()
    assert scan.getClass().getSimpleName() == "DataSourceV2ScanRelation"
    assert "EqualTo(p,1)" in scan.scan().getMetaData().toString()
    assert _data_source_class(scan.relation().table()).endswith("$IsolatedPythonDataSourceV2")
    assert not _data_source_class(analyzed.table()).endswith("$IsolatedPythonDataSourceV2")


def test_guard_keeps_partition_pruning(toy: DataFrame) -> None:
    """The guard isolates readers; it must not stop the reader from pruning."""
    assert toy.where("p = 1").rdd.getNumPartitions() == 1
    assert toy.rdd.getNumPartitions() == len(PARTS)


def test_dataframe_filtered_then_unfiltered(spark: SparkSession) -> None:
    result = stale_pushdown_scenario(spark)
    assert result == {
        "filtered": ROWS_PER_PART,
        "unfiltered": TOTAL,
        "union": {1: ROWS_PER_PART, 2: ROWS_PER_PART},
    }


def test_temp_view_sql_with_then_without_where(spark: SparkSession) -> None:
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW guard_toy_view USING {TOY} OPTIONS (k 'v')")
    try:
        one = spark.sql("SELECT count(*) AS n FROM guard_toy_view WHERE p = 2").first()
        every = spark.sql("SELECT count(*) AS n FROM guard_toy_view").first()
        assert (one.n, every.n) == (ROWS_PER_PART, TOTAL)
        both = spark.sql(
            "SELECT p, count(*) AS n FROM (SELECT * FROM guard_toy_view WHERE p = 1 "
            "UNION ALL SELECT * FROM guard_toy_view WHERE p = 3) GROUP BY p"
        ).collect()
        assert {row.p: row.n for row in both} == {1: ROWS_PER_PART, 3: ROWS_PER_PART}
    finally:
        spark.catalog.dropTempView("guard_toy_view")


def test_unfiltered_then_filtered_then_other_filter(toy: DataFrame) -> None:
    assert p_counts(toy) == dict.fromkeys(PARTS, ROWS_PER_PART)
    assert p_counts(toy.where("p = 1")) == {1: ROWS_PER_PART}
    assert p_counts(toy.where("p = 3")) == {3: ROWS_PER_PART}
    assert toy.count() == TOTAL


def test_self_join_of_filtered_and_unfiltered_scans(toy: DataFrame) -> None:
    """Two scans of one relation in one plan: each must keep its own pushed filter."""
    joined = toy.where("p = 1").alias("a").join(toy.alias("b"), "i")
    # each of the 10 p=1 rows matches the 4 rows (one per partition) with the same i
    assert joined.count() == ROWS_PER_PART * len(PARTS)


def test_build_extension_jar_is_cached(spark: SparkSession) -> None:
    """The fixture already built the jar: a second call must reuse it, not recompile."""
    jar = build_extension_jar()
    before = jar.stat().st_mtime_ns
    assert build_extension_jar() == jar and jar.stat().st_mtime_ns == before
    assert extension_conf(jar)["spark.jars"] == str(jar.resolve())


def test_build_extension_jar_without_jdk_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ExtensionBuildError, match="openjdk-17-jdk-headless"):
        build_extension_jar(cache_dir=tmp_path / "cache")
