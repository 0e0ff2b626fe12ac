"""The options of one ``spark.read.format("listing")`` call, parsed and checked:
:class:`SourceConfig`."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pyarrow as pa

from listing import formats
from listing.errors import OptionError
from listing.expressions import Compare, Expr, IsNull, Or, conjunction
from listing.hive import DEFAULT_PARTITION_NAME, unescape_path_name
from listing.options import ListingOptions
from listing.spark.dataframe import TableSpec
from listing.spark.option_values import SPARK_FORMAT_NAMES, json_object, storage_value
from listing.storage import redact
from listing.table import ListingTable

#: Spark's camel-case option names, as they arrive (lower-cased), mapped to ours.
SPARK_NAMES = {
    "pathglobfilter": "path_glob_filter", "modifiedbefore": "modified_before",
    "modifiedafter": "modified_after", "ignoremissingfiles": "ignore_missing_files",
    "ignorecorruptfiles": "ignore_corrupt_files", "maxpartitionbytes": "max_partition_bytes",
    "opencostinbytes": "open_cost_in_bytes", "minpartitions": "min_partitions",
}
#: table properties Spark's catalog adds when it calls the source for CREATE TABLE
CATALOG_KEYS = {"location", "owner", "provider", "comment", "external", "is_managed_location",
                "collation"}
SOURCE_OPTIONS = {"path", "paths", "format", "partition_cols", "storage_options", "where",
                  "limit", "table_spec", "basepath", "engine"}
#: options only ``spark.readStream`` takes (listing.spark.stream_reader), Spark's names too
STREAM_OPTIONS = {"max_files_per_trigger": "max_files_per_trigger",
                  "maxfilespertrigger": "max_files_per_trigger",
                  "max_bytes_per_trigger": "max_bytes_per_trigger",
                  "maxbytespertrigger": "max_bytes_per_trigger",
                  "lookback": "lookback", "reconcile_every": "reconcile_every",
                  "starting": "starting", "max_file_age": "max_file_age",
                  "maxfileage": "max_file_age"}
#: who reads the files: Spark's own readers where its JVM can (native), ours (python)
ENGINES = ("auto", "python", "native")
#: options only a write takes (listing.spark.writer): the source's reading config ignores them
WRITE_ONLY = {"partition_by", "partitionby", "partition_overwrite_mode",
              "partitionoverwritemode", "max_records_per_file", "maxrecordsperfile",
              "compression", "__partition_columns"}


@dataclasses.dataclass(repr=False)
class SourceConfig:
    """Validated options of one ``spark.read.format("listing")`` call."""

    url: str
    format: str  # a registry name: options never name code
    storage_options: dict[str, Any]
    partition_cols: list[tuple[str, Any]] | None
    listing_options: dict[str, Any]
    format_options: dict[str, Any]
    where: list[Any] | None = None
    limit: int | None = None
    table_schema: pa.Schema | None = None
    engine: str = "auto"
    stream_options: dict[str, str] = dataclasses.field(default_factory=dict)
    column_bytes: dict[str, int] | None = None  # to_spark's: the driver's sampled footer
    filesystem: str | None = None  # to_spark's: a token of the source class's filesystems

    def __repr__(self) -> str:
        return (f"SourceConfig(url={self.url!r}, format={self.format!r}, "
                f"storage_options={redact(self.storage_options)!r}, "
                f"partition_cols={self.partition_cols!r}, "
                f"listing_options={self.listing_options!r}, "
                f"format_options={redact(self.format_options)!r})")

    @classmethod
    def parse(cls, options: dict[str, str]) -> SourceConfig:
        opts = {k.lower(): v for k, v in options.items()}
        for key in [k for k in opts if k.startswith("option.")]:  # catalog copies of options
            opts.setdefault(key[len("option."):], opts.pop(key))
        if not opts.get("path") and opts.get("location"):
            opts["path"] = opts["location"]
        for key in CATALOG_KEYS:
            opts.pop(key, None)
        several = _json_list("paths", opts["paths"]) if opts.get("paths") else []
        if len(several) > 1 and not opts.get("basepath"):
            raise OptionError(
                f"the listing source reads one table root, got several paths {several}; give "
                "basePath when they are partition folders of one table, load their common "
                "root (with a 'where' on its partition columns), or union one DataFrame per "
                "root")
        if len(several) > 1:  # partition folders of one table: its root, and their union
            opts["path"] = opts["basepath"]
        if opts.get("recursivefilelookup", "false").strip().lower() not in ("false", "0"):
            raise OptionError("recursiveFileLookup is not supported: the listing source "
                              "reads Hive-partitioned tables and infers their partitions")
        opts.pop("recursivefilelookup", None)
        url = opts.get("path")
        if not url:
            raise OptionError("the listing source needs a path: .load('s3://bucket/prefix/') or "
                              ".option('path', …)")
        where: list[Any] = [opts["where"]] if opts.get("where") else []
        if len(several) > 1:
            where.append(_union_under_base_path(several, opts["basepath"]))
        elif opts.get("basepath"):  # Spark's basePath: a partition folder read as the table
            url, implied = _under_base_path(url, opts["basepath"])
            where += implied
        storage: dict[str, Any] = {}
        if "storage_options" in opts:
            storage.update(json_object("storage_options", opts["storage_options"]))
        listing: dict[str, Any] = {}
        fmt_opts: dict[str, Any] = {}
        stream: dict[str, str] = {}
        for key, value in opts.items():
            if key in STREAM_OPTIONS:
                stream[STREAM_OPTIONS[key]] = value
            elif key.startswith("storage."):
                storage[key[len("storage."):]] = storage_value(value)
            elif key in SOURCE_OPTIONS or key in WRITE_ONLY:
                continue
            elif SPARK_NAMES.get(key, key) in ListingOptions.names():
                listing[SPARK_NAMES.get(key, key)] = value
            else:
                fmt_opts[SPARK_FORMAT_NAMES.get(key, key)] = value
        fmt = opts.get("format", "parquet")
        cols: list[Any] | None = _partition_cols(opts.get("partition_cols"))
        schema, sizes, filesystem = None, None, None
        if "table_spec" in opts:  # written by ListingTable.to_spark: data, never code
            spec = TableSpec.parse(opts["table_spec"])
            fmt, cols, schema = spec.format, list(spec.partition_cols), spec.schema
            sizes, filesystem = spec.column_bytes, spec.filesystem
            fmt_opts = {**spec.format_options, **fmt_opts}
            where += spec.where
        limit = None
        if opts.get("limit"):
            try:
                limit = int(opts["limit"])
            except ValueError:
                raise OptionError(f"option limit={opts['limit']!r} is not an integer") from None
        _check_format_options(fmt, fmt_opts)
        engine = opts.get("engine", "auto").strip().lower()
        if engine not in ENGINES:
            raise OptionError(f"option engine={opts['engine']!r}: expected one of "
                              f"{', '.join(ENGINES)}")
        return cls(url, fmt, storage, cols, listing, fmt_opts, where or None, limit, schema,
                   engine, stream, sizes, filesystem)

    def open(self, data_schema: pa.Schema | None = None,
             filesystems: dict[str, Any] | None = None) -> ListingTable:
        """The table these options name; ``filesystems``: the callers' own filesystems a
        ``to_spark`` spec may name by token (shipped on the source class)."""
        factory = None
        if self.filesystem is not None:
            factory = (filesystems or {}).get(self.filesystem)
            if factory is None:
                raise OptionError("option table_spec names a filesystem this session's "
                                  "listing_table source does not carry")
        table = ListingTable.open(self.url, format=self.format,
                                  storage_options=self.storage_options, filesystem=factory,
                                  partition_cols=self.partition_cols,
                                  schema=data_schema if data_schema is not None
                                  else self.table_schema,
                                  **self.listing_options, **self.format_options)
        if table.column_bytes is None:
            table.column_bytes = self.column_bytes
        return table


def _check_format_options(fmt: str, given: dict[str, Any]) -> None:
    """Unknown option names fail here, listing every name the source and the format take
    (the format's own check knows only its names)."""
    known = set(formats.get(fmt).option_defaults)
    unknown = sorted(set(given) - known)
    if unknown:
        source = sorted(SOURCE_OPTIONS - {"table_spec", "paths", "basepath"}
                        | {"basePath", "storage.<name>"}
                        | {v for v in STREAM_OPTIONS.values()})
        listing = sorted(ListingOptions.names())
        spark = sorted({*SPARK_NAMES, *SPARK_FORMAT_NAMES})
        raise OptionError(
            f"unknown option(s) {', '.join(unknown)} for the listing source with format "
            f"{fmt!r}. Source options: {', '.join(source)}; listing options: "
            f"{', '.join(listing)} (Spark's names too: {', '.join(spark)}); {fmt} options: "
            f"{', '.join(sorted(known)) or 'none'}")


def _json_list(name: str, value: str) -> list[Any]:
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return [value]
    return parsed if isinstance(parsed, list) else [parsed]


def _under_base_path(path: str, base: str) -> tuple[str, list[Expr]]:
    """``(base, filters)`` for a partition folder ``path`` below ``base``: its ``k=v``
    segments become equality filters, so the folder's columns stay in the table (as with
    Spark's basePath) and the listing reads only that folder."""
    root, below = base.rstrip("/"), path.rstrip("/")
    if below != root and not below.startswith(root + "/"):
        raise OptionError(f"path {path!r} is not below basePath {base!r}")
    filters: list[Expr] = []
    for segment in below[len(root):].strip("/").split("/") if below != root else []:
        name, sep, raw = segment.partition("=")
        if not sep or not name:
            raise OptionError(f"path {path!r} below basePath {base!r} must be partition "
                              f"folders (name=value), not {segment!r}")
        column = unescape_path_name(name)
        filters.append(IsNull(column) if raw == DEFAULT_PARTITION_NAME
                       else Compare(column, "=", unescape_path_name(raw)))
    return base, filters


def _union_under_base_path(paths: list[str], base: str) -> Expr:
    """The filter that reads exactly the partition folders ``paths`` below ``base`` (each
    as :func:`_under_base_path`): the OR of their equalities, which the planner lists as
    one prefix per folder. The same folder twice, or one inside another, is an error
    (Spark would read its files twice)."""
    folders = [p.rstrip("/") for p in paths]
    for i, a in enumerate(folders):
        for b in folders[i + 1:]:
            if a == b or a.startswith(b + "/") or b.startswith(a + "/"):
                raise OptionError(f"paths {a!r} and {b!r} overlap: each file would be read "
                                  "twice; give each partition folder once")
    parts = [conjunction(_under_base_path(p, base)[1]) for p in folders]
    if any(part is None for part in parts):  # the base itself: the whole table
        raise OptionError(f"paths include basePath {base!r} itself, which holds the others: "
                          "give the partition folders, or only the base")
    return Or(tuple(part for part in parts if part is not None))


def _partition_cols(value: str | None) -> list[tuple[str, str | None]] | None:
    """``"date:date, region:string"`` or ``"date,region"`` (types inferred)."""
    if not value:
        return None
    out: list[tuple[str, str | None]] = []
    for item in value.split(","):
        name, _, type_ = item.strip().partition(":")
        if not name:
            raise OptionError(f"option partition_cols={value!r}: empty column name")
        out.append((name.strip(), type_.strip() or None))
    return out
