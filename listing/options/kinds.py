"""Option values: one parser per kind, used by every option everywhere (:data:`KINDS`).

Options reach the toolkit as Python values (the API) or as strings (Spark, SQL, the
CLI). Each kind has exactly one parser here (:data:`KINDS`), so ``merge_schema="on"``
means the same to a format and to the table that acts on it. Every parser names the
option and the value it refuses. Callers do not call them: the option registry does
(:func:`listing.options.registry.parse`), and hands them typed values.
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import re
import zoneinfo
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from listing.errors import OptionError
from listing.options.templates import parse_layout, parse_projection

MB = 1024 * 1024
MAX_CONCURRENT_REQUESTS = 64  # listing threads one scan may use

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` naming the valid name closest to ``name`` (case ignored),
    or ``""`` when none is close: the hint every unknown-option error carries."""
    by_lower = {n.lower(): n for n in names}
    close = difflib.get_close_matches(str(name).lower(), sorted(by_lower), n=1)
    return f" (did you mean {by_lower[close[0]]!r}?)" if close else ""


def parse_bool(value: Any, name: str = "option") -> bool:
    """``true/false``, ``1/0``, ``yes/no``, ``on/off`` (any case), or a bool."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise OptionError(f"option {name}={value!r} must be true or false "
                      "(true/false, 1/0, yes/no, on/off)")


def parse_int(value: Any, name: str = "option", *, minimum: int | None = None) -> int:
    """An integer (``1_000`` allowed), at least ``minimum`` when given."""
    if isinstance(value, bool):
        raise OptionError(f"option {name}={value!r} must be an integer")
    try:
        n = value if isinstance(value, int) else int(str(value).strip().replace("_", ""))
    except ValueError:
        raise OptionError(f"option {name}={value!r} must be an integer") from None
    if minimum is not None and n < minimum:
        raise OptionError(f"option {name}={value!r} must be at least {minimum}")
    return n


_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "m": MB, "mb": MB,
               "g": 1024 * MB, "gb": 1024 * MB}
_SIZE = re.compile(r"(\d[\d_]*)\s*([a-z]*)")


def parse_size(value: Any, name: str = "option") -> int:
    """Bytes: an int, or ``128m`` / ``4MB`` / ``1g`` as Spark spells sizes."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = _SIZE.fullmatch(str(value).strip().lower())
    if m is None or m.group(2) not in _SIZE_UNITS:
        raise OptionError(f"option {name}={value!r} must be a size in bytes "
                          "(e.g. 134217728, 128m, 4MB, 1g)")
    return int(m.group(1).replace("_", "")) * _SIZE_UNITS[m.group(2)]


_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")


def parse_duration(value: Any, name: str = "option") -> float:
    """Seconds: a number, or ``250ms`` / ``30s`` / ``5m`` / ``2h`` / ``1d``."""
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        m = _DURATION.fullmatch(str(value).strip().lower())
        if m is None or (m.group(2) and m.group(2) not in _DURATION_UNITS):
            raise OptionError(f"option {name}={value!r} must be a duration "
                              "(e.g. 30, 30s, 250ms, 5m, 2h, 1d)")
        seconds = float(m.group(1)) * _DURATION_UNITS.get(m.group(2), 1.0)
    if seconds < 0:
        raise OptionError(f"option {name}={value!r} must not be negative")
    return seconds


def parse_timestamp(value: Any, name: str = "option") -> dt.datetime:
    """An ISO timestamp (Spark's ``modifiedBefore`` form), read as UTC without a zone."""
    if isinstance(value, dt.datetime):
        parsed = value
    else:
        try:
            parsed = dt.datetime.fromisoformat(str(value).strip())
        except ValueError:
            raise OptionError(f"option {name}={value!r} must be an ISO timestamp "
                              "(e.g. 2026-03-01T10:00:00)") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


_OFFSET = re.compile(r"(?:GMT|UTC|UT)?([+-])(\d{1,2})(?::?(\d{2}))?")


