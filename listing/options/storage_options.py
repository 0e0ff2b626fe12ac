"""Storage options are data: the one allowlist of protocols and of the options each takes.

Anything that can set an option (the Python API's ``storage_options``, Spark reader and
writer options, SQL ``OPTIONS``, the CLI) reaches a store only through :func:`check`. An
option is accepted when this module lists it for the URL's protocol, with a value of its
kind; every other name is an :class:`~listing.errors.StorageConfigError` naming it and the
valid ones. No listed option names a file, a command, a class, a callable, an event hook,
a profile or a cache directory, and no listed protocol wraps another (``simplecache``,
``zip``, ``a::b``): a string can choose where data lives and how to reach it, never what
runs or what is written locally. Code that needs more passes a filesystem object from
Python (``ListingTable.open(url, filesystem=...)``), which no option string can reach.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from listing.errors import OptionError, StorageConfigError
from listing.options.kinds import KINDS, did_you_mean

Kind = Literal["string", "url", "int", "bool", "duration", "choice", "object"]
#: how an s3 option reaches Hadoop's S3A connector (Spark's own reader, the native engine):
#: a per-bucket S3A setting of its own (setting), a part of a setting code builds from
#: several options (role), no effect on what a read returns (skip), the keys of an object
#: mapped one by one (keys), or none with the same meaning (python: the table stays on the
#: Python engine, which says why)
S3AUse = Literal["setting", "role", "skip", "keys", "python"]
#: how a value becomes a setting's text: as given (text), a count (count), botocore's
#: seconds as S3A's milliseconds (millis), attempts in all as retries after the first
#: (retries_of_attempts), ``true`` when true and nothing when false (flag)
S3AConvert = Literal["text", "count", "millis", "retries_of_attempts", "flag"]
#: the roles S3ASettings.java builds settings from (each needs code, not a name): the
#: credentials (and the provider they choose), the endpoint (and TLS from its scheme), the
#: region, anonymous access, path or virtual-host addressing, server-side encryption
S3A_ROLES = ("access_key", "secret_key", "session_token", "anonymous", "endpoint", "region",
             "addressing_style", "encryption_algorithm", "encryption_kms_key",
             "encryption_customer_key")
#: what each role becomes in S3A (the docs' table; S3ASettings.java implements them)
S3A_ROLE_SETTINGS = {
    "access_key": "`access.key`, with the Simple credentials provider (the Temporary one "
                  "with a session token)",
    "secret_key": "`secret.key`",
    "session_token": "`session.token`, with the Temporary credentials provider",
    "anonymous": "when true, the Anonymous credentials provider (no credentials with it)",
    "endpoint": "`endpoint`; `connection.ssl.enabled` from its scheme; "
                "`path.style.access=true` (botocore's default for a custom endpoint)",
    "region": "`endpoint.region`",
    "addressing_style": "`path.style.access` (`path`: true, `virtual`: false, `auto`: true "
                        "with a custom endpoint)",
    "encryption_algorithm": "`encryption.algorithm`",
    "encryption_kms_key": "`encryption.key` (with an SSE-KMS algorithm)",
    "encryption_customer_key": "`encryption.key` (with the SSE-C algorithm)",
}
_CONVERTED = {"text": "", "count": "", "millis": " (seconds as milliseconds)",
              "retries_of_attempts": " (attempts in all minus the first)",
              "flag": " (`true` when true)"}
_S3A_NONE = ("has no equivalent in Spark's S3A connector (the Python engine's storage "
             "layer honours it)")


@dataclass(frozen=True)
class S3A:
    """How one s3 option maps to S3A's ``fs.s3a.bucket.<bucket>.*`` settings. ``to``: the
    setting's name below that prefix (setting) or one of :data:`S3A_ROLES` (role);
    ``values``: when not empty, the only values mapped, each to the text S3A takes (any
    other value keeps the Python engine); ``why``: what explain() says when the option (or
    a value of it) keeps the Python engine, after ``storage option <name>``."""

    use: S3AUse
    to: str = ""
    convert: S3AConvert = "text"
    values: tuple[tuple[str, str], ...] = ()
    why: str = _S3A_NONE

    def as_json_data(self) -> dict[str, Any]:
        return {"use": self.use, "to": self.to, "convert": self.convert,
                "values": dict(self.values), "why": self.why}


#: an s3 option S3A cannot honour (the default; other protocols' options carry it unused)
NOT_S3A = S3A("python")
KEYS = S3A("keys")


def _set(to: str, convert: S3AConvert = "text") -> S3A:
    return S3A("setting", to, convert)


def _role(to: str, *values: tuple[str, str]) -> S3A:
    return S3A("role", to, values=values)


def _skip_when(*values: str, why: str = _S3A_NONE) -> S3A:
    """No effect on a read with one of ``values``; any other keeps the Python engine."""
    return S3A("skip", values=tuple((v, "") for v in values), why=why)


@dataclass(frozen=True)
class StorageOption:
    """One accepted option: its name, the kind of value, and what it means. An ``object``
    takes only the keys in ``keys``; a ``choice`` only the values in ``choices``; a
    ``secret`` value is masked wherever options are shown."""

    name: str
    kind: Kind
    meaning: str
    secret: bool = False
    choices: tuple[str, ...] = ()
    keys: tuple[StorageOption, ...] = ()
    minimum: int | None = None
    #: how Spark's S3A connector takes it (s3 options only; see :class:`S3A`)
    s3a: S3A = NOT_S3A

    def describe_kind(self) -> str:
        if self.kind == "choice":
            return " / ".join(self.choices)
        if self.kind == "object":
            return "object: " + ", ".join(k.name for k in self.keys)
        return self.kind


def _opt(name: str, kind: Kind, meaning: str, **more: Any) -> StorageOption:
    return StorageOption(name, kind, meaning, **more)


#: our own settings (listing.storage.StorageSettings), taken by every protocol
SETTINGS = (
    _opt("max_retries", "int", "retries after the first attempt of any request", minimum=0,
         s3a=_set("attempts.maximum", "count")),
    _opt("retry_mode", "choice", "botocore's retry mode on S3", choices=("standard", "adaptive"),
         s3a=_skip_when("standard")),
    _opt("retry_max_backoff", "duration", "longest wait between two attempts"),
    _opt("on_file_change", "choice", "a file rewritten since listing: fail, or read it",
         choices=("error", "read")),
)

_S3_CLIENT = _opt("client_kwargs", "object", "botocore client settings", s3a=KEYS, keys=(
    _opt("region_name", "string", "the bucket's region", s3a=_role("region")),
    _opt("endpoint_url", "url", "an S3-compatible endpoint (http or https URL)",
         s3a=_role("endpoint")),
    _opt("verify", "bool", "verify TLS certificates (a CA bundle path is not accepted)"),
    _opt("use_ssl", "bool", "use https"),
    _opt("aws_access_key_id", "string", "access key id", secret=True, s3a=_role("access_key")),
    _opt("aws_secret_access_key", "string", "secret access key", secret=True,
         s3a=_role("secret_key")),
    _opt("aws_session_token", "string", "session token", secret=True,
         s3a=_role("session_token")),
    _opt("aws_account_id", "string", "account id, for account-based endpoints"),
))

_S3_CONFIG = _opt("config_kwargs", "object", "botocore Config settings", s3a=KEYS, keys=(
    _opt("connect_timeout", "duration", "seconds to wait for a connection",
         s3a=_set("connection.establish.timeout", "millis")),
    _opt("read_timeout", "duration", "seconds to wait for a response",
         s3a=_set("connection.timeout", "millis")),
    _opt("max_pool_connections", "int", "connections kept per client", minimum=1,
         s3a=_set("connection.maximum", "count")),
    _opt("region_name", "string", "the bucket's region", s3a=_set("endpoint.region")),
    _opt("tcp_keepalive", "bool", "TCP keep-alive on connections"),
    _opt("use_dualstack_endpoint", "bool", "IPv4 and IPv6 endpoints"),
    _opt("use_fips_endpoint", "bool", "FIPS endpoints"),
    _opt("request_checksum_calculation", "choice", "when requests carry checksums",
         choices=("when_supported", "when_required")),
    _opt("response_checksum_validation", "choice", "when responses' checksums are checked",
         choices=("when_supported", "when_required")),
    _opt("retries", "object", "botocore retries (or use max_retries / retry_mode)", s3a=KEYS,
         keys=(
        _opt("mode", "choice", "retry mode", choices=("legacy", "standard", "adaptive"),
             s3a=_skip_when("standard", "legacy")),
        _opt("total_max_attempts", "int", "attempts in all, the first included", minimum=1,
             s3a=_set("attempts.maximum", "retries_of_attempts")),
        _opt("max_attempts", "int", "retries after the first attempt", minimum=0,
             s3a=_set("attempts.maximum", "count")),
    )),
    _opt("s3", "object", "S3 addressing and signing", s3a=KEYS, keys=(
        _opt("addressing_style", "choice", "bucket in the path or the host name",
             choices=("auto", "path", "virtual"), s3a=_role("addressing_style")),
        _opt("use_accelerate_endpoint", "bool", "S3 Transfer Acceleration"),
        _opt("payload_signing_enabled", "bool", "sign request bodies"),
        _opt("us_east_1_regional_endpoint", "choice", "us-east-1 endpoint",
             choices=("regional", "legacy")),
    )),
))

_S3_REQUESTS = _opt("s3_additional_kwargs", "object", "sent with every request", s3a=KEYS,
                    keys=(
    _opt("ServerSideEncryption", "choice", "server-side encryption of written objects",
         choices=("AES256", "aws:kms", "aws:kms:dsse"),
         s3a=_role("encryption_algorithm", ("AES256", "SSE-S3"), ("aws:kms", "SSE-KMS"),
                   ("aws:kms:dsse", "DSSE-KMS"))),
    _opt("SSEKMSKeyId", "string", "KMS key for aws:kms encryption",
         s3a=_role("encryption_kms_key")),
    _opt("SSECustomerAlgorithm", "choice", "SSE-C algorithm", choices=("AES256",),
         s3a=_role("encryption_algorithm", ("AES256", "SSE-C"))),
    _opt("SSECustomerKey", "string", "SSE-C key", secret=True,
         s3a=_role("encryption_customer_key")),
    _opt("RequestPayer", "choice", "requester pays", choices=("requester",)),
    _opt("ACL", "choice", "canned ACL of written objects",
         choices=("private", "bucket-owner-read", "bucket-owner-full-control")),
))

S3 = (
    _opt("endpoint_url", "url", "an S3-compatible endpoint (http or https URL)",
         s3a=_role("endpoint")),
    _opt("key", "string", "access key id", secret=True, s3a=_role("access_key")),
    _opt("secret", "string", "secret access key", secret=True, s3a=_role("secret_key")),
    _opt("token", "string", "session token", secret=True, s3a=_role("session_token")),
    _opt("anon", "bool", "unsigned requests, no credentials (public buckets)",
         s3a=_role("anonymous")),
    _opt("use_ssl", "bool", "use https", s3a=_skip_when(
        "true", why="has no S3A equivalent (S3A takes the scheme from the endpoint URL)")),
    _opt("requester_pays", "bool", "the reader pays for requests",
         s3a=_set("requester.pays.enabled", "flag")),
    _S3_CLIENT, _S3_CONFIG, _S3_REQUESTS,
) + SETTINGS

GCS = (
    _opt("project", "string", "Google Cloud project"),
    _opt("token", "choice", "how to authenticate (no file paths)",
         choices=("anon", "google_default", "cloud")),
    _opt("endpoint_url", "url", "a GCS-compatible endpoint"),
    _opt("requester_pays", "bool", "the reader pays for requests"),
    _opt("access", "choice", "access scope", choices=("read_only", "read_write", "full_control")),
) + SETTINGS

AZURE = (
    _opt("account_name", "string", "storage account"),
    _opt("account_key", "string", "account key", secret=True),
    _opt("sas_token", "string", "shared access signature", secret=True),
    _opt("connection_string", "string", "connection string", secret=True),
    _opt("tenant_id", "string", "Entra tenant of a service principal"),
    _opt("client_id", "string", "service principal id"),
    _opt("client_secret", "string", "service principal secret", secret=True),
    _opt("anon", "bool", "anonymous access"),
    _opt("account_host", "string", "account host name, for sovereign clouds or emulators"),
) + SETTINGS

HDFS = (
    _opt("host", "string", "name node host (default: from the cluster's configuration)"),
    _opt("port", "int", "name node port", minimum=0),
    _opt("user", "string", "user name"),
    _opt("replication", "int", "replication of written files", minimum=1),
) + SETTINGS


@dataclass(frozen=True)
class Protocol:
    """A storage protocol strings may name (plain HTTP is none: a web server cannot be
    listed, see :mod:`listing.url`), and its options."""

    names: tuple[str, ...]
    options: tuple[StorageOption, ...]
    meaning: str


PROTOCOLS = (
    Protocol(("s3", "s3a"), S3, "Amazon S3 and S3-compatible stores (s3fs)"),
    Protocol(("file", "local"), SETTINGS, "local files"),
    Protocol(("memory",), SETTINGS, "fsspec's in-memory store, for tests"),
    Protocol(("gs", "gcs"), GCS, "Google Cloud Storage (gcsfs, installed separately)"),
    Protocol(("abfs", "abfss", "az"), AZURE,
             "Azure Blob Storage and ADLS Gen2 (adlfs, installed separately)"),
    Protocol(("hdfs",), HDFS, "HDFS (pyarrow's libhdfs binding)"),
)
_BY_NAME = {name: p for p in PROTOCOLS for name in p.names}


def protocol(name: str) -> Protocol:
    """The allowlisted protocol ``name``, or a :class:`StorageConfigError` listing them."""
    found = _BY_NAME.get(name.lower())
    if found is None:
        why = (" (a protocol that wraps another, such as a cache or an archive, is never "
               "accepted)" if "::" in name or name.lower() in _WRAPPERS else "")
        raise StorageConfigError(f"storage protocol {name!r} is not supported{why}; "
                                 f"supported: {', '.join(sorted(_BY_NAME))}")
    return found


_WRAPPERS = {"simplecache", "filecache", "blockcache", "cached", "zip", "tar", "reference",
             "dir", "libarchive", "jlab", "jupyter", "sftp", "ssh", "ftp", "git", "github",
             "dbfs", "smb", "data", "http", "https"}


#: options with two spellings (the top-level one s3fs takes, and the one inside an object
#: it passes on to botocore): given both, s3fs fails (``got multiple values for keyword
#: argument``) or quietly prefers one, so both together are refused by name
SAME_SETTING = {
    "s3": (("key", "client_kwargs.aws_access_key_id"),
           ("secret", "client_kwargs.aws_secret_access_key"),
           ("token", "client_kwargs.aws_session_token"),
           ("endpoint_url", "client_kwargs.endpoint_url"),
           ("use_ssl", "client_kwargs.use_ssl"),
           ("client_kwargs.region_name", "config_kwargs.region_name")),
}


#: per protocol, names its filesystem takes that the allowlist withholds on purpose: what
#: the refusal says instead of the valid names (why, and what to do instead; never a value)
WITHHELD = {"s3": {
    "profile": "an option string may not choose an AWS profile: a profile can run a "
               "command (credential_process) and picks among the credentials the machine "
               "keeps for its owner; set AWS_PROFILE (or AWS_CONFIG_FILE and "
               "AWS_SHARED_CREDENTIALS_FILE) in the environment of the driver and the "
               "executors, or from Python pass "
               "filesystem=lambda: s3fs.S3FileSystem(profile=...) to ListingTable.open",
}}


def check(name: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` for protocol ``name``, each checked against the allowlist and converted
    to its kind (``"true"`` → ``True``, ``"30s"`` → ``30.0``). Raises
    :class:`StorageConfigError` naming the first option at fault and the valid ones, or
    the two spellings of one setting given together (:data:`SAME_SETTING`)."""
    found = protocol(name)
    checked = _check_object(found.options, dict(options or {}), f"{name}://", "",
                            WITHHELD.get(found.names[0], {}))
    for spellings in SAME_SETTING.get(found.names[0], ()):
        given = [s for s in spellings if _dotted(checked, s) is not None]
        if len(given) > 1:
            raise StorageConfigError(
                f"storage options {' and '.join(given)} are two spellings of one setting "
                f"for {name}://; give only one (the top-level {spellings[0]!r})")
    return checked


