"""One option registry for Python and the JVM (listing.options.registry, OptionRegistry.java).

The extension keeps no copy of option names, spellings, defaults or format extensions: it
reads the table Python hands it (a session conf set by ``listing.register``). These tests
hold the two views equal, field by field and decision by decision, in the session's JVM.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from listing import formats
from listing.options import ListingOptions, registry
from listing.spark.config import REGISTRY_CONF, SourceConfig, registry_json
from listing.spark.writer import write_options

#: the Java class's names for the options it acts on by name (OptionRegistry.ACTED_ON)
ACTED_ON = ["basepath", "engine", "format", "limit", "path", "path_glob_filter", "paths",
            "quote", "recursivefilelookup", "storage_options", "table_spec", "where"]


def _jvm_registry(spark: Any) -> Any:
    return spark._jvm.io.github.listing.OptionRegistry  # noqa: SLF001


def test_the_session_hands_the_registry_to_the_jvm(spark: Any) -> None:
    assert spark.conf.get(REGISTRY_CONF) == registry_json()


def test_java_reads_every_field_python_declares(spark: Any) -> None:
    text = registry_json()
    seen = json.loads(_jvm_registry(spark).describe(text))
    assert seen == {**json.loads(text), "acted_on": ACTED_ON}
    names = {o.name: o for o in registry.OPTIONS}
    assert all(names[n].native == "planner" or names[n].spark_option for n in ACTED_ON)


def test_java_refuses_a_registry_without_an_option_it_acts_on(spark: Any) -> None:
    data = json.loads(registry_json())
    data["options"] = [o for o in data["options"] if o["name"] != "where"]
    with pytest.raises(Exception, match="has no option where"):
        _jvm_registry(spark).describe(json.dumps(data))


def _reason(spark: Any, root: str, **options: str) -> str | None:
    engine = spark._jvm.io.github.listing.ListingNativeEngine  # noqa: SLF001
    reason = engine.pythonReason(spark._jsparkSession,  # noqa: SLF001
                                 {"path": root, **options}, "listing")
    return None if reason is None else str(reason)


_VALUES = {"bool": "true", "char": ";", "list": "NA"}


def test_the_native_decision_follows_the_registry(spark: Any, tmp_path: Any) -> None:
    """Each spelling of each option does in the JVM what the registry's ``native`` says."""
    root = str(tmp_path)
    assert _reason(spark, root, format="parquet") is None  # the control: a plain table
    assert "no_such_option" in (_reason(spark, root, no_such_option="1") or "")
    for option in registry.OPTIONS:
        for spelling in (*option.spellings, *option.spark):
            if option.native == "ignore":
                assert _reason(spark, root, **{spelling: "1"}) is None, spelling
            elif option.native == "false_only":
                for false in ("false", "No", "0"):  # parse_bool's spellings, any case
                    assert _reason(spark, root, **{spelling: false}) is None, spelling
                assert spelling.lower() in (_reason(spark, root, **{spelling: "on"}) or ""), \
                    spelling
            elif option.native == "python":
                assert spelling.lower() in (_reason(spark, root, **{spelling: "x"}) or ""), \
                    spelling
            elif option.native == "spark":
                value = _VALUES[option.kind]
                for fmt in ("csv", "json", "parquet"):
                    why = _reason(spark, root, format=fmt, **{spelling: value})
                    if fmt in option.native_formats:
                        assert why is None, (spelling, fmt, why)
                    else:
                        assert why is not None and "no Spark equivalent" in why, (spelling, fmt)


def test_the_native_formats_keep_the_files_our_listing_keeps(spark: Any, tmp_path: Any) -> None:
    data = json.loads(registry_json())
    assert set(data["extensions"]) == set(registry.NATIVE_FORMATS)
    for name in registry.NATIVE_FORMATS:
        assert tuple("." + e for e in data["extensions"][name]) == formats.get(name).name_endings
    assert _reason(spark, str(tmp_path), format="arrow") == (
        "format arrow is ours only (Spark's own readers: parquet, csv, json)")


# --- the Python side reads the same table ------------------------------------------------------

def test_listing_options_are_the_listing_scope_with_its_defaults() -> None:
    listing = registry.in_scope("listing")
    assert [o.name for o in listing] == [f.name for f in dataclasses.fields(ListingOptions)]
    assert all(o.default == getattr(ListingOptions(), o.name) for o in listing)


def test_every_spelling_reaches_the_option_it_names() -> None:
    """A read files each spelling of a listing or stream option under our name; a write
    takes each spelling of a write option under ours (its values are not checked here)."""
    for option in registry.in_scope("listing", "stream"):
        for spelling in (*option.spellings, *option.spark):
            config = SourceConfig.parse({"path": "/t", spelling: "1"})
            got = config.listing_options if option.scope == "listing" else config.stream_options
            assert got == {option.name: "1"}, spelling
    for option in registry.in_scope("write"):
        for spelling in (*option.spellings, *option.spark):
            if option.on_write == "take":
                assert write_options({"path": "/t", spelling: "1"})[option.name] == "1"
    refused = [o for o in registry.OPTIONS if o.on_write == "refuse"]
    assert {o.name for o in refused} == {"partition_cols", "where", "limit", "table_spec",
                                         "basepath"}
