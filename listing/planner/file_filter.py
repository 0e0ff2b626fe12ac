"""Which listed files a scan keeps, apart from partitions: format, globs, modification time."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from listing.options import ListingOptions, compile_glob
from listing.storage.lister import ObjectMeta
from listing.url import TableUrl

#: files still being written by their producer (Flink's part files, ``hadoop fs -put``):
#: never data, whatever the format's extensions
IN_PROGRESS_SUFFIXES = (".inprogress", "._COPYING_")


@dataclass(frozen=True)
class FileFilter:
    """A value the planner applies to every matching key (no call back into the table)."""

    url: TableUrl
    options: ListingOptions
    is_format_file: Callable[[str], bool] = lambda path: True
    #: the lower-case endings that alone make a path the format's, when that is its test
    #: (``FileFormat.name_endings``; ``()``: every name is; None: ask ``is_format_file``)
    name_endings: tuple[str, ...] | None = None

    @functools.cached_property
    def endings(self) -> tuple[str, ...] | None:
        """The endings that alone decide a key, when they do (None: ask :meth:`accepts`):
        ``path.lower().endswith(endings)``, one call per listed key in the common case. No
        such ending is an in-progress one, so that test needs no second look."""
        endings = self.name_endings
        in_progress = tuple(s.lower() for s in IN_PROGRESS_SUFFIXES)
        if (not self.by_name_only or not endings
                or any(e.endswith(in_progress) for e in endings)):
            return None
        return endings

    @functools.cached_property
    def every_name(self) -> bool:
        """Whether every listed name is kept but in-progress ones: the format reads any
        name (``name_endings == ()``, the built-in formats) and nothing else decides. Then
        :meth:`kept` decides a directory's names without an ``ObjectMeta`` per key."""
        return self.by_name_only and self.name_endings == ()

    def kept(self, names: Callable[[], Sequence[str]], joined: str,
             visible: range | list[int]) -> range | list[int]:
        """The indices of ``visible`` whose names :attr:`every_name` keeps: all but the
        in-progress ones. ``joined``: the names, each followed by ``"\0"`` (which no name
        holds), so that one search a suffix tells the common case, where none is one;
        ``names()``: the names, asked for only when some are."""
        if not any(suffix + "\0" in joined for suffix in IN_PROGRESS_SUFFIXES):
            return visible
        listed = names()
        return [i for i in visible if not listed[i].endswith(IN_PROGRESS_SUFFIXES)]

    @functools.cached_property
    def by_name_only(self) -> bool:
        """Whether only the name's ending decides (no glob, no modification time)."""
        opts = self.options
        return (not self.url.selects_keys and not opts.path_glob_filter
                and not opts.modified_before and not opts.modified_after)

    def accepts(self, meta: ObjectMeta) -> bool:
        path = meta.path
        if self.by_name_only:  # the common case, once per listed key
            return not path.endswith(IN_PROGRESS_SUFFIXES) and self.is_format_file(path)
        opts = self.options
        name = path[path.rfind("/") + 1:]
        if name.endswith(IN_PROGRESS_SUFFIXES) or not self.is_format_file(path):
            return False
        if self.url.selects_keys and not self.url.matches_glob(path):
            return False
        if opts.path_glob_filter and compile_glob(
                opts.path_glob_filter, "path_glob_filter", file_name=True).match(name) is None:
            return False
        if meta.last_modified is not None:
            if opts.modified_before and meta.last_modified >= opts.modified_before:
                return False
            if opts.modified_after and meta.last_modified <= opts.modified_after:
                return False
        return True
