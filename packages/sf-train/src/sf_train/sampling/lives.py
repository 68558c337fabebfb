"""Lost lives as ends of episodes for learning (``algo.life_loss_ends``), with the game going on.

Atari agents are trained as if each life were an episode (Mnih et al. 2015): no value is
bootstrapped across a lost life, so losing one costs the rest of its returns, while the game,
and the return sf reports for it, run to the last life. The env reports its ``lives`` game
variable each step; this tracker tells which steps lost one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sf_train.envs import game_variable_names

__all__ = ["LifeLosses"]


class LifeLosses:
    """Each env's lives after its last step, and which steps lost one.

    Args:
        venv: The vector env; its game variables must include ``lives``.
        num_envs: Envs it steps.

    Raises:
        ValueError: If the env reports no ``lives`` variable.
    """

    def __init__(self, venv: object, num_envs: int) -> None:
        names = game_variable_names(venv)
        if "lives" not in names:
            raise ValueError(
                f"algo.life_loss_ends needs an env that reports a 'lives' game variable (the "
                f"sf/Atari ids do); this one reports {list(names) or 'none'}: turn it off"
            )
        self._column = names.index("lives")
        self._lives = np.full(num_envs, np.nan)

    def lost(self, info: dict[str, Any], env_ids: np.ndarray, done: np.ndarray) -> np.ndarray:
        """Per recv() row: whether its step lost a life (an ended game's row is not asked:
        its variables are the next game's)."""
        lives = np.asarray(info["variables"])[:, self._column]
        lost = (lives < self._lives[env_ids]) & ~done
        self._lives[env_ids] = lives
        return lost
