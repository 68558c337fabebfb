"""The one place that turns an :class:`EnvConfig` into environments.

Any gymnasium id whose registration has a ``vector_entry_point`` with the engine's async
``send``/``recv`` face (:class:`~sf_train.sampling.protocols.AsyncVectorEnv`): the
``sf/Doom*-v0`` ids of sf-envs, or ``MODULE:ID``, which imports MODULE so that it registers
ID, as ``gymnasium.make`` does. Every env is given the same keyword arguments: ``frame_skip``, ``obs_size``,
``grayscale`` and the ``env_options``; frames are counted as agent steps x ``frame_skip``.
The vector env also gets ``step_timeout_s`` and ``max_restarts`` (the sf-envs engine's names)
when ``worker_timeout`` / ``worker_max_restarts`` are set.
"""

from __future__ import annotations

import importlib
from typing import Any, cast

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec

from sf_envs.errors import OptionError
from sf_train.config.schema import EnvConfig
from sf_train.sampling.protocols import AsyncVectorEnv

__all__ = [
    "agents_per_game",
    "env_kwargs",
    "env_spec",
    "game_variable_names",
    "make_env",
    "make_match_env",
    "make_single_env",
]


def env_kwargs(cfg: EnvConfig) -> dict[str, Any]:
    """The keyword arguments every env of ``cfg`` is made with (``frame_skip``, ``obs_size``,
    ``grayscale`` and the ``env_options``): an exported policy carries them, so that what
    plays it makes the env it was trained on."""
    return {
        **cfg.options(),
        "frame_skip": cfg.frame_skip,
        "obs_size": cfg.obs_size,
        "grayscale": cfg.grayscale,
    }


def env_spec(env_id: str) -> EnvSpec:
    """The registration of ``env_id``; ``MODULE:ID`` first imports MODULE (which registers ID).

    Raises:
        OptionError: If the id is not registered (or MODULE cannot be imported).
    """
    import sf_envs  # noqa: F401  (registers the sf/Doom*-v0 ids)

    module, _, name = env_id.rpartition(":")
    try:
        if module:
            importlib.import_module(module)
        return gym.spec(name)
    except (ImportError, gym.error.Error) as e:
        doom = sorted(k for k in gym.registry if k.startswith("sf/"))
        raise OptionError(
            f"unknown env {env_id!r} ({e}): use a registered gymnasium id, e.g. one of "
            f"{', '.join(doom)}, or MODULE:ID for an id that MODULE registers when imported"
        ) from e


def make_env(
    cfg: EnvConfig,
    num_envs: int | None = None,
    batch_size: int | None = None,
) -> AsyncVectorEnv:
    """The vector env with the async face that the sampler drives; ``async_reset`` seeds it.

    Args:
        cfg: Env id, sizes and engine settings.
        num_envs: Overrides ``cfg.num_envs`` (evaluation uses fewer).
        batch_size: Overrides ``cfg.batch_size``.

    Raises:
        OptionError: If the id is not registered (see :func:`env_spec`).
    """
    env_spec(cfg.env)
    n = cfg.num_envs if num_envs is None else num_envs
    b = min(cfg.batch_size if batch_size is None else batch_size, n)
    # Engine settings go only where set, so an env without workers need not accept them.
    engine: dict[str, Any] = {}
    if cfg.worker_timeout is not None:
        engine["step_timeout_s"] = cfg.worker_timeout
    if cfg.worker_max_restarts is not None:
        engine["max_restarts"] = cfg.worker_max_restarts
    venv = gym.make_vec(
        cfg.env,
        num_envs=n,
        batch_size=b,
        copy=False,  # the sampler consumes each batch before sending its actions
        num_workers=max(1, min(cfg.num_workers, n // agents_per_game(cfg))),
        **engine,
        **env_kwargs(cfg),
    )
    return cast(AsyncVectorEnv, venv)  # with batch_size, sf's vector entry point's engine


def agents_per_game(cfg: EnvConfig) -> int:
    """Rows one game gives the vector env: its learning agents (``sf/DoomDuel-v0``: 2, played
    by the one policy, i.e. self-play), else 1. Env counts are multiples of it."""
    from sf_envs.match.scenarios import MATCH_SCENARIOS, MatchConfig

    scenario = env_spec(cfg.env).kwargs.get("scenario")
    if scenario not in MATCH_SCENARIOS:
        return 1
    return MatchConfig.create(scenario, **cfg.options()).num_agents


def make_single_env(cfg: EnvConfig, render_mode: str | None = "rgb_array") -> gym.Env:
    """One env with the same observations as training, rendering full-size frames.

    Raises:
        ValueError: For a game of several learning agents: use :func:`make_match_env`.
    """
    if agents_per_game(cfg) > 1:
        raise ValueError(f"{cfg.env} has several agents per game: use make_match_env")
    return gym.make(cfg.env, render_mode=render_mode, **env_kwargs(cfg))


def make_match_env(cfg: EnvConfig, render_mode: str | None = "rgb_array") -> Any:
    """The PettingZoo match behind a self-play id (``sf/DoomDuel-v0``), with the training
    observations; it renders ``player_0``'s view."""
    import sf_envs

    scenario = env_spec(cfg.env).kwargs["scenario"]
    return sf_envs.make_match(scenario, render_mode=render_mode, **env_kwargs(cfg))


def game_variable_names(venv: object) -> tuple[str, ...]:
    """Names of the columns of ``info["final_info"]["variables"]`` (lower case), or ``()``.

    The engine reports game variables as one array; sf-envs keeps the names beside it.
    """
    return tuple(str(n).lower() for n in getattr(venv, "variable_names", ()))
