"""The acting loop: memories per env id, resets of exactly the ended envs, greedy = argmax,
and a runner acting for a subset of the envs as if those envs were alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from sf_train.config.schema import ModelConfig
from sf_train.model.network import ActorCritic
from sf_train.sampling.acting import PolicyRunner, stack_obs

TINY = ModelConfig(
    conv_channels=(4,), conv_kernels=(4,), conv_strides=(2,), fc_size=16, rnn=True, rnn_size=8
)
SCREEN = spaces.Box(0, 255, (1, 12, 16), dtype=np.uint8)
THREE = spaces.Discrete(3)


def model(action_space: spaces.Space = THREE, observation_space: spaces.Space = SCREEN):
    torch.manual_seed(0)
    return ActorCritic(observation_space, action_space, TINY).eval()


def screens(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, *SCREEN.shape), dtype=np.uint8)


def test_reset_zeroes_exactly_the_ended_envs():
    runner = PolicyRunner(model(), 4, "cpu", torch.Generator().manual_seed(0))
    ids = np.arange(4)
    runner.act(screens(4, 0), ids)
    runner.act(screens(4, 1), ids)
    before = runner.rnn_state.clone()
    assert (before != 0).any(dim=1).all()
    runner.reset(np.array([3, 1]))
    assert (runner.rnn_state[[1, 3]] == 0).all()
    torch.testing.assert_close(runner.rnn_state[[0, 2]], before[[0, 2]], rtol=0, atol=0)
    runner.reset(np.array([], dtype=np.int64))  # nothing ended: nothing changes
    assert (runner.rnn_state[[0, 2]] == before[[0, 2]]).all()


def test_an_env_after_reset_acts_as_at_its_first_step():
    net = model()
    runner = PolicyRunner(net, 2, "cpu", greedy=True)
    first = screens(2, 0)
    runner.act(first, np.arange(2))
    fresh = runner.rnn_state.clone()
    runner.act(screens(2, 1), np.arange(2))
    runner.reset(np.array([0]))
    runner.act(first[:1], np.array([0]))
    torch.testing.assert_close(runner.rnn_state[0], fresh[0])


@pytest.mark.parametrize("space", [THREE, spaces.MultiDiscrete([3, 2])])
def test_greedy_takes_the_most_likely_action(space):
    net = model(space)
    obs = screens(5, 0)
    with torch.no_grad():
        logits = net(torch.as_tensor(obs), net.initial_state(5)).logits
    expected = [g.argmax(-1) for g in torch.split(logits, net.action_dist.nvec, dim=-1)]
    actions = PolicyRunner(net, 5, "cpu", greedy=True).act(obs, np.arange(5))
    torch.testing.assert_close(actions, torch.stack(expected, -1).reshape(actions.shape))


def test_sampling_is_reproducible_with_the_generator():
    def run(seed: int) -> torch.Tensor:
        runner = PolicyRunner(model(), 6, "cpu", torch.Generator().manual_seed(seed))
        return torch.stack([runner.act(screens(6, t), np.arange(6)) for t in range(5)])

    assert torch.equal(run(1), run(1))
    assert not torch.equal(run(1), run(2))


def test_a_runner_of_a_subset_acts_as_if_those_envs_were_alone():
    """Envs 3 and 1 of six, in recv() order: their memories match a two-env runner's, and the
    other envs' memories are never touched (another policy may act for them)."""
    net = model()
    shared = PolicyRunner(net, 6, "cpu", greedy=True)
    alone = PolicyRunner(net, 2, "cpu", greedy=True)
    for t in range(4):
        obs = screens(2, t)
        torch.testing.assert_close(
            shared.act(obs, np.array([3, 1])), alone.act(obs, np.array([1, 0]))
        )
    torch.testing.assert_close(shared.rnn_state[[3, 1]], alone.rnn_state[[1, 0]])
    assert (shared.rnn_state[[0, 2, 4, 5]] == 0).all()


def test_decide_records_log_probs_and_values_and_values_keeps_the_memory():
    net = model()
    runner = PolicyRunner(net, 3, "cpu", torch.Generator().manual_seed(0))
    ids = np.array([2, 0, 1])
    runner.act(screens(3, 0), ids)
    memory = runner.rnn_state.clone()
    obs = screens(3, 1)
    values = runner.values(obs, ids)
    assert torch.equal(runner.rnn_state, memory)
    decision = runner.decide(obs, ids)
    with torch.no_grad():
        out = net(torch.as_tensor(obs), memory[ids])
    torch.testing.assert_close(decision.values, out.values)
    torch.testing.assert_close(values, out.values)
    torch.testing.assert_close(
        decision.log_probs, net.action_dist.log_prob(out.logits, decision.actions)
    )
    torch.testing.assert_close(runner.rnn_state[ids], out.rnn_state)


def test_dict_observations_of_single_envs_are_stacked():
    space = spaces.Dict({"screen": SCREEN, "measurements": spaces.Box(-1, 1, (2,), np.float32)})
    net = model(observation_space=space)
    one = [{"screen": s, "measurements": np.array([0.5, -0.5], np.float32)} for s in screens(2, 0)]
    batch = stack_obs(one)
    assert batch["screen"].shape == (2, *SCREEN.shape) and batch["measurements"].shape == (2, 2)
    assert PolicyRunner(net, 2, "cpu").act(batch, np.arange(2)).shape == (2,)
