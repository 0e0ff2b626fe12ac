"""Options are data: a storage option is on the allowlist with a checked kind, or refused.

The names come from the installed clients' own signatures (s3fs, aiobotocore's session and
client, botocore's Config, fsspec's filesystems), so a release that adds a parameter is
caught here. Every entry point is tried: the Python API, Spark reader options, SQL
``OPTIONS`` and the CLI. The three attacks the allowlist closes each have a positive control
showing the payload is live when our check is bypassed.
"""

from __future__ import annotations

import inspect
import json
import os
import pathlib
from typing import Any

import fsspec
import pytest

import listing
from listing import ListingTable
from listing.cli import main
from listing.errors import StorageConfigError
from listing.options import storage_options
from listing.storage import StorageSpec
from listing.testing import datasets


def _params(fn: Any) -> set[str]:
    return {n for n, p in inspect.signature(fn).parameters.items()
            if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and n != "self"}


def _client_names() -> dict[str, set[str]]:
    """Every option name the installed clients take, by where it goes."""
    import aiobotocore.session as session
    import botocore.config
    import s3fs
    from fsspec.implementations.arrow import HadoopFileSystem
    from fsspec.implementations.local import LocalFileSystem

    fsspec_common = {"skip_instance_cache", "use_listings_cache", "listings_expiry_time",
                     "max_paths", "asynchronous", "loop", "target_protocol", "target_options",
                     "cache_storage", "same_names", "fo"}
    return {
        "s3": (_params(s3fs.S3FileSystem.__init__) | _params(session.AioSession.__init__)
               | fsspec_common),
        "s3.client_kwargs": _params(session.AioSession._create_client) - {"service_name"},
        "s3.config_kwargs": set(botocore.config.Config.OPTION_DEFAULTS),
        "file": _params(LocalFileSystem.__init__) | fsspec_common,
        "memory": fsspec_common,
        "hdfs": _params(HadoopFileSystem.__init__) | fsspec_common,
    }


def _allowed(where: str) -> dict[str, storage_options.StorageOption]:
    proto, _, key = where.partition(".")
    options = storage_options.protocol(proto).options
    if key:
        options = next(o for o in options if o.name == key).keys
    return {o.name: o for o in options}


def _wrong_kind(option: storage_options.StorageOption) -> Any:
    """A value ``option`` must refuse."""
    return {"object": "not-an-object", "choice": "no-such-choice", "bool": "maybe",
            "int": "many", "duration": "soon", "url": "file:///etc/passwd",
            "string": {"nested": "object"}}[option.kind]


def _nest(where: str, name: str, value: Any) -> dict[str, Any]:
    _, _, key = where.partition(".")
    return {key: {name: value}} if key else {name: value}


@pytest.mark.parametrize("where", sorted(_client_names()))
def test_every_client_parameter_is_allowlisted_with_a_kind_or_refused(where):
    names = _client_names()[where]
    allowed = _allowed(where)
    proto = where.partition(".")[0]
    refused = 0
    for name in sorted(names):
        if name in allowed:
            with pytest.raises(StorageConfigError, match=rf"storage option \S*{name}"):
                storage_options.check(proto, _nest(where, name, _wrong_kind(allowed[name])))
        else:
            with pytest.raises(StorageConfigError, match=rf"'\S*{name}' is not accepted"):
                storage_options.check(proto, _nest(where, name, "x"))
            refused += 1
    assert refused, f"every {where} parameter is allowlisted: none tested as refused"
    # positive control: a value of the right kind for an allowlisted name passes
    good = {"object": {}, "choice": None, "bool": "true", "int": "3", "duration": "2s",
            "url": "http://127.0.0.1:1", "string": "x"}
    for name, option in allowed.items():
        value = option.choices[0] if option.kind == "choice" else good[option.kind]
        checked = storage_options.check(proto, _nest(where, name, value))
        assert checked  # converted: "true" -> True, "3" -> 3, "2s" -> 2.0
        leaf = checked[where.partition(".")[2]] if "." in where else checked
        if option.kind in ("bool", "int", "duration"):
            assert not isinstance(leaf[name], str)


