"""ListingTable: a directory of files on any fsspec store, read as one table.

``open()`` does the table-level work once: one sampled listing page to discover Hive
partition columns (or validate declared ones) and to profile the tree for the listing
planner, and at most one file read to infer the data schema. ``scan()`` is planning, not
reading: it lists only what the partition filter can match and returns a
:class:`~listing.plan.ScanPlan`; files are opened when the plan is read.
"""

from __future__ import annotations

import fnmatch
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pyarrow as pa

from listing import formats
from listing.formats.base import FileFormat
from listing.errors import FilterError, OptionError, PartitionLayoutError, TableNotFoundError
from listing.expr import Expr, bind, conjunction, conjuncts, split_by_columns
from listing.files import PartitionedFile
from listing.hive import infer_column_type, is_hidden, parse_segment, parse_value
from listing.options import ListingOptions
from listing.plan import ScanPlan, pack_file_groups
from listing.planner import ListingPlanner, TableProfile
from listing.pushdown import Pushdown
from listing.sql import parse_predicate
from listing.storage import Lister, ObjectMeta, Page, RequestCounter, StorageSpec
from listing.url import TableUrl

PartitionCols = Sequence[tuple[str, pa.DataType]] | Sequence[str] | None
Where = str | Expr | Iterable[str | Expr] | None