def _dotted(options: Mapping[str, Any], name: str) -> Any:
    """The value at ``name`` (``client_kwargs.region_name``) in ``options``, or None."""
    value: Any = options
    for part in name.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _check_object(allowed: tuple[StorageOption, ...], given: Mapping[str, Any], store: str,
                  parent: str, withheld: Mapping[str, str] | None = None) -> dict[str, Any]:
    by_name = {o.name: o for o in allowed}
    out: dict[str, Any] = {}
    for key, value in given.items():
        name = f"{parent}.{key}" if parent else str(key)
        option = by_name.get(key) if isinstance(key, str) else None
        if option is None and withheld and key in withheld:
            raise StorageConfigError(f"storage option {name!r} is not accepted for {store}: "
                                     f"{withheld[key]}")
        if option is None:
            names = sorted(by_name)
            hint = did_you_mean(str(key), names)
            valid = f"keys of {parent}" if parent else "options"
            raise StorageConfigError(f"storage option {name!r} is not accepted for {store}"
                                     f"{hint}; valid {valid}: {', '.join(names)}")
        if value is not None:
            out[key] = _value(option, value, name, store)
    return out


def _value(option: StorageOption, value: Any, name: str, store: str) -> Any:
    """``value`` as ``option``'s kind, by that kind's one parser (:data:`KINDS`); text
    kinds take strings only, a choice exactly one of its choices (case kept: ``AES256``);
    secrets never quoted in the error (no parser of a secret's kind refuses a string)."""
    shown = "***" if option.secret else repr(value)

    def bad(expected: str) -> StorageConfigError:
        return StorageConfigError(f"storage option {name}={shown} must be {expected}")

    kind = option.kind
    if kind == "object":
        if not isinstance(value, Mapping):
            raise bad("an object with keys " + ", ".join(k.name for k in option.keys))
        return _check_object(option.keys, value, store, name)
    if isinstance(value, Mapping | list | tuple | set):
        raise bad(f"a {option.describe_kind()}, not a {type(value).__name__}")
    if kind in ("string", "choice", "url") and not isinstance(value, str):
        raise bad(f"a string ({option.describe_kind()})")
    if kind == "choice" and value not in option.choices:
        raise bad("one of " + ", ".join(option.choices))
    try:
        typed = KINDS[kind](value, name)
        if option.minimum is not None and typed < option.minimum:
            raise OptionError(f"option {name}={value!r} must be at least {option.minimum}")
    except OptionError as err:
        raise StorageConfigError(f"storage {err}") from None
    return typed


