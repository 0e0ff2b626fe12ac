"""ListObjectsV2 response bodies parsed in one pass.

botocore parses every response by walking the service model over an ElementTree: about
14 ms of CPU for a 1 000-key LIST page, half of what such a page costs this client, and
the client's CPU is what bounds a long listing once requests run concurrently. A LIST
body is flat and regular (``<Contents>`` blocks of scalar fields, ``<CommonPrefixes>``
blocks of one ``<Prefix>``, scalar fields at the top), so a few regular expressions read
it in well under a millisecond.

The parser reads only what it fully understands: any element it does not know (an
``<Owner>`` asked for with ``FetchOwner``, a ``<RestoreStatus>``, a field S3 adds one
day) makes it decline, and botocore parses that page as before. It returns what
botocore's parser returns for the body (types included); botocore still adds the
response metadata and URL-decodes the keys.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from typing import Any

_CONTENTS = re.compile(rb"<Contents>(.*?)</Contents>", re.S)
_COMMON = re.compile(rb"<CommonPrefixes>(.*?)</CommonPrefixes>", re.S)
_FIELD = re.compile(rb"<([A-Za-z]+)>([^<]*)</\1>")
_EMPTY = re.compile(rb"<([A-Za-z]+)\s*/>")
_ROOT = re.compile(rb'\A\s*(?:<\?xml[^>]*\?>\s*)?<ListBucketResult(?:\s+xmlns="[^"]*")?\s*>')

# top-level scalars of ListObjectsV2Output and their types; RequestCharged is a header
_TOP: dict[bytes, str] = {
    b"Name": "str", b"Prefix": "str", b"Delimiter": "str", b"MaxKeys": "int",
    b"EncodingType": "str", b"KeyCount": "int", b"ContinuationToken": "str",
    b"NextContinuationToken": "str", b"StartAfter": "str", b"IsTruncated": "bool",
}
# the scalar members of an Object; ChecksumAlgorithm is a flattened list
_OBJECT: dict[bytes, str] = {
    b"Key": "str", b"LastModified": "time", b"ETag": "str", b"Size": "int",
    b"StorageClass": "str", b"ChecksumType": "str", b"ChecksumAlgorithm": "list",
}


# S3's own order of an Object's fields, which most pages are made of only: one findall
# reads them all; a page with any other block goes through the general path
_PLAIN = re.compile(
    rb"<Contents>\s*<Key>([^<]*)</Key>\s*<LastModified>([^<]*)</LastModified>\s*"
    rb"<ETag>([^<]*)</ETag>\s*<Size>(\d+)</Size>\s*<StorageClass>([^<]*)</StorageClass>"
    rb"\s*</Contents>")


class _Declined(Exception):
    """The body holds something this parser does not read."""


def _text(raw: bytes) -> str:
    text = raw.decode("utf-8")
    return html.unescape(text) if "&" in text else text


def _time(raw: bytes) -> dt.datetime:
    # S3 writes 2026-03-01T10:00:00.000Z; anything else goes to botocore
    text = raw.decode("ascii")
    if len(text) <= 19 or text[10] != "T" or text[-1] != "Z":
        raise _Declined
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise _Declined from None


def _etag(raw: bytes) -> str:
    if raw[:6] == b"&quot;" and raw[-6:] == b"&quot;" and b"&" not in raw[6:-6]:
        return '"' + raw[6:-6].decode("ascii", "strict") + '"'
    return _text(raw)


def _plain(body: bytes) -> list[dict[str, Any]] | None:
    """Every ``<Contents>`` of ``body`` when all are in S3's plain form, else None."""
    found = _PLAIN.findall(body)
    if len(found) != body.count(b"<Contents>"):
        return None
    return [{"Key": _text(key), "LastModified": _time(modified), "ETag": _etag(etag),
             "Size": int(size), "StorageClass": _text(storage)}
            for key, modified, etag, size, storage in found]


def _value(kind: str, raw: bytes) -> Any:
    if kind == "int":
        return int(raw)
    if kind == "bool":
        if raw not in (b"true", b"false"):
            raise _Declined
        return raw == b"true"
    if kind == "time":
        return _time(raw)
    return _text(raw)


def _fields(block: bytes, members: dict[bytes, str]) -> dict[str, Any]:
    """The scalar fields of one element's body; declines on anything else inside it."""
    found = _FIELD.findall(block)
    empty = _EMPTY.findall(block)
    if block.count(b"<") != 2 * len(found) + len(empty):
        raise _Declined  # nested elements, comments, CDATA
    out: dict[str, Any] = {}
    for tag, raw in found:
        kind = members.get(tag)
        if kind is None:
            raise _Declined
        if kind == "list":
            out.setdefault(tag.decode(), []).append(_text(raw))
        elif tag.decode() in out:
            raise _Declined  # a scalar given twice
        else:
            out[tag.decode()] = _value(kind, raw)
    for tag in empty:
        kind = members.get(tag)
        if kind is None or kind not in ("str", "list"):
            raise _Declined
        if kind == "list":
            out.setdefault(tag.decode(), []).append("")
        else:
            out[tag.decode()] = ""
    return out


def parse_list_page(body: bytes) -> dict[str, Any] | None:
    """The parsed ListObjectsV2 output of ``body`` (without ``ResponseMetadata``), or
    None when the body is anything but a LIST page made only of the fields we know."""
    root = _ROOT.match(body)
    if root is None or not body.rstrip().endswith(b"</ListBucketResult>"):
        return None
    try:
        contents = _plain(body)
        if contents is None:
            contents = [_fields(block, _OBJECT) for block in _CONTENTS.findall(body)]
        prefixes = [_fields(block, {b"Prefix": "str"}) for block in _COMMON.findall(body)]
        if any(set(p) != {"Prefix"} for p in prefixes):
            return None
        if any("Key" not in c for c in contents):
            return None
        top = _COMMON.sub(b"", _CONTENTS.sub(b"", body[root.end():]))
        top = top.rstrip()[:-len(b"</ListBucketResult>")]
        parsed = _fields(top, _TOP)
    except (_Declined, ValueError, UnicodeDecodeError):
        return None
    if contents:
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
    # check of every S3 body for an embedded error (a whole ElementTree parse, 6 ms a page,
    # which then meets the empty body); if that order ever changes, it is only slower
    client.meta.events.register_first("before-parse.*.ListObjectsV2", _before_parse,
                                      unique_id="listing-fast-list-pages")


def _before_parse(response_dict: dict[str, Any], customized_response_dict: dict[str, Any],
                  **_: Any) -> None:
    body = response_dict.get("body")
    if response_dict.get("status_code") != 200 or not isinstance(body, bytes):
        return
    parsed = parse_list_page(body)
    if parsed is None:
        return
    customized_response_dict.update(parsed)
    response_dict["body"] = b"<ListBucketResult/>"
