"""LIST pages read by our one-pass parser (listing.s3_pages) come out exactly as botocore's
own parser reads them, or are left to botocore: bodies from the moto server, odd keys,
and generated pages. Read as columns (what our lister asks for), they hold the same
objects as botocore's ``Contents``."""

from __future__ import annotations

import datetime as dt
import email.utils
import functools
import urllib.parse
import urllib.request
from typing import Any
from xml.sax.saxutils import escape

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from listing.storage import Lister, StorageSpec
from listing.storage.s3_pages import COLUMNS, columns_of, parse_list_page

# keys a user may well have: spaces, XML's and URLs' special characters, non-ASCII
ODD_KEYS = ["t/plain/part-0.parquet", "t/sp ace/part 1.parquet", "t/amp&er/a&b.parquet",
            "t/lt<gt>/x.parquet", "t/plus+sign/p+q.parquet", "t/pct%41/q%2F.parquet",
            "t/ünï cödé/ß.parquet", "t/quote\"'/d.parquet", "t/city=S%C3%A3o/e.parquet"]


@functools.cache
def list_objects_shape() -> Any:
    """botocore's ListObjectsV2 output shape (its S3 model, loaded once a run)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("s3")
    return model.operation_model("ListObjectsV2").output_shape


def botocore_parse(body: bytes) -> dict[str, Any]:
    from botocore.parsers import create_parser

    shape = list_objects_shape()
    parsed: dict[str, Any] = create_parser("rest-xml").parse(
        {"status_code": 200, "headers": {}, "body": body}, shape)
    parsed.pop("ResponseMetadata", None)
    return parsed


def assert_parsed_alike(body: bytes) -> dict[str, Any]:
    """Both of our forms against botocore's: the same dict, and the same objects as
    columns (with the same other fields); returns the columns form."""
    theirs = botocore_parse(body)
    ours = parse_list_page(body)
    assert ours is not None, body[:300]
    assert ours == theirs
    as_columns = parse_list_page(body, columns=True)
    assert as_columns is not None
    assert columns_of(as_columns) == columns_of(theirs)
    objects = (COLUMNS, "Contents")  # the general path gives Contents in either case
    assert ({k: v for k, v in as_columns.items() if k not in objects}
            == {k: v for k, v in theirs.items() if k not in objects})
    return as_columns


def raw_page(server: Any, bucket: str, **query: str) -> bytes:
    q = urllib.parse.urlencode({"list-type": "2", **query})
    with urllib.request.urlopen(f"{server.endpoint_url}/{bucket}?{q}") as resp:
        body: bytes = resp.read()
    return body


@pytest.fixture
def odd_bucket(s3_server, s3_bucket):
    s3_server.put_objects_fast(s3_bucket, {k: b"x" * (i + 1) for i, k in enumerate(ODD_KEYS)})
    return s3_bucket


@pytest.mark.parametrize("query", [
    {}, {"encoding-type": "url"}, {"delimiter": "/", "prefix": "t/"},
    {"delimiter": "/", "prefix": "t/", "encoding-type": "url"},
    {"max-keys": "3", "encoding-type": "url"}, {"start-after": "t/plain", "prefix": "t/"},
    {"prefix": "nothing/"},
], ids=repr)
def test_moto_pages_parse_as_botocore_parses_them(s3_server, odd_bucket, query):
    body = raw_page(s3_server, odd_bucket, **query)
    as_columns = assert_parsed_alike(body)
    # S3's plain form is read by the fast pattern, not left to the general path
    assert COLUMNS in as_columns
    assert columns_of(as_columns).keys or b"<Contents>" not in body


def test_a_page_with_owners_is_left_to_botocore(s3_server, odd_bucket):
    body = raw_page(s3_server, odd_bucket, **{"fetch-owner": "true"})
    assert b"<Owner>" in body
    assert parse_list_page(body) is None


def test_the_lister_lists_odd_keys_exactly(s3_server, odd_bucket):
    """Through the client (botocore asks for URL-encoded keys and decodes them after our
    parse), flat and with a delimiter, over several pages."""
    spec = StorageSpec("s3", s3_server.storage_options)
    lister = Lister(spec)
    flat = [f for page in lister.pages(f"{odd_bucket}/t/", delimiter=False) for f in page.files]
    assert sorted(f.path for f in flat) == sorted(f"{odd_bucket}/{k}" for k in ODD_KEYS)
    sizes = {f.path: f.size for f in flat}
    assert [sizes[f"{odd_bucket}/{k}"] for k in ODD_KEYS] == list(range(1, len(ODD_KEYS) + 1))
    assert all(f.etag and f.last_modified is not None for f in flat)
    dirs = [d for page in lister.pages(f"{odd_bucket}/t/", delimiter=True) for d in page.dirs]
    assert sorted(dirs) == sorted({f"{odd_bucket}/{k.rsplit('/', 1)[0]}/" for k in ODD_KEYS})


PAGE_HEAD = (b'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult '
             b'xmlns="http://s3.amazonaws.com/doc/2006-03-01/">')
ITEM = ("<Contents><Key>{key}</Key><LastModified>2026-03-01T10:00:00.000Z</LastModified>"
        "<ETag>&quot;abc&quot;</ETag><Size>5</Size><StorageClass>STANDARD</StorageClass>"
        "</Contents>")


def page(*parts: str) -> bytes:
    return PAGE_HEAD + "".join(parts).encode() + b"</ListBucketResult>"


@pytest.mark.parametrize("body", [
    # pretty-printed, with empty elements written both ways
    page("\n  <Name>b</Name>\n  <Prefix/>\n  <KeyCount>1</KeyCount>\n  <MaxKeys>1000</MaxKeys>",
         "\n  <Delimiter></Delimiter>\n  <IsTruncated>false</IsTruncated>\n  <Contents>\n",
         "    <Key>a/b</Key>\n    <LastModified>2026-03-01T10:00:00.123Z</LastModified>\n",
         "    <ETag>&quot;e&quot;</ETag>\n    <Size>7</Size>\n",
         "    <StorageClass>STANDARD</StorageClass>\n  </Contents>\n"),
    # checksums (a flattened list), fields in another order, a common prefix
    page("<Name>b</Name><IsTruncated>true</IsTruncated>",
         "<NextContinuationToken>tok/+=</NextContinuationToken><Contents><Size>3</Size>",
         "<Key>k</Key><ChecksumAlgorithm>CRC32</ChecksumAlgorithm>",
         "<ChecksumAlgorithm>SHA256</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType>",
         "<ETag>x</ETag><LastModified>2026-03-01T10:00:00Z</LastModified></Contents>",
         "<CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes>"),
    # numeric character references, as S3 writes control characters in keys
    page("<Name>b</Name>", ITEM.format(key="a&#13;b&#x9;c&amp;&lt;"),
         "<IsTruncated>false</IsTruncated>"),
    # plain blocks with a top-level field and a common prefix between them
    page("<Name>b</Name>", ITEM.format(key="a"), "<IsTruncated>false</IsTruncated>",
         ITEM.format(key="b"), "<CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes>",
         ITEM.format(key="c"), "<CommonPrefixes><Prefix>q/</Prefix></CommonPrefixes>",
         "<KeyCount>5</KeyCount>", "<CommonPrefixes><Prefix>r/</Prefix></CommonPrefixes>"),
], ids=["pretty", "checksums", "char-refs", "interleaved"])
def test_other_page_forms_parse_as_botocore_parses_them(body):
    assert_parsed_alike(body)


@pytest.mark.parametrize("body", [
    page("<Name>b</Name>", ITEM.format(key="k"))[:-40],  # cut short in transit
    b'<?xml version="1.0"?><Error><Code>InternalError</Code></Error>',  # S3's 200 error
    page("<Name>b</Name>", ITEM.format(key="k").replace("</Size>", "</Size><Owner><ID>1"
                                                          "</ID></Owner>")),
    page("<Name>b</Name>", ITEM.format(key="k").replace("<Size>", "<Novel>1</Novel><Size>")),
    page("<Name>b</Name><NewTopLevel>1</NewTopLevel>"),
    page("<Name>b</Name><IsTruncated>maybe</IsTruncated>"),
    page("<Name>b</Name>", ITEM.format(key="k").replace("2026-03-01T10:00:00.000Z",
                                                        "Sun, 01 Mar 2026 10:00:00 GMT")),
    page("<Name>b</Name>", ITEM.format(key="<![CDATA[k]]>")),
], ids=["truncated", "error", "owner", "unknown-field", "unknown-top", "bad-bool", "rfc-time",
        "cdata"])
def test_what_the_parser_does_not_know_is_left_to_botocore(body):
    assert parse_list_page(body) is None
    assert parse_list_page(body, columns=True) is None


# XML 1.0's characters, without the surrogates that UTF-8 cannot carry
KEY_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r",
                                 min_codepoint=0x20), min_size=1, max_size=30)


@settings(max_examples=150, deadline=None)
@given(keys=st.lists(KEY_TEXT, max_size=12, unique=True),
       prefixes=st.lists(KEY_TEXT, max_size=3, unique=True),
       sizes=st.lists(st.integers(0, 2**62), min_size=12, max_size=12),
       truncated=st.booleans(), token=KEY_TEXT, whitespace=st.sampled_from(["", "\n  "]),
       etag=st.sampled_from(["&quot;{}&quot;", '"{}"', "{}", "", "&quot;{}", "&quot;a&amp;{}",
                             '""']))
def test_generated_pages_parse_as_botocore_parses_them(keys, prefixes, sizes, truncated, token,
                                                       whitespace, etag):
    w = whitespace
    items = [f"{w}<Contents>{w}<Key>{escape(k)}</Key>{w}<LastModified>2026-03-01T10:00:0"
             f"{i % 10}.000Z</LastModified>{w}<ETag>{etag.format(f'{i:032x}')}</ETag>{w}<Size>"
             f"{sizes[i]}</Size>{w}<StorageClass>STANDARD</StorageClass>{w}</Contents>"
             for i, k in enumerate(keys)]
    common = [f"{w}<CommonPrefixes><Prefix>{escape(p)}</Prefix></CommonPrefixes>"
              for p in prefixes]
    top = (f"{w}<Name>bucket</Name>{w}<Prefix>{escape(token)}</Prefix>{w}<KeyCount>"
           f"{len(keys) + len(prefixes)}</KeyCount>{w}<MaxKeys>1000</MaxKeys>{w}"
           f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>")
    if truncated:
        top += f"{w}<NextContinuationToken>{escape(token)}</NextContinuationToken>"
    body = page(top, *items, *common, w)
    assert_parsed_alike(body)


# --- the lister's own decoding of URL-encoded keys -------------------------------------------

URL_TEXT = st.text(st.sampled_from(list("ab/=%+ 3DFé\u4e2d_.-")), max_size=25)


@settings(max_examples=300, deadline=None)
@given(keys=st.lists(st.one_of(KEY_TEXT, URL_TEXT), max_size=20))
def test_keys_decode_as_botocore_decodes_them(keys):
    """A page at a time: the same text as ``unquote_plus`` of each key (what botocore
    does), for S3's encoding of any key and for any text at all (stray ``%``, ``+``, cut
    escapes, escapes of ``/``, ``%25``, line breaks)."""
    from urllib.parse import quote, quote_plus, unquote_plus

    from listing.storage.lister import decode_keys

    for encode in (lambda k: quote(k, safe="/"), lambda k: quote_plus(k, safe="/"),
                   lambda k: k):
        encoded = [encode(k) for k in keys]
        assert decode_keys(encoded) == [unquote_plus(k) for k in encoded]
    assert decode_keys([quote(k, safe="/") for k in keys]) == keys


@pytest.mark.parametrize("keys", [
    ["d%3D1/%%341", "%41"],  # a "%" that starts no escape, before one that would appear
    ["a%3Db+c/x%2By", "k%3d2"],  # "+" is a space, an escaped "+" is not; lower-case hex
    ["x%0Ay", "z%3D1"],  # a line break inside a key
    ["caf%C3%A9/%3D"],  # UTF-8
])
def test_tricky_pages_decode_key_by_key_alike(keys):
    from urllib.parse import unquote_plus

    from listing.storage.lister import decode_keys

    assert decode_keys(keys) == [unquote_plus(k) for k in keys]


# --- times as botocore parses them -------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.datetimes(min_value=dt.datetime(1970, 1, 1), max_value=dt.datetime(9999, 12, 31)),
       st.sampled_from(["http", "iso", "iso-ms"]))
def test_times_parse_as_botocore_parses_them(when, form):
    """Listing times (ISO 8601) and GET/HEAD headers (HTTP dates) by the standard library:
    the same instant as botocore's own parser."""
    from botocore.utils import parse_timestamp

    from listing.storage.client import fast_timestamp

    when = when.replace(microsecond=0 if form != "iso-ms" else when.microsecond // 1000 * 1000,
                        tzinfo=dt.UTC)
    text = (email.utils.format_datetime(when, usegmt=True) if form == "http"
            else when.strftime("%Y-%m-%dT%H:%M:%S") + (
                f".{when.microsecond // 1000:03d}Z" if form == "iso-ms" else "Z"))
    assert fast_timestamp(text) == parse_timestamp(text) == when


