"""Contract tests of the vector engine's two faces: spaces, autoreset, infos, make_vec, errors."""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, ClosedEnvironmentError, NoAsyncCallError
from gymnasium.vector import AutoresetMode

import sf_envs
from sf_envs.vector import DoomAsyncVectorEnv, DoomVectorEnv

# Small and quick: frame skip 10 ends basic's 300-tic episodes within 30 steps.
FAST = {"obs_size": (64, 36), "frame_skip": 10}
N = 4


@pytest.fixture(scope="module")
def next_env():
    env = DoomVectorEnv("basic", num_envs=N, num_workers=2, **FAST)
    yield env
    env.close()


@pytest.fixture(scope="module")
def same_env():
    env = DoomVectorEnv("basic", num_envs=N, num_workers=2, autoreset_mode="SameStep", **FAST)
    yield env
    env.close()


@pytest.fixture(scope="module")
def pool():
    env = DoomAsyncVectorEnv("basic", num_envs=N, batch_size=2, num_workers=2, **FAST)
    yield env
    env.close()


def _run_until_done(env, rng, max_steps=60):
    for _ in range(max_steps):
        out = env.step(rng.integers(0, 4, size=N))
        if out[4].get("_episode_summary", np.zeros(N, bool)).any():
            return out
    raise AssertionError("no episode ended")


def test_spaces_single_vs_batched(next_env):
    assert next_env.single_observation_space == gym.spaces.Box(0, 255, (3, 36, 64), np.uint8)
    assert next_env.observation_space.shape == (N, 3, 36, 64)
    assert next_env.single_action_space == gym.spaces.Discrete(4)
    assert next_env.action_space == gym.spaces.MultiDiscrete([4] * N)
    obs, _info = next_env.reset(seed=0)
    assert obs in next_env.observation_space
    assert next_env.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP


def test_info_has_game_variables_with_masks(next_env):
    _, info = next_env.reset(seed=0)
    assert info["health"].shape == (N,) and info["_health"].all()
    assert (info["health"] == 100).all()
    assert "episode_summary" not in info


def test_next_step_autoreset(next_env):
    rng = np.random.default_rng(0)
    next_env.reset(seed=1)
    _obs, _reward, terminated, truncated, info = _run_until_done(next_env, rng)
    done = terminated | truncated
    assert (info["_episode_summary"] == done).all() and (
        info["episode_summary"]["_r"] == done
    ).all()
    assert info["episode_summary"]["l"][done].min() >= 1
    assert (
        info["episode_summary"]["r"].dtype == np.float32
        and info["episode_summary"]["l"].dtype == np.int32
    )
    _obs2, reward2, term2, trunc2, _info2 = next_env.step(np.zeros(N, np.int64))
    assert (reward2[done] == 0).all() and not term2[done].any() and not trunc2[done].any()


def test_same_step_autoreset(same_env):
    rng = np.random.default_rng(0)
    same_env.reset(seed=1)
    obs, _reward, terminated, truncated, info = _run_until_done(same_env, rng)
    done = terminated | truncated
    assert (info["_final_obs"] == done).all() and (info["_final_info"] == done).all()
    i = int(np.flatnonzero(done)[0])
    assert info["final_obs"].shape == (N, 3, 36, 64)
    assert not np.array_equal(info["final_obs"][i], obs[i])  # obs is the next episode's first
    assert (
        info["final_info"]["_episode_summary"][i]
        and info["final_info"]["episode_summary"]["l"][i] >= 1
    )
    assert same_env.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    # The next step continues the new episode: nothing ended, no final entries.
    _, _, term2, trunc2, info2 = same_env.step(np.zeros(N, np.int64))
    assert not (term2[i] or trunc2[i]) or "final_obs" in info2


def test_final_info_holds_the_final_game_variables(same_env):
    """A basic episode that ends in a kill reports killcount 1 in final_info, not a stale 0."""
    same_env.reset(seed=3)
    for _ in range(120):
        _, _, terminated, _, info = same_env.step(np.full(N, 3))  # shoot straight ahead
        if terminated.any():
            i = int(np.flatnonzero(terminated)[0])
            assert info["final_info"]["killcount"][i] == 1
            return
    pytest.fail("no basic episode ended in a kill from shooting straight ahead")


