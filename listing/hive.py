"""Hive partition paths: spelling values, escaping, decoding keys, layout errors and type
inference.

A partitioned key looks like ``date=2026-03-01/region=us/part-0.parquet``. Values are
percent-escaped by Spark's ``ExternalCatalogUtils.escapePathName`` and null is spelled
``__HIVE_DEFAULT_PARTITION__``; escapes other engines write for UTF-8 (``z%C3%BCrich``)
are read as the UTF-8 they meant (:func:`unescape_path_name`). This module is the one
place a partition value is spelled: for writes (:func:`partition_path`), for listing
prefixes (:func:`spell_value`) and for the JVM (:func:`cast_text`). Types are inferred per
value (int, long, decimal, double, timestamp, date, time, string; a column of nulls only is
Spark's ``void``, ``pa.null()``) and widened across values the way Spark widens them, so
a table reads with the same schema here as through ``spark.read.parquet``.
:class:`HiveLayout` is the one place a listed key is decoded into partition values and
the one place a key that breaks the table's layout is reported.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

from listing.errors import OptionError, PartitionLayoutError, PartitionValueError
from listing.options import zone_info

log = logging.getLogger("listing")

PartitionColumns = Sequence[tuple[str, pa.DataType]]

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"

_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(0x01, 0x20)}
_SAFE = re.compile(r"[A-Za-z0-9_.\-]*")
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[dDfF]?|NaN|Infinity)")
#: Java's hexadecimal floating-point literal (``0x1p3`` is 8.0), which Double.parseDouble reads
_HEX_FLOAT = re.compile(
    r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+[dDfF]?")
#: what java.math.BigDecimal reads (no suffix, no whitespace, no NaN)
_BIG_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
#: Spark's partition timestamp pattern ``yyyy-MM-dd HH:mm:ss[.S]``: at most one digit of a
#: fraction (``…00.5`` is a timestamp, ``…00.123`` a string, as Spark 4 infers them)
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d)?")
#: what a declared timestamp column accepts (a cast, as Spark casts for a user schema)
_TIMESTAMP_CAST = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,9})?")
#: what a declared time column accepts
_TIME_CAST = re.compile(r"[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?")
#: Spark's partition time pattern ``HH:mm:ss[.SSSSSS]`` (Spark 4.1 and later infer ``time(6)``):
#: two-digit fields in range, at most six digits of a fraction
_TIME = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?")
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def escape_path_name(value: str) -> str:
    """Spell a partition value the way Spark writes it into a path."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


def value_text(value: Any, time_zone: str = "UTC") -> str | None:
    """The unescaped text Spark writes for a partition value; None for the Hive null
    (None, and ``""``, which Spark writes as null too). A timestamp is written as its
    local time in ``time_zone`` (Spark's session time zone), without the offset and
    without trailing zeros of the fraction."""
    if value is None or value == "":
        return None
    return _text(value, time_zone)


def _text(value: Any, time_zone: str = "UTC") -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(zone_info(time_zone)).replace(tzinfo=None)
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return text + (f".{value.microsecond:06d}".rstrip("0") if value.microsecond else "")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        text = value.strftime("%H:%M:%S")
        return text + (f".{value.microsecond:06d}".rstrip("0") if value.microsecond else "")
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def partition_segment(name: str, value: Any,
                      text: Callable[[Any], str | None] = value_text) -> str:
    """``name=value`` as a key holds it: name and value escaped (:func:`escape_path_name`),
    the Hive null as ``__HIVE_DEFAULT_PARTITION__``. ``text`` spells a non-null value
    otherwise than Spark (a test layout with zero-padded hours, ``hour=07``)."""
    raw = None if value is None else text(value)
    spelled = DEFAULT_PARTITION_NAME if raw is None else escape_path_name(raw)
    return f"{escape_path_name(name)}={spelled}"


def partition_path(values: Sequence[tuple[str, Any]], time_zone: str = "UTC") -> str:
    """``k1=v1/k2=v2/`` for ``[(k1, v1), (k2, v2)]``, each segment as
    :func:`partition_segment` spells it (timestamps in ``time_zone``): what the reader and
    Spark (in a session of that time zone) decode back."""
    def text(value: Any) -> str | None:
        return value_text(value, time_zone)

    return "".join(partition_segment(name, value, text) + "/" for name, value in values)


