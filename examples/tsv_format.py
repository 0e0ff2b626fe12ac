"""A custom format as a thin wrapper: tab-separated values are CSV with another delimiter.

Subclassing a built-in format and changing defaults is all it takes; reading, splitting,
compression and schema inference come from :class:`listing.formats.csv.CsvFormat`. Quoting is off
by default, as in IANA's TSV (a field cannot hold a tab or newline), so a ``"`` is data;
pass ``quote='"'`` for spreadsheet-style exports. Importing
this module registers it: ``ListingTable.open(url, format="tsv")``.
"""

from __future__ import annotations

from listing import formats
from listing.formats.csv import CsvFormat


class TsvFormat(CsvFormat):
    name = "tsv"
    extensions = (".tsv", ".tab")
    option_defaults = {**CsvFormat.option_defaults, "delimiter": "\t", "quote": None}


formats.register("tsv", TsvFormat)
