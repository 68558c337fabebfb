"""Numba kernels that turn ViZDoom frames into observations: resize, grayscale, frame stacking.

ViZDoom renders channels-first (``CRCGCB``: ``(C, H, W)``), and the policy wants channels-first
too, so every kernel here works plane by plane on ``(C, H, W)`` uint8 arrays and never transposes.
Each kernel writes into a caller buffer (often a view into shared memory), so a worker allocates
nothing per step. The index and weight tables depend only on the frame sizes; the classes compute
them once, and the per-call work is one compiled loop nest.

The resize conventions follow OpenCV's so that observations match the usual ``cv2.resize``
pipelines: pixel centres are aligned (``src = (dst + 0.5) * scale - 0.5``), ``"bilinear"`` uses
11-bit fixed-point weights like ``cv2.INTER_LINEAR`` and ``"area"`` averages the exact source
footprint of each output pixel, fractional edges included, like ``cv2.INTER_AREA``. ``"nearest"``
picks the source pixel under each output pixel's centre (``cv2.INTER_NEAREST_EXACT``; plain
``cv2.INTER_NEAREST`` samples the top-left corner instead and so shifts the image by up to half
a source pixel).

Kernels are compiled with ``cache=True``: the first process compiles and writes the cache (under
``NUMBA_CACHE_DIR`` when set, else next to this file, else in the user cache directory when the
package directory is read-only), and later processes only load it (~0.2 s instead of ~2 s).
Workers starting together may all compile; numba replaces cache files atomically, so that is
safe. If no cache location is writable, the kernels still work, compiled in memory each start.

Example:
    >>> import numpy as np
    >>> screen = np.zeros((3, 120, 160), dtype=np.uint8)  # ViZDoom CRCGCB 160x120
    >>> resize = Resizer((120, 160), (72, 128), "area")
    >>> rgb = np.empty((3, 72, 128), dtype=np.uint8)
    >>> gray = np.empty((1, 72, 128), dtype=np.uint8)
    >>> _ = rgb_to_gray(resize(screen, rgb), gray)
    >>> stack = FrameStack(4, (1, 72, 128))
    >>> obs = np.empty((4, 72, 128), dtype=np.uint8)
    >>> _ = stack.reset(gray, obs)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sf_envs.errors import OptionError
from sf_envs.kernel import numba_kernel

__all__ = ["INTERPOLATIONS", "FrameStack", "Resizer", "rgb_to_gray", "rgb_to_gray_unchecked"]


INTERPOLATIONS: tuple[str, ...] = ("nearest", "bilinear", "area")

# Bilinear weights are Q11 like OpenCV's INTER_RESIZE_COEF_BITS: the product of a row and a column
# weight is Q22, and 255 * 2**22 still fits an int32, so the whole filter runs in int32.
_LINEAR_BITS = 11
_LINEAR_ONE = 1 << _LINEAR_BITS
_LINEAR_ROUND = 1 << (2 * _LINEAR_BITS - 1)

# BT.601 luma weights in Q15, summing to exactly 2**15: bit-identical to cv2.cvtColor(RGB2GRAY) of
# OpenCV 5 (checked on 200k random pixels; the float formula with rint differs on 0.1% of them).
_GRAY_BITS = 15
_GRAY_R, _GRAY_G, _GRAY_B = 9798, 19235, 3735


# --------------------------------------------------------------------------------------- kernels
# One specialisation each in normal use: uint8 (C, H, W) arrays and fixed-dtype tables. 2-D
# frames reach the kernels as (1, H, W) views, so they share the compiled code.


@numba_kernel
def _resize_nearest(src, out, ys, xs):
    for c in range(out.shape[0]):
        for y in range(out.shape[1]):
            row = src[c, ys[y]]
            for x in range(out.shape[2]):
                out[c, y, x] = row[xs[x]]


@numba_kernel
def _resize_bilinear(src, out, y0, y1, wy, xs, wx, tmp):
    # Rows first: blending two whole source rows is contiguous (SIMD), and for the usual
    # downscales it touches fewer pixels than filtering every source row horizontally first.
    # The column pass is a scalar gather (LLVM emits no gathers for these CPUs), so it is kept
    # to two loads and one multiply per pixel, and for RGB the three planes share each column's
    # table loads (15% faster, measured). tmp is (3, W + 1) with zeros in the last column: the
    # right tap of the last output column may point there, always with weight 0.
    one = np.int32(_LINEAR_ONE)
    half = np.int32(_LINEAR_ROUND)
    for y in range(out.shape[1]):
        b = wy[y]
        a = one - b
        if out.shape[0] == 3:
            for c in range(3):
                r0, r1, tc = src[c, y0[y]], src[c, y1[y]], tmp[c]
                for x in range(src.shape[2]):
                    tc[x] = np.int32(r0[x]) * a + np.int32(r1[x]) * b
            t0, t1, t2 = tmp[0], tmp[1], tmp[2]
            o0, o1, o2 = out[0, y], out[1, y], out[2, y]
            for x in range(out.shape[2]):
                i = xs[x]
                w = wx[x]
                v = t0[i]
                o0[x] = ((v << _LINEAR_BITS) + (t0[i + 1] - v) * w + half) >> (2 * _LINEAR_BITS)
                v = t1[i]
                o1[x] = ((v << _LINEAR_BITS) + (t1[i + 1] - v) * w + half) >> (2 * _LINEAR_BITS)
                v = t2[i]
                o2[x] = ((v << _LINEAR_BITS) + (t2[i + 1] - v) * w + half) >> (2 * _LINEAR_BITS)
        else:
            t0 = tmp[0]
            for c in range(out.shape[0]):
                r0, r1 = src[c, y0[y]], src[c, y1[y]]
                for x in range(src.shape[2]):
                    t0[x] = np.int32(r0[x]) * a + np.int32(r1[x]) * b
                o0 = out[c, y]
                for x in range(out.shape[2]):
                    i = xs[x]
                    v = t0[i]
                    o0[x] = ((v << _LINEAR_BITS) + (t0[i + 1] - v) * wx[x] + half) >> (
                        2 * _LINEAR_BITS
                    )


@numba_kernel
def _resize_area(src, out, ys, yn, wy, xs, wx, tmp):
    # Separable weighted sums over each output pixel's footprint: a run of source rows into
    # `tmp`, then a run of `tmp` columns. Every column run is padded to the same length with
    # zero weights (tmp has matching zeros past the row), so the usual 2-4 tap runs get
    # unrolled loops: a runtime-length inner loop costs 2x here (measured).
    taps = wx.shape[1]
    for c in range(out.shape[0]):
        for y in range(out.shape[1]):
            row = src[c, ys[y]]
            w = wy[y, 0]
            for x in range(src.shape[2]):
                tmp[x] = np.float32(row[x]) * w
            for k in range(1, yn[y]):
                row = src[c, ys[y] + k]
                w = wy[y, k]
                for x in range(src.shape[2]):
                    tmp[x] += np.float32(row[x]) * w
            o = out[c, y]
            if taps == 2:
                for x in range(out.shape[2]):
                    i = xs[x]
                    o[x] = np.uint8(np.float32(0.5) + tmp[i] * wx[x, 0] + tmp[i + 1] * wx[x, 1])
            elif taps == 3:
                for x in range(out.shape[2]):
                    i = xs[x]
                    s = tmp[i] * wx[x, 0] + tmp[i + 1] * wx[x, 1] + tmp[i + 2] * wx[x, 2]
                    o[x] = np.uint8(np.float32(0.5) + s)
            elif taps == 4:
                for x in range(out.shape[2]):
                    i = xs[x]
                    s = tmp[i] * wx[x, 0] + tmp[i + 1] * wx[x, 1]
                    s += tmp[i + 2] * wx[x, 2] + tmp[i + 3] * wx[x, 3]
                    o[x] = np.uint8(np.float32(0.5) + s)
            else:
                for x in range(out.shape[2]):
                    i = xs[x]
                    s = np.float32(0.5)
                    for k in range(taps):
                        s += tmp[i + k] * wx[x, k]
                    o[x] = np.uint8(s)


@numba_kernel
def _resize_half(src, out, tmp):
    # Exact halving (640x480 -> 320x240, 160x120 -> 80x60), where "area" and "bilinear" agree:
    # each output is a 2x2 block mean rounded half up. uint16 sums and a shift instead of the
    # float taps and a division run ~4x faster (measured), with bit-identical results.
    for c in range(out.shape[0]):
        for y in range(out.shape[1]):
            r0 = src[c, 2 * y]
            r1 = src[c, 2 * y + 1]
            for x in range(src.shape[2]):
                tmp[x] = np.uint16(r0[x]) + np.uint16(r1[x])
            o = out[c, y]
            for x in range(out.shape[2]):
                o[x] = np.uint8((tmp[2 * x] + tmp[2 * x + 1] + np.uint16(2)) >> 2)


@numba_kernel
def _rgb_to_gray(src, out):
    r = np.int32(_GRAY_R)
    g = np.int32(_GRAY_G)
    b = np.int32(_GRAY_B)
    half = np.int32(1 << (_GRAY_BITS - 1))
    for y in range(out.shape[0]):
        for x in range(out.shape[1]):
            v = np.int32(src[0, y, x]) * r + np.int32(src[1, y, x]) * g + np.int32(src[2, y, x]) * b
            out[y, x] = (v + half) >> _GRAY_BITS


@numba_kernel
def _stack_write(ring, head, frame, out):
    # Store `frame` in slot `head` (the oldest), then lay the ring out oldest first: the slot
    # after `head` is now the oldest and `head` itself the newest.
    k, ch, h, w = ring.shape
    for c in range(ch):
        for y in range(h):
            for x in range(w):
                ring[head, c, y, x] = frame[c, y, x]
    for i in range(k):
        slot = (head + 1 + i) % k
        for c in range(ch):
            for y in range(h):
                for x in range(w):
                    out[i * ch + c, y, x] = ring[slot, c, y, x]


# ---------------------------------------------------------------------------------------- tables


def _nearest_table(n_src: int, n_dst: int) -> np.ndarray:
    """Source index under each output pixel centre, ``floor((i + 0.5) * n_src / n_dst)``.

    Integer arithmetic, so the table is exact whatever the ratio. Tables are unsigned because
    numba then skips its negative-index check, which makes the gathers ~35% faster.
    """
    i = np.arange(n_dst, dtype=np.int64)
    return np.minimum((2 * i + 1) * n_src // (2 * n_dst), n_src - 1).astype(np.uint32)


def _linear_table(n_src: int, n_dst: int) -> tuple[np.ndarray, np.ndarray]:
    """Left source tap and the Q11 weight of the right tap (``left + 1``), per output index.

    Positions past the edges clamp to the edge pixel, which is what OpenCV's border handling
    amounts to for bilinear resizing. At the last pixel the right tap is one past the end with
    weight 0: the kernel's scratch row has a zero there (rows get their own clamped table).
    """
    pos = (np.arange(n_dst, dtype=np.float64) + 0.5) * (n_src / n_dst) - 0.5
    pos = np.clip(pos, 0.0, n_src - 1)
    left = np.floor(pos)
    weight = np.rint((pos - left) * _LINEAR_ONE).astype(np.int32)
    return left.astype(np.uint32), weight


def _area_table(n_src: int, n_dst: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """First source index, tap count and coverage weights of each output pixel's footprint.

    Output pixel ``i`` covers ``[i * s, (i + 1) * s)`` in source coordinates (``s = n_src /
    n_dst``); each source pixel's weight is its overlap with that interval divided by ``s``, so
    pixels cut by a non-integer boundary count partially. Slivers under 1e-3 of a pixel are
    dropped, as OpenCV does, so that float noise in ``i * s`` does not add a near-zero tap.
    Weights are left-aligned in a ``(n_dst, max taps)`` array, zero-padded.
    """
    scale = n_src / n_dst
    runs: list[list[float]] = []
    start = np.empty(n_dst, dtype=np.uint32)
    for i in range(n_dst):
        lo, hi = i * scale, min((i + 1) * scale, float(n_src))
        first, last = math.ceil(lo), math.floor(hi)
        run = [1.0] * (last - first)
        start[i] = first
        if first - lo > 1e-3:
            run.insert(0, first - lo)
            start[i] = first - 1
        if hi - last > 1e-3:
            run.append(hi - last)
        runs.append([w / sum(run) for w in run])
    count = np.array([len(run) for run in runs], dtype=np.int32)
    weight = np.zeros((n_dst, count.max()), dtype=np.float32)
    for i, run in enumerate(runs):
        weight[i, : len(run)] = run
    return start, count, weight


# ------------------------------------------------------------------------------------ validation


def _check_frame(name: str, arr: Any, shape: tuple[int, ...], what: str, *, out: bool) -> None:
    """Raises a ValueError that says what ``arr`` should have been; cheap when all is well."""
    if (
        isinstance(arr, np.ndarray)
        and arr.dtype == np.uint8
        and arr.shape == shape
        and (not out or arr.flags.writeable)
    ):
        return
    if not isinstance(arr, np.ndarray):
        got = f"a {type(arr).__name__}"
    elif arr.dtype != np.uint8:
        got = f"dtype {arr.dtype}"
    elif arr.shape != shape:
        got = f"shape {arr.shape}"
    else:
        got = "a read-only array"
    fix = "a writable " if out else "a "
    raise ValueError(
        f"{name} must be {fix}uint8 numpy array of shape {shape} ({what}), got {got}; "
        f"allocate it once with np.empty({shape}, dtype=np.uint8) and reuse it."
    )


def _check_hw(name: str, hw: Any) -> tuple[int, int]:
    try:
        h, w = (int(v) for v in hw)
    except (TypeError, ValueError):
        raise OptionError(
            f"{name} must be a (height, width) pair of positive ints, got {hw!r}."
        ) from None
    if h < 1 or w < 1:
        raise OptionError(f"{name} must be a (height, width) pair of positive ints, got {hw!r}.")
    return h, w


# ------------------------------------------------------------------------------------ public API


class Resizer:
    """Resizes uint8 frames of a fixed shape into caller buffers; tables precomputed once.

    Frames are ``(C, H, W)`` channels-first (ViZDoom's ``CRCGCB`` layout) or ``(H, W)``; the
    channel count may differ between calls. The instance keeps one scratch row, so give each
    thread its own ``Resizer`` (kernels release the GIL, so threads do run in parallel).

    Args:
        src_hw: ``(height, width)`` of the input frames, e.g. ``(120, 160)``.
        dst_hw: ``(height, width)`` of the output, e.g. ``(72, 128)``.
        interpolation: One of :data:`INTERPOLATIONS`. ``"area"`` (the default) averages each
            output pixel's footprint, which keeps thin distant sprites visible when shrinking;
            it only shrinks. ``"bilinear"`` and ``"nearest"`` also enlarge.

    Raises:
        ValueError: For an unknown interpolation, non-positive sizes, or ``"area"`` asked to
            enlarge an axis.

    Example:
        >>> resize = Resizer((120, 160), (72, 128), "bilinear")
        >>> out = np.empty((3, 72, 128), dtype=np.uint8)
        >>> resize(np.zeros((3, 120, 160), dtype=np.uint8), out) is out
        True
    """

    src_hw: tuple[int, int]
    dst_hw: tuple[int, int]
    interpolation: str

    def __init__(
        self, src_hw: tuple[int, int], dst_hw: tuple[int, int], interpolation: str = "area"
    ) -> None:
        if interpolation not in INTERPOLATIONS:
            raise OptionError(
                f"Unknown interpolation {interpolation!r}; use one of {', '.join(INTERPOLATIONS)}."
            )
        (sh, sw), (dh, dw) = _check_hw("src_hw", src_hw), _check_hw("dst_hw", dst_hw)
        if interpolation == "area" and (dh > sh or dw > sw):
            raise OptionError(
                f"'area' interpolation only shrinks, but dst_hw {(dh, dw)} is larger than "
                f"src_hw {(sh, sw)} along an axis; use 'bilinear' (or 'nearest') to enlarge."
            )
        self.src_hw, self.dst_hw, self.interpolation = (sh, sw), (dh, dw), interpolation
        if interpolation != "nearest" and (sh, sw) == (2 * dh, 2 * dw):
            self._resize = _resize_half
            self._tables: tuple[np.ndarray, ...] = (np.zeros(sw, dtype=np.uint16),)
        elif interpolation == "nearest":
            self._resize = _resize_nearest
            self._tables = (_nearest_table(sh, dh), _nearest_table(sw, dw))
        elif interpolation == "bilinear":
            y0, wy = _linear_table(sh, dh)
            y1 = np.minimum(y0 + 1, sh - 1).astype(np.uint32)
            self._resize = _resize_bilinear
            tmp = np.zeros((3, sw + 1), dtype=np.int32)
            self._tables = (y0, y1, wy, *_linear_table(sw, dw), tmp)
        else:
            ys, yn, wy = _area_table(sh, dh)
            xs, _, wx = _area_table(sw, dw)
            tmp = np.zeros(sw + wx.shape[1] - 1, dtype=np.float32)
            self._resize = _resize_area
            self._tables = (ys, yn, wy, xs, wx, tmp)
        # Compile (or load from the cache) now rather than inside the first env step.
        self._resize(
            np.zeros((1, sh, sw), np.uint8), np.empty((1, dh, dw), np.uint8), *self._tables
        )

    def __call__(self, src: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Resizes ``src`` into ``out`` and returns ``out``; allocates no buffers.

        Args:
            src: uint8 ``(C, H, W)`` or ``(H, W)`` with ``(H, W) == src_hw``.
            out: uint8 ``(C, h, w)`` or ``(h, w)`` with ``(h, w) == dst_hw``, the same number of
                dimensions (and channels) as ``src``; may be a view into a larger buffer.

        Raises:
            ValueError: If a shape, dtype or writability does not fit.
        """
        if isinstance(src, np.ndarray) and src.ndim == 2:
            _check_frame("src", src, self.src_hw, "(H, W) == src_hw", out=False)
            _check_frame("out", out, self.dst_hw, "(h, w) == dst_hw for a 2-D src", out=True)
            self._resize(src[np.newaxis], out[np.newaxis], *self._tables)
            return out
        channels = src.shape[0] if isinstance(src, np.ndarray) and src.ndim == 3 else 1
        _check_frame("src", src, (channels, *self.src_hw), "(C, H, W) or (H, W)", out=False)
        _check_frame("out", out, (channels, *self.dst_hw), "(C, h, w) like src", out=True)
        self._resize(src, out, *self._tables)
        return out

    def resize_unchecked(self, src: np.ndarray, out: np.ndarray) -> None:
        """Like ``__call__`` for 3-D frames, minus validation (≈15 µs of Python per frame).

        For hot loops whose buffers were validated once with ``__call__`` and never change
        shape, such as :class:`~sf_envs.game.DoomCore` stepping into fixed buffers.
        """
        self._resize(src, out, *self._tables)

    def __repr__(self) -> str:
        return f"Resizer(src_hw={self.src_hw}, dst_hw={self.dst_hw}, {self.interpolation!r})"


def rgb_to_gray(src: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Writes the BT.601 luma of a channels-first RGB frame into ``out`` and returns ``out``.

    ``0.299 R + 0.587 G + 0.114 B`` in 15-bit fixed point with rounding, the arithmetic of
    ``cv2.cvtColor(..., cv2.COLOR_RGB2GRAY)``, so results match OpenCV's (exactly for OpenCV 5;
    other versions' fixed-point rounding may differ by 1).

    Args:
        src: uint8 ``(3, H, W)`` in RGB order (ViZDoom's ``CRCGCB``).
        out: uint8 ``(1, H, W)`` or ``(H, W)``; may be a view into a larger buffer.

    Raises:
        ValueError: If a shape, dtype or writability does not fit.
    """
    if not (isinstance(src, np.ndarray) and src.ndim == 3):
        got = f"shape {src.shape}" if isinstance(src, np.ndarray) else f"a {type(src).__name__}"
        raise ValueError(
            f"src must be a channels-first RGB uint8 array (3, H, W), got {got}; "
            "ViZDoom's CRCGCB screen buffer has this layout."
        )
    hw = src.shape[1:]
    _check_frame("src", src, (3, *hw), "channels-first RGB, (3, H, W)", out=False)
    if isinstance(out, np.ndarray) and out.ndim == 3:
        _check_frame("out", out, (1, *hw), "(1, H, W) or (H, W) like src", out=True)
        out2d = out[0]
    else:
        _check_frame("out", out, hw, "(1, H, W) or (H, W) like src", out=True)
        out2d = out
    _rgb_to_gray(src, out2d)
    return out


def rgb_to_gray_unchecked(src: np.ndarray, out: np.ndarray) -> None:
    """Like :func:`rgb_to_gray` for an ``out`` of shape ``(1, H, W)``, minus validation.

    For hot loops whose buffers were validated once with :func:`rgb_to_gray` and never change,
    such as :class:`~sf_envs.game.FramePipeline` (the trainer's default observations are gray).
    """
    _rgb_to_gray(src, out[0])


class FrameStack:
    """Ring buffer of the last ``k`` frames; writes the stacked observation (oldest first).

    Each call stores the frame once and writes all ``k`` slots into ``out``, so ``out`` can be a
    different buffer every step (a shared-memory slot) without the stack reading it back.

    Args:
        k: Number of frames stacked; 1 makes :meth:`push` a plain copy.
        frame_shape: ``(C, h, w)`` of each frame; observations are ``(k * C, h, w)``.

    Raises:
        ValueError: If ``k < 1`` or ``frame_shape`` is not three positive ints.

    Example:
        >>> stack = FrameStack(2, (1, 2, 2))
        >>> out = np.empty((2, 2, 2), dtype=np.uint8)
        >>> _ = stack.reset(np.zeros((1, 2, 2), np.uint8), out)
        >>> stack.push(np.ones((1, 2, 2), np.uint8), out)[:, 0, 0].tolist()
        [0, 1]
    """

    k: int
    frame_shape: tuple[int, int, int]
    obs_shape: tuple[int, int, int]

    def __init__(self, k: int, frame_shape: tuple[int, int, int]) -> None:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be an int >= 1 (1 disables stacking), got {k!r}.")
        try:
            c, h, w = (int(v) for v in frame_shape)
        except (TypeError, ValueError):
            c = h = w = 0
        if min(c, h, w) < 1:
            raise ValueError(
                f"frame_shape must be (C, h, w) of positive ints, got {frame_shape!r}; "
                "pass a 2-D frame's shape as (1, h, w)."
            )
        self.k, self.frame_shape, self.obs_shape = int(k), (c, h, w), (int(k) * c, h, w)
        self._ring = np.zeros((self.k, c, h, w), dtype=np.uint8)
        self._head = 0  # slot of the oldest frame, overwritten by the next push
        if self.k > 1:
            # Compile (or load from the cache) now rather than inside the first env step.
            _stack_write(self._ring, 0, self._ring[0], np.empty(self.obs_shape, np.uint8))

    def reset(self, frame: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Fills all ``k`` slots with ``frame`` (a new episode), writes ``out`` and returns it."""
        self._check(frame, out)
        if self.k > 1:
            self._ring[:] = frame
        return self._write(frame, out)

    def push(self, frame: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Adds ``frame`` as the newest, drops the oldest, writes ``out`` and returns it."""
        self._check(frame, out)
        return self._write(frame, out)

    def _check(self, frame: np.ndarray, out: np.ndarray) -> None:
        _check_frame("frame", frame, self.frame_shape, "frame_shape", out=False)
        _check_frame("out", out, self.obs_shape, "(k * C, h, w)", out=True)

    def _write(self, frame: np.ndarray, out: np.ndarray) -> np.ndarray:
        if self.k == 1:
            np.copyto(out, frame)
        else:
            _stack_write(self._ring, self._head, frame, out)
            self._head = (self._head + 1) % self.k
        return out

    def __repr__(self) -> str:
        return f"FrameStack(k={self.k}, frame_shape={self.frame_shape})"