def cast_text(value: Any) -> str | None:
    """A decoded partition value as text Spark's ``Cast`` turns back into it (None: the
    Hive null), for the JVM's file index. Unlike :func:`value_text`, a timestamp keeps
    its offset (the session's time zone must not shift it) and ``""`` stays a string."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    return _text(value)


def unescape_path_name(value: str) -> str:
    """Undo :func:`escape_path_name`; a ``%`` not followed by two hex digits stays as is.

    A run of escapes whose bytes form valid UTF-8 is decoded as UTF-8 (``z%C3%BCrich`` is
    'zürich'), as pyarrow, Polars, DuckDB and pandas meant it when they wrote it; any other
    run decodes one character per escape, as Spark's ``unescapePathName`` decodes every
    run (``%E9`` is 'é'). Spark never writes an escape of a byte past 0x7F (it writes
    UTF-8 raw), so the two agree on every name Spark writes: a deliberate difference from
    Spark's reader on names other engines wrote (docs/spark.md, "Escaped values")."""
    if "%" not in value:
        return value
    out: list[str] = []
    run = bytearray()
    i = 0
    while i < len(value):
        if value[i] == "%" and _is_hex(value[i + 1 : i + 3]):
            run.append(int(value[i + 1 : i + 3], 16))
            i += 3
            continue
        if run:
            out.append(_decode_run(run))
            run.clear()
        out.append(value[i])
        i += 1
    if run:
        out.append(_decode_run(run))
    return "".join(out)


def _decode_run(run: bytes | bytearray) -> str:
    """One run of escaped bytes: UTF-8 when it is valid UTF-8, else a char per byte."""
    try:
        return run.decode("utf-8")
    except UnicodeDecodeError:
        return run.decode("latin-1")


def _is_hex(s: str) -> bool:
    return len(s) == 2 and all(c in "0123456789abcdefABCDEF" for c in s)


def is_safe_spelling(value: str) -> bool:
    """True when every writer spells ``value`` the same way on disk (no escaping at all)."""
    return bool(_SAFE.fullmatch(value))


def is_canonical_segment(segment: str) -> bool:
    """True when a ``name=raw`` directory is spelled exactly as Spark writes its name and
    value. ``city=%41`` (a needless escape of 'A') and ``k=a%2fb`` (lower-case hex) are
    not: the same value then has more than one spelling on disk."""
    parsed = parse_segment(segment)
    if parsed is None:
        return True
    name, raw = parsed
    value_ok = raw == DEFAULT_PARTITION_NAME or escape_path_name(unescape_path_name(raw)) == raw
    return value_ok and segment.partition("=")[0] == escape_path_name(name)


#: a hidden name starts so (``_SUCCESS``, ``_temporary``, ``.crc``); see :func:`is_hidden`
HIDDEN_PREFIXES = ("_", ".")
#: ... or ends so (a file being copied by ``hadoop fs -put``)
COPYING_SUFFIX = "._COPYING_"
#: directories Spark lists although they start with ``_`` (Parquet summary files)
_KEPT_PREFIXES = ("_metadata", "_common_metadata")


def is_hidden(segment: str, *, directory: bool = False) -> bool:
    """Spark's rule (``HadoopFSUtils.shouldFilterOutPathName`` for the listing, and
    ``PartitioningAwareFileIndex.isDataPath`` for data files): a name is hidden when it
    starts with ``.``, ends with ``._COPYING_``, or starts with ``_`` and holds no ``=``
    (``_part=x/`` is a partition, ``_SUCCESS`` and ``_temporary/`` are hidden); directories
    named ``_metadata…``/``_common_metadata…`` are listed, such files are no data."""
    if segment.startswith(".") or segment.endswith(COPYING_SUFFIX):
        return True
    if segment.startswith("_") and "=" not in segment:
        return not (directory and segment.startswith(_KEPT_PREFIXES))
    return False


def is_hidden_below(root: str, path: str) -> bool:
    """Whether ``path`` below ``root`` is hidden by :func:`is_hidden` (a hidden directory
    on the way, or a hidden file name): such keys are never part of a table."""
    below = path[len(root):]
    if not (below.startswith(HIDDEN_PREFIXES) or "/_" in below or "/." in below
            or COPYING_SUFFIX in below):
        return False  # the common case, without splitting
    *dirs, name = below.split("/")
    return is_hidden(name) or any(is_hidden(d, directory=True) for d in dirs)