def secret_names(protocol_name: str) -> frozenset[str]:
    """Names (at any depth) of the secret options of ``protocol_name``."""
    out: set[str] = set()

    def walk(options: tuple[StorageOption, ...]) -> None:
        for o in options:
            if o.secret:
                out.add(o.name)
            walk(o.keys)

    walk(protocol(protocol_name).options)
    return frozenset(out)


def all_secret_names() -> frozenset[str]:
    """Names (at any depth) of the secret options of every protocol: what Spark's texts
    mask (:mod:`listing.spark.redaction`)."""
    return frozenset().union(*(secret_names(p.names[0]) for p in PROTOCOLS))


def markdown_table() -> str:
    """The table of protocols and options the docs show (generated at build time)."""
    rows = ["| protocols | option | value | meaning |", "| --- | --- | --- | --- |"]
    for p in PROTOCOLS:
        names = ", ".join(f"`{n}://`" for n in p.names)
        rows.append(f"| {names} | | | {p.meaning} |")
        own = [o for o in p.options if o not in SETTINGS]
        for option in _flatten(tuple(own)):
            rows.append(f"| | `{option[0]}` | {option[1]} | {option[2]} |")
    rows.append("| every protocol | " + ", ".join(f"`{o.name}`" for o in SETTINGS)
                + " | | the toolkit's own settings (see *A failing store*) |")
    return "\n".join(rows)