def test_seeding_is_reproducible(next_env):
    other = DoomVectorEnv("basic", num_envs=N, num_workers=1, **FAST)
    try:
        actions = np.random.default_rng(3).integers(0, 4, size=(40, N))
        a, _ = next_env.reset(seed=7)
        b, _ = other.reset(seed=7)
        assert np.array_equal(a, b)
        for act in actions:  # crosses episode ends: autoresets are seeded too
            oa, ra, *_ = next_env.step(act)
            ob, rb, *_ = other.step(act)
            assert np.array_equal(oa, ob) and np.array_equal(ra, rb)
    finally:
        other.close()


@pytest.mark.parametrize(
    ("actions", "needle"),
    [
        (np.zeros(N + 1, np.int64), f"shape ({N},)"),
        (np.zeros(N, np.float32), "integer array"),
        (np.full(N, 4), "Discrete(4)"),
        (np.full(N, -1), "Discrete(4)"),
    ],
)
def test_bad_actions_name_the_space(next_env, actions, needle):
    next_env.reset(seed=0)
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        next_env.step(actions)


def test_make_vec_paths():
    venv = gym.make_vec("sf/DoomBasic-v0", num_envs=2, num_workers=1, **FAST)
    try:
        assert isinstance(venv, DoomVectorEnv) and venv.spec.id == "sf/DoomBasic-v0"
    finally:
        venv.close()
    pool = gym.make_vec("sf/DoomBasic-v0", num_envs=2, batch_size=1, num_workers=1, **FAST)
    try:
        assert isinstance(pool, DoomAsyncVectorEnv)
        assert pool.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    finally:
        pool.close()
    # A fork server for gymnasium's async mode: a process that imported numpy has threads
    # (OpenBLAS's pool), which fork may deadlock (Python 3.12+ warns).
    for mode, cls, kwargs in (
        ("sync", gym.vector.SyncVectorEnv, {}),
        ("async", gym.vector.AsyncVectorEnv, {"vector_kwargs": {"context": "forkserver"}}),
    ):
        env = gym.make_vec("sf/DoomBasic-v0", num_envs=2, vectorization_mode=mode, **kwargs, **FAST)
        try:
            assert isinstance(env, cls)
            obs, _ = env.reset(seed=0)
            assert obs.shape == (2, 3, 36, 64)
            env.step(np.zeros(2, np.int64))
        finally:
            env.close()
    assert sf_envs.DoomVectorEnv is DoomVectorEnv


def test_async_partial_batches_and_env_ids(pool):
    pool.async_reset(seed=0)
    seen = []
    for _ in range(2):
        obs, reward, terminated, truncated, info = pool.recv()
        assert obs.shape == (2, 3, 36, 64) and info["env_id"].dtype == np.int32
        assert info["env_id"].shape == (2,) and reward.shape == (2,)
        seen += info["env_id"].tolist()
    assert sorted(seen) == list(range(N))
    rng = np.random.default_rng(0)
    pool.send(rng.integers(0, 4, size=2), np.array(seen[:2]))
    pool.send(rng.integers(0, 4, size=2), np.array(seen[2:]))
    ended = 0
    for _ in range(80):
        obs, reward, terminated, truncated, info = pool.recv()
        done = terminated | truncated
        assert (info["_episode_summary"] == done).all() and (info["_final_obs"] == done).all()
        ended += int(done.sum())
        if done.any():
            assert info["episode_summary"]["l"][done].min() >= 1
        pool.send(rng.integers(0, 4, size=2), info["env_id"])
    assert ended > 0
    assert pool.zero_copy_batches + pool.gathered_batches > 0


def test_async_state_errors(pool):
    pool.async_reset(seed=0)
    _obs, *_, info = pool.recv()
    with pytest.raises(AlreadyPendingCallError):
        pool.send(np.zeros(2, np.int64), np.array(sorted(set(range(N)) - set(info["env_id"]))))
    pool.send(np.zeros(2, np.int64), info["env_id"])
    pool.recv()
    pool.recv()
    with pytest.raises(NoAsyncCallError, match="send"):
        pool.recv()
    with pytest.raises(ValueError, match="distinct"):
        pool.send(np.zeros(2, np.int64), np.array([0, 0]))
    with pytest.raises(ValueError, match=r"in \[0, 4\)"):
        pool.send(np.zeros(1, np.int64), np.array([N]))