def parse_segment(segment: str) -> tuple[str, str] | None:
    """Split ``name=raw`` (raw still escaped); None for a plain directory name. An empty
    name (``=10``) is an error, as in Spark."""
    name, sep, raw = segment.partition("=")
    if not sep:
        return None
    if not name:
        raise PartitionLayoutError(
            f"directory {segment!r} has an empty partition column name (Spark refuses it "
            "too: a partition directory is name=value)")
    return unescape_path_name(name), raw


# --- type inference --------------------------------------------------------------------

def infer_type(raw: str) -> pa.DataType | None:
    """Type Spark infers for one escaped raw value; None for the null spelling. As in
    Spark, numbers and dates are recognised in the raw spelling (``%31`` is the string
    '1'), timestamps and times once unescaped (``00%3A00%3A00``), with a space before a
    timestamp's time (``2021-01-01T00:00:00`` is a string)."""
    if raw == DEFAULT_PARTITION_NAME:
        return None
    value = raw
    if _INT.fullmatch(value):
        n = int(value)
        if _INT32[0] <= n <= _INT32[1]:
            return pa.int32()
        if _INT64[0] <= n <= _INT64[1]:
            return pa.int64()
    precision = _integral_precision(value)
    if precision is not None and precision <= 38:
        return pa.decimal128(precision, 0)
    if _is_java_double(value):
        return pa.float64()
    text = unescape_path_name(raw)
    if _TIMESTAMP.fullmatch(text) and _try(lambda: _parse_timestamp(text)):
        return pa.timestamp("us", tz="UTC")
    if _DATE.fullmatch(value) and _try(lambda: dt.date.fromisoformat(value)):
        return pa.date32()
    if _TIME.fullmatch(text):
        return pa.time64("us")
    return pa.string()


def _integral_precision(value: str) -> int | None:
    """The digits of ``value`` read as Java's ``BigDecimal`` when it has no fraction (its
    scale is not positive: ``1e5``, ``1.``, ``1.0e10``, a 30-digit integer), as Spark types
    it a ``decimal(p, 0)``; None otherwise (``1.5``, ``1.0``, ``1d``)."""
    if not _BIG_DECIMAL.fullmatch(value):
        return None
    sign_digits_exponent = Decimal(value).as_tuple()
    exponent = sign_digits_exponent.exponent
    if not isinstance(exponent, int) or exponent < 0:
        return None
    return len(sign_digits_exponent.digits) + exponent


def _java_trim(value: str) -> str:
    """``String.trim()``: every character up to U+0020 off both ends."""
    return value.strip("".join(chr(c) for c in range(0x21)))


def _is_java_double(value: str) -> bool:
    """Whether ``Double.parseDouble`` reads ``value``: decimal or hexadecimal, with an
    optional ``d``/``f`` suffix, ``NaN``/``Infinity``, around any whitespace."""
    trimmed = _java_trim(value)
    return bool(_FLOAT.fullmatch(trimmed) or _HEX_FLOAT.fullmatch(trimmed))


def _java_double(value: str) -> float:
    trimmed = _java_trim(value)
    if _HEX_FLOAT.fullmatch(trimmed):
        return float.fromhex(trimmed.rstrip("dDfF"))
    if not _FLOAT.fullmatch(trimmed):
        raise ValueError(value)
    return float(trimmed.rstrip("dDfF"))


def _try(fn: Any) -> bool:
    try:
        fn()
        return True
    except ValueError:
        return False


_NUMERIC_ORDER = [pa.int32(), pa.int64(), pa.float64()]