class ListingTable:
    """Schema, partition columns and scan planning for one table URL."""

    def __init__(self, url: TableUrl, storage: StorageSpec, fmt: FileFormat,
                 partition_cols: list[tuple[str, pa.DataType]], file_schema: pa.Schema,
                 profile: TableProfile | None, options: ListingOptions,
                 open_metrics: dict[str, int]) -> None:
        self.url = url
        self.storage = storage
        self.format = fmt
        self.partition_cols = partition_cols
        self.file_schema = file_schema
        self.profile = profile
        self.options = options
        self.open_metrics = open_metrics
        # declared partition names are checked against the directories once some scan
        # has listed a key (every listed key is checked); until then an empty scan checks
        self._layout_checked = profile is not None
        self.schema = pa.schema(list(file_schema) + [pa.field(n, t) for n, t in partition_cols])

    def __repr__(self) -> str:
        cols = ", ".join(f"{n}: {t}" for n, t in self.partition_cols)
        return (f"ListingTable({self.url}, format={self.format.name!r}, "
                f"partition_cols=[{cols}], storage={self.storage!r})")

    # --- opening --------------------------------------------------------------------------
    @classmethod
    def open(cls, url: str, format: str | FileFormat = "parquet",  # noqa: A002
             storage_options: dict[str, Any] | None = None, partition_cols: PartitionCols = None,
             schema: pa.Schema | None = None, **options: Any) -> ListingTable:
        """Open the table at ``url``; ``options`` are listing options and format options."""
        table_url = TableUrl.parse(url)
        listing_opts = {k: options.pop(k) for k in list(options) if k in ListingOptions.names()}
        opts = ListingOptions.from_dict(listing_opts)
        fmt = formats.get(format, **options)
        storage = StorageSpec(table_url.protocol, dict(storage_options or {}))
        counter = RequestCounter()
        lister = Lister(storage, counter)

        declared = _declared(partition_cols)
        profile: TableProfile | None = None
        if declared is not None and schema is not None and all(t for _, t in declared):
            # everything is declared: no request now; the first scan samples if it must
            cols = [(n, t) for n, t in declared]  # type: ignore[misc]
            sample = None
        else:
            sample = _first_page(lister, table_url)
            cols = _discover_partitions(table_url, sample, declared)
            profile = TableProfile.from_page(table_url.prefix, sample, len(cols))

        if schema is None and _flag(fmt.options.get("merge_schema")):
            assert profile is not None
            file_schema = _merged_schema(table_url, fmt, storage, cols, profile, lister)
        elif schema is None:
            assert sample is not None
            file_schema = _infer_schema(table_url, fmt, storage, sample, cols, counter)
        else:
            file_schema = schema if isinstance(schema, pa.Schema) else pa.schema(schema)
        part_names = {n for n, _ in cols}
        file_schema = pa.schema([f for f in file_schema if f.name not in part_names])
        metrics = {"list_requests": counter.list, "data_files_opened": counter.get}
        return cls(table_url, storage, fmt, cols, file_schema, profile, opts, metrics)

    # --- filters --------------------------------------------------------------------------
    @property
    def partition_names(self) -> list[str]:
        return [n for n, _ in self.partition_cols]

    def parse_filters(self, where: Where) -> list[Expr]:
        """Bound conjuncts of ``where`` (a SQL string, an Expr, or a list of either)."""
        if where is None:
            return []
        items = [where] if isinstance(where, str | Expr) else list(where)
        out: list[Expr] = []
        for item in items:
            expr = parse_predicate(item) if isinstance(item, str) else item
            if not isinstance(expr, Expr):
                raise FilterError(f"a filter must be a SQL string or an Expr, got {item!r}")
            out += conjuncts(bind(expr, self.schema))
        return out

    def classify(self, filters: Where) -> list[Pushdown]:
        """Per filter: EXACT on partition columns only, INEXACT where the format can skip
        data with it, UNSUPPORTED otherwise."""
        items = [filters] if isinstance(filters, str | Expr) else list(filters or [])
        out = []
        parts = set(self.partition_names)
        for item in items:
            bound = self.parse_filters(item)
            cols = set().union(*(c.columns() for c in bound)) if bound else set()
            if cols <= parts:
                out.append(Pushdown.EXACT)
            elif cols & parts:
                out.append(Pushdown.UNSUPPORTED)
            else:
                kinds = {self.format.supports_filter(c) for c in bound}
                out.append(Pushdown.INEXACT if kinds == {Pushdown.INEXACT}
                           else Pushdown.UNSUPPORTED)
        return out

    # --- scanning -------------------------------------------------------------------------
    def scan(self, columns: Sequence[str] | None = None, where: Where = None,
             limit: int | None = None, *, min_partitions: int | None = None,
             progress: Callable[[int, int], None] | None = None) -> ScanPlan:
        """Plan a read: list matching files, pack them into groups. Opens no data file."""
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise OptionError(f"limit must be a non-negative int, got {limit!r}")
        projection = self._projection(columns)
        filters = self.parse_filters(where)
        partition_filter, rest = split_by_columns(conjunction(filters), self.partition_names)
        data_filter, mixed = split_by_columns(rest, self.file_schema.names)
        counter = RequestCounter()
        planner = ListingPlanner(Lister(self.storage, counter, progress), self.url.prefix,
                                 self.partition_cols, self.profile, partition_filter,
                                 self._accept)
        files = [PartitionedFile(self.url.to_url(f.meta.path), f.meta.size, f.values,
                                 last_modified=f.meta.last_modified, etag=f.meta.etag)
                 for f in planner.files()]
        if self.profile is None:
            self.profile = planner.profile  # a fresh sample this scan took, for the next
        if planner.metrics.files_listed:
            self._layout_checked = True
        elif not self._layout_checked and self.partition_cols:
            self._check_declared_layout(counter)

        data_cols = [n for n in projection if n in self.file_schema.names]
        needed = set(mixed.columns()) if mixed is not None else set()
        read_cols = data_cols + [n for n in self.file_schema.names
                                 if n in needed and n not in data_cols]
        source = self.format.file_source(self.file_schema, read_cols, data_filter,
                                         storage=self.storage, batch_size=self.options.batch_size)
        groups = pack_file_groups(files, self.format, self.options, min_partitions)
        m = planner.metrics
        metrics = {
            "list_requests": counter.list,
            "files_listed": m.files_listed,
            "files_matched": m.files_matched,
            "partitions_pruned": m.partitions_pruned,
            "files_skipped_hidden": m.files_skipped_hidden,
            "files_skipped_other": m.files_skipped_other,
            "data_files_opened": 0,
            "file_groups": len(groups),
            "bytes": sum(f.size for f in files),
        }
        out_schema = pa.schema([self.schema.field(n) for n in projection])
        return ScanPlan(url=str(self.url), storage=self.storage, schema=out_schema,
                        partition_fields=[pa.field(n, t) for n, t in self.partition_cols],
                        source=source, partition_filter=partition_filter,
                        data_filter=data_filter, residual_filter=mixed, limit=limit,
                        files=files, file_groups=groups, metrics=metrics,
                        listing_plan=planner.steps, options=self.options)

    def _check_declared_layout(self, counter: RequestCounter) -> None:
        """An empty scan of a table opened with declared partition columns: make sure the
        names exist on disk, so a misspelt column cannot pass for an empty result."""
        page = next(iter(Lister(self.storage, counter).pages(self.url.prefix,
                                                             delimiter=False)), None)
        if page is None or not page.files:
            raise TableNotFoundError(f"no objects under {self.url}")
        _discover_partitions(self.url, page, [(n, t) for n, t in self.partition_cols])
        self._layout_checked = True

    def _projection(self, columns: Sequence[str] | None) -> list[str]:
        if columns is None:
            return list(self.schema.names)
        if isinstance(columns, str):
            raise OptionError(f"columns must be a list of names, got the string {columns!r}")
        by_lower = {n.lower(): n for n in self.schema.names}
        out = []
        for c in columns:
            if c.lower() not in by_lower:
                raise OptionError(f"unknown column {c!r} in projection; "
                                  f"columns: {', '.join(self.schema.names)}")
            out.append(by_lower[c.lower()])
        return out

    def _accept(self, meta: ObjectMeta) -> bool:
        """File filters that are not about partitions: format, glob, modification time."""
        opts = self.options
        if not self.format.matches(meta.path):
            return False
        if not self.url.matches_glob(meta.path):
            return False
        name = meta.path.rsplit("/", 1)[-1]
        if opts.path_glob_filter and not fnmatch.fnmatchcase(name, opts.path_glob_filter):
            return False
        if meta.last_modified is not None:
            if opts.modified_before and meta.last_modified >= opts.modified_before:
                return False
            if opts.modified_after and meta.last_modified <= opts.modified_after:
                return False
        return True

    # --- conveniences ---------------------------------------------------------------------
    def to_spark(self, spark: Any, columns: Sequence[str] | None = None, where: Where = None,
                 limit: int | None = None) -> Any:
        """A DataFrame reading only ``columns`` of the files matching ``where``.

        Python sources get no column pruning from Spark, so this is the projection path;
        the filter and limit travel with the relation (not through pushdown), so they prune
        with or without the stale-pushdown guard. A limit also stops each task early.
        """
        from listing.spark.source import register_table_source, spark_struct, table_options

        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise OptionError(f"limit must be a non-negative int, got {limit!r}")
        projection = self._projection(columns)
        filters = self.parse_filters(where)  # errors surface here, in the driver
        register_table_source(spark)
        reader = spark.read.format("listing_table").options(
            **table_options(self, filters, limit))
        df = reader.schema(spark_struct(pa.schema([self.schema.field(n) for n in projection])))
        df = df.load()
        return df.limit(limit) if limit is not None else df

    def to_arrow(self, columns: Sequence[str] | None = None, where: Where = None,
                 limit: int | None = None) -> pa.Table:
        return self.scan(columns, where, limit).to_arrow()