#: parameters that name a file, a command, code, an event hook or a local cache directory
DANGEROUS = {
    "session_vars": {"config_file": [None, None, "/tmp/cfg", None]},
    "profile": "attacker",
    "event_hooks": {"before-send": "x"},
    "session": {"x": 1},
    "loop": {"x": 1},
    "config_kwargs": {"client_cert": "/tmp/cert.pem"},
    "client_kwargs": {"verify": "/tmp/ca.pem"},
    "cache_storage": "/tmp/cache",
    "default_cache_type": "mmap",
    "username": "u",
}


@pytest.fixture(scope="module")
def s3_table(s3_server):
    bucket = s3_server.create_bucket("allowlist-table")
    ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options, days=2,
                        put=datasets.fast_writer(s3_server))
    yield ds
    s3_server.drop_bucket(bucket)


@pytest.mark.parametrize("name", sorted(DANGEROUS))
def test_dangerous_options_are_refused_from_the_python_api(s3_table, name):
    with pytest.raises(StorageConfigError, match=name):
        ListingTable.open(s3_table.root, storage_options={**s3_table.storage_options,
                                                          name: DANGEROUS[name]})


def _spark_options(ds: Any, name: str, value: Any) -> dict[str, str]:
    opts = {f"storage.{k}": json.dumps(v) if isinstance(v, dict) else v
            for k, v in ds.storage_options.items()}
    opts[f"storage.{name}"] = json.dumps(value) if not isinstance(value, str) else value
    return opts


#: refused through real Spark and SQL (every name goes through the same source config below)
SPARK_CASES = ("session_vars", "event_hooks", "cache_storage", "client_kwargs")


def test_dangerous_options_are_refused_from_spark_sql_and_the_cli(spark, s3_table, capsys):
    for name in SPARK_CASES:
        value = DANGEROUS[name]
        with pytest.raises(Exception, match=rf"StorageConfigError.*{name}"):
            spark.read.format("listing").options(**_spark_options(s3_table, name, value)) \
                .load(s3_table.root).count()
        storage = json.dumps({**s3_table.storage_options, name: value})
        with pytest.raises(Exception, match=rf"StorageConfigError.*{name}"):
            spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW pwn USING listing OPTIONS "
                      f"(path '{s3_table.root}', storage_options '{storage}')")
            spark.sql("SELECT count(*) FROM pwn").collect()
    # positive control: the same entry points with allowlisted options read the table
    good = spark.read.format("listing").options(**_spark_options(s3_table, "anon", "false"))
    assert good.load(s3_table.root).count() == s3_table.num_rows


@pytest.mark.parametrize("where", ["s3", "s3.client_kwargs", "s3.config_kwargs"])
def test_every_refused_client_parameter_is_refused_by_the_spark_source_and_the_cli(
        s3_table, capsys, where):
    """What the Spark source runs on its options (in the driver and in every worker), for
    every client parameter the allowlist leaves out, as ``storage.<name>`` options; and the
    CLI's ``--storage-option``."""
    from listing.spark.config import SourceConfig

    refused = sorted(_client_names()[where] - set(_allowed(where)))
    assert refused
    for name in refused:
        nested = _nest(where, name, "x")
        key, value = next(iter(nested.items()))
        opts = _spark_options(s3_table, key, value)
        shown = f"{key}.{name}" if key != name else name
        with pytest.raises(StorageConfigError, match=f"'{shown}' is not accepted"):
            SourceConfig.parse({"path": s3_table.root, **opts}).open()
        cli_value = json.dumps(value) if not isinstance(value, str) else value
        args = ["ls", s3_table.root,
                *[f"--storage-option={k}={json.dumps(v) if isinstance(v, dict) else v}"
                  for k, v in s3_table.storage_options.items()],
                "--storage-option", f"{key}={cli_value}"]  # last: it wins
        assert main(args) == 2
        assert f"{name}' is not accepted" in capsys.readouterr().err
    # positive control: the same path with the table's own options reads it
    table = SourceConfig.parse({"path": s3_table.root,
                                **_spark_options(s3_table, "anon", "false")}).open()
    assert table.to_arrow().num_rows == s3_table.num_rows


