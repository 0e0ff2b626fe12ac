"""This process's resident memory, as the planning measurements read it (Linux /proc)."""

from __future__ import annotations


def vm(field: str) -> float:
    """This process's ``VmHWM``/``VmRSS`` in bytes (NaN where /proc does not say)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return float("nan")


def reset_peak() -> None:
    """Start the peak RSS afresh (Linux: writing 5 to clear_refs resets VmHWM)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
