"""pyspark's Python worker daemon, without its ``BrokenPipeError`` report at shutdown.

``listing.session()`` starts Spark's Python workers through this module
(``spark.python.daemon.module``). It is ``pyspark.daemon`` with one change: a reused worker
whose JVM side has closed its socket (``spark.stop()``, the driver exiting) ends quietly.
pyspark's worker instead reads the end of the stream as an error, writes an error report
to the closed socket and, over a Unix domain socket (which ``listing.session()`` turns on),
fails to flush it: the daemon prints ``PySpark daemon failed to flush the output to the
worker process`` with a ``BrokenPipeError`` traceback. Over TCP the same write succeeds
silently. Whether the socket's end or the daemon's SIGHUP reaches an idle worker first is a
race, so the report ended some runs and not others. Tasks are unaffected either way.
"""

from __future__ import annotations

import signal
import socket
from typing import Any

from pyspark import daemon


def _closed(sock: socket.socket) -> bool:
    """True when the peer closed ``sock`` with nothing left to read (waits for either)."""
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


_pyspark_worker = daemon.worker


def worker(sock: socket.socket, *args: Any, **kwargs: Any) -> int:
    """pyspark's ``daemon.worker``, except for a socket its JVM side already closed: exit
    code 1, so the daemon's child stops without writing to it."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as pyspark's worker does first: the
    if _closed(sock):                              # daemon's SIGHUP at shutdown ends it
        return 1
    return int(_pyspark_worker(sock, *args, **kwargs))


daemon.worker = worker  # manager() looks the name up in its module at each connection

if __name__ == "__main__":
    daemon.manager()
