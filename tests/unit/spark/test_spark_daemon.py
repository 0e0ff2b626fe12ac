"""Reused Spark Python workers end quietly when Spark closes them (listing.spark.daemon),
where pyspark's own daemon prints a BrokenPipeError report over a Unix domain socket: the
noise that ended some runs."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap

import pytest

# a worker's socket whose JVM side closed (spark.stop(), an idle worker retired), handed to
# the daemon's per-connection function, in a subprocess (it resets signal handlers); the
# daemon's module is __main__ there, as in Spark's workers (python -m pyspark.daemon)
_CLOSED_PEER = textwrap.dedent("""
    import socket, sys
    import pyspark.daemon as main
    if sys.argv[1] == "ours":
        sys.modules["__main__"] = main  # as `python -m pyspark.daemon` makes it
        import listing.spark  # noqa: F401  (what a worker running our code imports)
    if sys.argv[2] == "unix":
        ours, jvm = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    else:
        server = socket.create_server(("127.0.0.1", 0))
        jvm = socket.create_connection(server.getsockname())
        ours, _ = server.accept()
    jvm.close()
    print("exit code", main.worker(ours, True))
""")


def _closed_peer(daemon: str, family: str) -> subprocess.CompletedProcess[str]:
    # (pyspark's daemon takes an argv[1] starting with 'pyspark' as its worker module)
    return subprocess.run([sys.executable, "-c", _CLOSED_PEER, daemon, family],
                          capture_output=True, text=True, timeout=120, check=True)


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no Unix domain sockets")
def test_pysparks_daemon_reports_a_broken_pipe_over_unix_sockets_only():
    """The cause, shown: pyspark's worker answers the closed stream with an error report it
    cannot flush over a Unix socket; over TCP the same write goes through silently."""
    unix = _closed_peer("theirs", "unix")
    assert "BrokenPipeError" in unix.stderr, unix.stderr
    tcp = _closed_peer("theirs", "tcp")
    assert "BrokenPipeError" not in tcp.stderr, tcp.stderr


@pytest.mark.parametrize("family", ["unix", "tcp"])
def test_a_worker_that_imported_us_ends_quietly(family):
    if family == "unix" and not hasattr(socket, "AF_UNIX"):
        pytest.skip("no Unix domain sockets")
    done = _closed_peer("ours", family)
    assert done.stderr == "", done.stderr
    assert "exit code 1" in done.stdout  # the daemon's child stops instead of reusing it


def test_install_wraps_only_pysparks_daemon_and_once():
    from types import ModuleType, SimpleNamespace

    from listing.spark import daemon

    main = ModuleType("__main__")
    main.__spec__ = SimpleNamespace(name="pyspark.daemon")  # type: ignore[assignment]
    main.worker = lambda sock, *a: 0  # type: ignore[attr-defined]
    assert daemon.install(main) and daemon.install(main)
    assert main.worker.__wrapped__.__name__ == "<lambda>"  # wrapped once, not twice
    other = ModuleType("__main__")
    other.worker = lambda sock, *a: 0  # type: ignore[attr-defined]
    assert not daemon.install(other) and not hasattr(other.worker, "__wrapped__")


def test_an_open_socket_goes_to_pysparks_worker():
    from listing.spark import daemon

    calls = []
    worker = daemon.quiet(lambda sock, auth: calls.append(auth) or 0)
    ours, jvm = socket.socketpair()
    jvm.sendall(b"\x00\x00\x00\x01")  # the JVM's first message
    try:
        assert worker(ours, True) == 0 and calls == [True]
    finally:
        ours.close()
        jvm.close()


_FREEZE = textwrap.dedent("""
    import gc, socket
    from listing.spark import daemon
    calls = []
    worker = daemon.quiet(lambda sock, auth: calls.append(gc.get_freeze_count()) or 0)
    for _ in range(3):
        ours, jvm = socket.socketpair()
        jvm.sendall(b"\\x00\\x00\\x00\\x01")
        assert worker(ours, True) == 0
        ours.close(); jvm.close()
    print(calls[0] == 0, calls[1] > 0, calls[2] == calls[1], daemon.freeze_once())
""")


def test_a_reused_worker_freezes_its_objects_after_its_first_call():
    """pyspark's daemon collects garbage after every call a reused worker serves: after
    the first, what survives is frozen out of later collections (once per process)."""
    done = subprocess.run([sys.executable, "-c", _FREEZE], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.split() == ["True", "True", "True", "False"], done.stderr
