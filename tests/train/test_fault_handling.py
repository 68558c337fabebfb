"""The sampler and the evaluation under the faults the vector engine reports: envs that stop
answering (a hung worker) and envs whose worker was replaced (``info["worker_restarted"]``).
Toy doubles of the engine's behaviour; the real processes are in test_training_faults.py."""

from __future__ import annotations

import numpy as np
import torch
from support.sampling import TINY, assert_aligned_and_replayable
from support.toy_env import ToyVecEnv

from sf_train import evaluation
from sf_train.model.network import ActorCritic
from sf_train.sampling.sampler import Sampler

EPISODE = 16


class _StallingToyVecEnv(ToyVecEnv):
    """Envs of ``stalled`` stop answering after their first step, as a hung worker's do, until
    :meth:`resume`."""

    def __init__(self, *args, stalled: tuple[int, ...], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.stalled = np.array(stalled)
        self.held: list[int] = []
        self.sends = 0

    def send(self, actions, env_ids) -> None:
        super().send(actions, env_ids)
        self.sends += 1
        if self.sends > self.num_envs // self.batch_size:  # every env has stepped once
            self.held += [e for e in self._ready if e in self.stalled]
            self._ready = [e for e in self._ready if e not in self.stalled]

    def resume(self) -> None:
        self._ready += self.held
        self.held = []


class _RestartingToyVecEnv(ToyVecEnv):
    """On its ``at``-th recv, reports the envs of ``lost`` among the returned ones as the engine
    reports a replaced worker's: reward 0, truncated, a new episode's first observation, the
    dead worker's partial episode as an episode summary, and a final_obs no game produced."""

    def __init__(self, *args, lost: tuple[int, ...], at: int, **kwargs) -> None:
        super().__init__(*args, measurements=True, **kwargs)
        self.lost, self.at, self.recvs = np.array(lost), at, 0

    def recv(self):
        obs, reward, terminated, truncated, info = super().recv()
        self.recvs += 1
        ids = info["env_id"].astype(np.int64)
        rows = np.isin(ids, self.lost)
        info["final_obs"] = {k: np.full_like(v, 255) for k, v in obs.items()}
        info["_final_obs"] = truncated.copy()
        if self.recvs != self.at:
            return obs, reward, terminated, truncated, info
        assert rows.any() and not terminated[rows].any(), "pick `at` mid-episode for `lost`"
        lost = ids[rows]
        info["episode_summary"]["r"][rows] = self._return[lost]
        info["episode_summary"]["l"][rows] = self._t[lost]
        info["_episode_summary"] = info["_episode_summary"] | rows
        self._t[lost], self._return[lost] = 0, 0
        self._new_target(lost)
        fresh = self._observation(self._screens(self._col[lost]), self._t[lost])
        for k in obs:
            obs[k][rows] = fresh[k]
        reward[rows], truncated[rows] = 0.0, True
        info["_final_obs"] = truncated.copy()
        info["worker_restarted"] = info["_worker_restarted"] = rows
        return obs, reward, terminated, truncated, info


def _sampler(venv: ToyVecEnv, T: int, num_batches: int = 3) -> tuple[Sampler, ActorCritic]:
    model = ActorCritic(venv.single_observation_space, venv.single_action_space, TINY)
    sampler = Sampler(
        venv,
        model,
        T=T,
        B=venv.num_envs,
        device=torch.device("cpu"),
        num_batches=num_batches,
        bootstrap_truncations=True,
    )
    sampler.start(seed=0)
    return sampler, model


def test_stalled_envs_lose_their_columns_instead_of_exhausting_the_batches():
    """The healthy envs fill every free batch while the oldest waits on the stalled ones;
    then they take over the stalled envs' columns, and batches keep coming."""
    venv = _StallingToyVecEnv(8, 2, episode_length=EPISODE, stalled=(0, 1))
    sampler, model = _sampler(venv, T=4)
    dropped = 0
    for _ in range(8):
        collected = sampler.collect(0)
        assert_aligned_and_replayable(model, collected.batch)
        dropped += collected.dropped_steps
        sampler.release(collected.batch)
    assert dropped > 0
    # The stalled envs come back and, once columns are free, record their steps again: none
    # is dropped any more.
    venv.resume()
    late_drops = []
    for _ in range(6):
        collected = sampler.collect(0)
        assert_aligned_and_replayable(model, collected.batch)
        late_drops.append(collected.dropped_steps)
        sampler.release(collected.batch)
    assert late_drops[-3:] == [0, 0, 0]


def test_trajectories_cut_by_a_worker_restart_are_dropped():
    venv = _RestartingToyVecEnv(8, 4, episode_length=EPISODE, lost=(0, 1), at=7)
    T = 8
    sampler, model = _sampler(venv, T=T)
    dropped = 0
    for _ in range(6):
        collected = sampler.collect(0)
        buf = collected.batch
        assert_aligned_and_replayable(model, buf)
        # Episodes end only where the toy ends them, after its last step: not at the cut.
        last = buf.obs["measurements"][:T, :, 0] == (EPISODE - 1) / EPISODE
        assert (buf.dones <= last).all()
        # The cut is no time limit: nothing bootstraps from the final_obs no game produced.
        assert (buf.truncation_values == 0).all()
        # The dead worker's partial episodes count in no return.
        assert (collected.episodes.lengths == EPISODE).all()
        dropped += collected.dropped_steps
        sampler.release(buf)
    assert venv.recvs > venv.at
    # Two trajectories cut, each after at most T steps (the last one's action was lost).
    assert 0 < dropped <= 2 * T


def test_evaluation_counts_no_episode_cut_by_a_worker_restart(toy_config, monkeypatch):
    venv = _RestartingToyVecEnv(4, 4, episode_length=EPISODE, lost=(0, 1), at=3)
    monkeypatch.setattr(evaluation, "make_env", lambda *args, **kwargs: venv)
    cfg = toy_config()
    result = evaluation.evaluate_policy(
        cfg, lambda v: ActorCritic(v.single_observation_space, v.single_action_space, cfg.model), 8
    )
    assert venv.recvs > venv.at
    np.testing.assert_array_equal(result.lengths, [EPISODE] * 8)
