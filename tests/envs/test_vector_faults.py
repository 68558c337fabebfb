"""Fault tolerance of the vector engine: killed and hung workers, repeated failure, cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass

import numpy as np
import pytest

from sf_envs.lifecycle import find_processes
from sf_envs.vector import DoomAsyncVectorEnv, DoomVectorEnv, VectorEnvError
from sf_envs.vector import engine as engine_module
from sf_envs.vector.buffers import SHM_PREFIX
from sf_envs.vector.units import DoomUnit, DoomUnitFactory

FAST = {"obs_size": (64, 36), "frame_skip": 4}


class _HangOnce(DoomUnit):
    """Sleeps forever on its 3rd step unless ``marker`` exists (it creates it first)."""

    def __init__(self, core, marker: str) -> None:
        super().__init__(core)
        self.marker, self.steps = marker, 0

    def step(self, actions, out):
        self.steps += 1
        if self.steps == 3 and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            time.sleep(3600)
        return super().step(actions, out)


class _Broken(DoomUnit):
    def step(self, actions, out):
        raise RuntimeError("boom: this unit always fails")


class _DiesTalking(DoomUnit):
    """Prints to its stdout, as a dying engine does, then exits the worker."""

    def step(self, actions, out):
        os.write(1, b"engine console: fatal error in the map\n")
        os._exit(3)


@dataclass(frozen=True)
class DiesTalkingFactory(DoomUnitFactory):
    def __call__(self, unit_index, workdir):
        return _DiesTalking(super().__call__(unit_index, workdir).core)


@dataclass(frozen=True)
class HangOnceFactory(DoomUnitFactory):
    marker: str = ""

    def __call__(self, unit_index, workdir):
        unit = super().__call__(unit_index, workdir)
        return _HangOnce(unit.core, self.marker) if unit_index == 0 else unit


@dataclass(frozen=True)
class BrokenFactory(DoomUnitFactory):
    def __call__(self, unit_index, workdir):
        return _Broken(super().__call__(unit_index, workdir).core)


def _shm_exists(env) -> bool:
    # Only this env's own segment: other processes on the machine may hold sf_vec_ segments.
    name = env._core.engine.buffers.name
    assert name.startswith(SHM_PREFIX)
    return os.path.exists(f"/dev/shm/{name}")


def _assert_gone(pids: list[int]) -> None:
    for pid in pids:
        assert find_processes(group=pid) == [], (
            f"process group {pid} (worker + engines) still alive"
        )


def test_killed_worker_is_restarted_and_reported():
    env = DoomVectorEnv("basic", num_envs=4, num_workers=2, **FAST)
    try:
        env.reset(seed=0)
        for _ in range(3):
            env.step(np.zeros(4, np.int64))
        victim = env.worker_pids[0]
        os.kill(victim, signal.SIGKILL)
        _, _, terminated, truncated, info = env.step(np.zeros(4, np.int64))
        lost = info["worker_restarted"]
        assert lost.sum() == 2 and (truncated[lost]).all() and not terminated[lost].any()
        assert info["_worker_restarted"].sum() == 2 and info["_episode_summary"][lost].all()
        assert victim not in env.worker_pids
        _assert_gone([victim])  # its orphaned engines were killed too
        for _ in range(5):  # the run goes on
            _obs, _reward, terminated, truncated, info = env.step(np.ones(4, np.int64))
        assert "worker_restarted" not in info
        assert env._core.engine.restarts == 1
        pids = env.worker_pids
    finally:
        env.close()
    _assert_gone(pids)
    assert not _shm_exists(env)


def test_hung_worker_times_out_and_restarts(tmp_path):
    factory = HangOnceFactory(
        "basic", DoomUnitFactory("basic", _options()).options, marker=str(tmp_path / "hung")
    )
    env = DoomVectorEnv(
        "basic", num_envs=2, num_workers=2, factory=factory, step_timeout_s=3.0, **FAST
    )
    try:
        env.reset(seed=0)
        truncated = np.zeros(2, bool)
        for _ in range(3):
            _, _, _, truncated, info = env.step(np.zeros(2, np.int64))
        assert truncated[0] and info["worker_restarted"][0] and not info["worker_restarted"][1]
        env.step(np.zeros(2, np.int64))
    finally:
        env.close()


def test_the_pause_before_a_restart_grows_only_with_failures_in_quick_succession():
    now = 1000.0
    assert engine_module._restart_pause(deque([now]), now) == 0.25
    assert engine_module._restart_pause(deque([now - 4, now - 2, now]), now) == 1.0
    # A worker killed every 20 s is not a crash loop: each restart pauses as briefly.
    assert engine_module._restart_pause(deque([now - 60, now - 40, now - 20, now]), now) == 0.25
    assert engine_module._restart_pause(deque([now - i for i in range(8)]), now) == 2.0


def test_the_other_workers_step_while_a_restart_pauses(monkeypatch):
    monkeypatch.setattr(engine_module, "_RESTART_BACKOFF_S", 2.0)
    env = DoomAsyncVectorEnv("basic", num_envs=4, batch_size=2, num_workers=2, **FAST)
    try:
        env.async_reset(seed=0)
        # Past both groups' resets, so the killed worker's envs are mid-step: a reset it had not
        # answered would be redone by the replacement as a plain reset, with nothing to report.
        # (Under load one worker may answer many steps before the other answers its reset.)
        reset_answered: set[int] = set()  # each group by its first env id
        while len(reset_answered) < 2:
            _, _, _, _, info = env.recv()
            reset_answered.add(int(info["env_id"][0]))
            env.send(np.zeros(2, np.int64), info["env_id"])
        dead = env._core.engine._handles[0]
        os.kill(dead.proc.pid, signal.SIGKILL)
        while_paused, restarted = 0, False
        # A respawn under load (a fresh Python, numba, an engine) may take minutes: the engine
        # raises if the replacement misses its start or step timeout, so this deadline only
        # guards against a hang, above the 2-s backoff + both timeouts (and under pytest's 300 s).
        settings = env._core.engine.settings
        deadline = time.monotonic() + settings.start_timeout_s + settings.step_timeout_s + 60
        while not restarted and time.monotonic() < deadline:
            _, _, _, _, info = env.recv()
            while_paused += dead.proc is None
            restarted = "worker_restarted" in info
            env.send(np.zeros(2, np.int64), info["env_id"])
        assert restarted
        assert while_paused > 0  # the survivor's envs came back before the replacement began
        assert env.worker_restarts == 1
    finally:
        env.close()


def test_repeated_failure_raises_with_the_workers_traceback():
    factory = BrokenFactory("basic", _options())
    env = DoomVectorEnv("basic", num_envs=1, num_workers=1, factory=factory, max_restarts=1, **FAST)
    env.reset(seed=0)
    with pytest.raises(VectorEnvError, match=r"(?s)sf/DoomBasic-v0.*boom: this unit always fails"):
        for _ in range(5):
            env.step(np.zeros(1, np.int64))
    env.close()  # already closed by the error: still fine


def test_worker_output_goes_to_its_log_and_into_the_error(capfd):
    """Engines print their console to the worker's stdout: kept off the caller's terminal, and
    quoted when the worker fails."""
    factory = DiesTalkingFactory("basic", _options())
    env = DoomVectorEnv("basic", num_envs=1, num_workers=1, factory=factory, max_restarts=0, **FAST)
    env.reset(seed=0)
    with pytest.raises(
        VectorEnvError, match=r"(?s)exited with status 3.*engine console: fatal error in the map"
    ):
        env.step(np.zeros(1, np.int64))
    assert "engine console" not in capfd.readouterr().out


def test_exception_in_with_block_cleans_up():
    with pytest.raises(KeyError), DoomVectorEnv("basic", num_envs=2, num_workers=2, **FAST) as env:
        pids = env.worker_pids
        raise KeyError("caller bug")
    _assert_gone(pids)
    assert not _shm_exists(env)


def test_keyboard_interrupt_without_close_leaves_nothing(tmp_path):
    script = (
        "import sf_envs, numpy as np\n"
        "env = sf_envs.DoomVectorEnv('basic', num_envs=2, num_workers=2, obs_size=(64, 36))\n"
        "env.reset(seed=0)\n"
        "print(*env.worker_pids, env._core.engine.buffers.name, flush=True)\n"
        "raise KeyboardInterrupt\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    *pids, shm = out.stdout.split()
    assert "KeyboardInterrupt" in out.stderr
    _assert_gone([int(p) for p in pids])
    assert not os.path.exists(f"/dev/shm/{shm}")


def _options():
    from sf_envs.options import DoomOptions

    return DoomOptions.create(**FAST)