def parse_time_zone(value: Any, name: str = "option") -> str:
    """A time zone as Spark's ``spark.sql.session.timeZone`` takes it: a region name
    (``America/Los_Angeles``), ``UTC``/``Z``, or an offset (``+05:30``, ``GMT+8``,
    ``UTC-03:00``); returned as pyarrow spells a zone (the region name, or ``+HH:MM``)."""
    text = str(value).strip()
    if text in ("Z", "UTC", "GMT", "UT"):
        return "UTC"
    offset = _OFFSET.fullmatch(text)
    if offset:
        sign, hours, minutes = offset.group(1), int(offset.group(2)), int(offset.group(3) or 0)
        if hours <= 18 and minutes < 60:
            return f"{sign}{hours:02d}:{minutes:02d}"
    else:
        try:
            zoneinfo.ZoneInfo(text)
            return text
        except (ValueError, zoneinfo.ZoneInfoNotFoundError):
            pass
    raise OptionError(f"option {name}={value!r} is not a time zone: give a region name "
                      "(America/Los_Angeles), UTC, or an offset (+05:30)")


@functools.lru_cache(maxsize=64)
def zone_info(zone: str) -> dt.tzinfo:
    """The tzinfo of a zone as :func:`parse_time_zone` spells it."""
    zone = parse_time_zone(zone, "time_zone")
    if zone == "UTC":
        return dt.UTC
    if zone[0] in "+-":
        sign = -1 if zone[0] == "-" else 1
        return dt.timezone(sign * dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    return zoneinfo.ZoneInfo(zone)


def parse_char(value: Any, name: str = "option", *, allow_none: bool = False) -> str | None:
    """One character; ``\\t``/``tab`` spell a tab (hard to type in SQL OPTIONS). With
    ``allow_none``, ``""``/``none``/``null``/``false`` switch the character off."""
    if value is None or (allow_none and str(value).lower() in ("", "none", "null", "false")):
        if allow_none:
            return None
        raise OptionError(f"option {name!r} is required")
    text = {"\\t": "\t", "tab": "\t", "\\n": "\n"}.get(str(value).lower(), str(value))
    if len(text) != 1:
        raise OptionError(f"option {name}={value!r} must be a single character")
    return text


def parse_list(value: Any) -> list[str]:
    """A list given as a list or as a comma-separated string (how Spark passes it)."""
    if value is None:
        return []
    if isinstance(value, list | tuple | set | frozenset):
        return [str(v) for v in value]
    return str(value).split(",")


@functools.lru_cache(maxsize=64)
def compile_glob(pattern: str, name: str = "glob", *, file_name: bool = False) -> re.Pattern[str]:
    """A glob as Spark (Hadoop's ``GlobPattern``) reads it: ``*``, ``?``, ``[abc]``,
    ``[a-z]``, ``[!a]``/``[^a]``, ``{a,b}`` alternatives (nestable) and ``\\`` escapes; ``*``
    matches any run of characters. An unclosed ``[`` or ``{`` is an error, not a literal
    (which would silently match nothing); with ``file_name``, so is a ``/`` (a file name
    has none). Errors name the option (``name``) and the pattern."""
    def bad(why: str) -> OptionError:
        return OptionError(f"option {name}={pattern!r} is not a usable glob: {why}")

    out: list[str] = []
    depth, i, n = 0, 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 == n:
                raise bad("it ends in an escaping backslash")
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "[":
            j = i + 1
            negate = j < n and pattern[j] in "!^"
            j += negate
            start = j
            if j < n and pattern[j] == "]":  # a leading ] is a member, as in fnmatch
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                raise bad(f"unclosed '[' at position {i}")
            members = "".join("-" if ch == "-" else re.escape(ch) for ch in pattern[start:j])
            out.append(f"[{'^' if negate else ''}{members}]")
            i = j + 1
            continue
        if c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        elif c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "/" and file_name:
            raise bad("it is matched against file names, which never contain '/'")
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        raise bad("unclosed '{'")
    try:
        return re.compile("".join(out) + r"\Z", re.DOTALL)
    except re.error as err:  # a reversed range such as [z-a]
        raise bad(str(err)) from None


def parse_url(value: Any, name: str = "option") -> str:
    """An ``http://`` or ``https://`` URL with a host (an S3-compatible endpoint), kept as
    given."""
    try:
        parts = urlsplit(str(value))
    except ValueError:  # an unclosed [ of an IPv6 address
        parts = None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise OptionError(f"option {name}={value!r} must be an http:// or https:// URL")
    return str(value)


def parse_glob(value: Any, name: str = "option") -> str:
    """A file-name glob (``path_glob_filter``), checked now (see :func:`compile_glob`)."""
    text = str(value)
    compile_glob(text, name, file_name=True)
    return text


def parse_count_or_duration(value: Any, name: str = "option") -> int | float:
    """A count (an int, or digits: ``2``) or, otherwise, a duration in seconds (a float:
    ``2h``); the type tells which was meant."""
    if isinstance(value, int) or str(value).strip().isdigit():
        return parse_int(value, name)
    try:
        return parse_duration(value, name)
    except OptionError:
        raise OptionError(f"option {name}={value!r}: a number of newest partitions (2) "
                          "or a duration (2h)") from None


def parse_start(value: Any, name: str = "option") -> str | dt.datetime:
    """``earliest``, ``latest`` (any case) or a timestamp (:func:`parse_timestamp`)."""
    if isinstance(value, dt.datetime):
        return value
    text = str(value).strip().lower()
    if text in ("earliest", "latest"):
        return text
    try:
        return parse_timestamp(value, name)
    except OptionError:
        raise OptionError(f"option {name}={value!r}: earliest, latest, or a timestamp "
                          "such as 2026-03-01T00:00:00") from None


#: a write's modes, as Spark's DataFrameWriter names them
WRITE_MODES = ("append", "overwrite", "error", "ignore")
#: Spark's other spellings of a write mode
_WRITE_MODE_ALIASES = {"errorifexists": "error", "default": "error"}


def parse_write_mode(value: Any, name: str = "mode") -> str:
    """One of :data:`WRITE_MODES` (any case, spaces around), or Spark's aliases of
    ``error`` (``errorifexists``, ``default``)."""
    text = str(value).strip().lower()
    text = _WRITE_MODE_ALIASES.get(text, text)
    if text not in WRITE_MODES:
        raise OptionError(f"{name}={value!r} must be one of {', '.join(WRITE_MODES)}")
    return text


def parse_column_names(value: Any, name: str = "option") -> list[str]:
    """Column names: a list or tuple kept as given, or a comma-separated string (how
    Spark passes ``partitionBy``) with spaces around each name and empty names dropped."""
    if isinstance(value, str):
        return [c.strip() for c in value.split(",") if c.strip()]
    return list(value)


def parse_partition_cols(value: Any, name: str = "option"
                         ) -> list[tuple[str, str | None]] | list[Any] | None:
    """Declared partition columns: ``"date:date, region:string"`` or ``"date,region"`` (a
    type left out is inferred), spaces around each name and type dropped; an empty name is
    an error, an empty string declares none (None). A list (the Python API's names or
    ``(name, type)`` pairs) is kept as given."""
    if not isinstance(value, str):
        return list(value)
    if not value:
        return None
    out: list[tuple[str, str | None]] = []
    for item in value.split(","):
        col, _, type_ = item.strip().partition(":")
        if not col.strip():
            raise OptionError(f"option {name}={value!r}: empty column name")
        out.append((col.strip(), type_.strip() or None))
    return out


def _as_given(value: Any, name: str = "option") -> Any:
    return value


def _char_or_off(value: Any, name: str = "option") -> str:
    """One character, or ``""`` where :func:`parse_char` switches it off (``none``): not
    None, which would read as an option not given."""
    return parse_char(value, name, allow_none=True) or ""


def _list(value: Any, name: str = "option") -> list[str]:
    return parse_list(value)


#: the parser of each option kind (:attr:`listing.options.registry.Option.kind`), by name:
#: the one place a raw option value becomes a typed one. ``string``, ``json``, ``choice``
#: and ``any`` values are kept as given (the registry checks a choice against its choices;
#: the edge that receives a JSON value as text decodes it).
KINDS: dict[str, Callable[[Any, str], Any]] = {
    "string": _as_given,
    "json": _as_given,
    "choice": _as_given,
    "any": _as_given,
    "bool": parse_bool,
    "int": parse_int,
    "size": parse_size,
    "duration": parse_duration,
    "timestamp": parse_timestamp,
    "glob": parse_glob,
    "url": parse_url,
    "char": parse_char,
    "char or off": _char_or_off,
    "list": _list,
    "int or duration": parse_count_or_duration,
    "start": parse_start,
    "time zone": parse_time_zone,
    "write mode": parse_write_mode,
    "column names": parse_column_names,
    "partition columns": parse_partition_cols,
    "layout": parse_layout,
    "layout projection": parse_projection,
}


def kind_of_default(default: Any) -> str:
    """The kind of an option known only by its default (a format's own options, declared
    by their defaults): bool, int, or anything else kept as given."""
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    return "any"
