"""The one place that turns an :class:`EnvConfig` into environments.

Two families: the ``sf/Doom*-v0`` ids of sf-envs (through ``gymnasium.make_vec`` for the
engine's async ``send``/``recv`` face, and ``gymnasium.make`` for one renderable env), and
``"toy"``, the in-process :mod:`sf_train.toy_env` that tests and quick checks train on.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from sf_train.config import EnvConfig
from sf_train.sampler import AsyncVectorEnv
from sf_train.toy_env import ToyEnv, ToyVecEnv

__all__ = [
    "TOY_ENV",
    "agents_per_game",
    "frames_per_step",
    "game_variable_names",
    "make_env",
    "make_match_env",
    "make_single_env",
]

TOY_ENV = "toy"
"""``--env toy``: the bright-pixel env, solved by any working trainer within seconds."""

TOY_EPISODE_LENGTH = 16


def _toy_shape(cfg: EnvConfig) -> tuple[int, int, int]:
    width, height = cfg.obs_size
    return (1, height, width)


def _doom_options(cfg: EnvConfig) -> dict[str, Any]:
    return {
        **cfg.options(),
        "frame_skip": cfg.frame_skip,
        "obs_size": cfg.obs_size,
        "grayscale": cfg.grayscale,
    }


def _check_id(env_id: str) -> None:
    if env_id == TOY_ENV:
        return
    import sf_envs  # noqa: F401  (registers the sf/Doom*-v0 ids)

    if env_id not in gym.registry:
        doom = sorted(k for k in gym.registry if k.startswith("sf/"))
        raise ValueError(
            f"unknown env {env_id!r}: use 'toy' or one of {', '.join(doom) or 'the sf-envs ids'}"
        )


def make_env(
    cfg: EnvConfig,
    num_envs: int | None = None,
    batch_size: int | None = None,
    seed: int | None = None,
) -> AsyncVectorEnv:
    """The vector env with the async face that the sampler drives.

    Args:
        cfg: Env id, sizes and engine settings.
        num_envs: Overrides ``cfg.num_envs`` (evaluation uses fewer).
        batch_size: Overrides ``cfg.batch_size``.
        seed: Seed of the toy env's own generator (Doom envs are seeded by ``async_reset``).

    Raises:
        ValueError: If the id is neither ``"toy"`` nor a registered gymnasium id.
    """
    _check_id(cfg.env)
    n = cfg.num_envs if num_envs is None else num_envs
    b = min(cfg.batch_size if batch_size is None else batch_size, n)
    if cfg.env == TOY_ENV:
        return ToyVecEnv(
            n,
            b,
            obs_shape=_toy_shape(cfg),
            episode_length=TOY_EPISODE_LENGTH,
            seed=seed,
            **cfg.options(),
        )
    return gym.make_vec(
        cfg.env,
        num_envs=n,
        batch_size=b,
        num_workers=max(1, min(cfg.num_workers, n // agents_per_game(cfg))),
        **_doom_options(cfg),
    )


def agents_per_game(cfg: EnvConfig) -> int:
    """Rows one game gives the vector env: its learning agents (``sf/DoomDuel-v0``: 2, played
    by the one policy, i.e. self-play), else 1. Env counts are multiples of it."""
    _check_id(cfg.env)
    if cfg.env == TOY_ENV:
        return 1
    from sf_envs.match.scenarios import MATCH_SCENARIOS, MatchConfig

    scenario = gym.spec(cfg.env).kwargs.get("scenario")
    if scenario not in MATCH_SCENARIOS:
        return 1
    return MatchConfig.create(scenario, **cfg.options()).num_agents


def make_single_env(cfg: EnvConfig, render_mode: str | None = "rgb_array") -> gym.Env:
    """One env with the same observations as training, rendering full-size frames.

    Raises:
        ValueError: For a game of several learning agents: use :func:`make_match_env`.
    """
    _check_id(cfg.env)
    if agents_per_game(cfg) > 1:
        raise ValueError(f"{cfg.env} has several agents per game: use make_match_env")
    if cfg.env == TOY_ENV:
        return ToyEnv(_toy_shape(cfg), TOY_EPISODE_LENGTH, render_mode=render_mode)
    return gym.make(cfg.env, render_mode=render_mode, **_doom_options(cfg))


def make_match_env(cfg: EnvConfig, render_mode: str | None = "rgb_array") -> Any:
    """The PettingZoo match behind a self-play id (``sf/DoomDuel-v0``), with the training
    observations; it renders ``player_0``'s view."""
    import sf_envs

    scenario = gym.spec(cfg.env).kwargs["scenario"]
    return sf_envs.make_match(scenario, render_mode=render_mode, **_doom_options(cfg))


def frames_per_step(cfg: EnvConfig) -> int:
    """Env frames per agent step: Doom counts game tics (``frame_skip``), the toy env steps."""
    return 1 if cfg.env == TOY_ENV else cfg.frame_skip


def game_variable_names(venv: AsyncVectorEnv) -> tuple[str, ...]:
    """Names of the columns of ``info["final_info"]["variables"]`` (lower case), or ``()``.

    The engine reports game variables as one array; sf-envs keeps the names beside it.
    """
    return tuple(str(n).lower() for n in getattr(venv, "variable_names", ()))