def withheld_markdown_table() -> str:
    """The table of the names withheld on purpose (:data:`WITHHELD`) and what the refusal
    says instead (generated at build time)."""
    rows = ["| protocol | option | refused because, and what to do instead |",
            "| --- | --- | --- |"]
    rows += [f"| `{proto}://` | `{name}` | {why} |"
             for proto, names in WITHHELD.items() for name, why in names.items()]
    return "\n".join(rows)


def _flatten(options: tuple[StorageOption, ...], prefix: str = "") -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for o in options:
        name = prefix + o.name
        if o.kind == "object":
            out += _flatten(o.keys, name + ".")
        else:
            kind = o.describe_kind() + (" (secret)" if o.secret else "")
            out.append((name, kind, o.meaning))
    return out


def s3a_json_data() -> list[dict[str, Any]]:
    """The s3 options with their S3A mapping (:class:`S3A`), keys nested, as JSON data for
    the JVM extension (``S3ASettings.java`` dispatches on it and names no option itself)."""
    def walk(options: tuple[StorageOption, ...]) -> list[dict[str, Any]]:
        return [{"name": o.name, "kind": o.kind, "secret": o.secret, "minimum": o.minimum,
                 "s3a": o.s3a.as_json_data(), "keys": walk(o.keys)} for o in options]

    return walk(protocol("s3").options)


