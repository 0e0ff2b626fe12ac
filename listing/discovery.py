"""Finding a growing table's new files for the cost of the new keys (streaming discovery).

Object stores list keys in lexicographic order and accept ``StartAfter``; time-partitioned
layouts (``date=…/hour=…/``) write new keys after the old ones. So each trigger lists only
after the *frontier* (the greatest key read so far), plus a *lookback* window (the newest
partitions read, re-listed to catch files that arrive late inside a partition already
passed). Every ``reconcile_every`` triggers, and on the first trigger of a new reader
(a restarted query), a full listing finds files that arrived anywhere else: they are read
once and counted as ``late_files``. A table with a ``layout`` is listed the same way when
its template sorts by time (:attr:`TemplateLayout.chronological`: a partition directory is
the folder under its last level); one that does not is listed whole on every trigger.

What was read is remembered in the offset as Spark's file source remembers it
(``maxFileAge``): every key read whose modification time is within ``max_file_age`` of the
newest one seen. Files older than that are never read again, however they are re-listed,
unless they sort after the frontier. So a file overwritten or deleted after it was read is
not read again while remembered; an old file overwritten with a new modification time
after it was forgotten is read again, as a late file (counted).

Offsets are JSON values (Spark stores them in its checkpoint): :class:`StreamOffset`. Each
carries the files of the batch that ends at it, so a restarted query re-reads exactly the
batch it had planned, and how many keys the table's last full listing listed, so a
restarted query's reconciliation is sent as that one listing's pages and no more (a
listing known to be too short to split into key ranges sends no delimiter page).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import time
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import pyarrow as pa

from listing.errors import OptionError
from listing.expressions import Bound, Expr, conjunction, split_by_columns
from listing.files import PartitionedFile
from listing.hive import HiveLayout
from listing.layout import TemplateLayout
from listing.metrics import Counters
from listing.options import registry
from listing.planner import PlanRun
from listing.planner.template_run import TemplateRun
from listing.storage.lister import ObjectMeta
from listing.url import TableUrl

#: files seen by a "latest" start within this much of the listing are remembered, so a file
#: written while the start listing ran is neither lost nor read twice (clock skew margin)
CLOCK_SKEW_US = 5 * 60 * 1_000_000
OFFSET_VERSION = 1
#: a ``seen`` map longer than this is stored packed (front-coded keys, zlib, base64): a
#: table loaded within ``max_file_age`` may remember 100,000 keys, in every offset Spark
#: writes to the checkpoint, and packed they take a fraction of their JSON's size
#: (``python -m bench.client_cpu`` measures both)
PACK_SEEN_OVER = 64
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _micros(t: dt.datetime) -> int:
    """Exact microseconds since the epoch (a naive time is UTC): the offset keeps the
    listed modification time exactly, for the reader's changed-since-listing check."""
    aware = t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)
    return (aware - EPOCH) // dt.timedelta(microseconds=1)


@dataclass(frozen=True)
class DiscoverySettings:
    """How a stream finds new files (options ``lookback``, ``reconcile_every``, …)."""

    #: newest partitions re-listed each trigger (an int), or partitions written within
    #: this many seconds of the newest file (a duration such as ``2h``)
    lookback_partitions: int | None = registry.option("lookback").default
    lookback_seconds: float | None = None
    reconcile_every: int = registry.option("reconcile_every").default
    max_file_age_seconds: float = registry.option("max_file_age").default
    #: "earliest", "latest", or files modified at or after a time
    starting: str | dt.datetime = registry.option("starting").default
    max_files: int | None = None
    max_bytes: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> DiscoverySettings:
        """From the stream options (our names), typed by the option registry."""
        given = registry.parse(options, "stream")
        out = cls()
        if "lookback" in given:  # a count of partitions, or a duration (a float)
            lookback = given["lookback"]
            out = replace(out, **(
                {"lookback_partitions": lookback, "lookback_seconds": None}
                if isinstance(lookback, int) else
                {"lookback_partitions": None, "lookback_seconds": lookback}))
        return replace(out, **{field: given[name] for name, field in _FIELDS if name in given})


