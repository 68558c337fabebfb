"""The raw limit of Doom basic's env frames/s: bare ``vizdoom.DoomGame`` s in parallel processes,
no env, no vector engine (render 160x120, frame skip 4, random actions)."""

from __future__ import annotations

import multiprocessing as mp
import os
import tempfile
import time

import numpy as np

FRAME_SKIP = 4


def _raw_worker(seconds: float, games: int, cpu: int | None, out: mp.Queue) -> None:
    import vizdoom

    if cpu is not None:  # before init: the engines inherit the affinity
        os.sched_setaffinity(0, {cpu})
    os.chdir(tempfile.mkdtemp(prefix="vzd_raw_"))
    pool = []
    for _ in range(games):
        game = vizdoom.DoomGame()
        game.load_config(os.path.join(vizdoom.scenarios_path, "basic.cfg"))
        game.set_window_visible(False)
        game.set_screen_resolution(vizdoom.ScreenResolution.RES_160X120)
        game.set_screen_format(vizdoom.ScreenFormat.CRCGCB)
        game.init()
        pool.append(game)
    rng = np.random.default_rng()
    actions = [[float(b) for b in row] for row in np.eye(3, dtype=bool)]
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        game = pool[steps % games]
        if game.is_episode_finished():
            game.new_episode()
        game.make_action(actions[rng.integers(3)], FRAME_SKIP)
        if not game.is_episode_finished():
            game.get_state()
        steps += 1
    out.put(steps * FRAME_SKIP / (time.perf_counter() - start))
    for game in pool:
        game.close()


def bench_raw(workers: int, seconds: float, games_per_worker: int = 1, pin: bool = True) -> float:
    """Summed env frames/s of ``workers`` processes stepping ``games_per_worker`` bare games each.

    With ``pin``, process i and its engines run on the i-th allowed CPU, as the sf workers do:
    a bare game is fastest so (its engine round trips never cross CPUs), and a limit has to be
    the best the bare engine can do, not a handicapped one.
    """
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    cpus = sorted(os.sched_getaffinity(0))
    procs = [
        ctx.Process(
            target=_raw_worker,
            args=(seconds, games_per_worker, cpus[i % len(cpus)] if pin else None, out),
        )
        for i in range(workers)
    ]
    for p in procs:
        p.start()
    total = sum(out.get(timeout=seconds + 120) for _ in procs)
    for p in procs:
        p.join(timeout=30)
    return total
