from __future__ import annotations

import numpy as np
import pytest
import torch
from support.sampling import (
    TINY,
    ActionRecordingToyVecEnv,
    assert_aligned_and_replayable,
    bright_side,
)
from support.toy_env import ToyVecEnv

from sf_train.config.schema import ModelConfig
from sf_train.model.network import ActorCritic
from sf_train.sampling.sampler import Sampler


@pytest.mark.parametrize(
    "batch_size,shuffle,measurements", [(6, False, False), (3, True, False), (2, True, True)]
)
def test_batches_are_aligned_and_replayable(batch_size, shuffle, measurements):
    venv = ToyVecEnv(6, batch_size, episode_length=5, measurements=measurements, shuffle=shuffle)
    model = ActorCritic(venv.single_observation_space, venv.single_action_space, TINY)
    sampler = Sampler(venv, model, T=8, B=6, device=torch.device("cpu"))
    sampler.start(seed=1)
    try:
        for _ in range(4):
            collected = sampler.collect(policy_version=3)
            assert_aligned_and_replayable(model, collected.batch)
            assert (collected.batch.policy_versions == 3).all()
            assert (collected.episodes.lengths == 5).all()
            sampler.release(collected.batch)
    finally:
        venv.close()


def test_episode_ends_every_episode_length_steps():
    venv = ToyVecEnv(4, episode_length=3)
    model = ActorCritic(venv.single_observation_space, venv.single_action_space, TINY)
    sampler = Sampler(venv, model, T=6, B=4, device=torch.device("cpu"))
    sampler.start(seed=0)
    collected = sampler.collect(policy_version=0)
    expected = torch.tensor([False, False, True] * 2).unsqueeze(1).expand(6, 4)
    assert torch.equal(collected.batch.dones, expected)
    assert collected.env_steps == 24
    assert len(collected.episodes.returns) == 8
    np.testing.assert_array_equal(collected.episodes.lengths, 3)


def test_unreleased_batches_are_reported():
    venv = ToyVecEnv(2)
    model = ActorCritic(venv.single_observation_space, venv.single_action_space, TINY)
    sampler = Sampler(venv, model, T=2, B=2, device=torch.device("cpu"), num_batches=2)
    sampler.start(seed=0)
    sampler.collect(0)
    with pytest.raises(RuntimeError, match="release"):
        sampler.collect(0)
        sampler.collect(0)


