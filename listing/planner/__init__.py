"""The listing planner: list only the keys that can match a partition filter.

Choosing (:mod:`.choose`, a plan of :mod:`.nodes` from the filter and the table's
:mod:`.profile`) is separate from running (:mod:`.run`: requests, key decoding, metrics;
:mod:`.key_ranges`: a long flat listing split into key ranges listed at once).

Object stores answer LIST with at most 1000 keys a page and charge per request. The
planner turns the partition filter into the cheapest requests it can justify:

- **enumerate**: ``date = X``, ``IN``, ``OR`` of ``=``, short date ranges become exact
  prefixes ``date=X/`` when the value has one on-disk spelling;
- **narrow**: a range on strings or ISO dates lists only the common prefix of its bounds,
  and for dates starts after the lower bound and stops past the upper one;
- **walk**: list one level with a delimiter and decide each child directory;
- **flat**: list everything below a prefix, 1000 keys a page.

A prefix is built from a value's spelling, so enumerating and narrowing assume that each
value has one spelling on disk: Spark's (``escape_path_name``). Only a value of plain ASCII
letters, digits, ``_``, ``.`` and ``-`` (``hive.spell_value``) is taken as having one: a
value such as 'zürich' is spelled raw by Spark and ``z%C3%BCrich`` by pyarrow, Polars,
DuckDB and pandas (both decode to 'zürich'), so an equality on it lists its level and keeps
the keys whose decoded value matches, rather than listing two prefixes per value. Other
writers may also escape needlessly (``city=%41`` for 'A', ``%2f`` for ``%2F``); such a
directory decodes to the same value but lies outside the canonical prefix. The profile
records, per level, whether a sampled directory is spelled otherwise
(``TableProfile.respelled``), and the chooser then neither enumerates nor narrows that
level: it walks or lists it, and decodes every key. The residual assumption: a level whose
sampled page (the table's first keys, taken at ``open()`` or, for a fully declared table,
by the first scan that lists from the root) shows only Spark's spellings has no other
spelling further on. Spark itself never writes ``%41`` for 'A', and ``%`` sorts before
every unescaped character, so a respelled directory tends to come first in its parent; a
table written by a tool that respells only some values, and only past its first page, can
still miss them in prefix-pruned scans.

A plan that lists one prefix lists a subset of the table, so it is taken at once. Any
other choice depends on the table's size, which nobody knows before listing: the scan
then starts the flat listing itself and uses its first page as a fresh sample. A walk
that is cheaper per directory wins whatever the size; an enumeration of several prefixes
gets a budget (ski rental): the flat listing goes on while it has cost less than the
enumeration would, and only then does the scan switch to the enumeration, for the keys
after the last one listed. A small table therefore costs exactly one flat listing, and no
key is listed twice. Whatever was listed, every key is checked against the filter on its
parsed partition values, so an estimate can only cost requests, never correctness.
"""

from listing.planner.file_filter import FileFilter
from listing.planner.nodes import describe
from listing.planner.profile import ProfileBuilder, TableProfile
from listing.planner.run import ListedFile, ListedRun, PlanRun

__all__ = ["FileFilter", "ListedFile", "ListedRun", "PlanRun", "ProfileBuilder", "TableProfile",
           "describe"]