#: the stream options stored as they are typed: (option, DiscoverySettings field)
_FIELDS = (("reconcile_every", "reconcile_every"), ("max_file_age", "max_file_age_seconds"),
           ("starting", "starting"), ("max_files_per_trigger", "max_files"),
           ("max_bytes_per_trigger", "max_bytes"))


@dataclass(frozen=True)
class StreamOffset:
    """Where a stream stands: a JSON value Spark keeps in its checkpoint.

    Keys are relative to the table root; times are µs since the epoch. ``seen`` maps each
    remembered key read to its modification time; ``recent`` maps the lookback window's
    partition directories to the newest modification time read in them; ``batch`` lists
    the files of the batch ending here as ``[key, size, mtime_us, etag]``; ``listed`` is
    the keys the table's last full listing listed plus the new keys read since (None: not
    known, an offset written before it was kept), the length a restart's reconciliation
    listing expects.
    """

    frontier: str | None = None
    seen: Mapping[str, int] = field(default_factory=dict)
    recent: Mapping[str, int] = field(default_factory=dict)
    batch: tuple[tuple[str, int, int | None, str | None], ...] = ()
    newest_us: int | None = None
    not_before_us: int | None = None
    batches: int = 0
    files: int = 0
    late_files: int = 0
    listed: int | None = None

    def to_json(self) -> dict[str, Any]:
        seen: dict[str, Any] = (
            {"seen_packed": pack_seen(self.seen)} if len(self.seen) > PACK_SEEN_OVER
            else {"seen": dict(sorted(self.seen.items()))})
        return {"v": OFFSET_VERSION, "frontier": self.frontier, "batches": self.batches,
                "files": self.files, "late_files": self.late_files,
                "newest_us": self.newest_us, "not_before_us": self.not_before_us,
                "recent": dict(sorted(self.recent.items())), **seen,
                "batch": [list(f) for f in self.batch], "listed": self.listed}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> StreamOffset:
        if value.get("v") != OFFSET_VERSION:
            raise OptionError(f"stream offset version {value.get('v')!r} is not "
                              f"{OFFSET_VERSION}: this checkpoint was written by another "
                              "version of the listing source")
        listed = value.get("listed")
        if listed is not None and (type(listed) is not int or listed < 0):
            raise OptionError(f"stream offset field 'listed' is {listed!r}, not a count of "
                              "keys: this checkpoint's offset is corrupt")
        try:
            seen = (unpack_seen(value["seen_packed"]) if "seen_packed" in value
                    else dict(value.get("seen") or {}))
            return cls(frontier=value.get("frontier"), seen=seen,
                       recent=dict(value.get("recent") or {}),
                       batch=tuple((f[0], int(f[1]), f[2], f[3])
                                   for f in value.get("batch") or []),
                       newest_us=value.get("newest_us"),
                       not_before_us=value.get("not_before_us"),
                       batches=int(value.get("batches", 0)), files=int(value.get("files", 0)),
                       late_files=int(value.get("late_files", 0)), listed=listed)
        except (KeyError, IndexError, TypeError, ValueError, zlib.error,
                binascii.Error) as err:
            raise OptionError(f"stream offset is malformed ({type(err).__name__}): this "
                              "checkpoint's offset is corrupt") from None


def pack_seen(seen: Mapping[str, int]) -> str:
    """Keys sorted and front-coded (shared prefix length, rest), each with its time, then
    zlib and base64: remembered keys share long prefixes (``date=…/hour=…/``)."""
    lines, prev = [], ""
    for key, mtime in sorted(seen.items()):
        n = 0
        limit = min(len(prev), len(key))
        while n < limit and prev[n] == key[n]:
            n += 1
        lines.append(f"{n}\t{key[n:]}\t{mtime}")
        prev = key
    return base64.b64encode(zlib.compress("\n".join(lines).encode(), 9)).decode("ascii")


def unpack_seen(packed: str) -> dict[str, int]:
    out: dict[str, int] = {}
    prev = ""
    for line in zlib.decompress(base64.b64decode(packed)).decode().split("\n"):
        if not line:
            continue
        n, rest, mtime = line.split("\t")
        prev = prev[:int(n)] + rest
        out[prev] = int(mtime)
    return out


