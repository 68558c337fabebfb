"""Match steps over a timed window with the CPU the engines and the driving side used, one
match stepped in this process, and the engines' spin modes: shared by ``matches.py``,
``scripted_cost.py`` and ``self_play.py``."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from sf_envs.match import MatchConfig, MatchCore
from sf_envs.match.spin import SPIN_YIELD_ENV_VAR

from .cpu_time import children_cpu


@dataclass
class Sample:
    """One timed window: match steps, and CPU seconds of the engines and of the driving side."""

    steps: int
    seconds: float
    engine_cpu: float
    driver_cpu: float

    @property
    def rate(self) -> float:
        return self.steps / self.seconds


def _cpu_split() -> tuple[float, float]:
    """(engines, driving side): CPU seconds so far of the engines and of everything else."""
    engines, others = children_cpu()
    own = os.times()
    return engines, others + own.user + own.system


def timed(seconds: float, step: Callable[[], int]) -> Sample:
    """Calls ``step`` (which returns the match steps it made) for ``seconds``."""
    engines0, driver0 = _cpu_split()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        steps += step()
    elapsed = time.perf_counter() - start
    engines1, driver1 = _cpu_split()
    return Sample(steps, elapsed, engines1 - engines0, driver1 - driver0)


def random_actions(config: MatchConfig, rng: np.random.Generator, n: int) -> np.ndarray:
    space = config.action_set.space
    high = space.nvec if space.shape else space.n
    return rng.integers(high, size=(n, *space.shape))


def single_process(config: MatchConfig, seconds: float) -> Sample:
    """One MatchCore stepped in this process."""
    n = config.num_agents
    obs = np.zeros((n, *config.options.obs_shape), dtype=np.uint8)
    rng = np.random.default_rng(0)
    core = MatchCore(config, console_log=True)
    try:
        core.reset(0, obs, None)

        def step() -> int:
            _, _, truncated = core.step(random_actions(config, rng, n), obs, None)
            if truncated.any():
                core.reset(None, obs, None)
            return 1

        return timed(seconds, step)
    finally:
        core.close()


#: How networked engines wait for their peers in a measurement: the value of SPIN_YIELD_ENV_VAR.
SPIN_MODES = {"as is": "0", "yield": "1"}


@contextlib.contextmanager
def spin_mode(mode: str) -> Iterator[None]:
    """Engines started inside wait for their peers as they are (``as is``) or yielding
    (``yield``); workers inherit the setting with the environment."""
    before = os.environ.get(SPIN_YIELD_ENV_VAR)
    os.environ[SPIN_YIELD_ENV_VAR] = SPIN_MODES[mode]
    try:
        yield
    finally:
        if before is None:
            del os.environ[SPIN_YIELD_ENV_VAR]
        else:
            os.environ[SPIN_YIELD_ENV_VAR] = before
