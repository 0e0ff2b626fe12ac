"""Python's cyclic garbage collector paused while a plan builds its list of files.

Listing a large table makes a few long-lived objects per key and no reference cycles.
The collector still runs a full pass every time the young objects outnumber a quarter of
the old ones, and each pass walks the whole heap (a Spark driver's is large), so on a large
table the passes take a share of planning CPU that grows with the heap
(``python -m bench.client_cpu`` plans with the collector paused and running). It is paused for
the plan and resumed (as it was) when the last concurrent plan ends; any cycle made
meanwhile is collected then. Mercurial's ``nogc`` does the same for the same reason.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_active = 0  # plans inside gc_paused() now, in any thread
_resume = False  # whether the collector was on when the first of them began


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause automatic collection inside the block (re-entrant and thread-safe)."""
    global _active, _resume
    with _lock:
        if _active == 0:
            _resume = gc.isenabled()
            gc.disable()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _resume:
                gc.enable()