def test_use_after_close_is_a_clear_error():
    env = DoomAsyncVectorEnv("basic", num_envs=2, num_workers=1, **FAST)
    with pytest.raises(NoAsyncCallError, match="async_reset"):
        env.send(np.zeros(2, np.int64))
    env.close()
    env.close()
    with pytest.raises(sf_envs.ClosedEnvError, match="closed"):
        env.async_reset()
    with pytest.raises(sf_envs.ClosedEnvError) as err:
        env.recv()
    assert isinstance(err.value, ClosedEnvironmentError)  # what Gymnasium's users catch


def test_async_face_names_its_game_variable_columns(pool):
    names = pool.variable_names
    assert names[:2] == ("health", "armor") and "killcount" in names


def _children(pid: int) -> list[int]:
    """Child processes of ``pid``, whichever of its threads started them."""
    children = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            children += [int(c) for c in f.read().split()]
    return children


def test_pinned_workers_and_their_engines_stay_on_one_cpu():
    cpus = sorted(os.sched_getaffinity(0))
    with DoomVectorEnv("basic", num_envs=2, num_workers=2, pin_workers=True, **FAST) as env:
        env.reset(seed=0)
        for i, pid in enumerate(env.worker_pids):
            engines = _children(pid)
            assert engines, "every worker runs a ViZDoom engine process"
            for proc in (pid, *engines):
                assert os.sched_getaffinity(proc) == {cpus[i % len(cpus)]}


def test_workers_and_their_engines_run_under_batch_scheduling():
    # No wake-up preemption between a worker and its engines: half the context switches per tic.
    with DoomVectorEnv("basic", num_envs=2, num_workers=2, **FAST) as env:
        env.reset(seed=0)
        for pid in env.worker_pids:
            for proc in (pid, *_children(pid)):
                assert os.sched_getscheduler(proc) == os.SCHED_BATCH


def test_workers_are_not_pinned_when_they_do_not_deal_evenly_to_the_cpus():
    cpus = os.sched_getaffinity(0)
    workers = len(cpus) + 1
    with DoomVectorEnv("basic", num_envs=workers, num_workers=workers, **FAST) as env:
        for pid in env.worker_pids:
            assert os.sched_getaffinity(pid) == cpus


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"step_timeout_s": 0}, "step_timeout_s"),
        ({"max_restarts": -1}, "max_restarts"),
    ],
)
def test_bad_engine_settings_are_named(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        DoomVectorEnv("basic", num_envs=2, num_workers=2, **kwargs, **FAST)


def test_async_results_are_copies_unless_asked_for_views():
    """copy=True results survive later calls; copy=False gives views, reused as documented: a
    zero-copy batch aliases its envs' shared memory (rewritten once they are sent again), a
    gathered batch the one gather buffer (rewritten by the next gathered recv)."""
    for copy in (True, False):
        # One env per group: envs 0 and 1 make a consecutive (zero-copy) batch, 0 and 2 do not.
        with DoomAsyncVectorEnv(
            "basic", num_envs=4, batch_size=2, num_workers=2, copy=copy, **FAST
        ) as pool:
            pool.async_reset(seed=0)
            pool.recv(), pool.recv()

            def step(envs):
                counts = pool.zero_copy_batches, pool.gathered_batches
                pool.send(np.full(2, 3), np.array(envs))
                obs, *_, info = pool.recv()
                assert sorted(info["env_id"]) == envs
                consecutive = envs[1] == envs[0] + 1
                assert pool.zero_copy_batches - counts[0] == int(consecutive)
                assert pool.gathered_batches - counts[1] == int(not consecutive)
                return obs, info["env_id"]

            obs, _ = step([0, 1])
            obs_again, _ = step([0, 1])
            assert np.shares_memory(obs, obs_again) == (not copy)
            _, ids = step([0, 2])
            step([1, 3])
            assert sorted(ids) == ([0, 2] if copy else [1, 3])