@pytest.mark.parametrize("text", ["Sun, 01 Mar 2026 10:00:00 UTC", "Sun, 1 Mar 2026 10:00:00 GMT",
                                  "Sunday, 01-Mar-26 10:00:00 GMT", "Sun, 01 Mxr 2026 10:00:00 GMT",
                                  "Sun, 31 Feb 2026 10:00:00 GMT", "1772359200", "2026-03-01"])
def test_other_times_are_left_to_botocore(text):
    from botocore.utils import parse_timestamp

    from listing.storage.client import fast_timestamp

    try:
        expected = parse_timestamp(text)
    except ValueError:
        with pytest.raises(ValueError):
            fast_timestamp(text)
    else:
        assert fast_timestamp(text) == expected


def test_a_get_reads_its_last_modified_without_botocore_parser(s3_server, s3_bucket,
                                                               monkeypatch):
    """Every GET's ``Last-Modified`` header goes through the standard library: botocore's
    dateutil parser is never asked."""
    import botocore.utils
    import pyarrow as pa

    from listing import ListingTable
    from listing.testing.datasets import DATA_SCHEMA, encode

    payload = encode(pa.table({"id": [1, 2], "amount": [1.0, 2.0], "name": ["a", "b"]},
                              schema=DATA_SCHEMA), "parquet")
    s3_server.put_objects_fast(s3_bucket, {f"t/d=2026-03-0{i}/part-0.parquet": payload
                                           for i in range(1, 4)})
    plan = ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options,
                             schema=DATA_SCHEMA).scan()
    asked: list[str] = []
    real = botocore.utils.parse_timestamp
    monkeypatch.setattr(botocore.utils, "parse_timestamp",
                        lambda value: asked.append(value) or real(value))
    got = plan.collect()
    assert got.table.num_rows == 6
    assert got.metrics["read_requests"] == 3
    assert asked == []
