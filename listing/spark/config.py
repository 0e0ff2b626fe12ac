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
from listing.formats import FileFormat
from listing.hive import DEFAULT_PARTITION_NAME, unescape_path_name
from listing.options import ListingOptions, did_you_mean, registry
from listing.options.registry import CATALOG_COPY_PREFIX, STORAGE_PREFIX
from listing.redact import redact
from listing.spark.dataframe import TableSpec
from listing.spark.filters import FILTERS_OPTION, decode_filters
from listing.spark.option_values import json_object, storage_value
from listing.table import ListingTable
from listing.url import is_glob

#: the option naming which of a write's options the catalog table stored (set by the
#: extension's ListingCatalogOptions.java): those only reads take are not the write's
CATALOG_OPTIONS = "listing.catalog_options"

#: session conf the extension reads the option registry from (OptionRegistry.java); not a
#: ``spark.*`` name, which Spark would copy into every task's properties
REGISTRY_CONF = "listing.optionRegistry"


def registry_json() -> str:
    """The option registry as the JVM extension reads it: :func:`registry.as_json_data`
    plus the file extensions (no dot) of each format Spark also reads, unless a Python
    registration replaced that format (the extension then keeps it on our reader)."""
    data = registry.as_json_data()
    replaced = formats.registered()
    data["extensions"] = {name: [e.removeprefix(".") for e in
                                 formats.get(name).extension_endings]
                          for name in registry.NATIVE_FORMATS if name not in replaced}
    return json.dumps(data, separators=(",", ":"))


def hand_registry_to_jvm(spark: Any) -> None:
    """Put :func:`registry_json` in ``spark``'s conf, where the extension reads it (called
    wherever a listing source is registered on a session)."""
    spark.conf.set(REGISTRY_CONF, registry_json())


