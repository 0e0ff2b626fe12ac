"""The Python worker daemon listing.session() starts (listing.spark.daemon): a reused
worker whose JVM side closed its socket ends quietly, where pyspark's own daemon prints a
BrokenPipeError traceback over a Unix domain socket (the noise at the end of some runs)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# a worker's socket whose JVM side closed (spark.stop(), the driver exiting), handed to the
# daemon's per-connection function, in a subprocess (it resets signal handlers)
_CLOSED_PEER = textwrap.dedent("""
    import socket, sys
    from pyspark import daemon
    if sys.argv[1] == "ours":
        import listing.spark.daemon  # noqa: F401  (installs its worker into pyspark.daemon)
    family = socket.AF_UNIX if sys.argv[2] == "unix" else socket.AF_INET
    if family == socket.AF_UNIX:
        ours, jvm = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    else:
        server = socket.create_server(("127.0.0.1", 0))
        jvm = socket.create_connection(server.getsockname())
        ours, _ = server.accept()
    jvm.close()
    print("exit code", daemon.worker(ours, True))
""")


def _closed_peer(daemon: str, family: str) -> subprocess.CompletedProcess[str]:
    # (pyspark's daemon takes an argv[1] starting with 'pyspark' as its worker module)
    return subprocess.run([sys.executable, "-c", _CLOSED_PEER, daemon, family],
                          capture_output=True, text=True, timeout=120, check=True)


@pytest.mark.skipif(not hasattr(__import__("socket"), "AF_UNIX"), reason="no Unix sockets")
def test_pysparks_daemon_reports_a_broken_pipe_over_unix_sockets_only():
    """The cause, shown: pyspark's worker answers the closed stream with an error report it
    cannot flush over a Unix socket; over TCP the same write goes through silently."""
    unix = _closed_peer("theirs", "unix")
    assert "PySpark daemon failed to flush" in unix.stderr, unix.stderr
    assert "BrokenPipeError" in unix.stderr
    tcp = _closed_peer("theirs", "tcp")
    assert "BrokenPipeError" not in tcp.stderr, tcp.stderr


@pytest.mark.parametrize("family", ["unix", "tcp"])
def test_our_daemon_ends_such_a_worker_quietly(family):
    done = _closed_peer("ours", family)
    assert done.stderr == "", done.stderr
    assert "exit code 1" in done.stdout  # the daemon's child stops instead of reusing it


def test_sessions_run_their_python_workers_through_it(spark, tmp_path):
    """listing.session() names the module, and Python tasks run through it (a read on the
    listing reader: its tasks are Python workers the daemon forks)."""
    from listing.testing import datasets

    assert spark.conf.get("spark.python.daemon.module") == "listing.spark.daemon"
    ds = datasets.daily(str(tmp_path / "t"), days=3)
    df = spark.read.format("listing").option("engine", "python").load(ds.root)
    assert df.count() == ds.num_rows
    assert df.where("date = '2025-01-02'").count() == ds.num_rows // 3
