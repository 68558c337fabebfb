"""Preprocessing kernels against plain references and OpenCV.

Tolerances (max abs difference, uint8 levels):
- nearest: exact vs a numpy index reference; exact vs ``cv2.INTER_NEAREST_EXACT`` where no output
  centre falls exactly on a source pixel edge (OpenCV's 16-bit fixed point then rounds down), and
  vs ``cv2.INTER_NEAREST`` for integer upscales, where both conventions pick the same pixels.
- bilinear: <= 1 vs ``cv2.INTER_LINEAR`` (both Q11 weights; OpenCV truncates in its SIMD pass).
- area: <= 1 vs ``cv2.INTER_AREA``, and within 0.5 (+ float32 noise) of the exact footprint mean.
- rgb_to_gray: <= 1 vs ``cv2.cvtColor(RGB2GRAY)`` (bit-exact with OpenCV 5).
"""

from __future__ import annotations

import logging
import math
import os
import subprocess
import sys
import textwrap
import tracemalloc

import cv2
import numpy as np
import pytest

from sf_envs.kernel import numba_kernel
from sf_envs.preprocess import (
    INTERPOLATIONS,
    FrameStack,
    Resizer,
    rgb_to_gray,
    rgb_to_gray_unchecked,
)

CV2_FLAGS = {"bilinear": cv2.INTER_LINEAR, "area": cv2.INTER_AREA}
TOLERANCE = {"bilinear": 1, "area": 1}
# (src_hw, dst_hw): ViZDoom renders to the usual observation sizes, non-integer scales included.
DOWNSCALES = [
    ((120, 160), (72, 128)),
    ((240, 320), (72, 128)),
    ((120, 160), (84, 84)),
    ((480, 640), (36, 64)),
    ((120, 160), (60, 80)),  # exact halving: the fast path
    ((240, 320), (60, 80)),  # integer factor 4
    ((7, 13), (3, 5)),
    ((5, 5), (1, 1)),
]
UPSCALES = [((36, 64), (72, 128)), ((5, 7), (12, 9)), ((1, 1), (3, 4))]


