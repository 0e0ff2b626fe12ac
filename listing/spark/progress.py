"""Progress of a long listing in the driver's log, while Spark plans a scan.

Spark plans a ``listing`` scan in a Python worker on the driver, whose stderr is the
driver's log: a listing that takes more than a few seconds (a table of many pages) says how
far it got there, then how it ended, instead of leaving the console silent. Short listings
print nothing. The records go to the ``listing.progress`` logger, which writes to stderr
unless the application configured handlers of its own.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable

__all__ = ["FIRST_REPORT_S", "REPORT_EVERY_S", "ListingProgress", "progress_log"]

progress_log = logging.getLogger("listing.progress")
FIRST_REPORT_S = 5.0  # a listing shorter than this prints nothing
REPORT_EVERY_S = 10.0


def _ensure_handler() -> None:
    """A stderr handler for INFO records, unless the application set up logging."""
    if progress_log.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s listing: %(message)s", "%H:%M:%S"))
    progress_log.addHandler(handler)
    progress_log.setLevel(logging.INFO)
    progress_log.propagate = False


class ListingProgress:
    """A listing's ``progress(requests, keys)`` callback: one line after ``first`` seconds,
    then at most one every ``every`` seconds; :meth:`done` adds the totals if it spoke."""

    def __init__(self, url: str, *, first: float | None = None, every: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        first = FIRST_REPORT_S if first is None else first
        self.url, self.every, self.clock = url, REPORT_EVERY_S if every is None else every, clock
        self.started = clock()
        self.next_at = self.started + first
        self.reported = 0
        self.requests = self.keys = 0

    def __call__(self, requests: int, keys: int) -> None:
        self.requests, self.keys = requests, keys
        now = self.clock()
        if now < self.next_at:
            return
        self.next_at = now + self.every
        self.reported += 1
        _ensure_handler()
        progress_log.info("listing %s: %s keys in %s requests so far (%.0f s)", self.url,
                          f"{keys:,}", f"{requests:,}", now - self.started)

    def done(self) -> None:
        if self.reported:
            progress_log.info("listing %s: done, %s keys in %s requests (%.1f s)", self.url,
                              f"{self.keys:,}", f"{self.requests:,}",
                              self.clock() - self.started)
