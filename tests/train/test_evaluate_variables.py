"""The evaluator's game variables belong to the episodes they are reported with."""

from __future__ import annotations

import dataclasses

import numpy as np

from sf_train import evaluation
from sf_train.model.network import ActorCritic


def test_each_episode_keeps_its_own_final_variables(toy_config):
    """The toy reports each episode's return as a game variable, in a buffer that every recv
    rewrites (as the engine's is): the evaluator must copy the rows, not keep views of them."""
    cfg = toy_config()
    cfg.env = dataclasses.replace(
        cfg.env, env_options=("variables=true", "episode_lengths=[2, 5, 9]")
    )
    result = evaluation.evaluate_policy(
        cfg,
        lambda v: ActorCritic(v.single_observation_space, v.single_action_space, cfg.model),
        episodes=24,
        num_envs=4,
    )
    assert len(set(result.returns.tolist())) > 1, "every episode has the same return"
    np.testing.assert_array_equal(result.variables["episode_return"], result.returns)