def widen(a: pa.DataType | None, b: pa.DataType | None) -> pa.DataType | None:
    """Spark's ``findWiderTypeForPartitionColumn``: numeric widening, date→timestamp,
    anything else (time with any other type, double with long/decimal) falls back to
    string; None (a null) widens to the other type."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    if pa.types.is_decimal(a) or pa.types.is_decimal(b):
        if pa.types.is_decimal(a) and pa.types.is_decimal(b):
            return pa.decimal128(max(a.precision, b.precision), 0)
        other = b if pa.types.is_decimal(a) else a
        dec = a if pa.types.is_decimal(a) else b
        assert pa.types.is_decimal(dec)  # one of the two is, by the test above
        if pa.types.is_integer(other):
            return pa.decimal128(max(dec.precision, 10 if other == pa.int32() else 20), 0)
        return pa.string()
    if {a, b} == {pa.int64(), pa.float64()}:
        return pa.string()
    if a in _NUMERIC_ORDER and b in _NUMERIC_ORDER:
        return max(a, b, key=_NUMERIC_ORDER.index)
    temporal = {pa.date32(), pa.timestamp("us", tz="UTC")}
    if a in temporal and b in temporal:
        return pa.timestamp("us", tz="UTC")
    return pa.string()


def infer_column_type(raws: list[str]) -> pa.DataType:
    """Widened type over every raw value seen for one column; a column whose every value is
    ``__HIVE_DEFAULT_PARTITION__`` is ``pa.null()``, as Spark types it ``void``."""
    result: pa.DataType | None = None
    types: dict[str, pa.DataType | None] = {}  # each distinct value inferred once
    for raw in raws:
        if raw not in types:
            types[raw] = infer_type(raw)
        result = widen(result, types[raw])
    return result if result is not None else pa.null()


# --- typed values ----------------------------------------------------------------------

def _parse_timestamp(value: str, time_zone: str | None = "UTC") -> dt.datetime:
    """The instant a timestamp partition value names: its local time in ``time_zone`` (as
    Spark casts it in the session time zone; a time a clock skips, in a gap of daylight
    saving, is read one gap later and a repeated one as its earlier instant, as Java's
    ``LocalDateTime.atZone``)."""
    parsed = dt.datetime.fromisoformat(value.replace(" ", "T"))
    if parsed.tzinfo:
        return parsed
    return parsed.replace(tzinfo=zone_info(time_zone or "UTC")).astimezone(dt.UTC)


def in_time_zone(columns: PartitionColumns, time_zone: str) -> list[tuple[str, pa.DataType]]:
    """``columns`` with each timestamp's zone set to ``time_zone``, the zone its values are
    read in (:func:`parse_value`); a timestamp without a zone (Spark's ``timestamp_ntz``)
    stays one. ``time_zone`` is spelled as the option ``time_zone`` spells it."""
    return [(n, pa.timestamp(t.unit, tz=time_zone) if pa.types.is_timestamp(t)
             and t.tz is not None and t.tz != time_zone else t) for n, t in columns]


def parse_value(raw: str, type_: pa.DataType, *, column: str, path: str) -> Any:
    """Typed Python value of an escaped raw value; errors name the column, value and path."""
    if raw == DEFAULT_PARTITION_NAME:
        return None
    if not raw:
        raise PartitionValueError(
            f"empty value of partition column {column!r} in {path} (Spark refuses it too: "
            f"a null value is spelled {column}={DEFAULT_PARTITION_NAME})")
    value = unescape_path_name(raw)
    try:
        return _convert(value, type_)
    except (ValueError, InvalidOperation, OverflowError):
        raise PartitionValueError(
            f"partition value {value!r} of column {column!r} does not parse as {type_} "
            f"(in {path})"
        ) from None


def _convert(value: str, type_: pa.DataType) -> Any:
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return value
    if pa.types.is_integer(type_):
        if not _INT.fullmatch(value):
            raise ValueError(value)
        n = int(value)
        info = _int_bounds(type_)
        if not info[0] <= n <= info[1]:
            raise OverflowError(value)
        return n
    if pa.types.is_floating(type_):
        return _java_double(value)
    if pa.types.is_decimal(type_):
        return Decimal(value)
    if pa.types.is_date(type_):
        if not _DATE.fullmatch(value):
            raise ValueError(value)
        return dt.date.fromisoformat(value)
    if pa.types.is_timestamp(type_):
        if not (_TIMESTAMP_CAST.fullmatch(value) or _DATE.fullmatch(value)):
            raise ValueError(value)
        return _parse_timestamp(value, type_.tz)
    if pa.types.is_time(type_):
        if not _TIME_CAST.fullmatch(value):
            raise ValueError(value)
        return dt.time.fromisoformat(value)
    if pa.types.is_boolean(type_):
        lowered = value.lower()
        if lowered not in ("true", "false"):
            raise ValueError(value)
        return lowered == "true"
    raise ValueError(f"unsupported partition type {type_}")


def _int_bounds(type_: pa.DataType) -> tuple[int, int]:
    bits = type_.bit_width
    if pa.types.is_unsigned_integer(type_):
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def spell_value(value: Any, type_: pa.DataType) -> str | None:
    """The one on-disk spelling of ``value`` when it is unambiguous, else None.

    Strings made of safe characters and ISO dates have a single spelling; integers do
    not (``hour=07`` and ``hour=7`` both parse as 7), nor do timestamps or escaped text,
    so the planner lists those levels instead of guessing a prefix.
    """
    if value is None:
        return DEFAULT_PARTITION_NAME
    if pa.types.is_string(type_) and isinstance(value, str):
        return value if value and is_safe_spelling(value) else None
    if pa.types.is_date(type_) and isinstance(value, dt.date):
        return value_text(value)
    return None


# --- declared types ------------------------------------------------------------------------

_TYPE_NAMES: dict[str, pa.DataType] = {
    "string": pa.string(), "str": pa.string(), "int": pa.int32(), "integer": pa.int32(),
    "long": pa.int64(), "bigint": pa.int64(), "double": pa.float64(), "float": pa.float32(),
    "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"), "boolean": pa.bool_(),
    "bool": pa.bool_(), "short": pa.int16(), "smallint": pa.int16(), "tinyint": pa.int8(),
    "time": pa.time64("us"),
}


def partition_type(type_: Any, name: str) -> pa.DataType:
    """A declared partition column type: a pyarrow type or a Spark SQL type name."""
    if isinstance(type_, pa.DataType):
        return type_
    key = str(type_).strip().lower()
    if key in _TYPE_NAMES:
        return _TYPE_NAMES[key]
    if key.startswith("decimal(") and key.endswith(")"):
        p, _, s = key[8:-1].partition(",")
        try:
            return pa.decimal128(int(p), int(s or 0))
        except ValueError:
            pass
    raise OptionError(f"partition column {name!r}: unknown type {type_!r}; use a pyarrow type "
                      f"or one of {', '.join(sorted(_TYPE_NAMES))}, decimal(p,s)")


# --- the layout of a table's keys ------------------------------------------------------------

_UNSEEN = object()
_MAX_SEEN = 100_000  # directory names remembered per layout


@dataclass(frozen=True)
class HiveLayout:
    """Keys below ``root`` (a prefix ending in ``/``) laid out as ``k1=v1/…/kN=vN/file``.
    Column names in directories are matched ignoring case unless ``case_sensitive`` (Spark's
    ``spark.sql.caseSensitive``, false by default: ``A=2/`` is column ``a``). A file right
    below the root of a partitioned layout is no part of the table, as in Spark."""

    root: str
    columns: tuple[tuple[str, pa.DataType], ...]
    case_sensitive: bool = False
    # typed values of directory names seen (``date=2025-03-01`` at depth 0, ...): a long
    # listing meets each many times (every hour of a day names its date)
    _seen: dict[tuple[int, str], Any] = field(default_factory=dict, compare=False, repr=False)
    # levels where a decoded directory spelled its column's name in another case
    _renamed: set[int] = field(default_factory=set, compare=False, repr=False)

    @property
    def renamed_levels(self) -> frozenset[int]:
        """Levels where some decoded directory spelled the column's name otherwise (``a=1/``
        for column ``A``): a prefix built from the column's name misses such directories."""
        return frozenset(self._renamed)

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.columns]

    def segments(self, path: str) -> list[str] | None:
        """Segments of ``path`` below the root, or None when any of them is hidden."""
        return None if is_hidden_below(self.root, path) else path[len(self.root):].split("/")

    def decode(self, path: str, example: str | None = None) -> dict[str, Any] | None:
        """Typed partition values of a listed key; None for a key that is not read (hidden,
        or a file at the root beside the partition directories). A key that breaks the
        layout raises :class:`PartitionLayoutError` (``example``: a good key to show)."""
        segments = self.segments(path)
        if segments is None:
            return None
        k = len(self.columns)
        if k and len(segments) == 1:
            _warn_root_file(self.root, path)
            return None
        if len(segments) <= k:
            raise PartitionLayoutError(
                f"file {path} sits above the partition directories "
                f"({'/'.join(n + '=…' for n in self.names)}) of {self.root}")
        values = {name: self.value(depth, segments[depth], path, example)
                  for depth, (name, _) in enumerate(self.columns)}
        if k + 1 < len(segments):  # directories below the partition levels
            self.check_below(segments[k:-1], path, example)
        return values

    def check_below(self, dirs: Sequence[str], path: str, example: str | None = None) -> None:
        """Plain directories below the last partition level are read (Spark reads
        ``date=X/sub/file`` as partition ``date=X``); a ``k=v`` one is another layout."""
        for segment in dirs:
            parsed = parse_segment(segment)
            if parsed is not None:
                layout = "/".join(n + "=…" for n in self.names) or "no partition directories"
                other = f"; compare {example}" if example else ""
                raise PartitionLayoutError(
                    f"{path} has a partition directory {segment!r} below the table's "
                    f"partition levels ({layout}) of {self.root}{other}")

    def value(self, depth: int, segment: str, path: str, example: str | None = None) -> Any:
        """The typed value a directory ``segment`` at ``depth`` holds, or a layout error."""
        seen = self._seen.get((depth, segment), _UNSEEN)
        if seen is not _UNSEEN:
            return seen
        value = self._value(depth, segment, path, example)
        if len(self._seen) < _MAX_SEEN:
            self._seen[depth, segment] = value
        return value

    def _value(self, depth: int, segment: str, path: str, example: str | None) -> Any:
        name, type_ = self.columns[depth]
        parsed = parse_segment(segment)
        if parsed is None or not same_name(parsed[0], name, self.case_sensitive):
            other = f"; compare {example}" if example else ""
            if parsed is None:
                raise PartitionLayoutError(
                    f"directory level {depth + 1} under {self.root} mixes k=v and plain "
                    f"names: {path} has {segment!r} where {name}=… was expected{other}")
            raise PartitionLayoutError(
                f"paths have different partition column names at level {depth + 1}: {path} "
                f"has {parsed[0]!r} where {name!r} was expected{other}")
        if parsed[0] != name:
            self._renamed.add(depth)
        return parse_value(parsed[1], type_, column=name, path=path)


