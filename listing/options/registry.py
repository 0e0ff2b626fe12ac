"""Every option of the ``listing`` source, in one declarative table.

Reads (:class:`listing.spark.config.SourceConfig`), writes
(:func:`listing.spark.writer.write_options`), streams
(:class:`listing.discovery.DiscoverySettings`) and the JVM extension's native hand-off
(``ListingNativeEngine.java``, which reads this table as JSON, :func:`as_json_data`) all
look options up here, so a name, a Spark spelling, a default or a native equivalent is
written once. Their values are typed here too, by each option's kind: :func:`parse` for
every scope (tables, streams, reads, writes), :func:`parse_format` for a format's own
options; callers receive values. Invariants (tests hold them): every spelling names one
option; the listing options are exactly :class:`~listing.options.ListingOptions`' fields,
with its defaults.

Storage options are not in this table: the allowlist of
:mod:`listing.options.storage_options` is theirs (``storage.<name>`` or the
``storage_options`` JSON object), with what Spark's S3A connector makes of each s3 option;
the JSON for the JVM carries that part of it too (``s3a``). Format options are each format's own
(``FileFormat.option_defaults``, with their defaults); this table holds only the
Spark spellings and Spark equivalents some of them have.
"""

from __future__ import annotations

import datetime as dt
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from listing.errors import OptionError
from listing.options import storage_options  # the submodule, not the package
from listing.options.kinds import (
    _DURATION,
    _DURATION_UNITS,
    _FALSE,
    _TRUE,
    KINDS,
    MAX_CONCURRENT_REQUESTS,
    MB,
    did_you_mean,
    kind_of_default,
)

#: where an option is taken: the source's own (path, format, …), file selection and packing
#: (ListingOptions), streaming, writing, a format's, or a catalog property Spark adds
Scope = Literal["source", "listing", "stream", "write", "format", "catalog"]
#: what the native hand-off (Spark's own reader) does with an option: the planner reads it
#: itself; it changes tasks, never rows, or (table_spec) all it says that matters to the
#: JVM is stated in other options too (ignore); only its false value hands off
#: (false_only); it always keeps the Python engine (python); or it becomes Spark's
#: ``spark_option`` for the formats in ``native_formats`` (spark)
Native = Literal["planner", "ignore", "false_only", "python", "spark"]
#: what a write does with it: takes it, refuses it (naming ``instead``), or ignores it;
#: "" passes it on as a format option, as any name a write does not know
OnWrite = Literal["take", "refuse", "ignore", ""]

#: prefix of one storage option given as its own option (``storage.endpoint_url``)
STORAGE_PREFIX = "storage."
#: prefix of the options Spark's catalog stores for a table (``option.path``)
CATALOG_COPY_PREFIX = "option."

#: the characters that make a path a glob, as Hadoop's ``GlobPattern`` reads one (a table
#: URL, ``basePath``): where each is, a wildcard starts
GLOB_WILDCARDS = "*?[{"
#: escapes the next character of a glob: a pattern's literal text ends at a wildcard or here
GLOB_ESCAPE = "\\"

#: the marks around text the JVM reads out of a pickled Spark partition
#: (listing.spark.input_partition): a scan's summary (DescribedPythonTable.java), a
#: key-grouped partition's key (KeyGroupedScans.java), and the end of either; a pickled str
#: is its UTF-8 bytes, so each is found as those bytes
PARTITION_MARKS = {"summary": "\x1elisting-scan:", "key": "\x1elisting-key:", "end": "\x1e"}


