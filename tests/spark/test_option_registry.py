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
from listing.options import ListingOptions, registry, storage_options
from listing.spark.config import REGISTRY_CONF, SourceConfig, registry_json
from listing.spark.writer import write_options

#: the extension's names for the options it acts on by name (OptionRegistry.ACTED_ON)
ACTED_ON = ["basepath", "engine", "format", "key_grouped", "limit", "path", "path_glob_filter",
            "paths", "quote", "recursivefilelookup", "storage_options", "where"]


def _jvm_registry(spark: Any) -> Any:
    return spark._jvm.io.github.listing.OptionRegistry  # noqa: SLF001


def test_the_session_hands_the_registry_to_the_jvm(spark: Any) -> None:
    assert spark.conf.get(REGISTRY_CONF) == registry_json()


def test_java_reads_every_field_python_declares(spark: Any) -> None:
    text = registry_json()
    seen = json.loads(_jvm_registry(spark).describe(text))
    assert seen == {**json.loads(text), "acted_on": ACTED_ON,
                    "s3a_roles": sorted(storage_options.S3A_ROLES)}
    names = {o.name: o for o in registry.OPTIONS}
    # the native hand-off's own options, quote (Spark's escape follows it) and key_grouped
    # (KeyGroupedScans reports a partitioning for it)
    assert all(names[n].native == "planner" or names[n].spark_option or n == "key_grouped"
               for n in ACTED_ON)


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
        # the format's own names (our listing reads every name: this glob narrows Spark's
        # own file index only, where no listing planner answers)
        assert (tuple("." + e for e in data["extensions"][name])
                == formats.get(name).extension_endings)
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
    samples = {"timestamp": "2026-03-01T10:00:00", "time zone": "Asia/Tokyo"}
    for option in registry.in_scope("listing", "stream"):
        for spelling in (*option.spellings, *option.spark):
            value = samples.get(option.kind, "1")
            config = SourceConfig.parse({"path": "/t", spelling: value})
            if option.scope == "listing":  # typed once, into ListingOptions
                got = getattr(config.listing_options, option.name)
                assert got == option.parse(value) != option.default, spelling
            else:
                assert config.stream_options == {option.name: value}, spelling
    for option in registry.in_scope("write"):
        for spelling in (*option.spellings, *option.spark):
            if option.on_write == "take":
                assert write_options({"path": "/t", spelling: "1"})[option.name] == "1"
    refused = [o for o in registry.OPTIONS if o.on_write == "refuse"]
    # a layout's template shapes writes too (docs/layouts.md); its projection is read only
    assert {o.name for o in refused} == {"partition_cols", "where", "limit", "table_spec",
                                         "expression_filters", "basepath",
                                         "layout_projection"}


# --- the s3 storage options as S3A settings (storage_options.S3A, S3ASettings.java) ----------

_SIMPLE = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
_TEMPORARY = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
_ANONYMOUS = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
_SAMPLES = {"string": "v-1", "url": "http://s3.example:9000", "int": 3, "bool": True,
            "duration": 2.5}


def _nest(path: str, value: Any) -> dict[str, Any]:
    head, _, rest = path.partition(".")
    return {head: _nest(rest, value) if rest else value}


