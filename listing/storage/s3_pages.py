"""ListObjectsV2 response bodies parsed in one pass.

botocore parses every response by walking the service model over an ElementTree, a large
part of what a LIST page costs this client, and the client's CPU is what bounds a long
listing once requests run concurrently. A LIST body is flat and regular (``<Contents>``
blocks of scalar fields, ``<CommonPrefixes>`` blocks of one ``<Prefix>``, scalar fields at
the top), so a few regular expressions read it in a small fraction of that time
(``python -m bench.client_cpu`` measures both parsers).

The parser reads only what it fully understands: any element it does not know (an
``<Owner>`` asked for with ``FetchOwner``, a ``<RestoreStatus>``, a field S3 adds one
day) makes it decline, and botocore parses that page as before. It returns what
botocore's parser returns for the body (types included); botocore still adds the
response metadata and URL-decodes the keys it asked to have encoded.

Our own lister asks for more (:func:`listing_columns`, set around its requests): a plain
page's objects as columns (:class:`ListColumns`), with no dict per key for botocore's
sake, as building them and then our tuples from them cost more than the parse itself.
Other callers of the same client (s3fs's own listings) get botocore's form.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import html
import re
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, NamedTuple

_CONTENTS = re.compile(r"<Contents>(.*?)</Contents>", re.S)
_COMMON = re.compile(r"<CommonPrefixes>(.*?)</CommonPrefixes>", re.S)
_FIELD = re.compile(r"<([A-Za-z]+)>([^<]*)</\1>")
_EMPTY = re.compile(r"<([A-Za-z]+)\s*/>")
_ROOT = re.compile(r'\A\s*(?:<\?xml[^>]*\?>\s*)?<ListBucketResult(?:\s+xmlns="[^"]*")?\s*>')
_END = "</ListBucketResult>"

# top-level scalars of ListObjectsV2Output and their types; RequestCharged is a header
_TOP: dict[str, str] = {
    "Name": "str", "Prefix": "str", "Delimiter": "str", "MaxKeys": "int",
    "EncodingType": "str", "KeyCount": "int", "ContinuationToken": "str",
    "NextContinuationToken": "str", "StartAfter": "str", "IsTruncated": "bool",
}
# the scalar members of an Object; ChecksumAlgorithm is a flattened list
_OBJECT: dict[str, str] = {
    "Key": "str", "LastModified": "time", "ETag": "str", "Size": "int",
    "StorageClass": "str", "ChecksumType": "str", "ChecksumAlgorithm": "list",
}
_PREFIX: dict[str, str] = {"Prefix": "str"}

# S3's own order of an Object's fields, and of a common prefix's, which most pages are
# made of only: one findall reads them all. Such a block holds exactly as many "<" as the
# pattern writes (12 and 4): a run of blocks with that many holds nothing else.
_PLAIN = re.compile(
    r"<Contents>\s*<Key>([^<]*)</Key>\s*<LastModified>([^<]*)</LastModified>\s*"
    r"<ETag>([^<]*)</ETag>\s*<Size>(\d+)</Size>\s*<StorageClass>([^<]*)</StorageClass>"
    r"\s*</Contents>")
# the same, for columns: the ETag without its quotes. S3's own form (no whitespace, the
# ETag in escaped quotes) first, as it reads faster (bench.client_cpu); then any quoting and
# whitespace (an ETag with any other "&" or a quote inside is not read here, and the page
# goes to the general path)
_PLAIN_COLUMNS = (
    re.compile(r"<Contents><Key>([^<]*)</Key><LastModified>([^<]*)</LastModified>"
               r'<ETag>&quot;([^<&"]*)&quot;</ETag><Size>(\d+)</Size>'
               r"<StorageClass>[^<]*</StorageClass></Contents>"),
    re.compile(r"<Contents>\s*<Key>([^<]*)</Key>\s*<LastModified>([^<]*)</LastModified>\s*"
               r'<ETag>(?:&quot;|")?([^<&"]*)(?:&quot;|")?</ETag>\s*<Size>(\d+)</Size>\s*'
               r"<StorageClass>[^<]*</StorageClass>\s*</Contents>"),
)
_PLAIN_PREFIX = re.compile(r"<CommonPrefixes>\s*<Prefix>([^<]*)</Prefix>\s*</CommonPrefixes>")


#: where a page's columns are in the parsed output
COLUMNS = "ListingColumns"
_WANT_COLUMNS: ContextVar[bool] = ContextVar("listing_list_columns", default=False)


class ListColumns(NamedTuple):
    """A page's objects, one list per field: keys as listed (still URL-encoded when asked
    so), modification times, ETags without quotes (None: none), sizes."""

    keys: list[str]
    last_modified: list[dt.datetime | None]
    etags: list[str | None]
    sizes: list[int]


@contextlib.contextmanager
def listing_columns() -> Iterator[None]:
    """LIST pages parsed in this context (this task, on the client's event loop) come
    back as :data:`COLUMNS` where they can."""
    token = _WANT_COLUMNS.set(True)
    try:
        yield
    finally:
        _WANT_COLUMNS.reset(token)


def columns_of(parsed: dict[str, Any]) -> ListColumns:
    """The objects of a parsed page as columns, whichever parser read it."""
    columns: ListColumns | None = parsed.get(COLUMNS)
    if columns is not None:
        return columns
    contents = parsed.get("Contents", [])
    return ListColumns([o["Key"] for o in contents],
                       [o.get("LastModified") for o in contents],
                       [o.get("ETag", "").strip('"') or None for o in contents],
                       [int(o["Size"]) for o in contents])


class _Declined(Exception):
    """The body holds something this parser does not read."""


def _text(raw: str) -> str:
    return html.unescape(raw) if "&" in raw else raw


def _time(text: str) -> dt.datetime:
    # S3 writes 2026-03-01T10:00:00.000Z; anything else goes to botocore
    if len(text) <= 19 or text[10] != "T" or text[-1] != "Z":
        raise _Declined
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise _Declined from None


def _etag(raw: str) -> str:
    if raw[:6] == "&quot;" and raw[-6:] == "&quot;" and "&" not in raw[6:-6]:
        return '"' + raw[6:-6] + '"'
    return _text(raw)


def _plain_blocks(text: str, pattern: re.Pattern[str], tag: str,
                  marks: int) -> tuple[list[Any], str] | None:
    """What ``pattern`` reads of every ``<tag>`` block of ``text``, and the text without
    them, when all are in that plain form and next to each other (a run of n blocks then
    holds n × ``marks`` "<" and no more); else None."""
    found = pattern.findall(text)
    open_tag, close_tag = f"<{tag}>", f"</{tag}>"
    if len(found) != text.count(open_tag):
        return None
    if not found:
        return [], text
    start = text.find(open_tag)
    end = text.rfind(close_tag) + len(close_tag)
    if text.count("<", start, end) != len(found) * marks:
        return None
    return found, text[:start] + text[end:]


def _objects(found: list[tuple[str, ...]]) -> list[dict[str, Any]]:
    """The Objects of the plain ``<Contents>`` blocks ``_PLAIN`` read."""
    times: dict[str, dt.datetime] = {}  # a batch written at once shares its times
    contents = []
    for key, modified, etag, size, storage in found:
        if (when := times.get(modified)) is None:
            when = times[modified] = _time(modified)
        contents.append({"Key": _text(key), "LastModified": when, "ETag": _etag(etag),
                         "Size": int(size), "StorageClass": _text(storage)})
    return contents


def _columns(found: list[tuple[str, ...]]) -> ListColumns:
    """The objects of the plain ``<Contents>`` blocks ``_PLAIN_COLUMNS`` read, a field at a
    time (a batch written at once shares its times; a page's keys rarely hold "&")."""
    if not found:
        return ListColumns([], [], [], [])
    keys, modified, etags, sizes = (list(column) for column in zip(*found, strict=True))
    if "&" in "".join(keys):
        keys = [_text(key) for key in keys]
    times = {text: _time(text) for text in set(modified)}
    return ListColumns(keys, list(map(times.__getitem__, modified)),
                       [e or None for e in etags] if "" in etags else etags,
                       list(map(int, sizes)))


def _value(kind: str, raw: str) -> Any:
    if kind == "int":
        return int(raw)
    if kind == "bool":
        if raw not in ("true", "false"):
            raise _Declined
        return raw == "true"
    if kind == "time":
        return _time(raw)
    return _text(raw)


def _fields(block: str, members: dict[str, str]) -> dict[str, Any]:
    """The scalar fields of one element's body; declines on anything else inside it."""
    found = _FIELD.findall(block)
    empty = _EMPTY.findall(block)
    if block.count("<") != 2 * len(found) + len(empty):
        raise _Declined  # nested elements, comments, CDATA
    out: dict[str, Any] = {}
    for tag, raw in found:
        kind = members.get(tag)
        if kind is None:
            raise _Declined
        if kind == "list":
            out.setdefault(tag, []).append(_text(raw))
        elif tag in out:
            raise _Declined  # a scalar given twice
        else:
            out[tag] = _value(kind, raw)
    for tag in empty:
        kind = members.get(tag)
        if kind is None or kind not in ("str", "list"):
            raise _Declined
        if kind == "list":
            out.setdefault(tag, []).append("")
        else:
            out[tag] = ""
    return out


def _general(text: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """Blocks in any order and form of their fields (the slow path)."""
    contents = [_fields(block, _OBJECT) for block in _CONTENTS.findall(text)]
    prefixes = [_fields(block, _PREFIX) for block in _COMMON.findall(text)]
    if any(set(p) != {"Prefix"} for p in prefixes) or any("Key" not in c for c in contents):
        raise _Declined
    return contents, prefixes, _COMMON.sub("", _CONTENTS.sub("", text))


def parse_list_page(body: bytes, columns: bool = False) -> dict[str, Any] | None:
    """The parsed ListObjectsV2 output of ``body`` (without ``ResponseMetadata``), or
    None when the body is anything but a LIST page made only of the fields we know.
    ``columns``: the objects of a plain page as :data:`COLUMNS`, not ``Contents``."""
    contents: list[dict[str, Any]] | ListColumns
    try:
        text = body.decode("utf-8")
        root = _ROOT.match(text)
        text = text.rstrip()
        if root is None or not text.endswith(_END):
            return None
        text = text[root.end():-len(_END)]
        objects = None
        for pattern in _PLAIN_COLUMNS if columns else (_PLAIN,):
            if (objects := _plain_blocks(text, pattern, "Contents", 12)) is not None:
                break
        common = None if objects is None else _plain_blocks(objects[1], _PLAIN_PREFIX,
                                                            "CommonPrefixes", 4)
        if objects is None or common is None:
            contents, prefixes, top = _general(text)
        else:
            contents = _columns(objects[0]) if columns else _objects(objects[0])
            prefixes, top = [{"Prefix": _text(p)} for p in common[0]], common[1]
        parsed = _fields(top, _TOP)
    except (_Declined, ValueError, UnicodeDecodeError):
        return None
    if isinstance(contents, ListColumns):
        parsed[COLUMNS] = contents
    elif contents:
        parsed["Contents"] = contents
    if prefixes:
        parsed["CommonPrefixes"] = prefixes
    return parsed


def use_fast_list_pages(client: Any) -> None:
    """Have ``client`` parse LIST pages with :func:`parse_list_page`: before botocore's
    parser runs, a page we can read is parsed here and botocore is left an empty body
    (it still adds the metadata, and its handlers still decode URL-encoded keys)."""
    # "*" for the service: botocore runs handlers of a wildcard at a shallower level last
    # among equals and "first" ones first, so this one sees the page before botocore's
    # check of every S3 body for an embedded error (a whole ElementTree parse of the page,
    # measured by bench.client_cpu, which then meets the empty body); if that order ever
    # changes, it is only slower
    client.meta.events.register_first("before-parse.*.ListObjectsV2", _before_parse,
                                      unique_id="listing-fast-list-pages")


def _before_parse(response_dict: dict[str, Any], customized_response_dict: dict[str, Any],
                  **_: Any) -> None:
    body = response_dict.get("body")
    if response_dict.get("status_code") != 200 or not isinstance(body, bytes):
        return
    parsed = parse_list_page(body, _WANT_COLUMNS.get())
    if parsed is None:
        return
    customized_response_dict.update(parsed)
    response_dict["body"] = b"<ListBucketResult/>"
