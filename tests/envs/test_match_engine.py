"""Matches inside the vector engine: one worker steps a whole match, one row per agent."""

from __future__ import annotations

import os

import numpy as np

from sf_envs.match import MatchConfig
from sf_envs.match.unit import MATCH_VARIABLES, MatchUnitFactory
from sf_envs.vector import protocol
from sf_envs.vector.base import _layout
from sf_envs.vector.engine import Engine


def run_all(engine: Engine, opcode: bytes, groups: list[int]) -> None:
    engine.submit(opcode, groups)
    done: set[int] = set()
    while done != set(groups):
        done |= set(engine.collect())


def test_two_duels_step_in_the_engine_with_one_row_per_agent() -> None:
    config = MatchConfig.create("duel", timelimit=0.05, obs_size=(40, 30))
    factory = MatchUnitFactory(config)
    layout = _layout(
        4, factory.observation_space, factory.action_space, len(MATCH_VARIABLES), same_step=False
    )
    engine = Engine(factory, 2, 1, 1, layout, same_step=False, name="duel")
    try:
        shared = engine.buffers.arrays
        shared["seed"][:] = [1, 1, 2, 2]
        run_all(engine, protocol.RESET, [0, 1])
        assert shared["obs"].any(axis=(1, 2, 3)).all()
        # Lock-step agents keep the default policy: wake-up preemption speeds their barriers.
        assert all(os.sched_getscheduler(p) == os.SCHED_OTHER for p in engine.worker_pids)
        rng = np.random.default_rng(0)
        steps = 0
        while not shared["truncated"].any():
            shared["actions"][:] = rng.integers(0, len(config.actions), 4)
            run_all(engine, protocol.STEP, [0, 1])
            steps += 1
            # Rows of one match end together; both matches have the same length.
            assert len(set(shared["truncated"].tolist())) == 1
        assert steps == 26  # 105 tics: 2 settle tics at reset, then ceil(103 / 4) steps
        assert not shared["terminated"].any()
        placement = shared["variables"][:, MATCH_VARIABLES.index("PLACEMENT")]
        assert set(placement.tolist()) <= {1.0, 2.0}
        frags = shared["variables"][:, MATCH_VARIABLES.index("FRAGS")]
        # Default rewards are frags: the returns are the frag counts.
        np.testing.assert_array_equal(shared["run_return"], frags)
    finally:
        engine.close()