@dataclass
class DiscoveredFiles:
    """One trigger's result: the files of the batch (none: nothing new) and the offset
    that ends it, with what the trigger cost."""

    files: list[PartitionedFile]
    offset: StreamOffset
    metrics: Counters


@dataclass
class _Listed:
    key: str  # relative to the root
    meta: ObjectMeta
    mtime_us: int | None  # meta.last_modified, exactly (classified on every trigger)
    values: dict[str, Any]  # the partition values the listing decoded

    @classmethod
    def of(cls, key: str, meta: ObjectMeta, values: dict[str, Any]) -> _Listed:
        m = meta.last_modified
        return cls(key, meta, None if m is None else _micros(m), values)


class DiscoveredTable(Protocol):
    """What discovery reads of the table it serves: :class:`listing.table.ListingTable` is
    one (``ListingTable.discovery`` builds a :class:`FileDiscovery`), and discovery, below
    the table, never imports it. Its listings are the table's own runs."""

    url: TableUrl
    partition_cols: list[tuple[str, pa.DataType]]

    @property
    def partition_names(self) -> list[str]: ...

    def bind(self, where: Any) -> list[Bound]: ...

    def listing_run(self, predicate: Expr | None = None, *, start_after: str | None = None,
                    expected_keys: int | None = None) -> PlanRun | TemplateRun: ...


