"""How much memory a new array can take, so too-large requests fail with a
Python error before XLA aborts the process trying to allocate them."""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Iterator

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
    except Exception:  # CPU and some backends have none
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


class _Budget(threading.local):
    def __init__(self):
        self.left = None     # bytes new weights may still take, or None: no budget
        self.refusal = None  # what the error says the budget comes from


_budget = _Budget()


@contextlib.contextmanager
def weight_budget(max_bytes: int, refusal: str) -> Iterator[None]:
    """Inside, the weights layers create (`Layer.add_weight`) take at most
    `max_bytes` together; the weight that would pass it is refused with a
    ValueError before its value is made, `refusal` saying why there is a bound.

    Loaders build the model a file's config describes under the size of the
    weights the file holds, so a small file cannot make loopax allocate
    gigabytes before it finds that its weights do not fit.
    """
    saved = _budget.left, _budget.refusal
    _budget.left, _budget.refusal = int(max_bytes), refusal
    try:
        yield
    finally:
        _budget.left, _budget.refusal = saved


def charge_weight(nbytes: int, what: str) -> None:
    """Counts a new weight of `nbytes` (described by `what`) against the
    current `weight_budget`; a ValueError if it does not fit."""
    if _budget.left is None:
        return
    if nbytes > _budget.left:
        raise ValueError(f"{what} takes {nbytes:,} bytes, more than {_budget.refusal} "
                         f"({max(_budget.left, 0):,} bytes left); refused before allocating.")
    _budget.left -= nbytes
