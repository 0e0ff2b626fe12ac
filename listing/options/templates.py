"""The grammar of the ``layout`` and ``layout_projection`` options: text to structure.

A ``layout`` is a path template relative to the table root (docs/layouts.md)::

    AWSLogs/{account}/CloudTrail/{region}/{date:yyyy/MM/dd}

Segments are separated by ``/``. ``{name}`` is a partition value (a whole segment or part
of one: ``dt={day}``, ``{year}-{month}``); ``{name:PATTERN}`` a date or time in a Spark
datetime pattern made of the fields ``yyyy MM dd HH mm ss`` and separators, which may span
segments (``{date:yyyy/MM/dd}``); any other text is a literal the key must hold. This
module only parses and checks the text (every error one :class:`OptionError` naming the
option and the 1-based character position at fault); :mod:`listing.layout` types the
columns and decodes keys.

A ``layout_projection`` declares the values of layout columns, so a query enumerates their
prefixes without listing the levels above (Athena's partition projection)::

    date=2024-01-01..NOW; region=us-east-1|eu-west-1; hour=0..23

``;`` separates columns, ``..`` gives an inclusive range (dates, integers; ``NOW`` is
today, or this hour), ``|`` a list of values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from listing.errors import OptionError

#: pattern fields a date/time placeholder may use: field → (digits, smallest, largest)
FIELDS: dict[str, tuple[int, int, int]] = {
    "yyyy": (4, 0, 9999), "MM": (2, 1, 12), "dd": (2, 1, 31),
    "HH": (2, 0, 23), "mm": (2, 0, 59), "ss": (2, 0, 59),
}
#: the fields in order of significance: a pattern holds a run of them from its first
ORDER = ("yyyy", "MM", "dd", "HH", "mm", "ss")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Part:
    """One piece of a segment: literal text, a whole partition value (``value``: ``text``
    is the column), or one field of a date/time column (``field``: ``text`` is the
    column, ``field`` one of :data:`FIELDS`)."""

    kind: Literal["literal", "value", "field"]
    text: str
    field: str = ""
    position: int = 0  # 1-based position in the template, for errors


@dataclass(frozen=True)
class TemplateColumn:
    """A column the template names: a plain value, or a date/time with its pattern's
    fields (in template order)."""

    name: str
    fields: tuple[str, ...] = ()

    @property
    def kind(self) -> Literal["value", "int", "date", "timestamp"]:
        if not self.fields:
            return "value"
        if len(self.fields) == 1:
            return "int"
        return "date" if set(self.fields) == {"yyyy", "MM", "dd"} else "timestamp"


@dataclass(frozen=True)
class Template:
    """A parsed ``layout``: its text, its levels (one tuple of parts per segment) and its
    columns in the order they first appear."""

    text: str
    levels: tuple[tuple[Part, ...], ...]
    columns: tuple[TemplateColumn, ...]

    def __str__(self) -> str:
        return self.text


def _error(option: str, text: str, position: int, what: str) -> OptionError:
    return OptionError(f"option {option}={text!r}: {what} at character {position}")


def parse_layout(value: Any, name: str = "layout") -> Template:
    """The template ``value`` spells (a :class:`Template` is taken as it is)."""
    if isinstance(value, Template):
        return value
    text = str(value)
    body = text[:-1] if text.endswith("/") else text  # "…/dd/" is "…/dd"
    if not body.strip():
        raise OptionError(f"option {name}={text!r}: an empty template (give the path of the "
                          "data files' folders below the table root, e.g. '{date:yyyy/MM/dd}')")
    levels: list[list[Part]] = [[]]
    columns: dict[str, TemplateColumn] = {}
    i = 0
    while i < len(body):
        c = body[i]
        if c == "}":
            raise _error(name, text, i + 1, "'}' without '{'")
        if c == "/":
            if not levels[-1]:
                raise _error(name, text, i + 1, "an empty segment")
            levels.append([])
            i += 1
            continue
        if c != "{":
            j = i
            while j < len(body) and body[j] not in "{}/":
                j += 1
            _add(levels[-1], Part("literal", body[i:j], position=i + 1), name, text)
            i = j
            continue
        close = body.find("}", i)
        nested = body.find("{", i + 1)
        if close < 0 or 0 <= nested < close:
            raise _error(name, text, i + 1, "unclosed '{'")
        inner = body[i + 1:close]
        column, colon, pattern = inner.partition(":")
        if not column:
            raise _error(name, text, i + 2, "a placeholder without a name")
        if not _NAME.fullmatch(column):
            raise _error(name, text, i + 2, f"placeholder name {column!r} is not a plain "
                         "name (letters, digits, _)")
        if column.lower() in {n.lower() for n in columns}:
            raise _error(name, text, i + 2, f"column {column!r} appears twice")
        if not colon:
            _add(levels[-1], Part("value", column, position=i + 1), name, text)
            columns[column] = TemplateColumn(column)
        else:
            fields = _pattern(levels, column, pattern, i + len(column) + 3, name, text)
            columns[column] = TemplateColumn(column, fields)
        i = close + 1
    if not levels[-1]:
        raise _error(name, text, len(body), "an empty segment")
    return Template(text, tuple(tuple(level) for level in levels), tuple(columns.values()))


def _pattern(levels: list[list[Part]], column: str, pattern: str, start: int, name: str,
             text: str) -> tuple[str, ...]:
    """Add the parts of ``{column:pattern}`` (``pattern`` at 1-based ``start``)."""
    if not pattern:
        raise _error(name, text, start, f"an empty pattern for {column!r}")
    fields: list[str] = []
    j = 0
    while j < len(pattern):
        c = pattern[j]
        at = start + j
        if c.isalpha():
            k = j
            while k < len(pattern) and pattern[k] == c:
                k += 1
            run = pattern[j:k]
            if run not in FIELDS:
                raise _error(name, text, at, f"pattern field {run!r} of {column!r} is not "
                             f"one of {', '.join(ORDER)}")
            if run in fields:
                raise _error(name, text, at, f"pattern field {run!r} twice in {column!r}")
            _add(levels[-1], Part("field", column, run, at), name, text)
            fields.append(run)
            j = k
        elif c == "/":
            if not levels[-1]:
                raise _error(name, text, at, "an empty segment")
            levels.append([])
            j += 1
        elif c in "{}'":
            raise _error(name, text, at, f"{c!r} inside the pattern of {column!r}")
        else:
            _add(levels[-1], Part("literal", c, position=at), name, text)
            j += 1
    if not fields:
        raise _error(name, text, start, f"the pattern of {column!r} has no field")
    if len(fields) > 1 and tuple(fields) != ORDER[:len(fields)]:
        raise _error(name, text, start, f"the pattern of {column!r} must hold yyyy, MM, dd "
                     "(a date) and optionally HH, mm, ss (a timestamp), or one field alone "
                     f"(an int); got {', '.join(fields)}")
    if len(fields) > 1 and len(fields) < 3:
        raise _error(name, text, start, f"the pattern of {column!r} must hold yyyy, MM and dd")
    return tuple(fields)


def _add(level: list[Part], part: Part, name: str, text: str) -> None:
    """Append ``part``; two parts side by side must be told apart: a literal between two
    placeholders, unless both are fixed-width pattern fields (``yyyyMMdd``)."""
    if level and part.kind == "literal" and level[-1].kind == "literal":
        level[-1] = Part("literal", level[-1].text + part.text, position=level[-1].position)
        return
    if level and part.kind != "literal" and level[-1].kind != "literal" and not (
            part.kind == "field" and level[-1].kind == "field"):
        raise _error(name, text, part.position, "two placeholders with no literal text "
                     "between them (where one ends is ambiguous)")
    level.append(part)


# --- projection -------------------------------------------------------------------------

NOW = "NOW"


@dataclass(frozen=True)
class Projected:
    """What a projection declares of one column: an inclusive range (``low``/``high`` as
    text, ``NOW`` allowed) or a list of ``values`` (text)."""

    column: str
    low: str | None = None
    high: str | None = None
    values: tuple[str, ...] = ()

    def __str__(self) -> str:
        """As the option spells it: ``col=low..high`` or ``col=a|b``."""
        spec = f"{self.low}..{self.high}" if self.low is not None else "|".join(self.values)
        return f"{self.column}={spec}"


def parse_projection(value: Any, name: str = "layout_projection") -> dict[str, Projected]:
    """``col=lo..hi; col=a|b|c`` as column → :class:`Projected` (a dict is taken as it
    is). The values are checked against the columns' types by :mod:`listing.layout`."""
    if isinstance(value, dict):
        return value
    text = str(value)
    out: dict[str, Projected] = {}
    for item in text.split(";"):
        if not item.strip():
            continue
        column, eq, spec = item.partition("=")
        column, spec = column.strip(), spec.strip()
        if not eq or not _NAME.fullmatch(column) or not spec:
            raise OptionError(f"option {name}={text!r}: {item.strip()!r} is not "
                              "column=low..high or column=a|b|c")
        if column.lower() in {c.lower() for c in out}:
            raise OptionError(f"option {name}={text!r}: column {column!r} projected twice")
        if ".." in spec:
            low, _, high = spec.partition("..")
            if not low.strip() or not high.strip() or "|" in spec:
                raise OptionError(f"option {name}={text!r}: range {spec!r} of {column!r} "
                                  "needs low..high")
            out[column] = Projected(column, low.strip(), high.strip())
        else:
            values = tuple(v.strip() for v in spec.split("|"))
            if not all(values):
                raise OptionError(f"option {name}={text!r}: an empty value in {spec!r}")
            out[column] = Projected(column, values=values)
    if not out:
        raise OptionError(f"option {name}={text!r}: no column projected")
    return out
