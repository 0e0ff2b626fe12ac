"""Storage options the toolkit interprets itself (retries, change handling), next to
fsspec's own options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from listing.errors import OptionError, StorageConfigError
from listing.options import parse_duration, parse_int

RETRY_MODES = ("standard", "adaptive")
ON_FILE_CHANGE = ("error", "read")
RETRY_OPTIONS = frozenset({"max_retries", "retry_mode", "retry_max_backoff"})
SETTING_NAMES = RETRY_OPTIONS | {"on_file_change"}


@dataclass(frozen=True)
class StorageSettings:
    """Retries and change handling, given as storage options next to fsspec's.

    ``max_retries``: retries after the first attempt of any request (botocore's
    ``total_max_attempts`` is ``max_retries + 1``; s3fs's own retry loop is switched off so
    it cannot multiply them; a body cut short mid-transfer is re-requested within the same
    budget). ``retry_mode``: botocore's ``standard`` or ``adaptive`` (client-side rate
    limiting on throttling). ``retry_max_backoff``: the longest wait between two attempts,
    seconds. ``on_file_change``: ``error`` (a file rewritten since listing fails the read
    with :class:`FileChangedError`) or ``read`` (read its current content, counted as
    ``files_changed``).
    """

    max_retries: int = 4
    retry_mode: str = "standard"
    retry_max_backoff: float = 20.0
    on_file_change: str = "error"

    @classmethod
    def parse(cls, values: dict[str, Any]) -> StorageSettings:
        kwargs: dict[str, Any] = {}
        try:
            if values.get("max_retries") is not None:
                kwargs["max_retries"] = parse_int(values["max_retries"], "max_retries",
                                                  minimum=0)
            if values.get("retry_max_backoff") is not None:
                kwargs["retry_max_backoff"] = parse_duration(values["retry_max_backoff"],
                                                             "retry_max_backoff")
        except OptionError as err:
            raise StorageConfigError(f"storage {err}") from None
        for name, allowed in (("retry_mode", RETRY_MODES), ("on_file_change", ON_FILE_CHANGE)):
            if values.get(name) is not None:
                value = str(values[name]).strip().lower()
                if value not in allowed:
                    raise StorageConfigError(f"storage option {name}={values[name]!r} must be "
                                             f"one of {', '.join(allowed)}")
                kwargs[name] = value
        return cls(**kwargs)