class FileDiscovery:
    """New files of one table, trigger after trigger (see the module doc). ``where``: a
    filter as the table's ``bind`` takes it (SQL text, expressions, bound predicates)."""

    def __init__(self, table: DiscoveredTable, where: Any = None,
                 settings: DiscoverySettings | None = None) -> None:
        self.table = table
        self.settings = settings or DiscoverySettings()
        bound = [b.expr for b in table.bind(where)]
        self.predicate, _ = split_by_columns(conjunction(bound), table.partition_names)
        template: TemplateLayout | None = getattr(table, "layout", None)
        #: decodes a key's partition values: the table's path template, else Hive's k=v
        self.layout: HiveLayout | TemplateLayout = (
            template if template is not None
            else HiveLayout(table.url.prefix, tuple(table.partition_cols)))
        #: a key's partition directory is its first this many segments (0: its parent)
        self._depth = (len(template.levels) if template is not None
                       else len(table.partition_cols))
        #: new keys sort after old ones, so the frontier finds them; else (a template
        #: such as ``{region}/{date:yyyy/MM/dd}``) every trigger lists the table whole
        self.incremental = template is None or template.chronological
        # a new reader's first trigger reconciles (a restarted query may have missed files)
        self._since_full = self.settings.reconcile_every
        # the last listing and the offset it was last served up to: a backlog bigger than
        # one trigger's limit is served from it without listing again
        self._backlog: list[_Listed] | None = None
        self._backlog_end: StreamOffset | None = None
        self._frozen = False  # Trigger.AvailableNow: list once, then serve what was found
        # the partition values the listing decoded for the last batch's keys: its plan
        # (files_of, right after) takes them instead of decoding the keys again
        self._decoded: dict[str, dict[str, Any]] = {}

    # --- offsets --------------------------------------------------------------------------
    def initial_offset(self) -> StreamOffset:
        """Where a new stream starts: before every file (earliest), after every file that
        exists now (latest: one full listing), or at files modified since a time."""
        start = self.settings.starting
        if start == "earliest":
            return StreamOffset()
        if isinstance(start, dt.datetime):
            return StreamOffset(not_before_us=_micros(start))
        now_us = time.time_ns() // 1000
        listed, keys = self._list(None, Counters())
        self._since_full = 0
        not_before = now_us - CLOCK_SKEW_US
        offset = StreamOffset(not_before_us=not_before, listed=keys)
        if not listed:
            return offset
        return self._advance(offset, listed, set(), late=0, min_seen_us=not_before,
                             keys=keys)

    # --- triggers -------------------------------------------------------------------------
    def freeze(self) -> None:
        """Trigger.AvailableNow: the next trigger lists; later ones only serve what it
        found, so the stream ends at the data available when it started."""
        self._frozen = True
        self._backlog = None

    def new_files(self, since: StreamOffset | Mapping[str, Any] | None = None,
                  max_files: int | None = None, max_bytes: int | None = None, *,
                  all_available: bool = False) -> DiscoveredFiles:
        """The files after ``since`` (None: the initial offset), at most ``max_files`` /
        ``max_bytes`` of them (at least one; the settings' limits when not given, none with
        ``all_available``), and the offset that ends them."""
        if not all_available:
            max_files = max_files if max_files is not None else self.settings.max_files
            max_bytes = max_bytes if max_bytes is not None else self.settings.max_bytes
        if since is None:
            start = self.initial_offset()
        elif isinstance(since, StreamOffset):
            start = since
        else:
            start = StreamOffset.from_json(since)
        counts = Counters()
        counts.start("list_requests", "full_listing")
        listed = self._backlog if (self._frozen or self._backlog_end == start) else None
        keys = start.listed  # the keys the table's full listing holds, as far as known
        incremental = False  # listed after the frontier (the new keys read add to keys)
        if listed is None:
            full = start.frontier is None or not self.incremental or (
                self.settings.reconcile_every > 0
                and self._since_full >= self.settings.reconcile_every)
            after = None if full else self._list_start(start)
            listed, n = self._list(after, counts, expected_keys=start.listed if full else None)
            keys, incremental = (n, False) if full else (keys, True)
            counts.add("full_listing", int(full))
            self._since_full = 0 if full else self._since_full + 1
        candidates = self._classify(start, listed, counts)
        taken = self._limit(candidates, max_files, max_bytes)
        counts.add("files", len(taken))
        if not taken:
            self._backlog = [] if self._frozen else None
            return DiscoveredFiles([], start, counts)
        window = self._window_start(start)
        old = {c.key for c in taken if start.frontier is not None and c.key <= start.frontier}
        late = sum(1 for k in old if window is None or k < window)
        counts.add("late_files", late)
        counts.add("window_files", len(old) - late)
        if incremental and keys is not None:
            keys += len(taken) - len(old)
        end = self._advance(start, taken, old, late, keys=keys)
        self._decoded = {f.key: f.values for f in taken}
        self._backlog = listed if self._frozen or len(taken) < len(candidates) else None
        self._backlog_end = end if self._backlog is not None else None
        return DiscoveredFiles(self.files_of(end), end, counts)

    def files_of(self, offset: StreamOffset | Mapping[str, Any]) -> list[PartitionedFile]:
        """The files of the batch that ends at ``offset`` (what a Spark batch reads)."""
        if not isinstance(offset, StreamOffset):
            offset = StreamOffset.from_json(offset)
        root, url = self.table.url.prefix, self.table.url
        out = []
        decoded = self._decoded
        for key, size, mtime_us, etag in offset.batch:
            values = decoded.get(key)
            if values is None:  # a batch planned by another reader (a restart)
                values = self.layout.decode(root + key) or {}
            modified = (None if mtime_us is None
                        else EPOCH + dt.timedelta(microseconds=mtime_us))
            out.append(PartitionedFile(url.to_url(root + key), size, values,
                                       last_modified=modified, etag=etag))
        return out

    # --- listing --------------------------------------------------------------------------
    def _list_start(self, start: StreamOffset) -> str | None:
        window = self._window_start(start)
        after = start.frontier if window is None else min(window, start.frontier or window)
        return None if after is None else self.table.url.prefix + after

    def _list(self, start_after: str | None, counts: Counters,
              expected_keys: int | None = None) -> tuple[list[_Listed], int]:
        """The table's files after ``start_after``, by key, and the keys the listing
        listed; its requests, keys listed and partitions pruned added to ``counts``.
        ``expected_keys``: what the last full listing listed (see ``listing_run``)."""
        run = self.table.listing_run(self.predicate, start_after=start_after,
                                     expected_keys=expected_keys)
        root = len(self.table.url.prefix)
        listed = [_Listed.of(f.meta.path[root:], f.meta, f.values) for f in run.files()]
        listed.sort(key=lambda f: f.key)
        counts.add("list_requests", run.lister.counters["list_requests"])
        counts.add("files_listed", run.metrics["files_listed"])
        counts.add("partitions_pruned", run.metrics["partitions_pruned"])
        return listed, run.metrics["files_listed"]

    def _classify(self, start: StreamOffset, listed: Iterable[_Listed],
                  counts: Counters) -> list[_Listed]:
        """Files to read, in order: files before the frontier (late: found in the lookback
        window or by reconciliation) first, then new ones, each by key; the files left
        out counted in ``counts``."""
        floor = self._floor(start)
        frontier = start.frontier
        old: list[_Listed] = []
        new: list[_Listed] = []
        before_start = too_old = 0
        for f in listed:
            mtime = f.mtime_us
            if f.key in start.seen:
                continue
            if start.not_before_us is not None and mtime is not None \
                    and mtime < start.not_before_us:
                before_start += 1
            elif frontier is None or f.key > frontier:
                new.append(f)
            elif floor is not None and (mtime is None or mtime < floor):
                too_old += 1  # forgotten, as Spark's maxFileAge forgets
            else:
                old.append(f)
        counts.add("files_before_start", before_start)
        counts.add("files_too_old", too_old)
        return old + new

    @staticmethod
    def _limit(candidates: list[_Listed], max_files: int | None,
               max_bytes: int | None) -> list[_Listed]:
        taken: list[_Listed] = []
        size = 0
        for f in candidates:
            if taken and max_files is not None and len(taken) >= max_files:
                break
            if taken and max_bytes is not None and size + f.meta.size > max_bytes:
                break
            taken.append(f)
            size += f.meta.size
        return taken

    # --- state ----------------------------------------------------------------------------
    def _floor(self, offset: StreamOffset) -> int | None:
        """Files modified before this are forgotten (``max_file_age`` before the newest)."""
        if offset.newest_us is None:
            return None
        return offset.newest_us - int(self.settings.max_file_age_seconds * 1_000_000)

    def _window_start(self, offset: StreamOffset) -> str | None:
        """First key of the lookback window: the oldest of its partition directories."""
        return min(offset.recent) if offset.recent else None

    def _partition_dir(self, key: str) -> str:
        depth = self._depth
        parts = key.split("/")
        if depth:
            return "/".join(parts[:depth]) + "/"
        return "/".join(parts[:-1]) + "/" if len(parts) > 1 else ""

    def _advance(self, start: StreamOffset, taken: list[_Listed], old: set[str],
                 late: int, min_seen_us: int | None = None,
                 keys: int | None = None) -> StreamOffset:
        """The offset after reading ``taken`` (``old``: the keys of those before the
        frontier). ``min_seen_us``: a "latest" start, which reads nothing it listed;
        ``keys``: the offset's ``listed``."""
        s = self.settings
        mtimes = [m for f in taken if (m := f.mtime_us) is not None]
        if start.newest_us is not None:
            mtimes.append(start.newest_us)
        newest = max(mtimes) if mtimes else None
        frontier = max([start.frontier or "", *(f.key for f in taken if f.key not in old)])
        # remembered: what a later listing could show again and must not be read again
        bounds = [b for b in (self._floor(replace(start, newest_us=newest)), min_seen_us,
                              start.not_before_us) if b is not None]
        seen = {**start.seen, **{f.key: f.mtime_us or 0 for f in taken}}
        if bounds:
            seen = {k: m for k, m in seen.items() if m >= max(bounds)}
        recent = dict(start.recent)
        for f in taken:
            d = self._partition_dir(f.key)
            recent[d] = max(recent.get(d, 0), f.mtime_us or 0)
        if s.lookback_partitions is not None:
            recent = dict(sorted(recent.items())[-s.lookback_partitions:]) \
                if s.lookback_partitions else {}
        elif s.lookback_seconds is not None and recent:
            last = max(recent)
            cut = (newest or 0) - int(s.lookback_seconds * 1_000_000)
            recent = {d: m for d, m in recent.items() if m >= cut or d == last}
        batch = tuple((f.key, f.meta.size, f.mtime_us, f.meta.etag) for f in taken)
        if min_seen_us is not None:  # a "latest" start: nothing of this listing is read
            batch = ()
        return StreamOffset(frontier=frontier or None, seen=seen, recent=recent, batch=batch,
                            newest_us=newest, not_before_us=start.not_before_us,
                            batches=start.batches + (0 if min_seen_us is not None else 1),
                            files=start.files + len(batch),
                            late_files=start.late_files + late, listed=keys)