def same_name(found: str, name: str, case_sensitive: bool = False) -> bool:
    """Whether a directory's column name ``found`` names the column ``name`` (ignoring case
    unless ``case_sensitive``, as Spark's ``spark.sql.caseSensitive``)."""
    return found == name if case_sensitive else found.lower() == name.lower()


def discover_columns(root: str, paths: Sequence[str],
                     declared: Sequence[tuple[str, pa.DataType | None]] | None,
                     to_url: Callable[[str], str] = str, *,
                     case_sensitive: bool = False) -> list[tuple[str, pa.DataType]]:
    """Partition columns from sampled keys: names must agree across paths (ignoring case
    unless ``case_sensitive``: a declared name is kept, else the first path's spelling);
    types are declared or inferred as Spark infers them (independent of any query). A
    declared type that a sampled value contradicts fails now, naming the value and the
    file; so does an empty value, a column repeated in one path, or a ``k=v`` directory
    below the partition levels. Files right below the root of a partitioned table are
    no part of it (Spark reads only the partition directories)."""
    fold = (lambda n: n) if case_sensitive else str.lower
    layout = HiveLayout(root, ())
    # names, raw values, path, whether the file is right below the root
    layouts: list[tuple[list[str], list[str], str, bool]] = []
    # a sampled page holds many files of each directory: each directory is parsed and
    # checked once, at its first file (the one an error names, as before)
    by_dir: dict[str, tuple[list[str], list[str], bool]] = {}
    firsts: list[tuple[list[str], list[str], str, bool]] = []  # each directory's first file
    for path in paths:
        segments = layout.segments(path)
        if segments is None:
            continue
        parent = path[:path.rfind("/") + 1]
        done = by_dir.get(parent)
        if done is None:
            names, raws = [], []
            dirs = segments[:-1]
            for seg in dirs:
                parsed = parse_segment(seg)
                if parsed is None:
                    break
                names.append(parsed[0])
                raws.append(parsed[1])
            _check_repeated(names, to_url(path))
            HiveLayout(root, tuple((n, pa.string()) for n in names)).check_below(
                dirs[len(names):], to_url(path))
            done = by_dir[parent] = (names, raws, not dirs)
            firsts.append((names, raws, path, not dirs))
        layouts.append((done[0], done[1], path, done[2]))
    partitioned = bool(declared) if declared is not None else any(n for n, *_ in layouts)
    if partitioned:
        layouts = [x for x in layouts if not x[3]]
        firsts = [x for x in firsts if not x[3]]
    if declared is not None:
        k = len(declared)
        want = [n for n, _ in declared]
        for found, _, path, _ in firsts:
            if [fold(f) for f in found[:k]] != [fold(n) for n in want]:
                if [f.lower() for f in found[:k]] == [n.lower() for n in want]:
                    raise PartitionLayoutError(
                        f"declared partition columns {want} differ in case from the "
                        f"directories in {to_url(path)} ({found[:k]}) and names are "
                        "case-sensitive (case_sensitive=true); declare them as on disk")
                raise PartitionLayoutError(
                    f"declared partition columns {want} do not match the directories of "
                    f"{to_url(path)} (found {found[:k] or 'no k=v directories'})")
            if len(found) > k:
                raise PartitionLayoutError(
                    f"{to_url(path)} has partition directories {found[k:]} below the declared "
                    f"partition columns {want}")
    else:
        depth = min((len(n) for n, *_ in layouts), default=0)
        first, _, first_path, _ = layouts[0] if layouts else ([], [], "", False)
        for found, _, path, _ in firsts:
            if ([fold(f) for f in found[:depth]] != [fold(f) for f in first[:depth]]
                    or len(found) != len(first)):
                raise PartitionLayoutError(
                    f"paths have different partition columns: {to_url(first_path)} has "
                    f"{first or 'none'} but {to_url(path)} has {found or 'none'}")
        declared = [(n, None) for n in first[:depth]]
    by_column: dict[str, list[str]] = defaultdict(list)
    for _, values, _, _ in layouts:
        for (name, _), raw in zip(declared, values, strict=False):
            by_column[name].append(raw)
    cols = [(n, t if t is not None else infer_column_type(by_column[n])) for n, t in declared]
    parsed_ok: set[tuple[str, str]] = set()  # (column, raw) already parsed as its type
    for _, values, path, _ in layouts:
        for (name, type_), raw in zip(cols, values, strict=False):
            if (name, raw) not in parsed_ok:
                parse_value(raw, type_, column=name, path=to_url(path))
                parsed_ok.add((name, raw))
    return cols