class _RecordingToyVecEnv(ToyVecEnv):
    """Keeps every final observation recv() reports, by env id, in the order they came."""

    def __init__(self, *args, drop_final_obs: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.drop_final_obs = drop_final_obs
        self.final_obs: dict[int, list[np.ndarray]] = {}

    def recv(self):
        obs, reward, terminated, truncated, info = super().recv()
        for row in np.flatnonzero(truncated):
            self.final_obs.setdefault(int(info["env_id"][row]), []).append(
                info["final_obs"][row].copy()
            )
        if self.drop_final_obs:
            del info["final_obs"], info["_final_obs"]
        return obs, reward, terminated, truncated, info


FEED_FORWARD = ModelConfig(**{**TINY.__dict__, "rnn": False})


@pytest.mark.parametrize("bootstrap", [True, False])
def test_time_limit_cuts_store_the_value_of_the_final_observation(bootstrap):
    venv = _RecordingToyVecEnv(4, episode_length=3, time_limit=True)
    model = ActorCritic(venv.single_observation_space, venv.single_action_space, FEED_FORWARD)
    sampler = Sampler(
        venv, model, T=6, B=4, device=torch.device("cpu"), bootstrap_truncations=bootstrap
    )
    sampler.start(seed=0)
    buf = sampler.collect(policy_version=0).batch
    # Every episode ends by the time limit after 3 steps: cells t = 2 and 5 of every column.
    cut = torch.tensor([False, False, True] * 2).unsqueeze(1).expand(6, 4)
    assert torch.equal(buf.dones, cut)
    assert (buf.truncation_values[~cut] == 0).all()
    if not bootstrap:
        assert (buf.truncation_values == 0).all()
        return
    # In lock step (batch = all envs) env c fills column c; its cuts are its first two episodes.
    with torch.no_grad():
        for c in range(4):
            finals = torch.as_tensor(np.stack(venv.final_obs[c][:2]))
            expected = model(finals, model.initial_state(2, torch.device("cpu"))).values
            torch.testing.assert_close(buf.truncation_values[[2, 5], c], expected)
    assert (buf.truncation_values[cut] != 0).all()


def test_bootstrapping_a_time_limit_needs_the_final_observation():
    venv = _RecordingToyVecEnv(2, episode_length=2, time_limit=True, drop_final_obs=True)
    model = ActorCritic(venv.single_observation_space, venv.single_action_space, TINY)
    sampler = Sampler(venv, model, T=4, B=2, device=torch.device("cpu"), bootstrap_truncations=True)
    sampler.start(seed=0)
    with pytest.raises(ValueError, match=r"final_obs.*value_bootstrap"):
        sampler.collect(policy_version=0)


def test_a_doom_match_cut_by_its_time_limit_is_bootstrapped():
    """The real engine end to end: a 0.05-minute DuelBots match is truncated after 26 steps."""
    from sf_train.config.schema import EnvConfig
    from sf_train.envs import make_env

    cfg = EnvConfig(
        env="sf/DoomDuelBots-v0",
        num_envs=1,
        batch_size=1,
        num_workers=1,
        obs_size=(32, 24),
        env_options=("timelimit=0.05",),
    )
    venv = make_env(cfg)
    try:
        model = ActorCritic(venv.single_observation_space, venv.single_action_space, TINY)
        sampler = Sampler(
            venv, model, T=30, B=1, device=torch.device("cpu"), bootstrap_truncations=True
        )
        sampler.start(seed=0)
        buf = sampler.collect(policy_version=0).batch
    finally:
        venv.close()
    ends = torch.nonzero(buf.dones[:, 0]).flatten().tolist()
    # The 26th step: 105 tics are 2 settle tics at reset, then ceil(103 / 4) steps.
    assert ends == [25]
    assert buf.truncation_values[25, 0] != 0
    assert (buf.truncation_values[torch.arange(30) != 25] == 0).all()


def test_opponent_envs_are_played_by_the_opponent_and_never_recorded():
    venv = ActionRecordingToyVecEnv(4, 2, episode_length=3, shuffle=True)
    model = ActorCritic(venv.single_observation_space, venv.single_action_space, TINY)
    sampler = Sampler(venv, model, T=6, B=2, device=torch.device("cpu"), opponent_envs=[1, 3])
    # An opponent that always turns to action 1, whatever it sees.
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    weights["actor.weight"].zero_()
    weights["actor.bias"][:] = torch.tensor([-30.0, 30.0])
    sampler.set_opponent(weights)
    sampler.start(seed=0)
    T, steps, episodes = 6, 0, 0
    for _ in range(3):
        collected = sampler.collect(policy_version=0)
        steps += collected.env_steps
        buf = collected.batch
        # Two columns, the learning envs' (0 and 2): the usual replay checks hold for them.
        assert buf.B == 2
        expected = (buf.actions == bright_side(buf.obs[:T])).float()
        torch.testing.assert_close(buf.rewards, expected)
        with torch.no_grad():
            out = model.forward_sequence(buf.obs, buf.rnn_state, buf.resets())
        torch.testing.assert_close(out.values[:T], buf.values, atol=1e-5, rtol=1e-5)
        episodes += len(collected.episodes.returns)
        sampler.release(buf)
    assert steps == len(venv.sent[0]) + len(venv.sent[2])  # steps count the learning envs
    assert steps - 2 * 3 < episodes * 3 <= steps  # and so do episodes (3 steps each)
    assert set(venv.sent[1]) == set(venv.sent[3]) == {1}
    assert set(venv.sent[0]) == set(venv.sent[2]) == {0, 1}
    with pytest.raises(RuntimeError, match="opponent_envs"):
        Sampler(venv, model, T=6, B=4, device=torch.device("cpu")).set_opponent(weights)
