"""A table's hidden write layout, the one spelling of a partition's folder
(:func:`partition_dir`: Hive ``k=v/`` or a ``layout`` template) and the rules a path read
back from it must meet.

Every job stages under ``<root>/_temporary/<job id>/`` (hidden from readers), names each
data file ``part-<task>-<job id>-c<n>.<ext>`` (:func:`job_of` reads the id back) and marks
a finished table with ``_SUCCESS``. A path found in the table or in a manifest is
untrusted: :func:`outside` says why it is not a path under a root this job may touch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from listing.errors import OptionError, StorageError
from listing.hive import is_hidden_below, partition_path
from listing.layout import TemplateLayout
from listing.list_cache import CACHE
from listing.storage.spec import StorageSpec
from listing.storage.store import Store

STAGING_DIR = "_temporary"
SUCCESS_FILE = "_SUCCESS"
MANIFEST_FILE = "_manifest.json"

#: a job id as the writer makes it (a UUID's hex) and accepts: letters, digits, ``_``, ``-``
JOB_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,127}")

_FILE_NAME = re.compile(r"part-\d{5}-(.+)-c\d{3}[^/]*$")


def job_of(path: str) -> str | None:
    """The job id in a data file's name (``part-<task>-<job id>-c<n>.<ext>``), or None."""
    match = _FILE_NAME.search(path.rsplit("/", 1)[-1])
    return match.group(1) if match else None


def short(value: object) -> str:
    """``value``'s repr, cut to 160 characters (untrusted text in a message)."""
    text = repr(value)
    return text if len(text) <= 160 else f"{text[:157]}..."


#: the data types a date/time placeholder's column may have, by the pattern's kind
_PATTERN_KINDS: dict[str, Callable[[pa.DataType], bool]] = {
    "int": pa.types.is_integer, "date": pa.types.is_date, "timestamp": pa.types.is_timestamp}


def write_layout(root: str, layout: Any, schema: pa.Schema,
                 time_zone: str = "UTC") -> TemplateLayout:
    """The template layout (option ``layout``) a write of ``schema`` below ``root`` spells
    its folders with: each placeholder a column of the data, a date/time pattern's column
    of its kind (an integer for ``{hour:HH}``, a date for ``{date:yyyy/MM/dd}``, a
    timestamp for ``{ts:yyyy/MM/dd/HH}``), plain values typed as the data's columns."""
    draft = TemplateLayout.build(root, layout, time_zone=time_zone)
    declared = []
    for column in draft.template.columns:
        if column.name not in schema.names:
            raise OptionError(f"option layout={draft.template.text!r} names {column.name!r}, "
                              f"which is not a column of the data ({', '.join(schema.names)})")
        type_ = schema.field(column.name).type
        if column.fields:
            if not _PATTERN_KINDS[column.kind](type_):
                raise OptionError(
                    f"option layout={draft.template.text!r}: column {column.name!r} is a "
                    f"{type_} in the data, but its pattern spells a {column.kind}")
        else:
            declared.append((column.name, type_))
    return TemplateLayout.build(root, layout, declared, time_zone=time_zone)


def partition_dir(values: Sequence[tuple[str, Any]], time_zone: str = "UTC",
                  layout: TemplateLayout | None = None) -> str:
    """The folder below the table's root (``""`` or ending in ``/``) a write puts rows of
    partition ``values`` in: Hive's ``k1=v1/k2=v2/`` (:func:`~listing.hive.partition_path`,
    timestamps in ``time_zone``), or with a ``layout`` the folders its template spells
    (:meth:`TemplateLayout.write_dir`). The one place a write spells a partition."""
    if layout is None:
        return partition_path(values, time_zone)
    return layout.write_dir(dict(values))


_BAD_SEGMENTS = frozenset(("", ".", ".."))


def _real(store: Store, path: str, cache: dict[str, str] | None) -> str:
    """``path`` with its directories' links resolved (:meth:`Store.real_path`), each
    directory resolved once per ``cache``."""
    head, _, name = path.rpartition("/")
    if cache is None:
        return store.real_path(path)
    real = cache.get(head)
    if real is None:
        real = cache[head] = store.real_path(f"{head}/x")[:-1]
    return real + name


def outside(store: Store, path: object, root: str,
            cache: dict[str, str] | None = None) -> str | None:
    """Why ``path`` (an fsspec path) is not a path strictly under ``root`` on this store,
    or None when it is: a name the store cannot hold (:meth:`Store.name_problem`: a lone
    surrogate, too long), another protocol, a ``.``/``..``/empty segment, a NUL byte (or
    below ``root`` a backslash), outside ``root`` (another bucket or directory), or led out
    of it by a link. Linear in the path's length; ``cache`` keeps resolved directories."""
    if not isinstance(path, str) or not path:
        return "is not a path"
    unfit = store.name_problem(path)
    if unfit is not None:
        return unfit
    if "://" in path or "::" in path:
        return "names another protocol"
    if "\0" in path:
        return "holds a NUL byte"
    if not path.startswith(root):
        return f"is not under the table's root {root}"
    if _BAD_SEGMENTS.intersection(path[len(root):].split("/")):
        return "has an empty, '.' or '..' segment"
    if "\\" in path[len(root):]:  # a separator on Windows; escaped in every name we write
        return "holds a backslash"
    real_root = _real(store, f"{root}x", cache)[:-1]  # the root itself resolved too
    if not _real(store, path, cache).startswith(real_root):
        return "leads out of the table through a link"
    return None


KINDS = {"link": "a symbolic link (never followed)", "dir": "a directory",
         "other": "no regular file (a device, pipe or socket)"}


def not_plain(store: Store, path: str) -> str | None:
    """Why the file at ``path`` is one the commit must not act on (a link, a directory,
    a device or pipe: local files, one ``lstat``), or None (a file, or nothing there)."""
    kind = store.kind(path)
    return f"is {KINDS[kind]}" if kind in KINDS else None


def list_files(store: Store, prefix: str, visible_below: str | None = None) -> list[str]:
    """Every file under ``prefix``; with ``visible_below``, only those whose path below it
    has no hidden segment (``_temporary/…``, ``_SUCCESS``, ``.crc``)."""
    paths = [f.path for f in store.find(prefix)]
    if visible_below is not None:
        paths = [p for p in paths if not is_hidden_below(visible_below, p)]
    return paths


def list_uploads(store: Store, prefix: str) -> list[tuple[str, str, float]] | None:
    """The multipart uploads in progress under ``prefix``, or None where the store cannot
    list them (ListMultipartUploads answered 501)."""
    if not store.lists_uploads(prefix):
        return None
    try:
        return store.list_uploads(prefix)
    except StorageError:
        if store.lists_uploads(prefix):
            raise
        return None


def invalidate_listings(spec: StorageSpec, prefix: str) -> None:
    """Drop this process's cached listings of the table (its files changed)."""
    CACHE.invalidate(spec, prefix)