def s3a_markdown_table() -> str:
    """The table of what Spark's S3A connector makes of the s3 options the docs show
    (generated at build time): every option with an S3A meaning; the others keep the Python
    engine."""
    rows = ["| storage option | S3A setting (`fs.s3a.bucket.<bucket>.*`) |", "| --- | --- |"]
    python = []
    for name, option in leaves("s3"):
        m = option.s3a
        values = ", ".join(f"`{v}`" + (f" → `{t}`" if t else "") for v, t in m.values)
        only = f" ({values}; other values keep the Python engine)" if values else ""
        if m.use == "python":
            python.append(f"`{name}`")
        elif m.use == "skip":
            rows.append(f"| `{name}` | none: no effect on what a read returns{only} |")
        elif m.use == "setting":
            rows.append(f"| `{name}` | `{m.to}`{_CONVERTED[m.convert]}{only} |")
        else:
            rows.append(f"| `{name}` | {S3A_ROLE_SETTINGS[m.to]}{only} |")
    rows.append(f"| {', '.join(python)} | none: the table stays on the Python engine |")
    return "\n".join(rows)


def leaves(protocol_name: str) -> list[tuple[str, StorageOption]]:
    """The options of ``protocol_name`` that take a value, by dotted name (an object's
    keys below it: ``config_kwargs.retries.mode``), in allowlist order."""
    def walk(options: tuple[StorageOption, ...], prefix: str) -> list[tuple[str, StorageOption]]:
        out: list[tuple[str, StorageOption]] = []
        for o in options:
            if o.kind == "object":
                out += walk(o.keys, prefix + o.name + ".")
            else:
                out.append((prefix + o.name, o))
        return out

    return walk(protocol(protocol_name).options, "")
