"""The executor's C heap, kept warm between tasks.

glibc's malloc returns freed memory to the kernel once the free space at the top of an
arena passes a threshold that it adjusts by itself, and only upwards from the size of the
largest mmapped block freed so far. A fresh executor has freed none: a numpy kernel whose
temporaries (a chunk's distances, indices) total a few MB frees them all at the end of
each task, the arena is trimmed, and the next task faults the same pages back in —
measured: 176 minor faults per K-means task, 0.3 ms of system time each, 3% of the task
(issue 13: the engine's kernel ran 5% slower than the same kernel in forked numpy
processes, whose heap came warm from their parent). Fixing both thresholds keeps
temporaries under ``MMAP_THRESHOLD`` on the heap and lets ``TRIM_THRESHOLD`` of free space
stay there: an executor process holds at most that much freed C memory per arena (one
arena per task thread) beyond what it uses, part of its stated overhead. Larger arrays
(big cached blocks, received buffers) are still mmapped and go back to the kernel when
freed.

The mmap threshold is glibc's own ceiling for its dynamic one (32 MB on 64-bit), halved:
16 MB. A lower one is worse than glibc's default for kernels with temporaries just above
it: at 4 MB, naive Bayes' evaluation (5 MB gathers) mapped and faulted its temporaries at
every call, 8,500 faults and 2.2x the time of the same call under glibc's default (its
threshold had risen past 5 MB), and the whole evaluation stage ran 1.45x slower over
blocks cached in memory than over blocks read from disk.

Only executors call this: the driver is the user's process, whose allocator is theirs.
"""

from __future__ import annotations

import ctypes
import platform

__all__ = ["keep_heap_warm", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

MMAP_THRESHOLD = 16 << 20  # allocations from this size are mmapped (and unmapped when freed)
TRIM_THRESHOLD = 32 << 20  # free space an arena keeps at its top before giving it back
_M_TRIM_THRESHOLD = -1  # mallopt's parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3


def keep_heap_warm() -> bool:
    """Sets both thresholds with ``mallopt``; False where the C library is not glibc."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
