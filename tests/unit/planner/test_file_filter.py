"""FileFilter with a format that reads every name: which listed names it keeps."""

from __future__ import annotations

import pytest

from listing import formats
from listing.formats.base import FileFormat
from listing.options import ListingOptions
from listing.planner import FileFilter
from listing.storage.lister import ObjectMeta
from listing.url import TableUrl

URL = TableUrl.parse("s3://b/t")
NAMES = ["events-1-2026-11-27-13-00-00-0f0e", "x.gz", "a.json.gz", "notes.txt",
         "part-0.parquet", "p.inprogress", "c.parquet._COPYING_"]


def _filter(fmt: FileFormat, **options: object) -> FileFilter:
    return FileFilter(URL, ListingOptions.from_dict(options), fmt.matches, fmt.name_endings)


@pytest.mark.parametrize("name", ["json", "csv", "parquet", "arrow"])
def test_built_in_formats_keep_every_name_but_in_progress_ones(name):
    f = _filter(formats.get(name))
    assert f.every_name and f.endings is None
    kept = [NAMES[i] for i in f.kept(lambda: NAMES, _joined(NAMES), range(len(NAMES)))]
    assert kept == NAMES[:5]
    # the per-key test agrees with the per-directory one
    assert [n for n in NAMES if f.accepts(ObjectMeta(f"t/{n}", 1))] == kept
    # nothing to drop: the range itself, the names not asked for
    assert f.kept(lambda: pytest.fail("names asked for"), _joined(NAMES[:5]), range(5)) == range(5)


def _joined(names: list[str]) -> str:
    return "".join(name + "\0" for name in names)


def test_a_glob_or_an_overriding_format_asks_per_key():
    narrowed = _filter(formats.get("json"), path_glob_filter="*.gz")
    assert not narrowed.every_name
    assert [n for n in NAMES if narrowed.accepts(ObjectMeta(f"t/{n}", 1))] == ["x.gz",
                                                                              "a.json.gz"]

    class OnlyJson(FileFormat):
        name = "only_json"
        extensions = (".json",)

        def matches(self, path: str) -> bool:
            return self.has_extension(path)

    own = _filter(OnlyJson())
    assert own.name_endings is None and not own.every_name
    assert [n for n in NAMES if own.accepts(ObjectMeta(f"t/{n}", 1))] == []
