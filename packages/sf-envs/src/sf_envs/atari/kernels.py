"""The Atari frame kernel: the max of the last two frames, resized by area averaging, in one pass.

Atari games draw some sprites on alternate frames only, so the standard preprocessing keeps the
pixel-wise max of the last two raw frames of a skipped step; it then shrinks the 210x160 screen to
84x84 by area averaging (each output pixel the mean of the source area it covers, with fractional
edges weighted by their overlap), as OpenCV's ``INTER_AREA`` does. The averaging is separable:
the columns first, then the rows.
"""

from __future__ import annotations

import math

import numpy as np

from sf_envs.kernel import numba_kernel

__all__ = ["AreaWeights", "area_weights", "pool_and_resize"]

#: ``(first source index, weights [out, taps])`` of one axis.
AreaWeights = tuple[np.ndarray, np.ndarray]


def area_weights(source: int, target: int) -> AreaWeights:
    """The source pixels each of ``target`` pixels averages, and their weights (summing to 1).

    Output pixel ``i`` covers ``[i * s, (i + 1) * s)`` of the source, ``s = source / target``;
    source pixel ``r`` weighs its overlap with that interval, divided by ``s``.
    """
    scale = source / target
    taps = math.ceil(scale) + 1
    first = np.empty(target, dtype=np.int64)
    weights = np.zeros((target, taps), dtype=np.float32)
    for i in range(target):
        lo, hi = i * scale, (i + 1) * scale
        first[i] = start = math.floor(lo)
        for k in range(taps):
            r = start + k
            overlap = min(hi, r + 1) - max(lo, r)
            if r < source and overlap > 1e-9:
                weights[i, k] = overlap / scale
    return first, weights


@numba_kernel
def pool_and_resize(
    a: np.ndarray,
    b: np.ndarray,
    col_first: np.ndarray,
    col_weights: np.ndarray,
    row_first: np.ndarray,
    row_weights: np.ndarray,
    tall: np.ndarray,
    out: np.ndarray,
) -> None:
    """``out[H, W]`` (uint8) = area-resized ``max(a, b)`` (uint8 ``[h, w]``); the columns' and
    rows' first source indices and weights come from :func:`area_weights`; ``tall`` is a
    float32 ``[H, w + taps]`` scratch buffer (``taps``: ``col_weights.shape[1]``), whose last
    ``taps`` columns stay zero.

    The rows first, over whole contiguous source rows (which vectorises), then the columns."""
    w = a.shape[1]
    height, row_taps = row_weights.shape
    width, col_taps = col_weights.shape
    for i in range(height):
        r0 = row_first[i]
        acc = tall[i]
        acc[:w] = 0.0
        for k in range(row_taps):
            weight = row_weights[i, k]
            if weight != 0.0:
                ra, rb = a[r0 + k], b[r0 + k]
                for c in range(w):
                    acc[c] += weight * max(ra[c], rb[c])
        for j in range(width):
            c0 = col_first[j]
            total = np.float32(0.0)
            for k in range(col_taps):
                total += col_weights[j, k] * acc[c0 + k]
            out[i, j] = np.uint8(min(total + 0.5, np.float32(255.0)))