def respelled_names(root: str, paths: Sequence[str],
                    columns: Sequence[tuple[str, pa.DataType]]) -> list[bool]:
    """Per partition level: whether some sampled key spells the column's name otherwise
    (``a=1/`` for column ``A``, read as one column when names ignore case): a prefix built
    from the column's name would miss such a directory."""
    out = [False] * len(columns)
    dirs: set[str] = set()
    for path in paths:
        parent = path[:path.rfind("/") + 1]
        if parent in dirs or is_hidden_below(root, path):
            continue
        dirs.add(parent)  # its files all spell the directories alike
        for depth, segment in enumerate(path[len(root):].split("/")[:-1][:len(columns)]):
            parsed = parse_segment(segment)
            if parsed is not None and parsed[0] != columns[depth][0]:
                out[depth] = True
    return out


#: roots whose files beside the partition directories were reported (bounded)
_ROOT_FILES_REPORTED: set[str] = set()


def _warn_root_file(root: str, path: str) -> None:
    """Say once per root that a file there is not read (Spark drops it silently)."""
    if root in _ROOT_FILES_REPORTED:
        return
    if len(_ROOT_FILES_REPORTED) > 1000:
        _ROOT_FILES_REPORTED.clear()
    _ROOT_FILES_REPORTED.add(root)
    log.warning("%s sits at the root of a partitioned table, beside its partition "
                "directories: not read (Spark reads only the partition directories)", path)


def _check_repeated(names: Sequence[str], path: str) -> None:
    """Spark refuses a partition column twice in one path (names compared ignoring case)."""
    seen: set[str] = set()
    for name in names:
        if name.lower() in seen:
            raise PartitionLayoutError(
                f"partition column {name!r} appears twice in {path}")
        seen.add(name.lower())
