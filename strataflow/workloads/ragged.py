"""Ragged rows (CSR-like segments) as padded blocks, for batched numpy kernels.

A batch of segments of different lengths (a document's words, a user's ratings) becomes
a ``(rows, longest)`` index matrix and a mask, so that one gather and one stacked
``np.matmul`` (BLAS for each row, no Python loop) replace a segmented sum. Rows are taken
in order of length, so that a block pads little, and blocks hold at most ``max_cells``
cells (at least one row), so that memory stays bounded.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

__all__ = ["length_blocks", "padded_index"]


def length_blocks(lengths: np.ndarray, max_cells: int) -> Iterator[np.ndarray]:
    """Row numbers in blocks of similar length with ``rows * longest <= max_cells``."""
    order = np.argsort(lengths, kind="stable")
    sorted_len = lengths[order]
    n, i = len(order), 0
    while i < n:
        lo, hi = i + 1, n  # the largest j with (j - i) * sorted_len[j - 1] <= max_cells
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if (mid - i) * int(sorted_len[mid - 1]) <= max_cells:
                lo = mid
            else:
                hi = mid - 1
        yield order[i:lo]
        i = lo


def padded_index(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(index, mask)``, both ``(rows, longest)``: the positions of each row's elements,
    and which are real; padding points at position 0 (mask it before use)."""
    width = int(lengths.max()) if len(lengths) else 0
    col = np.arange(width)
    mask = col[None, :] < lengths[:, None]
    index = np.where(mask, starts[:, None] + col[None, :], 0)
    return index, mask
