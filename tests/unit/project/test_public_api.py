"""The package's public surface: every error users can catch and the write entry points are
importable from ``listing`` itself, as the README documents them."""

from __future__ import annotations

import inspect

import pytest

import listing
from listing import errors


def _error_classes() -> list[str]:
    return sorted(name for name, obj in vars(errors).items()
                  if inspect.isclass(obj) and issubclass(obj, Exception)
                  and obj.__module__ == errors.__name__)


@pytest.mark.parametrize("name", _error_classes())
def test_every_error_class_is_exported(name: str) -> None:
    assert name in listing.__all__
    assert getattr(listing, name) is getattr(errors, name)


def test_error_classes_found() -> None:
    # positive control for the parametrization above: it saw the classes it must
    assert {"ListingError", "CommitError", "StorageConfigError"} <= set(_error_classes())


@pytest.mark.parametrize("name", ["write_table", "WriteJob", "WriteResult"])
def test_write_entry_points(name: str) -> None:
    from listing import write

    assert getattr(listing, name) is getattr(write, name)


def test_everything_in_all_resolves() -> None:
    missing = [n for n in listing.__all__ if not hasattr(listing, n)]
    assert missing == []


def test_unknown_name_is_attribute_error() -> None:
    with pytest.raises(AttributeError):
        listing.no_such_name  # noqa: B018
