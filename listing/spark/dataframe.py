"""The table spec: how :func:`listing.to_spark` hands a planned table to Spark's workers.

Python sources get no column pruning from Spark, so ``to_spark``
(:func:`listing.spark.source.to_spark`) is the projection path. The table travels to
Spark's planning worker as *data* in one option (``table_spec``): the format's registry
name and options, partition columns and schema as an Arrow IPC schema, filters as JSON.
The worker rebuilds the table from it without listing or reading a file, and nothing
in it can name code: a format not in the registry is registered (and shipped to the
workers with the source class) before the DataFrame is built.

Only :class:`TableSpec` decodes the spec. What the JVM extension's native hand-off needs
of it (``ListingNativeEngine.java``) travels beside it as plain options the option registry
knows (:func:`stated_options`): the format, the format's options for a format Spark also
reads, and ``expression_filters`` when filters travel as our expressions. The source
refuses a spec those options disagree with, so both engines read the same table.

A format class the workers cannot import (a user's script or project folder) travels by
value with whatever is pickled for them (:func:`ship_by_value`): the source class, or the
tasks ``mapInArrow`` runs (:mod:`listing.spark.arrow_jobs`).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import secrets
import sys
import sysconfig
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark import cloudpickle

from listing import formats
from listing.errors import OptionError
from listing.expressions import Bound
from listing.expressions.codec import from_json, to_json
from listing.options import ListingOptions, registry
from listing.table import ListingTable

SPEC_VERSION = 1


def table_options(table: ListingTable, where: Sequence[Bound], limit: int | None
                  ) -> dict[str, str]:
    """Options that make the ``listing_table`` source rebuild ``table`` in a worker."""
    fmt = table.format
    name = fmt.name or type(fmt).__name__
    try:
        known = formats.get(name)
    except OptionError:
        known = None
    if type(known) is not type(fmt):  # a format given as an instance: make it a name
        formats.register(name, type(fmt))
    format_options = {k: v for k, v in fmt.options.items() if v is not None}
    spec = {
        "version": SPEC_VERSION,
        "format": name,
        "format_options": format_options,
        "partition_schema": _schema_text(pa.schema(
            [pa.field(n, t) for n, t in table.partition_cols])),
        "schema": _schema_text(table.file_schema),
        "where": [to_json(b.expr) for b in where],
        # the sampled footer's column sizes: the worker packs tasks as the driver would
        "column_bytes": table.column_bytes,
    }
    factory = table.storage.filesystem_factory
    if factory is not None:  # the caller's own filesystem: shipped on the source class
        spec["filesystem"] = _filesystem_token(factory)
    root = str(table.url) if table.url.protocol != "file" else table.url.root
    opts = {"path": root if table.url.glob is None else table.url.glob,
            "table_spec": json.dumps(spec),
            "storage_options": json.dumps(table.storage.options),
            **stated_options(name, format_options, len(where))}
    if table.layout is not None:  # the template the worker decodes keys by
        opts["layout"] = table.layout.template.text
        if table.layout.projection:
            opts["layout_projection"] = table.layout.projection_text
    if table.url.glob is not None:  # the glob, read below the table's root
        opts["basePath"] = root
    folders = table.url.folders
    if folders:  # the paths below the root it was given: read only they
        opts["basePath"] = root
        paths = [f"{root.rstrip('/')}/{f}" for f in folders]
        if len(paths) == 1:
            opts["path"] = paths[0]
        else:
            opts["paths"] = json.dumps(paths)
    if limit is not None:
        opts["limit"] = str(limit)
    for f in dataclasses.fields(ListingOptions):
        value = getattr(table.options, f.name)
        if value != f.default and value is not None:
            opts[f.name] = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return opts


def ship_by_value(cls: type) -> None:
    """Make cloudpickle send the modules of ``cls`` and its base classes by value when
    Spark's Python workers could not import them (a user's script or project folder on the
    driver's ``sys.path`` only). Installed packages (and this toolkit) travel by reference."""
    installed = {sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib")}
    for klass in cls.__mro__:  # a user's format may subclass another of the user's
        module = sys.modules.get(klass.__module__)
        path = getattr(module, "__file__", None)
        if module is None or path is None or klass.__module__ == "__main__":
            continue  # __main__ is pickled by value already
        if klass.__module__.split(".")[0] in ("listing", "builtins"):
            continue
        if not any(os.path.abspath(path).startswith(os.path.abspath(p) + os.sep)
                   for p in installed):
            cloudpickle.register_pickle_by_value(module)


def stated_options(format_name: str, format_options: dict[str, Any], filters: int
                   ) -> dict[str, str]:
    """The plain options that state, beside a spec, what the JVM's native hand-off needs
    of it: ``format``; for a format Spark also reads, its options as option text (a
    boolean ``true``/``false``, a list comma-separated); ``expression_filters``, the
    number of filters the spec carries, when there are any (they keep our engine)."""
    out = {"format": format_name}
    if format_name in registry.NATIVE_FORMATS:
        out.update({k.lower(): _text(v) for k, v in format_options.items() if v is not None})
    if filters:
        out["expression_filters"] = str(filters)
    return out


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


#: filesystems Python callers gave their tables (``ListingTable.open(filesystem=...)``), by
#: a random token that a table spec names: shipped to the workers on the ``listing_table``
#: source class, never through an option string
FILESYSTEMS: dict[str, Any] = {}


def _filesystem_token(factory: Any) -> str:
    for token, known in FILESYSTEMS.items():
        if known is factory:
            return token
    token = secrets.token_hex(16)
    FILESYSTEMS[token] = factory
    return token


@dataclasses.dataclass(frozen=True)
class TableSpec:
    """A decoded ``table_spec`` option."""

    format: str
    format_options: dict[str, Any]
    partition_cols: list[tuple[str, pa.DataType]]
    schema: pa.Schema
    where: list[Any]
    column_bytes: dict[str, int] | None = None
    filesystem: str | None = None  # a token of FILESYSTEMS: the caller's own filesystem

    def check_stated(self, options: dict[str, str]) -> None:
        """Refuse ``options`` (lower-cased keys) whose plain statement of this spec
        (:func:`stated_options`) is missing or differs: the JVM decides on those."""
        stated = stated_options(self.format, self.format_options, len(self.where))
        for key in sorted({*stated, "expression_filters"}):
            if options.get(key) != stated.get(key):
                raise OptionError(f"option table_spec disagrees with option {key} (to_spark "
                                  f"states the spec's {key} beside it: "
                                  f"{stated.get(key, 'none')!r})")

    @classmethod
    def parse(cls, text: str) -> TableSpec:
        """Decode and validate; anything unexpected is an :class:`OptionError`."""
        try:
            spec = json.loads(text)
            if not isinstance(spec, dict) or spec.get("version") != SPEC_VERSION:
                raise ValueError(f"expected a version {SPEC_VERSION} table spec")
            if not isinstance(spec["format"], str) or not isinstance(spec["format_options"],
                                                                     dict):
                raise ValueError("format must be a name and format_options an object")
            parts = _schema(spec["partition_schema"])
            sizes = spec.get("column_bytes")
            if sizes is not None and not (isinstance(sizes, dict) and all(
                    isinstance(k, str) and type(v) is int and v >= 0 for k, v in sizes.items())):
                raise ValueError("column_bytes must map column names to byte counts")
            token = spec.get("filesystem")
            if token is not None and not isinstance(token, str):
                raise ValueError("filesystem must be a token")
            return cls(spec["format"], spec["format_options"],
                       [(f.name, f.type) for f in parts], _schema(spec["schema"]),
                       [from_json(w) for w in spec["where"]], sizes, token)
        except (ValueError, KeyError, TypeError, pa.ArrowException) as err:
            raise OptionError(f"option table_spec is not a valid table spec: {err}") from None


def _schema_text(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


def _schema(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text, validate=True)))
