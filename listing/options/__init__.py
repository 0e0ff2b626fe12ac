"""Options: the one place a raw option value becomes a typed one.

Options reach the toolkit as Python values (the API) or as strings (Spark, SQL, the CLI).
:mod:`listing.options.kinds` holds one parser per kind of value; the registry
(:mod:`listing.options.registry`) declares every option with its kind and hands callers
typed values, the listing ones as :class:`ListingOptions`; the storage allowlist
(:mod:`listing.options.storage_options`) types storage options with the same parsers. This
module only hands their names on (no submodule imports it: the package has no cycle).
"""

from listing.options.kinds import (
    KINDS,
    MAX_CONCURRENT_REQUESTS,
    MB,
    WRITE_MODES,
    compile_glob,
    did_you_mean,
    kind_of_default,
    parse_bool,
    parse_char,
    parse_column_names,
    parse_count_or_duration,
    parse_duration,
    parse_glob,
    parse_int,
    parse_list,
    parse_partition_cols,
    parse_size,
    parse_start,
    parse_time_zone,
    parse_timestamp,
    parse_url,
    parse_write_mode,
    zone_info,
)
from listing.options.registry import ListingOptions

__all__ = [
    "KINDS",
    "ListingOptions",
    "MAX_CONCURRENT_REQUESTS",
    "MB",
    "WRITE_MODES",
    "compile_glob",
    "did_you_mean",
    "kind_of_default",
    "parse_bool",
    "parse_char",
    "parse_column_names",
    "parse_count_or_duration",
    "parse_duration",
    "parse_glob",
    "parse_int",
    "parse_list",
    "parse_partition_cols",
    "parse_size",
    "parse_start",
    "parse_time_zone",
    "parse_timestamp",
    "parse_url",
    "parse_write_mode",
    "zone_info",
]
