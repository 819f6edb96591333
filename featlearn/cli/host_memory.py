"""Host memory for the ``featlearn`` command: freed tensor memory kept for reuse (glibc), on request.

A CPU fit allocates and frees the same large tensors over and over: a full-batch step's
(S, n, p) temporaries and a probe's Newton iterations are hundreds of MB each, and every
fit of a study draws its data sets anew. glibc's ``malloc`` serves each block over its
``mmap`` threshold (at most 32 MB) by a fresh ``mmap`` and returns it on ``free``, so the
kernel zeroes every page of such a tensor again at its next first touch: on Shi et al.'s
E.1.2 comparison, millions of minor page faults and a third of the run's time in the
kernel (``benchmarks/README.md`` has the measurements).

:func:`keep_freed_memory` tells glibc (``mallopt``) to serve large blocks from its heap
(``M_MMAP_MAX = 0``) and to keep up to ``KEPT_FREE_MB`` of free memory at the top of the
heap (``M_TRIM_THRESHOLD``) instead of returning it, so the process reuses its pages. The
price is a higher peak resident set: freed blocks stay with the process, and a heap
fragments where separate mappings would not. On Shi et al.'s comparisons it bought a few
percent of speed for a much higher peak (``benchmarks/README.md``), so it is opt-in,
``FEATLEARN_MALLOC=keep``, for CPU studies with memory to spare.

The console script calls it, never an import of featlearn: a program that imports
featlearn keeps its own allocator settings. The user's own ``MALLOC_*`` variables, glibc
malloc tunables or a preloaded allocator win over ``keep``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from collections.abc import Mapping

#: The environment variable that chooses: ``system`` (default: glibc's own settings) or ``keep``.
ENV = "FEATLEARN_MALLOC"
CHOICES = ("keep", "system")

#: Free memory kept at the top of the heap, MB (above it, glibc returns memory to the system);
#: mallopt takes a C int, so at most 2 GiB - 1 byte.
KEPT_FREE_MB = 512

# mallopt's parameter numbers (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4


def glibc() -> ctypes.CDLL | None:
    """This process's C library where it is glibc (Linux); None elsewhere (musl's ``mallopt`` does nothing)."""
    name = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    return libc if hasattr(libc, "gnu_get_libc_version") else None


def keep_freed_memory(environ: Mapping[str, str] | None = None) -> bool:
    """Tune glibc's ``malloc`` to keep and reuse freed memory; True where it did.

    Acts only under ``FEATLEARN_MALLOC=keep``. Does nothing (returns False) otherwise,
    without glibc, or where the user chose for the allocator: a ``MALLOC_*`` variable,
    ``GLIBC_TUNABLES`` with ``glibc.malloc``, or a preloaded allocator (``LD_PRELOAD``).

    Raises:
        ValueError: ``FEATLEARN_MALLOC`` is neither ``keep`` nor ``system``.
    """
    environ = os.environ if environ is None else environ
    choice = environ.get(ENV, "system")
    if choice not in CHOICES:
        raise ValueError(
            f"{ENV}={choice!r}: use 'system' (glibc's defaults, the default) or 'keep' (freed host memory reused)."
        )
    if choice == "system" or environ.get("LD_PRELOAD"):  # LD_PRELOAD: jemalloc, tcmalloc
        return False
    if any(name.startswith("MALLOC_") for name in environ) or "glibc.malloc" in environ.get("GLIBC_TUNABLES", ""):
        return False
    libc = glibc()
    if libc is None:
        return False
    mallopt = libc.mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, KEPT_FREE_MB * 2**20))