def random_frame(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


def doom_like_frame(h: int, w: int) -> np.ndarray:
    """Smooth sky and floor gradients, flat walls with hard edges, a thin sprite and noise."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    frame = np.empty((3, h, w))
    frame[0] = np.where(y < h / 2, 60 + 80 * y / h, 90 + 120 * (y / h - 0.5))
    frame[1] = np.where(y < h / 2, 90 + 60 * y / h, 70 + 60 * (y / h - 0.5))
    frame[2] = np.where(y < h / 2, 200 - 100 * y / h, 50)
    walls = (np.abs(x - w / 3) < w / 8) & (np.abs(y - h / 2) < h / 4)
    frame[:, walls] = [[150], [40], [30]]
    frame[:, :, int(0.7 * w)] = 255  # a one-pixel-wide sprite, easy to alias away
    frame += np.random.default_rng(1).normal(0, 6, frame.shape)
    return np.clip(np.rint(frame), 0, 255).astype(np.uint8)


def cv2_resize(src: np.ndarray, dst_hw: tuple[int, int], flag: int) -> np.ndarray:
    """cv2 on the channels-last copy of a (C, H, W) frame, returned channels-first."""
    hwc = np.ascontiguousarray(src.transpose(1, 2, 0))
    out = cv2.resize(hwc, (dst_hw[1], dst_hw[0]), interpolation=flag)
    return out.reshape(*dst_hw, src.shape[0]).transpose(2, 0, 1)


def nearest_reference(src: np.ndarray, dst_hw: tuple[int, int]) -> np.ndarray:
    """The source pixel containing each output pixel's centre."""
    rows = np.floor((np.arange(dst_hw[0]) + 0.5) * src.shape[-2] / dst_hw[0]).astype(int)
    cols = np.floor((np.arange(dst_hw[1]) + 0.5) * src.shape[-1] / dst_hw[1]).astype(int)
    return src[..., rows[:, None], cols[None, :]]


def area_reference(src: np.ndarray, dst_hw: tuple[int, int]) -> np.ndarray:
    """Exact footprint means: repeat pixels onto a common grid, then average whole blocks."""
    (sh, sw), (dh, dw) = src.shape[-2:], dst_hw
    ly, lx = math.lcm(sh, dh), math.lcm(sw, dw)
    fine = np.repeat(np.repeat(src.astype(np.float64), ly // sh, -2), lx // sw, -1)
    blocks = fine.reshape(*src.shape[:-2], dh, ly // dh, dw, lx // dw)
    return blocks.mean(axis=(-3, -1))


def resize(src: np.ndarray, dst_hw: tuple[int, int], interpolation: str) -> np.ndarray:
    out = np.empty((*src.shape[:-2], *dst_hw), dtype=np.uint8)
    assert Resizer(src.shape[-2:], dst_hw, interpolation)(src, out) is out
    return out


def max_diff(a: np.ndarray, b: np.ndarray) -> int:
    return int(np.abs(a.astype(np.int64) - b).max())


# ------------------------------------------------------------------------------------ resizing


@pytest.mark.parametrize(("src_hw", "dst_hw"), DOWNSCALES + UPSCALES)
def test_nearest_matches_index_reference(src_hw, dst_hw):
    src = random_frame((3, *src_hw))
    np.testing.assert_array_equal(resize(src, dst_hw, "nearest"), nearest_reference(src, dst_hw))
    np.testing.assert_array_equal(
        resize(src[1], dst_hw, "nearest"), nearest_reference(src[1], dst_hw)
    )


@pytest.mark.parametrize(
    ("src_hw", "dst_hw"), [((120, 160), (72, 128)), ((120, 160), (60, 80)), ((36, 64), (72, 128))]
)
def test_nearest_matches_cv2_exact(src_hw, dst_hw):
    src = random_frame((3, *src_hw))
    expected = cv2_resize(src, dst_hw, cv2.INTER_NEAREST_EXACT)
    np.testing.assert_array_equal(resize(src, dst_hw, "nearest"), expected)


@pytest.mark.parametrize(("src_hw", "dst_hw"), [((36, 64), (72, 128)), ((5, 7), (15, 28))])
def test_nearest_matches_cv2_nearest_on_integer_upscales(src_hw, dst_hw):
    src = random_frame((3, *src_hw))
    expected = cv2_resize(src, dst_hw, cv2.INTER_NEAREST)
    np.testing.assert_array_equal(resize(src, dst_hw, "nearest"), expected)


@pytest.mark.parametrize("interpolation", ["bilinear", "area"])
@pytest.mark.parametrize(("src_hw", "dst_hw"), DOWNSCALES)
def test_downscale_matches_cv2(interpolation, src_hw, dst_hw):
    flag, tol = CV2_FLAGS[interpolation], TOLERANCE[interpolation]
    for src in (random_frame((3, *src_hw)), doom_like_frame(*src_hw)):
        assert max_diff(resize(src, dst_hw, interpolation), cv2_resize(src, dst_hw, flag)) <= tol
        gray = np.ascontiguousarray(src[0])
        expected = cv2.resize(gray, dst_hw[::-1], interpolation=flag)
        assert max_diff(resize(gray, dst_hw, interpolation), expected) <= tol


@pytest.mark.parametrize(("src_hw", "dst_hw"), UPSCALES)
def test_bilinear_upscale_matches_cv2(src_hw, dst_hw):
    src = random_frame((3, *src_hw))
    assert max_diff(resize(src, dst_hw, "bilinear"), cv2_resize(src, dst_hw, cv2.INTER_LINEAR)) <= 1


@pytest.mark.parametrize(("src_hw", "dst_hw"), DOWNSCALES)
def test_area_is_the_rounded_footprint_mean(src_hw, dst_hw):
    src = doom_like_frame(*src_hw)
    error = np.abs(resize(src, dst_hw, "area") - area_reference(src, dst_hw))
    assert error.max() <= 0.5 + 1e-3


def test_halving_agrees_between_area_and_bilinear():
    src = random_frame((3, 480, 640))
    area = resize(src, (240, 320), "area")
    np.testing.assert_array_equal(area, resize(src, (240, 320), "bilinear"))
    np.testing.assert_array_equal(area, cv2_resize(src, (240, 320), cv2.INTER_AREA))


def test_one_channel_and_identity():
    src = random_frame((1, 72, 128))
    for interpolation in INTERPOLATIONS:
        np.testing.assert_array_equal(resize(src, (72, 128), interpolation), src)


# ------------------------------------------------------------------------------------ grayscale


@pytest.mark.parametrize("hw", [(72, 128), (120, 160), (1, 1)])
def test_rgb_to_gray_matches_cv2(hw):
    src = random_frame((3, *hw))
    expected = cv2.cvtColor(np.ascontiguousarray(src.transpose(1, 2, 0)), cv2.COLOR_RGB2GRAY)
    out3 = np.empty((1, *hw), dtype=np.uint8)
    assert rgb_to_gray(src, out3) is out3
    assert max_diff(out3[0], expected) <= 1
    out2 = np.empty(hw, dtype=np.uint8)
    assert rgb_to_gray(src, out2) is out2
    np.testing.assert_array_equal(out2, out3[0])
    unchecked = np.empty((1, *hw), dtype=np.uint8)
    rgb_to_gray_unchecked(src, unchecked)  # the env's step path
    np.testing.assert_array_equal(unchecked, out3)


def test_rgb_to_gray_is_bt601():
    src = np.array([255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255], np.uint8).reshape(4, 3).T
    out = rgb_to_gray(np.ascontiguousarray(src).reshape(3, 1, 4), np.empty((1, 4), np.uint8))
    assert out.tolist() == [[76, 150, 29, 255]]  # round(255 * (0.299, 0.587, 0.114, 1))


# --------------------------------------------------------------------------------- frame stack


def frames(n: int, shape=(2, 3, 4)) -> list[np.ndarray]:
    return [np.full(shape, i, dtype=np.uint8) for i in range(n)]


def test_frame_stack_is_oldest_first():
    stack, fs = FrameStack(3, (2, 3, 4)), frames(10)
    out = np.empty((6, 3, 4), dtype=np.uint8)
    assert stack.reset(fs[0], out) is out
    assert out[:, 0, 0].tolist() == [0] * 6
    for t in range(1, 8):
        assert stack.push(fs[t], out) is out
        expected = [max(t - 2, 0), max(t - 1, 0), t]
        assert out[::2, 0, 0].tolist() == expected
        np.testing.assert_array_equal(out.reshape(3, 2, 3, 4), [fs[i] for i in expected])
    stack.reset(fs[9], out)
    assert out[:, 0, 0].tolist() == [9] * 6
    stack.push(fs[1], out)
    assert out[::2, 0, 0].tolist() == [9, 9, 1]


def test_frame_stack_of_one_is_a_copy():
    stack, frame = FrameStack(1, (3, 4, 5)), random_frame((3, 4, 5))
    out = np.empty((3, 4, 5), dtype=np.uint8)
    np.testing.assert_array_equal(stack.reset(frame, out), frame)
    np.testing.assert_array_equal(stack.push(frame[::-1].copy(), out), frame[::-1])


def test_frame_stack_writes_a_fresh_buffer_every_step():
    """Each step may hand a different (shared-memory) slot; the stack must not read `out`."""
    stack, fs = FrameStack(4, (1, 2, 2)), frames(6, (1, 2, 2))
    slots = np.full((3, 4, 2, 2), 77, dtype=np.uint8)
    stack.reset(fs[0], slots[0])
    for t in range(1, 6):
        out = slots[t % 3]
        stack.push(fs[t], out)
        assert out[:, 0, 0].tolist() == [max(t - i, 0) for i in (3, 2, 1, 0)]


# ------------------------------------------------------------------------ buffers & allocation


def test_kernels_write_into_views_of_a_bigger_buffer():
    src = doom_like_frame(120, 160)
    big = np.zeros((4, 3, 72, 128), dtype=np.uint8)
    Resizer((120, 160), (72, 128))(src, big[2])
    np.testing.assert_array_equal(big[2], resize(src, (72, 128), "area"))
    assert not big[[0, 1, 3]].any()
    gray = np.zeros((2, 1, 72, 128), dtype=np.uint8)
    rgb_to_gray(big[2], gray[1])
    assert gray[1].any() and not gray[0].any()
    stacked = np.zeros((2, 12, 72, 128), dtype=np.uint8)
    FrameStack(4, (3, 72, 128)).reset(big[2], stacked[1])
    np.testing.assert_array_equal(stacked[1], np.concatenate([big[2]] * 4))
    assert not stacked[0].any()
    # Shared memory arrives as a non-owning array over a foreign buffer.
    shared = np.frombuffer(bytearray(2 * 3 * 72 * 128), dtype=np.uint8).reshape(2, 3, 72, 128)
    Resizer((120, 160), (72, 128), "bilinear")(src, shared[1])
    np.testing.assert_array_equal(shared[1], resize(src, (72, 128), "bilinear"))


def test_no_allocation_per_call():
    src, rgb = random_frame((3, 120, 160)), np.empty((3, 72, 128), dtype=np.uint8)
    gray, obs = np.empty((1, 72, 128), dtype=np.uint8), np.empty((4, 72, 128), dtype=np.uint8)
    resizers = [Resizer((120, 160), (72, 128), i) for i in INTERPOLATIONS]
    stack = FrameStack(4, (1, 72, 128))
    stack.reset(rgb_to_gray(resizers[0](src, rgb), gray), obs)

    def step() -> None:
        for resizer in resizers:
            assert resizer(src, rgb) is rgb
        assert rgb_to_gray(rgb, gray) is gray
        assert stack.push(gray, obs) is obs

    step()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(1000):
            step()
        growth = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert growth < 4096  # one frame alone is 27 kB


# ---------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (((120, 160), (72, 128), "cubic"), "Unknown interpolation 'cubic'; use one of nearest"),
        (((120, 160), (0, 128), "area"), "dst_hw must be a .* positive ints"),
        (((-1, 160), (72, 128), "nearest"), "src_hw must be a .* positive ints"),
        (((120,), (72, 128), "nearest"), "src_hw must be a"),
        ((None, (72, 128), "nearest"), "src_hw must be a"),
        (((120, 160), (240, 128), "area"), "only shrinks.*use 'bilinear'"),
    ],
)
def test_resizer_rejects_bad_configuration(args, match):
    with pytest.raises(ValueError, match=match):
        Resizer(*args)


def test_resizer_rejects_bad_frames():
    resizer = Resizer((120, 160), (72, 128))
    src, out = random_frame((3, 120, 160)), np.empty((3, 72, 128), dtype=np.uint8)
    readonly = out.copy()
    readonly.flags.writeable = False
    cases = [
        (src.astype(np.float32), out, "src must be a uint8 .* got dtype float32"),
        (src[:, :100], out, r"src must be .* shape \(3, 120, 160\).* got shape \(3, 100, 160\)"),
        (src[None], out, r"src must be .* got shape \(1, 3, 120, 160\)"),
        (src.tolist(), out, "src must be .* got a list"),
        (src, out[:1], r"out must be .* shape \(3, 72, 128\).*np.empty"),
        (src, out.astype(np.int16), "out must be .* got dtype int16"),
        (src, readonly, "out must be a writable .* got a read-only array"),
        (src[0], out, r"out must be .* \(72, 128\)"),
    ]
    for bad_src, bad_out, match in cases:
        with pytest.raises(ValueError, match=match):
            resizer(bad_src, bad_out)


def test_rgb_to_gray_rejects_bad_frames():
    src = random_frame((3, 8, 8))
    with pytest.raises(ValueError, match=r"channels-first RGB .* got shape \(8, 8\)"):
        rgb_to_gray(src[0], np.empty((8, 8), np.uint8))
    with pytest.raises(ValueError, match=r"src must be .* \(3, 8, 8\).* got shape \(4, 8, 8\)"):
        rgb_to_gray(random_frame((4, 8, 8)), np.empty((8, 8), np.uint8))
    with pytest.raises(ValueError, match=r"out must be .* \(1, 8, 8\)"):
        rgb_to_gray(src, np.empty((3, 8, 8), np.uint8))
    with pytest.raises(ValueError, match=r"out must be .* \(8, 8\).* got shape \(8, 7\)"):
        rgb_to_gray(src, np.empty((8, 7), np.uint8))


def test_frame_stack_rejects_bad_input():
    for k in (0, -1, 2.0, True, None):
        with pytest.raises(ValueError, match="k must be an int >= 1"):
            FrameStack(k, (1, 2, 2))
    for shape in ((2, 2), (0, 2, 2), None):
        with pytest.raises(ValueError, match=r"frame_shape must be \(C, h, w\).*\(1, h, w\)"):
            FrameStack(2, shape)
    stack = FrameStack(2, (1, 2, 2))
    frame, out = np.zeros((1, 2, 2), np.uint8), np.empty((2, 2, 2), np.uint8)
    with pytest.raises(
        ValueError, match=r"frame must be .* shape \(1, 2, 2\).* got shape \(2, 2\)"
    ):
        stack.push(frame[0], out)
    with pytest.raises(
        ValueError, match=r"out must be .* shape \(2, 2, 2\).* got shape \(1, 2, 2\)"
    ):
        stack.reset(frame, out[:1])


# ----------------------------------------------------------------------------------- caching


def test_kernel_falls_back_when_numba_cannot_cache(caplog):
    """No writable cache location (here: no source file at all) must not break the import."""
    namespace: dict = {}
    exec(compile("def double(x):\n    return 2 * x\n", "<no file>", "exec"), namespace)
    with caplog.at_level(logging.WARNING, logger="sf_envs.kernel"):
        double = numba_kernel(namespace["double"])
    assert double(21) == 42
    assert "NUMBA_CACHE_DIR" in caplog.text


@pytest.mark.slow
def test_concurrent_workers_share_one_cache_dir(tmp_path):
    """Workers starting together compile into the same NUMBA_CACHE_DIR without breaking."""
    script = textwrap.dedent(
        """
        import numpy as np
        from sf_envs.preprocess import FrameStack, Resizer, rgb_to_gray
        src = np.arange(3 * 120 * 160, dtype=np.uint64).astype(np.uint8).reshape(3, 120, 160)
        rgb, gray = np.empty((3, 72, 128), np.uint8), np.empty((1, 72, 128), np.uint8)
        obs = np.empty((4, 72, 128), np.uint8)
        FrameStack(4, (1, 72, 128)).reset(rgb_to_gray(Resizer((120, 160), (72, 128))(src, rgb), gray), obs)
        print(int(obs.astype(np.int64).sum()))
        """
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    for _ in range(2):  # the first round compiles concurrently, the second loads the cache
        procs = [
            subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE)
            for _ in range(3)
        ]
        results = {p.communicate(timeout=120)[0] for p in procs}
        assert [p.returncode for p in procs] == [0, 0, 0]
        assert len(results) == 1
    assert list((tmp_path / "numba").rglob("*.nbi"))


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
def test_resize_unchecked_matches_the_checked_call(interpolation: str) -> None:
    src = np.random.default_rng(7).integers(0, 256, (3, 120, 160), dtype=np.uint8)
    resize = Resizer((120, 160), (72, 128), interpolation)
    checked = resize(src, np.empty((3, 72, 128), np.uint8))
    unchecked = np.empty((3, 72, 128), np.uint8)
    resize.resize_unchecked(src, unchecked)
    np.testing.assert_array_equal(checked, unchecked)