# --- the three attacks ----------------------------------------------------------------------

@pytest.fixture
def credential_process(tmp_path, monkeypatch):
    """A botocore config whose credential_process creates a marker file, and an
    environment where botocore would reach it (no credentials in the environment)."""
    marker = tmp_path / "PWNED"
    config = tmp_path / "cfg"
    config.write_text(f"[default]\ncredential_process = /usr/bin/touch {marker}\n")
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                "AWS_PROFILE", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return config, marker


def test_credential_process_in_an_option_never_runs(s3_table, credential_process):
    config, marker = credential_process
    options = {"endpoint_url": s3_table.storage_options["endpoint_url"],
               "client_kwargs": {"region_name": "us-east-1"},
               "session_vars": {"config_file": [None, None, str(config), None]}}
    with pytest.raises(StorageConfigError, match="'session_vars' is not accepted"):
        ListingTable.open(s3_table.root, storage_options=options)
    assert not marker.exists()
    # positive control: handed to s3fs directly, the same options run the command
    import s3fs

    fs = s3fs.S3FileSystem(**options, skip_instance_cache=True)
    with pytest.raises(Exception):  # noqa: B017 - touch prints no credentials
        fs.ls(s3_table.root.removeprefix("s3://"))
    assert marker.exists()


def test_credential_process_from_sql_never_runs(spark, s3_table, credential_process):
    config, marker = credential_process
    storage = json.dumps({"endpoint_url": s3_table.storage_options["endpoint_url"],
                          "client_kwargs": {"region_name": "us-east-1"},
                          "session_vars": {"config_file": [None, None, str(config), None]}})
    with pytest.raises(Exception, match="session_vars"):
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW pwn_process USING listing OPTIONS "
                  f"(path '{s3_table.root}', storage_options '{storage}')")
        spark.sql("SELECT count(*) FROM pwn_process").collect()
    assert not marker.exists()


def _files_under(path: pathlib.Path) -> list[str]:
    return [str(p) for p in path.rglob("*") if p.is_file()]


