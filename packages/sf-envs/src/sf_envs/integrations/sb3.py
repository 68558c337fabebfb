"""Stable-Baselines3's ``VecEnv`` over the shared-memory engine (``pip install sf-envs[sb3]``).

SB3 steps its envs through its own ``VecEnv`` API (``step_async``/``step_wait``, a list of info
dicts, ``terminal_observation``); its ``SubprocVecEnv`` pickles every observation through a pipe.
:class:`SB3VecEnv` hands SB3 the engine's shared-memory batches instead, with SB3's semantics:
an ended env is reset in the same step, its last observation is in
``infos[i]["terminal_observation"]`` and a time limit is ``infos[i]["TimeLimit.truncated"]``.
Wrap it in SB3's ``VecMonitor`` for episode statistics, as with any ``VecEnv``.

Example:
    >>> from stable_baselines3 import PPO
    >>> from stable_baselines3.common.vec_env import VecMonitor
    >>> from sf_envs.integrations.sb3 import make_sb3_vec_env
    >>> env = VecMonitor(make_sb3_vec_env("sf/DoomBasic-v0", num_envs=8))
    >>> model = PPO("CnnPolicy", env, n_steps=128).learn(10_000)
    >>> env.close()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices

from sf_envs.errors import OptionError
from sf_envs.vector.async_env import DoomAsyncVectorEnv

__all__ = ["SB3VecEnv", "make_sb3_vec_env"]


def make_sb3_vec_env(env_id: str, num_envs: int, **kwargs: Any) -> SB3VecEnv:
    """``gym.make_vec(env_id, num_envs, batch_size=num_envs, **kwargs)`` as an SB3 ``VecEnv``."""
    # No copies from the engine: SB3VecEnv copies each batch as it reorders it.
    # With batch_size, sf's vector entry point makes the async engine.
    engine = gym.make_vec(env_id, num_envs, batch_size=num_envs, copy=False, **kwargs)
    return SB3VecEnv(cast(DoomAsyncVectorEnv, engine))


class SB3VecEnv(VecEnv):
    """An SB3 ``VecEnv`` stepping every env of a :class:`DoomAsyncVectorEnv` per step.

    Args:
        engine: The engine; its ``batch_size`` must equal ``num_envs`` (SB3 steps every env).
    """

    def __init__(self, engine: DoomAsyncVectorEnv) -> None:
        if engine.batch_size != engine.num_envs:
            raise OptionError(
                f"SB3 steps every env at once: make the engine with batch_size=num_envs "
                f"({engine.num_envs}), got batch_size={engine.batch_size}"
            )
        # Before VecEnv's constructor, which asks the envs for their render_mode.
        self.engine = engine
        super().__init__(
            engine.num_envs, engine.single_observation_space, engine.single_action_space
        )
        self._actions: np.ndarray | None = None

    def reset(self) -> Any:
        seeds = self._seeds
        seed = None if all(s is None for s in seeds) else [s or 0 for s in seeds]
        obs, info = self.engine.reset(seed=seed)
        self._reset_seeds()
        self.reset_infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        return _in_env_order(obs, info["env_id"])

    def step_async(self, actions: np.ndarray) -> None:
        self.engine.send(actions)

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        obs, reward, terminated, truncated, info = self.engine.recv()
        order = info["env_id"]
        done = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(done):  # position in the batch
            env_info = infos[order[i]]
            env_info["terminal_observation"] = _entry(info["final_obs"], i)
            env_info["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            env_info["episode_summary"] = {
                "r": float(info["episode_summary"]["r"][i]),
                "l": int(info["episode_summary"]["l"][i]),
            }
        return (
            _in_env_order(obs, order),
            _in_env_order(reward, order).astype(np.float32),
            _in_env_order(done, order),
            infos,
        )

    def close(self) -> None:
        self.engine.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [getattr(self.engine, attr_name)] * len(self._get_indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(
            f"the envs run in worker processes; set {attr_name!r} when making them "
            "(make_sb3_vec_env(env_id, num_envs, **options))"
        )

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        raise AttributeError(
            f"the envs run in worker processes and cannot call {method_name!r} one by one; "
            "use the engine's own API (SB3VecEnv.engine)"
        )

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        return [False] * len(self._get_indices(indices))

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None] * self.num_envs


def _in_env_order(batch: Any, env_id: np.ndarray) -> Any:
    """The batch in env order, copied: the engine's arrays are overwritten by the next step."""
    if isinstance(batch, dict):
        return {key: _in_env_order(value, env_id) for key, value in batch.items()}
    out = np.empty_like(batch)
    out[env_id] = batch
    return out


def _entry(batch: Any, i: int | np.integer) -> Any:
    if isinstance(batch, dict):
        return {key: value[i].copy() for key, value in batch.items()}
    return batch[i].copy()
