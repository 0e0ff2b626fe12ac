"""The readers compared in the listing benchmark, and the worker process that runs them.

Every reader runs in its own worker process (``python -m bench.peers``), never in the
process that hosts the moto server: client and server would otherwise share one GIL and
both would look slower. The parent sends one JSON command per line on stdin and reads
one JSON reply per line; it counts the S3 requests of each command from the server log,
and kills the worker when a command overruns its time limit.

Every reader is given the same facts: the data schema (id int64, amount double, name
string) and the partition columns with their types, so no reader needs a footer to plan
and the comparison is about listing. Two commands per measured run:

- ``plan``: from nothing (fresh filesystem / context objects) to the list of files the
  query will read. What that means per reader:

  - ``listing``: ``ListingTable.open(url, partition_cols=…, schema=…)`` (one sampled
    LIST page, plus a level-1 LIST when the sample does not hold the whole table) +
    ``table.scan(where=...)``;
  - ``pyarrow``: ``S3FileSystem(...)`` + ``ds.dataset(..., partitioning=hive schema,
    schema=…)`` (discovery lists the whole table) +
    ``list(dataset.get_fragments(filter=...))``;
  - ``polars``: ``pl.scan_parquet("s3://…/**/*.parquet", hive_partitioning=True,
    schema=…, hive_schema=…)`` + ``.filter(...)`` + ``.explain()`` (the glob is
    expanded and hive predicates prune sources: the printed plan names the kept files);
  - ``datafusion``: ``SessionContext`` with ``collect_statistics=false`` +
    ``register_object_store`` + ``register_listing_table(…, schema=…,
    table_partition_cols=…)`` + ``ctx.sql(...).execution_plan()`` (physical planning
    lists the files). ``CREATE EXTERNAL TABLE … PARTITIONED BY`` was measured to list
    the whole table once more when the table is created, and ``register_listing_table``
    without a schema reads the footer of every file, so neither is used;
  - ``datafusion+stats``: the same with DataFusion's default ``collect_statistics=true``,
    which reads the footer of every file that survives partition pruning while planning.

- ``read``: the result of that plan as Arrow, in this process (``plan.to_arrow()``,
  ``dataset.to_table(filter)``, ``LazyFrame.collect()``, executing every partition of
  the DataFusion physical plan), so "time to result" = plan + read, without listing twice.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

READERS = ("listing", "pyarrow", "polars", "datafusion", "datafusion+stats")

# --- the filter, one structure translated per reader ---------------------------------------


def _values(conj: dict[str, Any]) -> list[Any]:
    kind = conj["type"]
    if kind == "date":
        return [dt.date.fromisoformat(v) for v in conj["values"]]
    if kind == "int":
        return [int(v) for v in conj["values"]]
    return [str(v) for v in conj["values"]]


def _sql_literal(value: Any) -> str:
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def to_sql(conjuncts: list[dict[str, Any]]) -> str | None:
    """The filter as a SQL WHERE clause (ours and DataFusion parse the same text)."""
    parts = []
    for c in conjuncts:
        col, op, vals = c["col"], c["op"], [_sql_literal(v) for v in _values(c)]
        if op == "=":
            parts.append(f"{col} = {vals[0]}")
        elif op == "between":
            parts.append(f"{col} BETWEEN {vals[0]} AND {vals[1]}")
        elif op == "in":
            parts.append(f"{col} IN ({', '.join(vals)})")
        else:
            raise ValueError(f"unknown op {op!r}")
    return " AND ".join(parts) or None


def to_pyarrow(conjuncts: list[dict[str, Any]]) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    types = {"date": pa.date32(), "int": pa.int32(), "str": pa.string()}
    expr = None
    for c in conjuncts:
        field, vals = pc.field(c["col"]), _values(c)
        scalars = [pa.scalar(v, types[c["type"]]) for v in vals]
        if c["op"] == "=":
            e = field == scalars[0]
        elif c["op"] == "between":
            e = (field >= scalars[0]) & (field <= scalars[1])
        else:
            e = field.isin(pa.array(vals, types[c["type"]]))
        expr = e if expr is None else expr & e
    return expr


def to_polars(conjuncts: list[dict[str, Any]]) -> Any:
    import polars as pl

    expr = None
    for c in conjuncts:
        col, vals = pl.col(c["col"]), _values(c)
        if c["op"] == "=":
            e = col == vals[0]
        elif c["op"] == "between":
            e = col.is_between(vals[0], vals[1], closed="both")
        else:
            e = col.is_in(vals)
        expr = e if expr is None else expr & e
    return expr


# --- readers ---------------------------------------------------------------------------


@dataclass
class Planned:
    """What ``plan`` leaves behind for ``read``."""

    files: int | None
    read: Callable[[], int]
    extra: dict[str, Any]


def _pa_type(name: str) -> Any:
    import pyarrow as pa

    return {"date": pa.date32(), "int": pa.int32(), "str": pa.string(), "int64": pa.int64(),
            "float64": pa.float64(), "string": pa.string()}[name]


def _data_schema(table: dict[str, Any]) -> Any:
    import pyarrow as pa

    return pa.schema([(n, _pa_type(t)) for n, t in table["data_schema"]])


def plan_listing(table: dict[str, Any], conjuncts: list[dict[str, Any]]) -> Planned:
    from listing import ListingTable

    t0 = time.perf_counter()
    tab = ListingTable.open(table["url"], storage_options=table["storage_options"],
                            partition_cols=[(n, _pa_type(t)) for n, t in table["partitions"]],
                            schema=_data_schema(table))
    t1 = time.perf_counter()
    plan = tab.scan(where=to_sql(conjuncts))
    t2 = time.perf_counter()
    extra = {"open_s": t1 - t0, "scan_s": t2 - t1,
             "open_list": tab.open_metrics["list_requests"],
             "open_get": tab.open_metrics["data_files_opened"],
             "scan_list": plan.metrics["list_requests"],
             "listing_plan": plan.listing_plan[:3]}
    return Planned(len(plan.files), lambda: plan.to_arrow().num_rows, extra)


def plan_pyarrow(table: dict[str, Any], conjuncts: list[dict[str, Any]]) -> Planned:
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    opts = table["storage_options"]
    fs = pafs.S3FileSystem(endpoint_override=opts["endpoint_url"].split("//", 1)[1],
                           scheme="http", access_key=opts["key"], secret_key=opts["secret"],
                           region=opts["client_kwargs"]["region_name"])
    part = ds.partitioning(pa.schema([(n, _pa_type(t)) for n, t in table["partitions"]]),
                           flavor="hive")
    schema = pa.schema(list(_data_schema(table)) + [(n, _pa_type(t))
                                                    for n, t in table["partitions"]])
    dataset = ds.dataset(table["url"].removeprefix("s3://"), format="parquet",
                         partitioning=part, filesystem=fs, schema=schema)
    expr = to_pyarrow(conjuncts)
    files = len(list(dataset.get_fragments(filter=expr)))
    return Planned(files, lambda: dataset.to_table(filter=expr).num_rows, {})


def _polars_options(opts: dict[str, Any]) -> dict[str, str]:
    return {"aws_endpoint_url": opts["endpoint_url"], "aws_allow_http": "true",
            "aws_access_key_id": opts["key"], "aws_secret_access_key": opts["secret"],
            "aws_region": opts["client_kwargs"]["region_name"]}


def plan_polars(table: dict[str, Any], conjuncts: list[dict[str, Any]]) -> Planned:
    import polars as pl

    types = {"date": pl.Date, "int": pl.Int32, "str": pl.String, "int64": pl.Int64,
             "float64": pl.Float64, "string": pl.String}
    lf = pl.scan_parquet(table["url"] + "**/*.parquet", hive_partitioning=True,
                         schema={n: types[t] for n, t in table["data_schema"]},
                         hive_schema={n: types[t] for n, t in table["partitions"]},
                         storage_options=_polars_options(table["storage_options"]))
    expr = to_polars(conjuncts)
    if expr is not None:
        lf = lf.filter(expr)
    text = lf.explain()
    return Planned(_polars_files(text), lambda: lf.collect().height, {})


def _polars_files(explain: str) -> int | None:
    """Sources named by the SCAN line: ``[first, ... N other sources]`` or ``[]``."""
    m = re.search(r"SCAN \[(.*?)\]", explain)
    if m is None:
        return None
    inner = m.group(1).strip()
    if not inner:
        return 0
    more = re.search(r"\.\.\. (\d+) other (?:sources|files)", inner)
    return 1 + int(more.group(1)) if more else inner.count(",") + 1


def plan_datafusion(table: dict[str, Any], conjuncts: list[dict[str, Any]],
                    statistics: bool = False) -> Planned:
    from datafusion import SessionConfig, SessionContext
    from datafusion.object_store import AmazonS3

    opts = table["storage_options"]
    bucket = table["url"].removeprefix("s3://").split("/", 1)[0]
    config = SessionConfig().set("datafusion.execution.collect_statistics",
                                 "true" if statistics else "false")
    ctx = SessionContext(config)
    store = AmazonS3(bucket_name=bucket, region=opts["client_kwargs"]["region_name"],
                     access_key_id=opts["key"], secret_access_key=opts["secret"],
                     endpoint=opts["endpoint_url"], allow_http=True)
    ctx.register_object_store("s3://", store, bucket)
    # with a declared schema this sends no request; CREATE EXTERNAL TABLE lists the whole
    # table once more, and register_listing_table without a schema reads every footer
    ctx.register_listing_table("t", table["url"], schema=_data_schema(table),
                               table_partition_cols=[(n, _pa_type(t))
                                                     for n, t in table["partitions"]])
    where = to_sql(conjuncts)
    df = ctx.sql("SELECT * FROM t" + (f" WHERE {where}" if where else ""))
    physical = df.execution_plan()
    text = physical.display_indent()

    def read() -> int:
        rows = 0
        for i in range(physical.partition_count):
            for batch in ctx.execute(physical, i):
                rows += batch.to_pyarrow().num_rows
        return rows

    return Planned(_datafusion_files(text), read, {"plan_head": text.splitlines()[:2]})


def _datafusion_files(text: str) -> int | None:
    """Files in a DataSourceExec line: ``file_groups={N groups: [[a, b], [c, ...]]}``;
    None when DataFusion elides part of the list."""
    if "EmptyExec" in text and "DataSourceExec" not in text:
        return 0
    m = re.search(r"file_groups=\{\d+ groups?: (\[.*?\]\])\}", text)
    if m is None:
        return None
    inner = m.group(1)
    if "..." in inner:
        return None
    return len([p for p in re.split(r"[\[\],]\s*", inner) if p.strip()])


PLANNERS: dict[str, Callable[[dict[str, Any], list[dict[str, Any]]], Planned]] = {
    "listing": plan_listing,
    "pyarrow": plan_pyarrow,
    "polars": plan_polars,
    "datafusion": plan_datafusion,
    "datafusion+stats": lambda t, c: plan_datafusion(t, c, statistics=True),
}


# --- the worker loop ----------------------------------------------------------------------


def serve(reader: str) -> None:
    """Answer commands on stdin until ``quit``; replies go to the original stdout, and
    anything a library prints goes to stderr, so it cannot corrupt the protocol."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    planner = PLANNERS[reader]
    state: Planned | None = None
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        if op == "quit":
            break
        try:
            t0 = time.perf_counter()
            if op == "plan":
                state = None
                state = planner(cmd["table"], cmd["conjuncts"])
                reply = {"ok": True, "seconds": time.perf_counter() - t0, "files": state.files,
                         "extra": state.extra}
            elif op == "read":
                if state is None:
                    raise RuntimeError("read without a successful plan")
                rows = state.read()
                reply = {"ok": True, "seconds": time.perf_counter() - t0, "rows": rows}
            else:
                raise ValueError(f"unknown op {op!r}")
        except Exception as err:  # noqa: BLE001 - reported to the parent, which records it
            traceback.print_exc()
            reply = {"ok": False, "error": f"{type(err).__name__}: {err}"[:500]}
        out.write(json.dumps(reply, default=str) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in PLANNERS:
        print(f"usage: python -m bench.peers {{{'|'.join(PLANNERS)}}}  (a worker: JSON "
              "commands on stdin)", file=sys.stderr)
        return 2
    serve(args[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