@dataclass(frozen=True)
class ListingOptions:
    """File selection and task packing (DataFusion's ``ListingOptions`` + Spark's knobs)."""

    path_glob_filter: str | None = None
    modified_before: dt.datetime | None = None
    modified_after: dt.datetime | None = None
    ignore_missing_files: bool = False
    ignore_corrupt_files: bool = False
    max_partition_bytes: int = 128 * MB
    open_cost_in_bytes: int = 4 * MB
    min_partitions: int | None = None
    batch_size: int = 65_536
    include_file_metadata: bool = False  # add Spark's _metadata struct column
    list_cache_ttl: float | None = None  # seconds a listing is reused (listing.list_cache)
    # LIST requests one scan's planning may have in flight at once (1: one after another)
    max_concurrent_requests: int = 8
    # pack each task with files of one partition value, so Spark can be told the scan is
    # key-grouped and skip the shuffle of a GROUP BY or join on partition columns (opt-in;
    # listing.packing.pack_by_partition_key says when it is declined)
    key_grouped: bool = False
    # partition column names in directories match ignoring case (A=2/ and a=1/ are one
    # column), as under Spark's default spark.sql.caseSensitive=false
    case_sensitive: bool = False
    # the zone a timestamp partition value (``ts=2026-01-01 06%3A00%3A00``) is read and
    # written in: Spark's session time zone (the Spark source passes the session's)
    time_zone: str = "UTC"

    @classmethod
    def names(cls) -> set[str]:
        return {f.name for f in fields(cls)}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> ListingOptions:
        """Build from Python values or the strings Spark passes; names the bad option."""
        opts = cls(**parse(values, "listing"))
        if opts.max_partition_bytes <= 0 or opts.open_cost_in_bytes < 0 or opts.batch_size <= 0:
            raise OptionError("max_partition_bytes and batch_size must be positive, "
                              "open_cost_in_bytes not negative")
        if not 1 <= opts.max_concurrent_requests <= MAX_CONCURRENT_REQUESTS:
            raise OptionError(f"option max_concurrent_requests="
                              f"{values.get('max_concurrent_requests')!r} must be between 1 "
                              f"(one request at a time) and {MAX_CONCURRENT_REQUESTS}")
        return opts