def _merge(*given: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for d in given:
        for k, v in d.items():
            out[k] = _merge(out[k], v) if isinstance(v, dict) and k in out else v
    return out


def _java_s3a(spark: Any, options: dict[str, Any], table: str | None = None) -> dict[str, str]:
    checked = storage_options.check("s3", options)  # the options as Python takes them
    return json.loads(_jvm_registry(spark).s3aSettings(table or registry_json(),
                                                       json.dumps(checked)))


def _with_role(role: str, s3a_value: str | None = None) -> dict[str, Any]:
    """Options giving ``role`` (S3A's ``s3a_value`` for a role with a value table), through
    the first option the allowlist declares for it."""
    for path, o in storage_options.leaves("s3"):
        if o.s3a.use == "role" and o.s3a.to == role:
            given = dict(o.s3a.values)
            if s3a_value is None:
                return _nest(path, _SAMPLES[o.kind] if o.kind != "string" else role)
            for value, mapped in given.items():
                if mapped == s3a_value:
                    return _nest(path, value)
    raise AssertionError(f"no s3 option gives role {role}")


def _role_settings(role: str, value: Any, s3a_value: str) -> tuple[dict[str, Any], dict]:
    """The options one role needs beside it, and the settings they make (the roles'
    meaning, which S3ASettings.java implements)."""
    key, secret = _with_role("access_key"), _with_role("secret_key")
    creds = {"access.key": "access_key", "secret.key": "secret_key"}
    if role == "access_key":
        return secret, {**creds, "access.key": value, "aws.credentials.provider": _SIMPLE}
    if role == "secret_key":
        return key, {**creds, "secret.key": value, "aws.credentials.provider": _SIMPLE}
    if role == "session_token":
        return _merge(key, secret), {**creds, "session.token": value,
                                     "aws.credentials.provider": _TEMPORARY}
    if role == "anonymous":
        return {}, {"aws.credentials.provider": _ANONYMOUS} if value else {}
    if role == "endpoint":
        return {}, {"endpoint": value, "connection.ssl.enabled": "false",
                    "path.style.access": "true"}
    if role == "region":
        return {}, {"endpoint.region": value}
    if role == "addressing_style":
        return {}, {"path.style.access": str(value == "path").lower()}
    if role == "encryption_algorithm" and s3a_value == "SSE-C":
        return _with_role("encryption_customer_key"), {
            "encryption.algorithm": "SSE-C", "encryption.key": "encryption_customer_key"}
    if role == "encryption_algorithm":
        return {}, {"encryption.algorithm": s3a_value}
    algorithm = "SSE-KMS" if role == "encryption_kms_key" else "SSE-C"
    return _with_role("encryption_algorithm", algorithm), {
        "encryption.algorithm": algorithm, "encryption.key": value}


def _values(o: storage_options.StorageOption) -> list[Any]:
    if o.kind == "choice":
        return list(o.choices)
    if o.kind == "bool":
        return [True, False]
    return [_SAMPLES[o.kind]]


def _converted(convert: str, value: Any) -> str | None:
    if convert == "millis":
        return str(round(value * 1000))  # plain: Hadoop 3.3's getInt refuses "5000ms"
    if convert == "retries_of_attempts":
        return str(max(0, value - 1))
    if convert == "flag":
        return "true" if value else None
    return str(value)  # text, count


def test_java_maps_every_s3_option_as_the_allowlist_declares(spark: Any) -> None:
    """Each value of each s3 option (choices and both booleans included) becomes in the JVM
    what its ``s3a`` declaration says: the setting, the role's settings, nothing (skip), or
    the Python engine with the declared reason, naming the option and never a secret."""
    assert _java_s3a(spark, {}) == {}  # the control: no options, no settings
    seen = set()
    for path, o in storage_options.leaves("s3"):
        m = o.s3a
        seen.add(m.use)
        for value in _values(o):
            text = str(value).lower() if o.kind == "bool" else str(value)
            table = dict(m.values)
            got = _java_s3a(spark, _nest(path, value))
            if m.use == "python" or (table and text not in table):
                shown = "" if m.use == "python" else f"={text}"
                assert got == {"python": f"storage option {path}{shown} {m.why}"}, path
            elif m.use == "skip":
                assert got == {}, path
            elif m.use == "setting":
                setting = _converted(m.convert, value)
                assert got == ({} if setting is None else {m.to: setting}), (path, value)
            else:
                if o.kind == "string":
                    value = text = m.to
                companions, want = _role_settings(m.to, value, table.get(text, ""))
                got = _java_s3a(spark, _merge(companions, _nest(path, value)))
                assert got == want, (path, value)
    assert seen == {"setting", "role", "skip", "python"}


def test_java_takes_the_mapping_from_the_allowlist_it_is_handed(spark: Any) -> None:
    """No s3 option name lives in the JVM: a table whose entries say otherwise is followed
    (an option renamed, a setting moved, an option made unmappable), and one asking for a
    role S3ASettings does not implement is refused."""
    data = json.loads(registry_json())
    by_name = {o["name"]: o for o in data["s3a"]}
    by_name["endpoint_url"]["name"] = "endpoint_elsewhere"
    by_name["max_retries"]["s3a"]["to"] = "retry.limit"
    by_name["requester_pays"]["s3a"] = {**by_name["requester_pays"]["s3a"], "use": "python",
                                        "why": "is off in this table"}
    changed = json.dumps(data)
    url = "http://s3.example:9000"
    java = _jvm_registry(spark)
    assert json.loads(java.s3aSettings(changed, json.dumps({"endpoint_elsewhere": url}))) == {
        "endpoint": url, "connection.ssl.enabled": "false", "path.style.access": "true"}
    assert json.loads(java.s3aSettings(changed, json.dumps({"endpoint_url": url}))) == {
        "python": "storage option endpoint_url is not in the s3 storage allowlist"}
    assert json.loads(java.s3aSettings(changed, '{"max_retries": 4}')) == {"retry.limit": "4"}
    assert json.loads(java.s3aSettings(changed, '{"requester_pays": true}')) == {
        "python": "storage option requester_pays is off in this table"}
    # the positive control: the table as Python declares it
    assert json.loads(java.s3aSettings(registry_json(), '{"requester_pays": true}')) == {
        "requester.pays.enabled": "true"}
    by_name["key"]["s3a"]["to"] = "password"
    with pytest.raises(Exception, match="storage option key to S3A as role password"):
        java.describe(json.dumps(data))


def test_every_s3_option_declares_its_s3a_mapping() -> None:
    """Objects map key by key, values never; a role is one S3ASettings implements; a value
    table maps values the option takes."""
    def walk(options: tuple[storage_options.StorageOption, ...]) -> None:
        for o in options:
            assert (o.s3a.use == "keys") == (o.kind == "object"), o.name
            assert o.s3a.use != "role" or o.s3a.to in storage_options.S3A_ROLES, o.name
            assert o.s3a.use != "setting" or o.s3a.to, o.name
            accepted = set(o.choices) if o.kind == "choice" else {"true", "false"}
            assert not o.s3a.values or {v for v, _ in o.s3a.values} <= accepted, o.name
            walk(o.keys)

    walk(storage_options.protocol("s3").options)


def _key_grouped_plan(spark: Any, root: str, value: str) -> str:
    df = (spark.read.format("listing").option("engine", "python")
          .option("open_cost_in_bytes", "0").option("key_grouped", value).load(root))
    return df.groupBy("date").count()._jdf.queryExecution().executedPlan().toString()


def test_key_grouping_reads_the_option_as_the_registry_spells_it(spark: Any,
                                                                 tmp_path: Any) -> None:
    """KeyGroupedScans takes key_grouped's name and boolean spellings from the registry the
    session holds: any true spelling in any case drops the shuffle, a false one keeps it,
    and a registry without a spelling makes the JVM read it as not true."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for day in ("2024-01-01", "2024-01-02"):
        (tmp_path / f"date={day}").mkdir()
        pq.write_table(pa.table({"id": [1, 2, 3]}), tmp_path / f"date={day}" / "p.parquet")
    root = str(tmp_path)
    assert "Exchange" in _key_grouped_plan(spark, root, "No")  # the control: it shuffles
    for true in ("On", "YES", "1", "true"):
        assert "Exchange" not in _key_grouped_plan(spark, root, true), true
    data = json.loads(registry_json())
    data["booleans"]["true"] = [t for t in data["booleans"]["true"] if t != "yes"]
    spark.conf.set(REGISTRY_CONF, json.dumps(data))
    try:
        assert "Exchange" in _key_grouped_plan(spark, root, "YES")
        assert "Exchange" not in _key_grouped_plan(spark, root, "On")
    finally:
        spark.conf.set(REGISTRY_CONF, registry_json())


# --- to_spark's table_spec: decoded by Python only, stated for the JVM as plain options -------

def _spec_options(tmp_path: Any, fmt: str = "parquet", where: str | None = None
                  ) -> dict[str, str]:
    """to_spark's options for a small table (``where``: its filters, as to_spark binds
    them)."""
    from listing.spark.dataframe import table_options
    from listing.table import ListingTable
    from listing.testing import datasets

    ds = datasets.daily(str(tmp_path / fmt), format=fmt, days=1, rows_per_file=2)
    table = ListingTable.open(ds.root, format=fmt)
    return table_options(table, table.bind(where) if where else [], None)


def test_the_jvm_decides_on_the_plain_options_beside_the_spec(spark: Any, tmp_path: Any) -> None:
    """The JVM never decodes table_spec: to_spark states the format, a native format's
    options and its filters as registry options, and the hand-off follows those."""
    engine = spark._jvm.io.github.listing.ListingNativeEngine  # noqa: SLF001

    def reason(options: dict[str, str]) -> str | None:
        why = engine.pythonReason(spark._jsparkSession, options,  # noqa: SLF001
                                  "listing_table")
        return None if why is None else str(why)

    plain = _spec_options(tmp_path)
    assert plain["format"] == "parquet" and plain["merge_schema"] == "false"
    assert "expression_filters" not in plain
    assert reason(plain) is None  # the control: to_spark's table is handed off
    assert reason({**plain, "table_spec": "not a spec"}) is None  # never decoded there
    filtered = _spec_options(tmp_path / "f", where="id > 1 AND region = 'eu'")
    assert filtered["expression_filters"] == "2"
    assert reason(filtered) == ("option expression_filters (filters given to to_spark "
                                "travel as our expressions)")
    csv = _spec_options(tmp_path / "c", "csv")
    assert (csv["header"], csv["delimiter"], csv["null_values"]) == ("true", ",", "")


def test_a_spec_its_plain_options_disagree_with_is_refused(tmp_path: Any) -> None:
    """Both engines read one table: the source refuses a spec whose plain statement is
    missing or says otherwise (the JVM would decide on a different table)."""
    from listing.errors import OptionError

    options = _spec_options(tmp_path, "csv")
    assert SourceConfig.parse(options).format == "csv"  # the control
    for key, value in (("format", "parquet"), ("header", "false"), ("expression_filters", "2"),
                       ("format", None)):
        changed = {**options, key: value} if value is not None else {
            k: v for k, v in options.items() if k != key}
        with pytest.raises(OptionError, match=f"table_spec disagrees with option {key}"):
            SourceConfig.parse(changed)