def test_a_read_never_writes_a_local_cache(spark, s3_table, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    url = s3_table.root.replace("s3://", "simplecache://")
    options = {"target_protocol": "s3", "target_options": s3_table.storage_options,
               "cache_storage": str(cache), "same_names": True}
    with pytest.raises(StorageConfigError, match="'simplecache' is not supported.*wraps"):
        ListingTable.open(url, storage_options=options)
    with pytest.raises(Exception, match="simplecache"):
        spark.read.format("listing").option("storage_options", json.dumps(options)) \
            .load(url).count()
    with pytest.raises(StorageConfigError, match="is not supported"):
        ListingTable.open("simplecache::" + s3_table.root,
                          storage_options=s3_table.storage_options)
    assert _files_under(cache) == []
    # positive control: fsspec's simplecache with these options copies what it reads
    fs = fsspec.filesystem("simplecache", **{**options, "skip_instance_cache": True})
    first = fs.find(s3_table.root.removeprefix("s3://"))[0]
    fs.cat_file(first)
    assert _files_under(cache)


def test_an_archive_protocol_never_reads_a_local_file(tmp_path):
    import zipfile

    archive = tmp_path / "x.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("t/date=2026-01-01/a.csv", "x\n1\n")
    with pytest.raises(StorageConfigError, match="'zip' is not supported"):
        ListingTable.open("zip://t/", format="csv", storage_options={"fo": str(archive)})
    # positive control: fsspec's zip filesystem reads the file the option names
    assert fsspec.filesystem("zip", fo=str(archive)).cat("t/date=2026-01-01/a.csv") == b"x\n1\n"


def test_malformed_client_objects_are_option_errors_not_attribute_errors(s3_table):
    for name in ("event_hooks", "session", "loop"):
        with pytest.raises(StorageConfigError, match=f"'{name}' is not accepted"):
            ListingTable.open(s3_table.root, storage_options={**s3_table.storage_options,
                                                              name: {"x": 1}})


# --- the trusted caller's filesystem ----------------------------------------------------------

def test_a_python_caller_passes_its_own_filesystem(s3_table):
    import s3fs

    calls = []

    def factory() -> Any:
        calls.append(1)
        return s3fs.S3FileSystem(**s3_table.storage_options)

    table = ListingTable.open(s3_table.root, filesystem=factory)
    assert table.to_arrow().num_rows == s3_table.num_rows
    assert calls
    with pytest.raises(StorageConfigError, match="configure it there"):
        ListingTable.open(s3_table.root, filesystem=factory,
                          storage_options={"endpoint_url": "http://127.0.0.1:1"})
    with pytest.raises(StorageConfigError, match="fsspec filesystem"):
        ListingTable.open(s3_table.root, filesystem=lambda: "not a filesystem")
    # no option string can name a filesystem
    with pytest.raises(StorageConfigError, match="'filesystem' is not accepted"):
        ListingTable.open(s3_table.root, storage_options={"filesystem": "s3fs:S3FileSystem"})


def test_to_spark_ships_the_callers_filesystem_on_the_source_class(spark, s3_table):
    """The filesystem reaches Spark's workers on the registered class; the spec names it by
    a token, and a spec naming a token the class does not carry is refused."""
    import s3fs

    from listing.spark.dataframe import table_options

    fs = s3fs.S3FileSystem(**s3_table.storage_options, skip_instance_cache=True)
    table = ListingTable.open(s3_table.root, filesystem=fs)
    first = listing.to_spark(table, spark)
    other = listing.to_spark(ListingTable.open(s3_table.root, filesystem=lambda: fs), spark,
                             where="date >= '2025-01-02'")
    assert first.count() == s3_table.num_rows  # planned after the second registration
    assert 0 < other.count() < s3_table.num_rows
    options = table_options(table, [], None)
    assert json.loads(options["storage_options"]) == {}
    spec = json.loads(options["table_spec"])
    spec["filesystem"] = "0" * 32
    options["table_spec"] = json.dumps(spec)
    with pytest.raises(Exception, match="names a filesystem"):
        spark.read.format("listing_table").options(**options).load().count()


# --- secrets -----------------------------------------------------------------------------------

@pytest.mark.parametrize("proto", ["s3", "abfs"])
def test_every_secret_option_is_masked_where_options_are_shown(proto):
    """Positive control: each secret option reaches repr (its name is there) and its value
    does not."""
    options: dict[str, Any] = {}
    values = []

    def fill(allowed: tuple[storage_options.StorageOption, ...], into: dict[str, Any]) -> None:
        for o in allowed:
            if o.kind == "object":
                into[o.name] = {}
                fill(o.keys, into[o.name])
            elif o.secret:
                into[o.name] = f"SECRET-{o.name.upper()}-VALUE"
                values.append(into[o.name])

    fill(storage_options.protocol(proto).options, options)
    # two spellings of one setting are refused together: the second spellings go apart
    apart: dict[str, Any] = {}
    for _, second in storage_options.SAME_SETTING.get(proto, ()):
        parent, _, leaf = second.rpartition(".")
        if leaf in options.get(parent, {}):
            apart.setdefault(parent, {})[leaf] = options[parent].pop(leaf)
    text = repr(StorageSpec(proto, options)) + repr(StorageSpec(proto, apart))
    assert values and all(name in text for name in storage_options.secret_names(proto))
    assert not [v for v in values if v in text], text
    # the error for a secret of the wrong kind does not quote it either
    with pytest.raises(StorageConfigError) as err:
        storage_options.check("s3", {"secret": {"SECRET-IN-ERROR": 1}})
    assert "SECRET-IN-ERROR" not in str(err.value) and "secret=***" in str(err.value)


def test_the_environment_credential_chain_still_works(s3_table, monkeypatch):
    """Trusted configuration (the process's environment) keeps botocore's own lookup:
    credentials from the environment, no key in the options."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_table.storage_options["key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_table.storage_options["secret"])
    options = {k: v for k, v in s3_table.storage_options.items() if k not in ("key", "secret")}
    assert ListingTable.open(s3_table.root, storage_options=options).to_arrow().num_rows == \
        s3_table.num_rows
    assert os.environ["AWS_ACCESS_KEY_ID"]