@dataclass(frozen=True)
class Option:
    """One option: our name, where it is taken, its kind, Spark's spellings (any case),
    its default, and what the native hand-off and a write do with it."""

    name: str
    scope: Scope
    kind: str
    meaning: str
    spark: tuple[str, ...] = ()
    default: Any = None
    native: Native = "ignore"
    #: why the Python engine keeps a scan with it (false_only, python)
    why: str = ""
    spark_option: str | None = None
    native_formats: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    on_write: OnWrite = ""
    instead: str | None = None
    #: shown among the valid names in an unknown-option error
    listed: bool = True
    #: the least value a number of this option may be
    minimum: int | None = None
    #: the parser (a kind of :data:`listing.options.KINDS`) when it is not ``kind``'s
    parser: str = ""

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every lower-cased name this option arrives under (ours first)."""
        return (self.name, *(s.lower() for s in self.spark if s.lower() != self.name))

    def parse(self, value: Any) -> Any:
        """``value`` (a Python value, or the text Spark, SQL or the CLI passes) as this
        option's kind, within its choices and minimum; an :class:`OptionError` names the
        option and the value refused."""
        typed = KINDS[self.parser or self.kind](value, self.name)
        if self.choices:
            typed = str(typed).strip().lower()
            if typed not in self.choices:
                raise OptionError(f"option {self.name}={value!r} must be one of "
                                  f"{', '.join(self.choices)}")
        if (self.minimum is not None and isinstance(typed, int | float)
                and not isinstance(typed, bool) and typed < self.minimum):
            raise OptionError(f"option {self.name}={typed!r} must be at least {self.minimum}")
        return typed


def _o(name: str, scope: Scope, kind: str, meaning: str, **more: Any) -> Option:
    return Option(name, scope, kind, meaning, **more)


_LISTING_DEFAULTS = {f.name: f.default for f in fields(ListingOptions)}


def _listing(name: str, kind: str, meaning: str, **more: Any) -> Option:
    return Option(name, "listing", kind, meaning, default=_LISTING_DEFAULTS[name], **more)


_SKIPS = "(it counts the files it skips in listing.skipped_files)"
_UTC = "is read in UTC by the Python engine, in the session time zone by Spark"

OPTIONS: tuple[Option, ...] = (
    # --- the source's own ------------------------------------------------------------------
    _o("path", "source", "string", "the table root", native="planner", on_write="take"),
    _o("paths", "source", "json", "several paths (Spark's DataFrameReader.load([...]))",
       native="planner", on_write="ignore", listed=False),
    _o("format", "source", "string", "a registered format name", default="parquet",
       native="planner", on_write="take"),
    _o("partition_cols", "source", "partition columns", "partition columns, "
       "'date:date,region'",
       on_write="refuse", instead="partition_by"),
    _o("layout", "source", "layout", "a path template of a table that is not "
       "Hive-partitioned, '{date:yyyy/MM/dd}/{hour:HH}' (docs/layouts.md)", native="planner",
       on_write="take"),
    _o("layout_projection", "source", "layout projection", "declared values of layout "
       "columns, 'date=2024-01-01..NOW;region=a|b' (docs/layouts.md)", native="planner",
       on_write="refuse"),
    _o("storage_options", "source", "json", "storage options as one JSON object",
       native="planner", on_write="take"),
    _o("where", "source", "string", "a filter in Spark SQL, applied before listing",
       native="planner", on_write="refuse"),
    _o("limit", "source", "int", "at most this many rows", native="planner",
       on_write="refuse"),
    _o("table_spec", "source", "json", "the table ListingTable.to_spark describes",
       on_write="refuse", listed=False),
    _o("expression_filters", "source", "int", "how many filters to_spark's table_spec "
       "carries (stated beside it for the native hand-off)", native="python",
       why="(filters given to to_spark travel as our expressions)", on_write="refuse",
       listed=False),
    _o("basepath", "source", "string", "the table root above a partition folder",
       spark=("basePath",), native="planner", on_write="refuse"),
    _o("engine", "source", "choice", "who reads the files: Spark's own reader (native) "
       "where its JVM can, ours (python)", default="auto", choices=("auto", "python", "native"),
       native="planner"),
    _o("recursivefilelookup", "source", "bool", "Spark's; refused unless false",
       spark=("recursiveFileLookup",), default=False, native="planner", listed=False),
    # --- file selection and packing (listing.options.ListingOptions) -----------------------
    _listing("path_glob_filter", "glob", "keep files whose name matches",
             spark=("pathGlobFilter",), native="planner"),
    _listing("modified_before", "timestamp", "keep files modified before",
             spark=("modifiedBefore",), native="python", why=_UTC),
    _listing("modified_after", "timestamp", "keep files modified after",
             spark=("modifiedAfter",), native="python", why=_UTC),
    _listing("ignore_missing_files", "bool", "skip files deleted after listing",
             spark=("ignoreMissingFiles",), native="false_only", why=_SKIPS),
    _listing("ignore_corrupt_files", "bool", "skip files that cannot be read",
             spark=("ignoreCorruptFiles",), native="false_only", why=_SKIPS),
    _listing("max_partition_bytes", "size", "bytes per task", spark=("maxPartitionBytes",)),
    _listing("open_cost_in_bytes", "size", "a file's cost in bytes when packing",
             spark=("openCostInBytes",)),
    _listing("min_partitions", "int", "at least this many tasks", spark=("minPartitions",)),
    _listing("batch_size", "size", "rows per Arrow batch"),
    _listing("include_file_metadata", "bool", "add Spark's _metadata column",
             native="false_only",
             why="(Spark's own reader has a _metadata column: select it instead)"),
    _listing("list_cache_ttl", "duration", "seconds a listing is reused (on native: by the "
             "listing planner that feeds Spark's reader)", native="planner"),
    _listing("max_concurrent_requests", "int", "LIST requests in flight at once"),
    _listing("key_grouped", "bool", "pack tasks by partition value", native="false_only",
             why="(Spark's file source reports a partitioning for bucketed tables only)"),
    _listing("case_sensitive", "bool", "partition directory names match column names "
             "with their case (Spark's spark.sql.caseSensitive; the Spark source takes the "
             "session's)", native="planner"),
    _listing("time_zone", "time zone", "the zone timestamp partition values are read and "
             "written in (Spark's spark.sql.session.timeZone; the Spark source takes the "
             "session's)", spark=("timeZone",), native="planner", on_write="take"),
    # --- streaming (listing.discovery.DiscoverySettings) ----------------------------------
    _o("max_files_per_trigger", "stream", "int", "files per micro-batch",
       spark=("maxFilesPerTrigger",), minimum=1),
    _o("max_bytes_per_trigger", "stream", "size", "bytes per micro-batch",
       spark=("maxBytesPerTrigger",), minimum=1),
    _o("lookback", "stream", "int or duration",
       "newest partitions re-listed each trigger, or a duration", default=1, minimum=0),
    _o("reconcile_every", "stream", "int", "a full listing every this many triggers",
       default=10, minimum=0),
    _o("starting", "stream", "string", "earliest, latest, or a timestamp", default="earliest",
       parser="start"),
    _o("max_file_age", "stream", "duration", "files older than the newest by more are "
       "forgotten", spark=("maxFileAge",), default=7 * 86400.0),
    # --- writes (listing.spark.writer) ----------------------------------------------------
    _o("partition_by", "write", "column names", "partition columns of the written table",
       spark=("partitionBy",), on_write="take"),
    _o("partition_overwrite_mode", "write", "choice", "static or dynamic",
       spark=("partitionOverwriteMode",), choices=("static", "dynamic"), on_write="take"),
    _o("max_records_per_file", "write", "int", "rows per written file",
       spark=("maxRecordsPerFile",), on_write="take", minimum=1),
    _o("compression", "write", "string", "the written files' compression", on_write="take"),
    _o("commit_protocol", "write", "choice", "how a write publishes its files: as S3 "
       "multipart uploads to the final keys, by copying staged files, or auto (multipart "
       "where the store has it)", default="auto", choices=("auto", "multipart", "copy"),
       on_write="take"),
    _o("part_size", "write", "size", "bytes per multipart upload part", on_write="take"),
    _o("overwrite_without_lock", "write", "bool", "overwrite on a store that does not "
       "honour conditional PUT (If-None-Match), where the overwrite lock cannot isolate it: "
       "only when the caller serialises the table's overwrites itself", default=False,
       on_write="take"),
    _o("__partition_columns", "write", "json",
       "Spark's .partitionBy columns, refused (Spark does not pass them to Python sources)",
       listed=False),
    # --- Spark's spellings of format options and their Spark equivalents --------------------
    _o("merge_schema", "format", "bool", "merge the files' schemas",
       spark=("mergeSchema",)),
    _o("sample_bytes", "format", "size", "bytes sampled to infer a schema", minimum=1),
    _o("infer_schema", "format", "bool", "infer CSV column types from the sample (false: "
       "every column a string, as Spark's CSV reader without inferSchema)",
       spark=("inferSchema",)),
    _o("block_size", "format", "size", "bytes per read block", minimum=1),
    _o("header", "format", "bool", "the first line names the columns", native="spark",
       spark_option="header", native_formats=("csv",)),
    _o("delimiter", "format", "char", "the field separator", spark=("sep",), native="spark",
       spark_option="sep", native_formats=("csv",)),
    _o("quote", "format", "char", "the quote character", native="spark",
       spark_option="quote", native_formats=("csv",)),
    _o("multiline", "format", "bool", "records span lines", spark=("multiLine",),
       native="spark", spark_option="multiLine", native_formats=("csv",)),
    _o("null_values", "format", "list", "values read as null", spark=("nullValue",),
       native="spark", spark_option="nullValue", native_formats=("csv",)),
    # --- table properties Spark's catalog adds when it calls the source -------------------
    *(_o(name, "catalog", "string", "a catalog table property", listed=False)
      for name in ("location", "owner", "provider", "comment", "external",
                   "is_managed_location", "collation")),
    _o("spark.redaction.regex", "catalog", "string", "the pattern Spark masks a CREATE "
       "TABLE's options with, added by the extension (ListingTableSpecRedaction.java)",
       listed=False, on_write="ignore"),
)

#: our formats Spark also reads, and Spark's name for each (the native hand-off)
NATIVE_FORMATS = {"parquet": "parquet", "csv": "csv", "json": "json", "ndjson": "json"}

_BY_SPELLING = {s: o for o in OPTIONS for s in o.spellings}
if len(_BY_SPELLING) != sum(len(o.spellings) for o in OPTIONS):
    raise AssertionError("an option spelling names two options")  # pragma: no cover


def lookup(key: str) -> Option | None:
    """The option ``key`` names, by our name or a Spark spelling (any case)."""
    return _BY_SPELLING.get(key.lower())


def option(name: str) -> Option:
    """The option named ``name`` (ours); a KeyError for a name not in the table."""
    found = _BY_SPELLING[name]
    if found.name != name:
        raise KeyError(name)
    return found


def in_scope(*scopes: Scope) -> tuple[Option, ...]:
    """The options of ``scopes``, in table order."""
    return tuple(o for o in OPTIONS if o.scope in scopes)


def names(options: Iterable[Option]) -> set[str]:
    """Our names of ``options``."""
    return {o.name for o in options}


def parse(raw: Mapping[str, Any], *scopes: Scope) -> dict[str, Any]:
    """The typed values of ``raw`` (options of ``scopes`` by our names, as Python values or
    text): each converted by its option's kind (:meth:`Option.parse`); a None value is
    absent (the default holds). An unknown name raises :class:`OptionError` naming it,
    the closest valid name and every valid one."""
    labels: dict[tuple[Scope, ...], str] = {("listing",): "listing ", ("stream",): "streaming "}
    label = labels.get(scopes, "")
    return _typed(raw, {o.name: o for o in in_scope(*scopes)}, f"{label}option(s)")


def parse_format(format_name: str, defaults: Mapping[str, Any],
                 raw: Mapping[str, Any], kinds: Mapping[str, str] | None = None
                 ) -> dict[str, Any]:
    """A format's options: ``defaults`` overridden by ``raw``'s typed values (as
    :func:`parse`). Each option is the format's own (``FileFormat.option_defaults``); its
    kind is the one the format names in ``kinds``, else this table's (its ``format``
    scope: the format options Spark spells too), else its default's
    (:func:`~listing.options.kind_of_default`)."""
    shared = {o.name: o for o in in_scope("format")}
    declared = {name: Option(name, "format", (kinds or {}).get(name) or (
                    shared[name].kind if name in shared else kind_of_default(default)),
                    "", default=default,
                    minimum=shared[name].minimum if name in shared else None)
                for name, default in defaults.items()}
    return {**defaults, **_typed(raw, declared, "option(s)", f" for format {format_name!r}")}


def _typed(raw: Mapping[str, Any], known: Mapping[str, Option], what: str,
           where: str = "") -> dict[str, Any]:
    """``raw`` typed by the ``known`` options; ``what`` and ``where`` place the unknown
    names in the error refusing them."""
    unknown = sorted(str(k) for k in set(raw) - set(known))
    if unknown:
        raise OptionError(f"unknown {what} {', '.join(unknown)}{where}"
                          f"{did_you_mean(unknown[0], known)}; "
                          f"known: {', '.join(sorted(known))}")
    return {name: known[name].parse(value) for name, value in raw.items() if value is not None}


def keyword_names(*functions: Callable[..., Any]) -> list[str]:
    """The optional keyword parameters the ``functions`` name (not their ``**options``,
    nor the arguments they require): what a misspelt option of a Python entry point is
    compared with, besides the options."""
    return sorted({p.name for f in functions for p in inspect.signature(f).parameters.values()
                   if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                   and p.default is not p.empty})


def refuse_unknown(given: Iterable[str], groups: Mapping[str, Iterable[str]],
                   where: str) -> None:
    """Raise :class:`OptionError` when a name in ``given`` is in none of ``groups``
    (label: names, e.g. ``{"keywords": …, "listing options": …}``): the unknown names,
    the valid name closest to the first across every group ("did you mean"), and each
    group's names. ``where`` places them (``"for ListingTable.open"``). Python entry points
    call it before any request, so a misspelt keyword never reaches a format's own check,
    which knows only the format's names."""
    known = {str(n) for names in groups.values() for n in names}
    unknown = sorted(str(k) for k in set(given) - known)
    if unknown:
        listed = "; ".join(f"{label}: {', '.join(sorted(map(str, names))) or 'none'}"
                           for label, names in groups.items())
        raise OptionError(f"unknown option{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(map(repr, unknown))} {where}"
                          f"{did_you_mean(unknown[0], known)}. Valid: {listed}")