# --- open() helpers ------------------------------------------------------------------------

def _first_page(lister: Lister, url: TableUrl) -> Page:
    page = next(iter(lister.pages(url.prefix, delimiter=False)), Page([], []))
    if not page.files:
        where = "bucket " + repr(url.bucket) if url.protocol != "file" else "directory"
        raise TableNotFoundError(f"no objects under {url} (the {where} is empty or the "
                                 "prefix does not exist)")
    return page


def _declared(partition_cols: PartitionCols) -> list[tuple[str, pa.DataType | None]] | None:
    if partition_cols is None:
        return None
    out: list[tuple[str, pa.DataType | None]] = []
    for item in partition_cols:
        if isinstance(item, str):
            out.append((item, None))
        else:
            name, type_ = item
            out.append((name, _as_type(type_, name)))
    return out


_TYPE_NAMES = {
    "string": pa.string(), "str": pa.string(), "int": pa.int32(), "integer": pa.int32(),
    "long": pa.int64(), "bigint": pa.int64(), "double": pa.float64(), "float": pa.float32(),
    "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"), "boolean": pa.bool_(),
    "bool": pa.bool_(), "short": pa.int16(), "smallint": pa.int16(), "tinyint": pa.int8(),
}


def _as_type(type_: Any, name: str) -> pa.DataType:
    if isinstance(type_, pa.DataType):
        return type_
    key = str(type_).strip().lower()
    if key in _TYPE_NAMES:
        return _TYPE_NAMES[key]
    if key.startswith("decimal("):
        p, _, s = key[8:-1].partition(",")
        return pa.decimal128(int(p), int(s or 0))
    raise OptionError(f"partition column {name!r}: unknown type {type_!r}; use a pyarrow type "
                      f"or one of {', '.join(sorted(_TYPE_NAMES))}, decimal(p,s)")


