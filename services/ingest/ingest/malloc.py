"""Handing freed upload memory back to the OS (glibc's allocator; elsewhere these do nothing).

Why ingest's memory stayed up after a burst (issue 12: 1 GB, never down): glibc serves a large
``malloc`` with its own ``mmap`` (returned to the OS on ``free``) only above ``M_MMAP_THRESHOLD``, and by
default that threshold *grows* to the size of each large block freed, up to 32 MB. After the first 4 MB
upload body is freed, every later body (and Pillow's decode buffers) comes from the heap instead; 20
bodies in flight at once fragment it and the heap never shrinks back. Measured with
``devstack/bench/ingest.py`` (20 × 4.3 MB, main process PSS idle → 3 s after the burst): default
117 → 227 MB; ``MALLOC_ARENA_MAX=2`` 115 → 238 MB (no help: the blocks are on the main arena);
``M_MMAP_THRESHOLD`` fixed at 128 KiB 110 → 115 MB. :func:`fix_mmap_threshold` sets the fixed threshold
(``mallopt``, the same as the ``MALLOC_MMAP_THRESHOLD_`` env variable, and it also stops the growth);
:func:`trim` returns free heap pages at the top and in the middle of the heap (``malloc_trim``), used by
the photo-check processes after each check. See mallopt(3), malloc_trim(3).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache
from typing import Any

__all__ = ["MMAP_THRESHOLD_BYTES", "fix_mmap_threshold", "trim"]

MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's initial default, kept instead of growing
_M_MMAP_THRESHOLD = -3  # <malloc.h>


@cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None


def fix_mmap_threshold(size: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Serve every allocation of ``size`` bytes or more with its own mapping, for the life of the process;
    ``True`` when the C library took it (glibc), ``False`` where there is no ``mallopt``."""
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, size))


def trim() -> None:
    """Give the heap's free pages back to the OS now (glibc ``malloc_trim(0)``; a no-op elsewhere)."""
    malloc_trim = getattr(_libc(), "malloc_trim", None)
    if malloc_trim is not None:
        malloc_trim.argtypes = [ctypes.c_size_t]
        malloc_trim.restype = ctypes.c_int
        malloc_trim(0)