@dataclasses.dataclass(repr=False, kw_only=True)
class SourceConfig:
    """Validated options of one ``spark.read.format("listing")`` call, typed once here and
    handed to the table as they are: the listing options as :class:`ListingOptions`, the
    format's as the :class:`FileFormat` they configure (never merged into one set of
    keyword arguments the table would sort again)."""

    url: str
    format: str  # a registry name: options never name code
    #: the format named, with its options typed (FileFormat.option_defaults)
    file_format: FileFormat
    storage_options: dict[str, Any]
    partition_cols: list[tuple[str, Any]] | None
    listing_options: ListingOptions
    where: list[Any] | None = None
    limit: int | None = None
    table_schema: pa.Schema | None = None
    engine: str = "auto"
    stream_options: dict[str, str] = dataclasses.field(default_factory=dict)
    column_bytes: dict[str, int] | None = None  # to_spark's: the driver's sampled footer
    filesystem: str | None = None  # to_spark's: a token of the source class's filesystems
    base_path: str | None = None  # basePath, when ``url`` is a glob below it
    #: the paths below basePath given (several, or one folder or file): only they are read
    folders: list[str] | None = None
    #: Spark's filters the extension handed over as an option where Spark pushes none
    #: (pyspark's filter form, :func:`listing.spark.filters.decode_filters`)
    spark_filters: list[Any] = dataclasses.field(default_factory=list)
    #: the path template of a table that is not Hive-partitioned, and its projection
    layout: Any = None
    layout_projection: Any = None

    def __repr__(self) -> str:
        return (f"SourceConfig(url={self.url!r}, format={self.format!r}, "
                f"storage_options={redact(self.storage_options)!r}, "
                f"partition_cols={self.partition_cols!r}, "
                f"listing_options={self.listing_options!r}, "
                f"format_options={redact(self.file_format.options)!r})")

    @classmethod
    def parse(cls, options: dict[str, str]) -> SourceConfig:
        opts = {k.lower(): v for k, v in options.items()}
        spark_filters = decode_filters(opts.pop(FILTERS_OPTION, None))
        opts.pop(CATALOG_OPTIONS, None)  # a write's (listing.spark.writer.write_options)
        for key in [k for k in opts if k.startswith(CATALOG_COPY_PREFIX)]:  # catalog copies
            opts.setdefault(key[len(CATALOG_COPY_PREFIX):], opts.pop(key))
        if not opts.get("path") and opts.get("location"):
            opts["path"] = opts["location"]
        for key in registry.names(registry.in_scope("catalog")):
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
        # the source's own options with a value (an empty one is none), typed
        own = registry.parse({k: opts[k] for k in ("limit", "engine", "recursivefilelookup",
                                                   "partition_cols", "layout",
                                                   "layout_projection") if opts.get(k)},
                              "source")
        if own.get("recursivefilelookup"):
            raise OptionError("recursiveFileLookup is not supported: the listing source "
                              "reads Hive-partitioned tables and infers their partitions")
        url = opts.get("path")
        if not url:
            raise OptionError(
                "the listing source needs a path: .load('s3://bucket/prefix/'), "
                ".save(…) or .option('path', …); in SQL, the table's OPTIONS (path '…') "
                "(CREATE TABLE t USING listing OPTIONS (path 's3://bucket/prefix/')), which "
                "reach its reads and writes through the listing extension "
                "(listing.session(), or spark.sql.extensions="
                "io.github.listing.ListingSparkExtensions)")
        where: list[Any] = [opts["where"]] if opts.get("where") else []
        base_path = None
        folders: list[str] | None = None
        if len(several) > 1:
            where.append(_union_under_base_path(several, opts["basepath"]))
            folders = [_below(p, opts["basepath"]) for p in several]
        elif opts.get("basepath") and is_glob(url):  # the glob's partition filter, below it
            base_path = opts["basepath"]
        elif opts.get("basepath"):  # Spark's basePath: a partition folder read as the table
            below = _below(url, opts["basepath"])
            url, implied = _under_base_path(url, opts["basepath"])
            where += implied
            folders = [below] if below else None
        storage: dict[str, Any] = {}
        if "storage_options" in opts:
            storage.update(json_object("storage_options", opts["storage_options"]))
        listing: dict[str, Any] = {}
        fmt_opts: dict[str, Any] = {}
        stream: dict[str, str] = {}
        for key, value in opts.items():
            option = registry.lookup(key)
            scope = option.scope if option is not None else None
            if key.startswith(STORAGE_PREFIX):
                storage[key[len(STORAGE_PREFIX):]] = storage_value(value)
            elif option is None or scope == "format":
                fmt_opts[option.name if option is not None else key] = value
            elif scope == "stream":
                stream[option.name] = value
            elif scope == "listing":
                listing[option.name] = value
            # the source's own (read above), a write's, a catalog property: not the table's
        fmt = opts.get("format", registry.option("format").default)
        cols: list[Any] | None = own.get("partition_cols")
        schema, sizes, filesystem, spec = None, None, None, None
        if "table_spec" in opts:  # written by ListingTable.to_spark: data, never code
            spec = TableSpec.parse(opts["table_spec"])
            fmt, cols, schema = spec.format, list(spec.partition_cols), spec.schema
            sizes, filesystem = spec.column_bytes, spec.filesystem
            fmt_opts = {**fmt_opts, **spec.format_options}  # the plain ones state them
            where += spec.where
        _check_format_options(fmt, fmt_opts)
        if spec is not None:
            spec.check_stated(opts)
        engine = own.get("engine", registry.option("engine").default)
        return cls(url=url, format=fmt, file_format=formats.get(fmt, **fmt_opts),
                   storage_options=storage, partition_cols=cols,
                   listing_options=ListingOptions.from_dict(listing), where=where or None,
                   limit=own.get("limit"), table_schema=schema, engine=engine,
                   stream_options=stream, column_bytes=sizes, filesystem=filesystem,
                   base_path=base_path, folders=folders, spark_filters=spark_filters,
                   layout=own.get("layout"), layout_projection=own.get("layout_projection"))

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
        table = ListingTable.open(self.url, format=self.file_format,
                                  listing_options=self.listing_options,
                                  storage_options=self.storage_options, filesystem=factory,
                                  partition_cols=self.partition_cols,
                                  base_path=self.base_path, folders=self.folders,
                                  layout=self.layout,
                                  layout_projection=self.layout_projection,
                                  cache_schema=True,  # each query opens the table again
                                  schema=data_schema if data_schema is not None
                                  else self.table_schema)
        if table.column_bytes is None:
            table.column_bytes = self.column_bytes
        return table


