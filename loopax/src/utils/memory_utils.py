"""How much memory a new array can take, so too-large requests fail with a
Python error before XLA aborts the process trying to allocate them."""

from __future__ import annotations

import os

import jax


def available_memory_bytes(device=None) -> int | None:
    """Bytes free for new arrays on `device` (default: JAX's first device).

    Accelerators: `bytes_limit - bytes_in_use` from the device's memory
    statistics. CPU: the host's available memory (`MemAvailable` of
    /proc/meminfo, else the physical memory from `os.sysconf`). None when
    unknown.
    """
    device = device or jax.devices()[0]
    try:
        stats = device.memory_stats()
    except Exception:  # noqa: BLE001 - CPU and some backends have none
        stats = None
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"] - stats.get("bytes_in_use", 0))
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
