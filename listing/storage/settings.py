"""Storage options the toolkit interprets itself (retries, change handling), next to
fsspec's own options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from listing.errors import StorageConfigError

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
        """From storage options the allowlist has typed and checked
        (:func:`listing.options.storage_options.check`, which ``StorageSpec`` applies)."""
        unknown = sorted(set(values) - SETTING_NAMES)
        if unknown:
            raise StorageConfigError(f"not storage settings: {', '.join(unknown)}")
        return cls(**{k: v for k, v in values.items() if v is not None})
