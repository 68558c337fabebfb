"""Per-frame cost of sf_envs' numba preprocessing against OpenCV and plain numpy.

Every env worker preprocesses each frame on its own core, so the number that matters is the
single-core time for one small frame. OpenCV may split work across threads, so it is measured
twice: with its default thread pool and with ``cv2.setNumThreads(1)`` (the fair comparison).
OpenCV gets the channels-last (HWC) frame it is built for; sf_envs reads ViZDoom's channels-first
``CRCGCB`` buffer directly. numba times go through the public API (argument checks included).

On a shared machine the load changes while the benchmark runs, so the candidates of one row are
timed in interleaved rounds (each sees the same conditions) and each keeps its median round.

Run in an environment with opencv-python-headless (the hatch-test env has it)::

    python benchmarks/preprocess.py [--rounds 9] [--min-time 0.03]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
from rich.console import Console
from rich.table import Table

from sf_envs.preprocess import FrameStack, Resizer, rgb_to_gray

try:
    import cv2
except ImportError:  # a benchmark-only dependency, not one of sf-envs'
    raise SystemExit(
        "benchmarks/preprocess.py compares against OpenCV: pip install opencv-python-headless"
    ) from None

__all__ = ["gray_case", "interleaved_us", "main", "resize_case", "stack_case"]

CV2_FLAGS = {
    "nearest": cv2.INTER_NEAREST_EXACT,  # the same pixel-centre convention as sf_envs
    "bilinear": cv2.INTER_LINEAR,
    "area": cv2.INTER_AREA,
}
RESIZES = [
    ((120, 160), (72, 128), "nearest"),
    ((120, 160), (72, 128), "bilinear"),
    ((120, 160), (72, 128), "area"),
    ((240, 320), (72, 128), "nearest"),
    ((240, 320), (72, 128), "bilinear"),
    ((240, 320), (72, 128), "area"),
    ((120, 160), (84, 84), "area"),
    ((120, 160), (36, 64), "area"),
    ((480, 640), (72, 128), "area"),
    ((120, 160), (60, 80), "area"),
]
COLUMNS = ("numba", "cv2 1 thread", "cv2 default", "numpy")

#: What a case times: column name -> the call to time (absent columns have no counterpart).
Case = dict[str, Callable[[], object]]


def interleaved_us(case: Case, rounds: int, min_time: float) -> dict[str, float]:
    """Median microseconds per call of each candidate, timed in alternating rounds.

    Repetitions are calibrated once per candidate so that a round lasts about ``min_time``
    (timer overhead and clock granularity vanish); "cv2 1 thread" runs with
    ``cv2.setNumThreads(1)`` set around its whole round.
    """
    default_threads = cv2.getNumThreads()

    def run(name: str, reps: int) -> float:
        fn = case[name]
        cv2.setNumThreads(1 if name == "cv2 1 thread" else default_threads)
        try:
            start = time.perf_counter()
            for _ in range(reps):
                fn()
            return time.perf_counter() - start
        finally:
            cv2.setNumThreads(default_threads)

    reps = {}
    for name in case:
        run(name, 1)  # warm-up: compilation or cache loading, cold CPU caches
        n, elapsed = 1, run(name, 1)
        while elapsed < min_time / 4:
            n *= 2
            elapsed = run(name, n)
        reps[name] = max(1, int(n * min_time / elapsed))
    samples: dict[str, list[float]] = {name: [] for name in case}
    for _ in range(rounds):
        for name in case:
            samples[name].append(run(name, reps[name]) / reps[name])
    return {name: statistics.median(times) * 1e6 for name, times in samples.items()}


def resize_case(src_hw: tuple[int, int], dst_hw: tuple[int, int], interpolation: str) -> Case:
    """One resize of a random RGB frame: sf_envs on CHW, cv2 on HWC, numpy for nearest."""
    src = np.random.default_rng(0).integers(0, 256, (3, *src_hw), dtype=np.uint8)
    hwc = np.ascontiguousarray(src.transpose(1, 2, 0))
    out, out_hwc = np.empty((3, *dst_hw), np.uint8), np.empty((*dst_hw, 3), np.uint8)
    resize = Resizer(src_hw, dst_hw, interpolation)
    size, flag = (dst_hw[1], dst_hw[0]), CV2_FLAGS[interpolation]

    def cv2_resize() -> None:
        cv2.resize(hwc, size, dst=out_hwc, interpolation=flag)

    case = {
        "numba": lambda: resize(src, out),
        "cv2 1 thread": cv2_resize,
        "cv2 default": cv2_resize,
    }
    if interpolation == "nearest":
        # Plain numpy's best: one gather with precomputed flat indices, straight into `out`.
        rows = (2 * np.arange(dst_hw[0]) + 1) * src_hw[0] // (2 * dst_hw[0])
        cols = (2 * np.arange(dst_hw[1]) + 1) * src_hw[1] // (2 * dst_hw[1])
        flat = (rows[:, None] * src_hw[1] + cols).ravel()
        src2d, out2d = src.reshape(3, -1), out.reshape(3, -1)
        case["numpy"] = lambda: np.take(src2d, flat, 1, out2d)
    return case


def gray_case() -> Case:
    """RGB -> gray of one observation-sized frame."""
    rgb = np.random.default_rng(0).integers(0, 256, (3, 72, 128), dtype=np.uint8)
    rgb_hwc = np.ascontiguousarray(rgb.transpose(1, 2, 0))
    gray, gray_hwc = np.empty((1, 72, 128), np.uint8), np.empty((72, 128), np.uint8)
    acc, term = np.empty((72, 128), np.uint32), np.empty((72, 128), np.uint32)
    r, g, b, half = (np.uint32(v) for v in (9798, 19235, 3735, 1 << 14))

    def cv2_gray() -> None:
        cv2.cvtColor(rgb_hwc, cv2.COLOR_RGB2GRAY, dst=gray_hwc)

    def numpy_gray() -> None:
        # The same Q15 integer maths, allocation-free through out= buffers.
        np.multiply(rgb[0], r, out=acc)
        np.add(acc, np.multiply(rgb[1], g, out=term), out=acc)
        np.add(acc, np.multiply(rgb[2], b, out=term), out=acc)
        np.add(acc, half, out=acc)
        np.right_shift(acc, 15, out=gray[0], casting="unsafe")

    return {
        "numba": lambda: rgb_to_gray(rgb, gray),
        "cv2 1 thread": cv2_gray,
        "cv2 default": cv2_gray,
        "numpy": numpy_gray,
    }


def stack_case(k: int = 4) -> Case:
    """One push into a k-frame stack (OpenCV has no counterpart)."""
    frame = np.random.default_rng(0).integers(0, 256, (3, 72, 128), dtype=np.uint8)
    stack, obs = FrameStack(k, frame.shape), np.empty((k * 3, 72, 128), np.uint8)
    stack.reset(frame, obs)
    ring, head = np.zeros((k, *frame.shape), np.uint8), [0]

    def numpy_stack() -> None:
        # The same ring buffer with numpy copies: one into the ring, k into `obs`.
        ring[head[0]] = frame
        head[0] = (head[0] + 1) % k
        for i in range(k):
            obs[3 * i : 3 * i + 3] = ring[(head[0] + i) % k]

    return {"numba": lambda: stack.push(frame, obs), "numpy": numpy_stack}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds; the median is kept")
    parser.add_argument("--min-time", type=float, default=0.03, help="seconds per round")
    args = parser.parse_args(argv)

    cases = {
        f"{s[1]}x{s[0]}→{d[1]}x{d[0]} {interp}": resize_case(s, d, interp)
        for s, d, interp in RESIZES
    }
    cases["gray 128x72"] = gray_case()
    cases["stack k=4 3x72x128"] = stack_case()

    table = Table(title=f"µs per frame, median of {args.rounds} interleaved rounds")
    table.add_column("operation")
    for name in (*COLUMNS, "cv2 1t/numba", "cv2 def/numba"):
        table.add_column(name, justify="right")
    for what, case in cases.items():
        us = interleaved_us(case, args.rounds, args.min_time)
        cells = [f"{us[name]:.1f}" if name in us else "—" for name in COLUMNS]
        for name in ("cv2 1 thread", "cv2 default"):
            cells.append(f"{us[name] / us['numba']:.2f}x" if name in us else "—")
        table.add_row(what, *cells)
    console = Console(width=max(Console().width, 110))
    console.print(table)
    console.print(
        f"cv2 {cv2.__version__} (default threads: {cv2.getNumThreads()}) on HWC frames; numba "
        "on ViZDoom's CHW frames. RGB frames throughout. Ratios > 1: numba is faster."
    )


if __name__ == "__main__":
    main()