def kind_value(kind: str, value: Any, name: str) -> Any:
    """``value`` as ``kind`` (a key of :data:`~listing.options.KINDS`), for a setting that
    is no option (a CLI flag such as ``watch --interval``); errors name ``name``."""
    return KINDS[kind](value, name)


def as_json_data() -> dict[str, Any]:
    """The table as JSON data for the JVM extension (``OptionRegistry.java``), with the
    s3 storage options' S3A mapping (:func:`storage_options.s3a_json_data`), the prefixes,
    glob wildcards and partition marks the JVM must spell as Python does; the formats'
    extensions are added by the Spark edge, which knows the formats."""
    return {
        "prefixes": {"storage": STORAGE_PREFIX, "catalog_copy": CATALOG_COPY_PREFIX},
        "glob_wildcards": GLOB_WILDCARDS,
        "partition_marks": dict(PARTITION_MARKS),
        "booleans": {"true": sorted(_TRUE), "false": sorted(_FALSE)},
        "durations": {"pattern": _DURATION.pattern, "units": dict(_DURATION_UNITS)},
        "native_formats": dict(NATIVE_FORMATS),
        "options": [
            {"name": o.name, "scope": o.scope, "kind": o.kind, "spellings": list(o.spellings),
             "default": o.default, "native": o.native, "why": o.why,
             "spark_option": o.spark_option, "native_formats": list(o.native_formats)}
            for o in OPTIONS
        ],
        "s3a": storage_options.s3a_json_data(),
    }
