"""Reused Python workers end quietly when Spark closes them: no ``BrokenPipeError`` report.

Spark's Python workers are children of ``pyspark.daemon``, each running the daemon's
``worker(sock, …)`` once per task (or planning call) while Spark reuses it. When the JVM
closes an idle worker's socket (``spark.stop()``, the driver exiting, an idle worker
retired), pyspark's worker reads the end of the stream as an error, writes an error report
to the closed socket and, over a Unix domain socket (which ``listing.session()`` turns on),
fails to flush it: the daemon prints ``PySpark daemon failed to flush the output to the
worker process`` or a ``BrokenPipeError`` traceback. Over TCP the same write succeeds
silently. Whether the socket's end or the daemon's SIGHUP reaches an idle worker first is a
race, so the report ended some runs and not others. Results are unaffected either way.

:func:`install` runs wherever the source's code is imported: in a worker forked by
pyspark's daemon (the daemon's module is that process's ``__main__``), it wraps the
daemon's ``worker`` so that a socket the JVM already closed ends the worker without a
write. A reused worker has run our code before it idles, so this covers every worker that
read or planned a ``listing`` scan, planning workers included (Spark starts those with
``pyspark.daemon`` whatever ``spark.python.daemon.module`` says). It cannot cover a worker
closed while still inside an exchange: that code is pyspark's (docs/versions.md).

The same wrapper keeps a reused worker's garbage collections short. pyspark's daemon runs
a full ``gc.collect()`` after every call a reused worker serves, and a worker that read a
table holds some 120,000 objects that live as long as it does (pyarrow, pyspark, botocore's
service models): about 80 ms of CPU per collection, per worker, on every query (three
workers a query on the Python engine). After its first call through the wrapper the worker
collects once and freezes what survives (``gc.freeze``): later collections look only at
objects made since. What was live then is never collected as a cycle again (reference
counting still frees it); that is one call's objects at most.
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

Worker = Callable[..., int]


def _closed(sock: socket.socket) -> bool:
    """True when the peer closed ``sock`` with nothing left to read (waits for either)."""
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def quiet(pyspark_worker: Worker) -> Worker:
    """pyspark's ``daemon.worker``, except for a socket its JVM side already closed: exit
    code 1, so the daemon's child stops without writing to it."""

    def worker(sock: socket.socket, *args: Any, **kwargs: Any) -> int:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as pyspark's worker does first: the
        if _closed(sock):                              # daemon's SIGHUP at shutdown ends it
            return 1
        code = int(pyspark_worker(sock, *args, **kwargs))
        freeze_once()
        return code

    worker.__wrapped__ = pyspark_worker  # type: ignore[attr-defined]
    return worker


_frozen = False


def freeze_once() -> bool:
    """Collect, then freeze the survivors out of later collections, once per process
    (a forked worker starts unfrozen: the flag is reset by :func:`_after_fork`); True when
    this call did."""
    global _frozen
    if _frozen:
        return False
    _frozen = True
    gc.collect()
    gc.freeze()
    return True


def _after_fork() -> None:
    global _frozen
    _frozen = False


os.register_at_fork(after_in_child=_after_fork)


def install(main: Any = None) -> bool:
    """Wrap the ``worker`` of pyspark's daemon when this process is one of its workers
    (``main``: the process's ``__main__``); True when it did (once)."""
    main = sys.modules.get("__main__") if main is None else main
    spec = getattr(main, "__spec__", None)
    if getattr(spec, "name", None) != "pyspark.daemon" or not callable(
            getattr(main, "worker", None)):
        return False
    if hasattr(main.worker, "__wrapped__"):
        return True
    main.worker = quiet(main.worker)  # manager() looks the name up at each connection
    return True
