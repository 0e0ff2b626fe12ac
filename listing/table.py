"""ListingTable: a directory of files on any fsspec store, read as one table.

``open()`` does the table-level work once: one sampled listing page to discover Hive
partition columns (or validate declared ones) and to profile the tree for the listing
planner, and at most one file read to infer the data schema. ``scan()`` is planning, not
reading: it lists only what the partition filter can match and returns a
:class:`~listing.scan.ScanPlan`; files are opened when the plan is read.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from listing import formats, schema_cache
from listing.dataframe_engines import engine
from listing.discovery import DiscoverySettings, FileDiscovery
from listing.errors import (
    OptionError,
    PartitionLayoutError,
    StorageConfigError,
    TableNotFoundError,
)
from listing.expressions import (
    Bound,
    Expr,
    bind,
    conjunction,
    conjuncts,
    parse_predicate,
    split_by_columns,
)
from listing.file_columns import FileColumns
from listing.file_stream import ReadSpec
from listing.files import FILE_METADATA, FILE_METADATA_FIELD, PartitionedFile, whole_file
from listing.formats.base import FileFormat, Inferred
from listing.gc_pause import gc_paused
from listing.hive import (
    discover_columns,
    in_time_zone,
    is_hidden_below,
    partition_type,
    respelled_names,
)
from listing.layout import TemplateLayout
from listing.list_cache import CACHE, CachedLister
from listing.metrics import Counters, CountersView
from listing.options import ListingOptions, registry
from listing.packing import WHOLE_FILES, KeyPacking, pack_by_partition_key, pack_file_groups
from listing.planner import FileFilter, ListedFile, ListedRun, PlanRun, TableProfile
from listing.planner.glob_filter import folders_partition_filter, glob_partition_filter
from listing.planner.template_run import TemplateRun
from listing.pushdown import Pushdown
from listing.scan import ScanMetrics, ScanPlan
from listing.storage.lister import Lister, ObjectMeta, Page
from listing.storage.spec import StorageSpec
from listing.url import AZURE_PROTOCOLS, TableUrl

#: what ``ListingTable.open_metrics`` shows
OPEN_METRICS = ("list_requests", "data_files_opened")

PartitionCols = Sequence[tuple[str, pa.DataType]] | Sequence[str] | None
Where = str | Expr | Bound | Iterable[str | Expr | Bound] | None


@dataclass(frozen=True)
class SplitFilter:
    """A scan's bound conjuncts split once by the columns they read: ``partition``
    (partition columns only: the listing applies it exactly), ``data`` (file columns
    only: the format skips row groups and filters rows) and ``residual`` (both: rows,
    after partition values are appended)."""

    partition: Expr | None = None
    data: Expr | None = None
    residual: Expr | None = None


@dataclass
class _Learned:
    """What a scan learned of the table that later scans reuse: the profile its flat
    listing sampled (a table opened without one) and that some listed key has shown the
    declared partition names to be right. A cache of requests only: without it scans
    plan the same files. The only state of a table that changes after ``open()``."""

    profile: TableProfile | None
    layout_checked: bool


class ListingTable:
    """Schema, partition columns and scan planning for one table URL."""

    def __init__(self, *, url: TableUrl, storage: StorageSpec, fmt: FileFormat,
                 partition_cols: list[tuple[str, pa.DataType]], file_schema: pa.Schema,
                 profile: TableProfile | None, options: ListingOptions,
                 open_metrics: Mapping[str, int],
                 column_bytes: dict[str, int] | None = None,
                 layout: TemplateLayout | None = None) -> None:
        self.url = url
        #: the path template of a table that is not Hive-partitioned (option ``layout``)
        self.layout = layout
        #: compressed bytes per data column in the file the schema came from, when the
        #: format's metadata says (Parquet): how much of each file a projection reads
        self.column_bytes = column_bytes
        self.storage = storage
        self.format = fmt
        #: timestamps typed in the zone their values are read in (options.time_zone)
        self.partition_cols = in_time_zone(partition_cols, options.time_zone)
        self.file_schema = file_schema
        self.options = options
        #: what ``open()`` cost: ``list_requests``, ``data_files_opened``
        self.open_metrics = open_metrics
        # declared partition names are checked against the directories once some scan
        # has listed a key (every listed key is checked); until then an empty scan checks
        self._learned = _Learned(profile, layout_checked=profile is not None
                                 or layout is not None)
        extra = [FILE_METADATA_FIELD] if options.include_file_metadata else []
        self.schema = pa.schema(list(file_schema)
                                + [pa.field(n, t) for n, t in self.partition_cols]
                                + extra)

    def __repr__(self) -> str:
        cols = ", ".join(f"{n}: {t}" for n, t in self.partition_cols)
        return (f"ListingTable({self.url}, format={self.format.name!r}, "
                f"partition_cols=[{cols}], storage={self.storage!r})")

    # --- opening --------------------------------------------------------------------------
    @classmethod
    def open(cls, url: str, format: str | FileFormat = "parquet",  # noqa: A002
             storage_options: dict[str, Any] | None = None, partition_cols: PartitionCols = None,
             schema: pa.Schema | None = None, filesystem: Any = None,
             base_path: str | None = None, folders: Sequence[str] | None = None,
             cache_schema: bool = False, listing_options: ListingOptions | None = None,
             layout: str | None = None, layout_projection: str | None = None,
             **options: Any) -> ListingTable:
        """Open the table at ``url``; ``options`` are listing options and format options,
        or, given ``listing_options`` already typed (the Spark source's), format options
        alone.

        ``storage_options`` are data, checked against the allowlist of ``url``'s protocol
        (:mod:`listing.options.storage_options`). A caller that needs a store configured beyond it
        passes ``filesystem``: an fsspec filesystem serving ``url``'s protocol, or a
        callable returning one (called wherever the table is read).

        A glob in ``url`` reads what Spark's reader reads for it with ``basePath`` set to
        ``base_path`` (default: the glob's directory part before its first wildcard): the
        partition columns below that root, and only the keys the glob matches.

        ``folders``: paths below ``url`` (folders or files, relative to it, spelled as on
        disk) that alone are read, as Spark reads several paths under ``basePath``; a
        partition filter on their ``k=v`` segments keeps the listing to them.

        ``cache_schema``: an inferred schema is taken from, and kept in, this process's
        :data:`~listing.schema_cache.SCHEMAS` (keyed by the sampled file's version: a
        rewritten file is read again), so that opening the table again reads no file.

        ``layout``: the path template of a table that is not Hive-partitioned
        (``'{date:yyyy/MM/dd}/{hour:HH}'``), ``layout_projection`` the values its columns
        take (``'date=2024-01-01..NOW'``); see docs/layouts.md. ``partition_cols`` then
        declares types of the template's plain columns.

        :returns: the table, its partition columns and schema known (inferred from one
            listing page and one file unless declared).
        :raises OptionError: an unknown or bad option (the closest name suggested).
        :raises StorageConfigError: a protocol or storage option the allowlist refuses.
        :raises TableNotFoundError: nothing at ``url`` and no schema declared.
        :raises PartitionLayoutError: directory levels that disagree.
        :raises StorageError: the store failed after its retries."""
        if options:  # names no keyword took: listing and format options, or misspelt
            registry.refuse_unknown(options, {
                "keywords": registry.keyword_names(cls.open),
                "listing options": ListingOptions.names(),
                f"{formats.label(format)} options": formats.option_names(format)},
                "for ListingTable.open")
        table_url = TableUrl.parse(url, base_path)
        if folders is not None:
            table_url = dataclasses.replace(
                table_url, folders=tuple(f.strip("/") for f in folders))
        if listing_options is None:
            listing_opts = {k: options.pop(k) for k in list(options)
                            if k in ListingOptions.names()}
            opts = ListingOptions.from_dict(listing_opts)
        elif given_twice := sorted(set(options) & ListingOptions.names()):
            raise OptionError(f"listing option(s) {', '.join(given_twice)} given beside "
                              "listing_options")
        else:
            opts = listing_options
        fmt = formats.get(format, **options)
        try:
            storage = StorageSpec(table_url.protocol, table_url.storage_options(storage_options),
                                  filesystem)
        except StorageConfigError as err:
            raise StorageConfigError(f"cannot open {table_url}: {err}") from None
        counters = Counters()
        ttl = opts.list_cache_ttl
        try:  # checks protocol and storage options, no request
            lister = (CachedLister(storage, counters, ttl=ttl) if ttl
                      else Lister(storage, counters))
        except StorageConfigError as err:
            raise StorageConfigError(f"cannot open {table_url}: {err}") from None

        declared = _declared(partition_cols)
        profile: TableProfile | None = None
        template: TemplateLayout | None = None
        cols: list[tuple[str, pa.DataType]]
        if layout is None and layout_projection is not None:
            raise OptionError("option layout_projection needs the option layout")
        if layout is not None and (table_url.pattern is not None
                                   or table_url.folders is not None):
            raise OptionError(f"option layout reads the whole table at its root: give the "
                              f"root ({table_url}) without a glob or folders, and filter on "
                              "the layout's columns")
        if layout is not None:
            parsed = registry.option("layout").parse(layout)
            projection = (None if layout_projection is None else
                          registry.option("layout_projection").parse(layout_projection))
            sample = _first_page(lister, table_url)
            template = TemplateLayout.build(table_url.prefix, parsed, declared,
                                            [m.path for m in sample.files],
                                            opts.time_zone, projection,
                                            whole=not sample.truncated)
            cols = list(template.columns)
        elif declared is not None and schema is not None and all(t for _, t in declared):
            # everything is declared: no request now; the first scan samples if it must
            cols = [(n, t) for n, t in declared if t is not None]
            sample = None
        else:
            sample = _first_page(lister, table_url)
            paths = [m.path for m in sample.files]
            cols = discover_columns(table_url.prefix, paths, declared, table_url.to_url,
                                    case_sensitive=opts.case_sensitive)
            profile = TableProfile.from_page(table_url.prefix, sample, len(cols))
            renamed = respelled_names(table_url.prefix, paths, cols)
            if any(renamed):  # a name spelled in another case: no prefix from it is whole
                profile = dataclasses.replace(profile, respelled=[
                    a or b for a, b in zip(profile.respelled, renamed, strict=True)])

        column_bytes = None
        if schema is None:
            assert sample is not None and (profile is not None or template is not None)
            # the table without data columns yet: its schema comes from files it reads
            draft = cls(url=table_url, storage=storage, fmt=fmt, partition_cols=cols,
                        file_schema=pa.schema([]), profile=profile, options=opts,
                        open_metrics={}, layout=template)
            if fmt.options.get("merge_schema") is True:
                file_schema = draft._merged_schema(lister)
            else:
                inferred = draft._inferred_schema(sample, lister, cache_schema)
                file_schema, column_bytes = inferred.schema, inferred.column_bytes
        else:
            file_schema = schema if isinstance(schema, pa.Schema) else pa.schema(schema)
        fold = (lambda n: n) if opts.case_sensitive else str.lower
        part_names = {fold(n) for n, _ in cols}
        file_schema = pa.schema([f for f in file_schema if fold(f.name) not in part_names])
        metrics = CountersView(counters.snapshot(), OPEN_METRICS, OPEN_METRICS)
        return cls(url=table_url, storage=storage, fmt=fmt, partition_cols=cols,
                   file_schema=file_schema, profile=profile, options=opts, open_metrics=metrics,
                   column_bytes=column_bytes, layout=template)

    @property
    def profile(self) -> TableProfile | None:
        """The table's shape for the listing planner: sampled at ``open()``, or by the
        first scan that listed the table flat from its start (None until then)."""
        return self._learned.profile

    # --- filters --------------------------------------------------------------------------
    @property
    def partition_names(self) -> list[str]:
        return [n for n, _ in self.partition_cols]

    def bind(self, where: Where) -> list[Bound]:
        """Bound conjuncts of ``where`` (SQL text, an Expr, a Bound, or a list of them).
        Filters already bound to this table's schema are taken as they are."""
        if where is None:
            return []
        items = [where] if isinstance(where, str | Expr | Bound) else list(where)
        out: list[Bound] = []
        for item in items:
            bound = bind(parse_predicate(item) if isinstance(item, str) else item, self.schema,
                         self.options.time_zone)
            out += [Bound(c, self.schema) for c in conjuncts(bound.expr)]
        return out

    def classify(self, filters: Where) -> list[Pushdown]:
        """Per filter: EXACT on partition columns only, INEXACT where the format can skip
        data with it, UNSUPPORTED otherwise."""
        items = [filters] if isinstance(filters, str | Expr | Bound) else list(filters or [])
        return [self._pushdown(self.bind(item)) for item in items]

    def _pushdown(self, bound: list[Bound]) -> Pushdown:
        cols = set().union(*(b.expr.columns() for b in bound)) if bound else set()
        parts = set(self.partition_names)
        if cols <= parts:
            return Pushdown.EXACT
        if cols & parts:
            return Pushdown.UNSUPPORTED
        kinds = {self.format.supports_filter(b.expr) for b in bound}
        return Pushdown.INEXACT if kinds == {Pushdown.INEXACT} else Pushdown.UNSUPPORTED

    def split(self, bound: Sequence[Bound]) -> SplitFilter:
        """Bound conjuncts (:meth:`bind`) split by the columns they read, once a scan."""
        partition, rest = split_by_columns(conjunction([b.expr for b in bound]),
                                           self.partition_names)
        data, residual = split_by_columns(rest, self.file_schema.names)
        return SplitFilter(partition, data, residual)

    # --- listing --------------------------------------------------------------------------
    def listing_run(self, predicate: Expr | None = None, *, start_after: str | None = None,
                    lister: Lister | None = None, sequential: bool = False,
                    expected_keys: int | None = None) -> PlanRun | TemplateRun:
        """The listing of the keys ``predicate`` (bound, on partition columns only) can
        match, after the key ``start_after``: the one place a run of this table is built,
        with its prefix, partition columns, learned profile, file filter and
        ``max_concurrent_requests`` (one request at a time when ``sequential``: a caller
        that stops at its first file). ``lister``: whose requests it counts (default: a
        new one, its counts at ``run.lister.counters``). ``expected_keys``: how many keys
        the caller knows the table's unfiltered listing holds (a stream's last full
        listing), so a listing too short to split sends no page to split it. A table with a
        ``layout`` is listed by its template
        (:class:`~listing.planner.template_run.TemplateRun`, which never splits)."""
        if self.layout is not None:
            return TemplateRun(lister or Lister(self.storage), self.layout, predicate,
                               self.file_filter, start_after, max_concurrent_requests=(
                                   1 if sequential else self.options.max_concurrent_requests))
        return PlanRun(lister or Lister(self.storage), self.url.prefix,
                          self.partition_cols, self.profile, predicate, self.file_filter,
                          start_after, max_concurrent_requests=(
                              1 if sequential else self.options.max_concurrent_requests),
                          case_sensitive=self.options.case_sensitive,
                          expected_keys=expected_keys)

    # --- scanning -------------------------------------------------------------------------
    def scan(self, columns: Sequence[str] | None = None, where: Where = None,
             limit: int | None = None, *, min_partitions: int | None = None,
             progress: Callable[[int, int], None] | None = None) -> ScanPlan:
        """Plan a read: list matching files, pack them into groups. Opens no data file.
        ``where`` is bound and split once; the listing and the plan share the split.

        :param columns: the columns to read (default: all, partition columns included).
        :param where: a SQL predicate in Spark's dialect, or an expression from ``col()``.
        :param limit: read at most this many rows.
        :param min_partitions: the number of groups to aim for (Spark's ``minPartitions``).
        :param progress: called with (LIST requests, keys listed) as the listing goes.
        :returns: the plan: its files, listing steps and request metrics.
        :raises FilterError: a malformed ``where``, an unknown column or a bad literal.
        :raises StorageError: the store failed after its retries."""
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise OptionError(f"limit must be a non-negative int, got {limit!r}")
        projection = self.projection(columns)
        by_glob, by_folders = self.url_filters
        split = self.split(self.bind(where) + self.bind(by_glob) + self.bind(by_folders))
        counters = Counters()  # the scan's: its lister's requests, then its run's counts
        ttl = self.options.list_cache_ttl
        lister = (CachedLister(self.storage, counters, progress, ttl=ttl) if ttl
                  else Lister(self.storage, counters, progress))
        learned = self._learned
        run = self.listing_run(split.partition, lister=lister)
        with gc_paused():
            files = self._kept(run.batches())
        layout_checked = learned.layout_checked or bool(run.metrics["files_listed"])
        if not layout_checked and self.partition_cols:
            self._check_declared_layout(counters)
            layout_checked = True
        profile = learned.profile or run.profile  # a fresh sample this scan took: kept
        renamed = run.layout.renamed_levels if isinstance(run, PlanRun) else frozenset()
        if profile is not None and any(profile.one_spelling(d) for d in renamed):
            # a directory spelled a column's name in another case: no prefix from it is whole
            profile = dataclasses.replace(profile, respelled=[
                r or d in renamed for d, r in enumerate(profile.respelled)])
        if profile is not learned.profile or layout_checked != learned.layout_checked:
            self._learned = _Learned(profile, layout_checked)  # replaced whole, never edited
        steps = list(run.steps)
        if self.url.pattern is not None:
            steps.append(f"path glob {self.url.pattern!r} below {self.url}: every listed key "
                         "is matched against it; its partition filter: "
                         f"{'none' if by_glob is None else by_glob}")
        if self.url.folders is not None:
            steps.append(f"paths below {self.url}: {', '.join(self.url.folders)}; every "
                         "listed key is one of them or below one; their partition filter: "
                         f"{'none' if by_folders is None else by_folders}")
        hits = counters.get("list_cache_hits")
        if hits:
            steps.append(f"{hits} of these listing requests answered from the listing cache")
        counters.add_all(run.metrics)
        with gc_paused():  # packing makes objects a file too
            return self._plan(files, projection, split, limit, min_partitions=min_partitions,
                              listing_plan=steps, counters=counters)

    def plan_files(self, files: Sequence[PartitionedFile], columns: Sequence[str] | None = None,
                   where: Where = None, limit: int | None = None, *,
                   min_partitions: int | None = None, listing_plan: Sequence[str] = (),
                   split_files: bool = True) -> ScanPlan:
        """Plan a read of files already chosen (by streaming discovery, or a caller's own
        listing; whole files): group them into tasks and set what each task reads and
        filters. ``split_files`` False reads every file whole (a stream: a file rewritten
        since its batch was planned can then be read as it is now)."""
        return self._plan(FileColumns.of_files(files), self.projection(columns),
                          self.split(self.bind(where)), limit, min_partitions=min_partitions,
                          listing_plan=listing_plan, split_files=split_files)

    def _plan(self, files: FileColumns, projection: list[str], split: SplitFilter,
              limit: int | None, *, min_partitions: int | None,
              listing_plan: Sequence[str], counters: Counters | None = None,
              split_files: bool = True) -> ScanPlan:
        """The plan of ``files`` (chosen already) for a projection and a split filter;
        ``counters``: what choosing them cost (the scan's listing), added to."""
        file_names = self.file_schema.names  # a new list at every access: once here
        data_names = set(file_names)
        data_cols = [n for n in projection if n in data_names]
        needed = set(split.residual.columns()) if split.residual is not None else set()
        needed.difference_update(data_cols)
        read_cols = data_cols + [n for n in file_names if n in needed]
        source = self.format.file_source(self.file_schema, read_cols, split.data,
                                         storage=self.storage, batch_size=self.options.batch_size)
        metadata_only = (self.format.rows_from_metadata and not read_cols
                         and split.data is None)
        packing = KeyPacking([], False, "")
        splitter = self.format if split_files else WHOLE_FILES
        if self.options.key_grouped:
            packing = pack_by_partition_key(files, splitter, self.options, min_partitions,
                                            metadata_only=metadata_only,
                                            read_share=self.read_share(read_cols))
            groups = packing.groups
        else:
            groups = pack_file_groups(files, splitter, self.options, min_partitions,
                                      metadata_only=metadata_only,
                                      read_share=self.read_share(read_cols))
        counters = Counters() if counters is None else counters
        counters.add("file_groups", len(groups))
        counters.add("bytes", int(files.sizes.sum()))
        read = ReadSpec(source=source,
                        schema=pa.schema([self.schema.field(n) for n in projection]),
                        partition_fields=tuple(pa.field(n, t) for n, t in self.partition_cols),
                        file_metadata=FILE_METADATA in projection,
                        residual_filter=split.residual, limit=limit,
                        ignore_missing_files=self.options.ignore_missing_files,
                        ignore_corrupt_files=self.options.ignore_corrupt_files)
        return ScanPlan(url=str(self.url), storage=self.storage,
                        partition_filter=split.partition, data_filter=split.data,
                        planned=files, file_groups=groups, read=read,
                        listing_plan=list(listing_plan), metrics=ScanMetrics(counters),
                        key_grouped=packing.key_grouped, packing=packing.reason)

    def read_share(self, columns: Sequence[str]) -> float:
        """The share of a file's bytes a read of ``columns`` fetches, from the sampled
        file's column sizes; 1 when unknown (no such metadata, a user schema, a column
        the sample lacks) or when every column is read."""
        sizes = self.column_bytes
        total = sum(sizes.values()) if sizes else 0
        if not sizes or total <= 0 or not columns or any(c not in sizes for c in columns):
            return 1.0
        return sum(sizes[c] for c in set(columns)) / total

    def _merged_schema(self, lister: Lister) -> pa.Schema:
        """``merge_schema``: the union over every file this table lists (footers read by
        the format, concurrently); costs a full listing and one read per file."""
        url, fmt = self.url, self.format
        found = [PartitionedFile(url.to_url(f.meta.path), f.meta.size, etag=f.meta.etag)
                 for f in self.listing_run(lister=lister).files()
                 if f.meta.size > 0]  # empty files have no schema
        if not found:
            raise TableNotFoundError(f"no {fmt.name} files under {url} and no schema given")
        lister.counters.add("data_files_opened", len(found))
        return fmt.infer_schema(found, self.storage)

    def _inferred_schema(self, sample: Page, lister: Lister,
                         cache: bool = False) -> Inferred:
        """One file's schema, of a file this table reads (as Spark infers from its filtered
        file index): the first the sampled page holds that the file filter keeps (format,
        URL glob, ``path_glob_filter``, modification time), else the first of the pages
        after it. A table whose filter keeps no file yet reads nothing (a glob may match
        later files, as a stream's do): its columns are those of its first format file.
        ``cache``: through :mod:`listing.schema_cache` (no read when the file's version
        was read already)."""
        url, fmt, keep = self.url, self.format, self.file_filter.accepts

        def first_in_sample(accepts: Callable[[ObjectMeta], bool]) -> PartitionedFile | None:
            meta = next((m for m in sample.files if m.size and accepts(m)
                         and not is_hidden_below(url.prefix, m.path)
                         and (self.layout is None or self.layout.decode(m.path) is not None)),
                        None)
            if meta is None:
                return None
            versions[meta.path] = meta
            return PartitionedFile(url.to_url(meta.path), meta.size)

        versions: dict[str, ObjectMeta] = {}

        found = first_in_sample(keep)
        if found is None and sample.truncated and not self.file_filter.by_name_only:
            found = self.first_file(lister, start_after=sample.files[-1].path)
        if found is None:
            found = first_in_sample(lambda m: fmt.matches(m.path))
        if found is None:
            raise TableNotFoundError(
                f"no {fmt.name} files under {url} (looked at the first {len(sample.files)} "
                f"keys; extensions {', '.join(fmt.extensions) or 'any'}; empty files have "
                "no schema) and no schema given")
        if not cache:
            lister.counters.add("data_files_opened")
            return fmt.infer([found], self.storage)
        meta = versions.get(found.fs_path) or ObjectMeta(found.fs_path, found.size,
                                                         found.last_modified, found.etag)
        inferred, kept = schema_cache.cached(self.storage, meta, fmt,
                                             lambda: fmt.infer([found], self.storage))
        lister.counters.add("data_files_opened", 0 if kept else 1)
        return inferred

    def _check_declared_layout(self, counters: Counters) -> None:
        """An empty scan of a table opened with declared partition columns: make sure the
        names exist on disk, so a misspelt column cannot pass for an empty result."""
        lister = Lister(self.storage, counters)
        page = next(iter(lister.pages(self.url.prefix, delimiter=False)), None)
        if page is None or not page.files:
            raise TableNotFoundError(f"no objects under {self.url}: "
                                     f"{_why_empty(lister, self.url)}")
        paths = [m.path for m in page.files]
        discover_columns(self.url.prefix, paths, [(n, t) for n, t in self.partition_cols],
                         self.url.to_url, case_sensitive=self.options.case_sensitive)
        if any(respelled_names(self.url.prefix, paths, self.partition_cols)):
            # the listing looked for the declared spelling only: it may have missed files
            raise PartitionLayoutError(
                f"declared partition columns {self.partition_names} are spelled in another "
                f"case in the directories of {self.url}; declare them as on disk, or without "
                "types so that open() samples the directories")

    def projection(self, columns: Sequence[str] | None) -> list[str]:
        if columns is None:
            return list(self.schema.names)
        if isinstance(columns, str):
            raise OptionError(f"columns must be a list of names, got the string {columns!r}")
        names = set(self.schema.names)
        by_lower = ({} if self.options.case_sensitive
                    else {n.lower(): n for n in self.schema.names})
        out = []
        for c in columns:
            found = c if c in names else by_lower.get(c.lower())
            if found is None:
                raise OptionError(f"unknown column {c!r} in projection; "
                                  f"columns: {', '.join(self.schema.names)}")
            out.append(found)
        return out

    @property
    def url_filters(self) -> tuple[Expr | None, Expr | None]:
        """The partition filters the table URL implies: its glob's and its ``folders``'
        (see :mod:`listing.planner.glob_filter`), each None when it has none."""
        return (glob_partition_filter(self.url, self.partition_cols),
                folders_partition_filter(self.url, self.partition_cols))

    @property
    def url_filter(self) -> Expr | None:
        """:attr:`url_filters` as one filter (None: neither)."""
        return conjunction(f for f in self.url_filters if f is not None)

    @property
    def file_filter(self) -> FileFilter:
        """Files of this table that are not about partitions: format, glob, mtime."""
        return FileFilter(self.url, self.options, self.format.matches, self.format.name_endings)

    # --- conveniences ---------------------------------------------------------------------
    def to_spark(self, spark: Any, columns: Sequence[str] | None = None, where: Where = None,
                 limit: int | None = None) -> Any:
        """A Spark DataFrame of ``columns`` of the files matching ``where``: the Spark
        engine's ``to_spark`` (``listing.to_spark(table, spark, ...)``), found through the
        ``listing.engines`` entry point, so the table imports nothing of Spark."""
        return engine("spark")(self, spark, columns, where, limit)

    def discovery(self, where: Where = None, **options: Any) -> FileDiscovery:
        """New files, trigger after trigger, without re-listing the table: the Python side
        of ``spark.readStream.format("listing")`` (options as there: ``lookback``,
        ``reconcile_every``, ``max_file_age``, ``starting``, ``max_files_per_trigger``,
        ``max_bytes_per_trigger``). Call ``.new_files(since=offset)``; see
        :mod:`listing.discovery`."""
        return FileDiscovery(self, where, DiscoverySettings.parse(options))

    def first_file(self, lister: Lister | None = None,
                   start_after: str | None = None) -> PartitionedFile | None:
        """The table's first non-empty data file in key order (None: none), for a check that
        needs one file and not the list, such as a CSV header: it costs the pages up to
        that file, one LIST unless the table starts with hidden or foreign keys.
        ``lister``: whose requests it counts (default: a new one); ``start_after``: the
        first key is after this one."""
        implied = self.split(self.bind(self.url_filter)).partition  # what the URL keeps
        files = self.listing_run(implied, lister=lister, sequential=True,
                                 start_after=start_after).files()
        try:  # an empty file is no data file (as Spark's file index has it)
            first = next((f for f in files if f.meta.size > 0), None)
        finally:
            files.close()  # no further page
        return None if first is None else self._partitioned([first])[0]

    def _kept(self, runs: Iterable[ListedRun]) -> FileColumns:
        """The files a scan keeps of its listing's runs, as columns, in listing order."""
        scheme = self.url.to_url("")  # a path's URL is this and the path
        return FileColumns([(scheme + run.files.directory, run.files, run.values)
                            for run in runs])

    def _partitioned(self, listed: Sequence[ListedFile]) -> list[PartitionedFile]:
        """Listed keys as the files a plan holds: their URLs, and what identifies their
        version."""
        scheme = self.url.to_url("")  # a path's URL is this and the path
        return [whole_file(scheme + meta.path, meta.size, values, meta.last_modified, meta.etag)
                for meta, values in listed]

    def refresh(self) -> None:
        """Forget cached listings of this table (``list_cache_ttl``): the next scan lists."""
        CACHE.invalidate(self.storage, self.url.prefix)

    def to_arrow(self, columns: Sequence[str] | None = None, where: Where = None,
                 limit: int | None = None) -> pa.Table:
        return self.scan(columns, where, limit).to_arrow()

    def partitions(self, where: Where = None) -> pa.Table:
        """The partitions matching ``where`` (on partition columns), from the listing alone:
        one row per partition with its values, file count and bytes (SHOW PARTITIONS)."""
        plan = self.scan(columns=self.partition_names, where=where)
        stats: dict[tuple[Any, ...], list[int]] = {}
        names = self.partition_names
        planned = plan.planned
        starts = planned.starts.tolist()
        for r, values in enumerate(planned.values):  # a run's files share their values
            entry = stats.setdefault(tuple(values.get(n) for n in names), [0, 0])
            entry[0] += starts[r + 1] - starts[r]
            entry[1] += int(planned.sizes[starts[r]:starts[r + 1]].sum())
        keys = sorted(stats, key=lambda k: tuple((v is None, v) for v in k))
        columns = {n: pa.array([k[i] for k in keys], t)
                   for i, (n, t) in enumerate(self.partition_cols)}
        columns["files"] = pa.array([stats[k][0] for k in keys], pa.int64())
        columns["bytes"] = pa.array([stats[k][1] for k in keys], pa.int64())
        return pa.table(columns)


# --- open() helpers ------------------------------------------------------------------------


def _first_page(lister: Lister, url: TableUrl) -> Page:
    """The first page of the table's flat listing (from the listing cache when ``lister``
    keeps one: ``list_cache_ttl``)."""
    if isinstance(lister, CachedLister):
        page = lister.first_page(url.prefix)
    else:
        page = next(iter(lister.pages(url.prefix, delimiter=False)), Page([], []))
    if not page.files:
        raise TableNotFoundError(f"no objects under {url}: {_why_empty(lister, url)}")
    return page


def _why_empty(lister: Lister, url: TableUrl) -> str:
    """Why a listing of ``url`` found nothing: for a store with buckets, whether the bucket
    holds anything else (one LIST of one page, on this error path only; a missing bucket
    failed the table's own LIST already, as its own error); for a local path, whether the
    directory exists."""
    if url.protocol == "file":
        return ("the directory exists but holds no files" if os.path.isdir(url.prefix)
                else "no such directory")
    if not url.bucket:  # a store without buckets (memory://)
        return "the prefix holds no objects"
    bucket = f"{'container' if url.protocol in AZURE_PROTOCOLS else 'bucket'} {url.bucket!r}"
    root = next(iter(lister.pages(url.bucket + "/", delimiter=True)), Page([], []))
    if root.files or root.dirs:
        return f"the prefix holds no objects ({bucket} is not empty)"
    return f"{bucket} is empty"


def _declared(partition_cols: PartitionCols) -> list[tuple[str, pa.DataType | None]] | None:
    if partition_cols is None:
        return None
    if isinstance(partition_cols, str):
        raise OptionError(f"partition_cols must be a list of names or (name, type) pairs, "
                          f"got the string {partition_cols!r}")
    out: list[tuple[str, pa.DataType | None]] = []
    seen: set[str] = set()
    for item in partition_cols:
        if isinstance(item, str):
            name, type_ = item, None
        else:
            name, type_ = item
        if not isinstance(name, str) or not name:
            raise OptionError(f"partition_cols: {item!r} has no column name")
        if name.lower() in seen:
            raise OptionError(f"partition column {name!r} is declared twice")
        seen.add(name.lower())
        # a name without a type (None, as Spark's "date,hour" arrives) is inferred
        out.append((name, None if type_ is None else partition_type(type_, name)))
    return out