def _partition_segments(url: TableUrl, meta: ObjectMeta) -> list[str] | None:
    """Directory segments of a visible key below the root, or None for hidden keys."""
    rel = meta.path[len(url.prefix):].split("/")
    if any(is_hidden(s) for s in rel):
        return None
    return rel[:-1]


def _discover_partitions(url: TableUrl, sample: Page,
                         declared: list[tuple[str, pa.DataType | None]] | None
                         ) -> list[tuple[str, pa.DataType]]:
    """Partition columns from the sampled keys: names must agree across paths; types are
    declared or inferred as Spark infers them (independent of any query)."""
    layouts: list[tuple[list[str], str]] = []
    for meta in sample.files:
        dirs = _partition_segments(url, meta)
        if dirs is None:
            continue
        names = []
        for seg in dirs:
            parsed = parse_segment(seg)
            if parsed is None:
                break
            names.append(parsed[0])
        layouts.append((names, meta.path))
    if declared is not None:
        k = len(declared)
        names = [n for n, _ in declared]
        for found, path in layouts:
            if found[:k] != names:
                if [f.lower() for f in found[:k]] == [n.lower() for n in names]:
                    raise PartitionLayoutError(
                        f"declared partition columns {names} differ in case from the "
                        f"directories in {path} ({found[:k]}); declare them as on disk")
                raise PartitionLayoutError(
                    f"declared partition columns {names} do not match the directories of "
                    f"{path} (found {found[:k] or 'no k=v directories'})")
    else:
        depth = min((len(n) for n, _ in layouts), default=0)
        first_names, first_path = layouts[0] if layouts else ([], "")
        for found, path in layouts:
            if found[:depth] != first_names[:depth] or len(found) != len(first_names):
                raise PartitionLayoutError(
                    f"paths have different partition columns: {first_path} has "
                    f"{first_names or 'none'} but {path} has {found or 'none'}")
        names = first_names[:depth]
        declared = [(n, None) for n in names]
    raws: dict[str, list[str]] = defaultdict(list)
    for meta in sample.files:
        dirs = _partition_segments(url, meta)
        if dirs is None or len(dirs) < len(declared):
            continue
        for (name, _), seg in zip(declared, dirs, strict=False):
            raws[name].append(parse_segment(seg)[1])  # type: ignore[index]
    cols = [(n, t if t is not None else infer_column_type(raws[n])) for n, t in declared]
    for name, type_ in cols:  # a declared type that the sample contradicts fails now
        for meta in sample.files:
            dirs = _partition_segments(url, meta)
            if dirs is not None and len(dirs) >= len(cols):
                idx = [n for n, _ in cols].index(name)
                parse_value(parse_segment(dirs[idx])[1], type_,  # type: ignore[index]
                            column=name, path=url.to_url(meta.path))
    return cols


def _flag(value: Any) -> bool:
    return value is True or str(value).lower() in ("true", "1", "yes")


def _merged_schema(url: TableUrl, fmt: FileFormat, storage: StorageSpec,
                   cols: list[tuple[str, pa.DataType]], profile: TableProfile,
                   lister: Lister) -> pa.Schema:
    """``merge_schema``: the union over every file of the table (footers read by the
    format, concurrently); costs a full listing and one read per file, by request."""
    planner = ListingPlanner(lister, url.prefix, cols, profile, None,
                             lambda meta: fmt.matches(meta.path))
    found = [PartitionedFile(url.to_url(f.meta.path), f.meta.size, etag=f.meta.etag)
             for f in planner.files()]
    if not found:
        raise TableNotFoundError(f"no {fmt.name} files under {url} and no schema given")
    lister.counter.get += len(found)
    return fmt.infer_schema(found, storage)


def _infer_schema(url: TableUrl, fmt: FileFormat, storage: StorageSpec, sample: Page,
                  cols: list[tuple[str, pa.DataType]], counter: RequestCounter) -> pa.Schema:
    for meta in sample.files:
        dirs = _partition_segments(url, meta)
        if dirs is None or not fmt.matches(meta.path):
            continue
        counter.get += 1
        return fmt.infer_schema([PartitionedFile(url.to_url(meta.path), meta.size)], storage)
    raise TableNotFoundError(
        f"no {fmt.name} files under {url} (looked at the first {len(sample.files)} keys; "
        f"extensions {', '.join(fmt.extensions) or 'any'}) and no schema given")