def _check_format_options(fmt: str, given: dict[str, Any]) -> None:
    """Unknown option names fail here, listing every name the source and the format take
    (the format's own check knows only its names)."""
    known = set(formats.get(fmt).option_defaults)
    unknown = sorted(set(given) - known)
    if unknown:
        source = sorted([*(_shown(o) for o in registry.in_scope("source", "stream")
                           if o.listed), STORAGE_PREFIX + "<name>"])
        listing = sorted(registry.names(registry.in_scope("listing")))
        spark = sorted({s.lower() for o in registry.in_scope("listing", "format")
                        for s in o.spark})
        hint = did_you_mean(unknown[0], [*source, *listing, *known, *(
            s for o in registry.in_scope("listing", "format") for s in o.spark)])
        raise OptionError(
            f"unknown option(s) {', '.join(unknown)} for the listing source with format "
            f"{fmt!r}{hint}. Source options: {', '.join(source)}; listing options: "
            f"{', '.join(listing)} (Spark's names too: {', '.join(spark)}); {fmt} options: "
            f"{', '.join(sorted(known)) or 'none'}")


def _shown(option: registry.Option) -> str:
    """The name as users write it: ours, in Spark's case when that is its only difference
    (``basePath``)."""
    same = [s for s in option.spark if s.lower() == option.name]
    return same[0] if same else option.name


def _json_list(name: str, value: str) -> list[Any]:
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return [value]
    return parsed if isinstance(parsed, list) else [parsed]


def _below(path: str, base: str) -> str:
    """``path`` relative to ``base`` (``""``: the base itself), as spelled on disk."""
    root, below = base.rstrip("/"), path.rstrip("/")
    if below != root and not below.startswith(root + "/"):
        raise OptionError(f"path {path!r} is not below basePath {base!r}")
    return below[len(root):].strip("/")


def _under_base_path(path: str, base: str) -> tuple[str, list[Expr]]:
    """``(base, filters)`` for a partition folder (or a file in one) ``path`` below
    ``base``: its ``k=v`` segments become equality filters, so the folder's columns stay in
    the table (as with Spark's basePath) and the listing reads only that folder; the
    equality also holds for a sibling spelling the same value otherwise (``hour=7/`` beside
    ``hour=07/``), so the table reads only keys below ``path`` itself (``folders``)."""
    below = _below(path, base)
    segments = below.split("/") if below else []
    filters: list[Expr] = []
    for i, segment in enumerate(segments):
        name, sep, raw = segment.partition("=")
        if not sep and i == len(segments) - 1:
            break  # a file (or a plain folder) named last: read as the path it is
        if not sep or not name:
            raise OptionError(f"path {path!r} below basePath {base!r} must be partition "
                              f"folders (name=value), or a file in one, not {segment!r}")
        column = unescape_path_name(name)
        filters.append(IsNull(column) if raw == DEFAULT_PARTITION_NAME
                       else Compare(column, "=", unescape_path_name(raw)))
    return base, filters


def _union_under_base_path(paths: list[str], base: str) -> Expr:
    """The filter that reads exactly the partition folders ``paths`` below ``base`` (each
    as :func:`_under_base_path`): the OR of their equalities, which the planner lists as
    one prefix per folder. The same folder twice, or one inside another, is an error
    (Spark reads their files once; a request naming a file twice is refused, not guessed)."""
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
