"""Evaluating a run's policy and recording it on video, from nothing but its run folder.

The folder's ``config.json`` rebuilds the envs and the network, and a checkpoint fills in the
weights and normalisers, so ``sf-train eval DIR`` and ``sf-train enjoy DIR`` need no flags.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from numpy.typing import ArrayLike

from sf_envs.errors import OptionError
from sf_train.config.schema import Config
from sf_train.envs import (
    agents_per_game,
    frames_per_step,
    game_variable_names,
    make_env,
    make_match_env,
    make_single_env,
)
from sf_train.model.device import resolve_device
from sf_train.model.network import ActorCritic
from sf_train.run.checkpoint import load_checkpoint
from sf_train.run.folder import find_checkpoint, load_run_config
from sf_train.sampling.acting import PolicyRunner, stack_obs
from sf_train.sampling.sampler import AsyncVectorEnv
from sf_train.scores import task_scores

__all__ = ["EvalResult", "evaluate", "evaluate_policy", "load_policy", "record_video"]


@dataclass
class EvalResult:
    """Per-episode outcomes of an evaluation.

    Attributes:
        checkpoint: The checkpoint evaluated (None for a model evaluated in memory).
        returns: Episode returns, ``[episodes]``.
        lengths: Episode lengths in agent steps, ``[episodes]``.
        truncated: Whether the time limit (not the game) ended each episode, ``[episodes]``.
        variables: Game variables at each episode's end by name (Doom: kills, hits, frags...).
        episodes_per_env: How many episodes each env played, ``[envs]``.
        greedy: Whether the policy took its most likely actions (else it sampled them).
        envs: The env that played each episode, ``[episodes]``.
    """

    checkpoint: Path | None
    returns: np.ndarray
    lengths: np.ndarray
    truncated: np.ndarray
    variables: dict[str, np.ndarray]
    episodes_per_env: np.ndarray
    greedy: bool
    envs: np.ndarray

    def summary(self) -> dict[str, Any]:
        """Means, standard deviations and medians (returns are often bimodal: a kill or a
        time-out), the share of time-outs and the episodes per env, as JSON-ready data; for
        the return also its interquartile mean and the 95% stratified bootstrap intervals of
        IQM and mean (:mod:`sf_train.scores`)."""
        stats = {"return": self.returns, "length": self.lengths, **self.variables}
        return {
            "checkpoint": None if self.checkpoint is None else str(self.checkpoint),
            "episodes": len(self.returns),
            "episodes_per_env": self.episodes_per_env.tolist(),
            "greedy": self.greedy,
            "timeout_fraction": float(np.mean(self.truncated)),
            **{f"{k}_mean": float(np.mean(v)) for k, v in stats.items()},
            **{f"{k}_std": float(np.std(v)) for k, v in stats.items()},
            **{f"{k}_median": float(np.median(v)) for k, v in stats.items()},
            **task_scores(self.returns),
        }


def load_policy(
    run_dir: str | os.PathLike[str],
    observation_space: spaces.Space,
    action_space: spaces.Space,
    checkpoint: str = "latest",
    device: torch.device | str = "cpu",
) -> tuple[ActorCritic, Path]:
    """The run's network with the weights of ``checkpoint`` ("latest", "best" or a path).

    Raises:
        RunFolderError: If ``run_dir`` has no valid ``config.json``.
        CheckpointError: If the checkpoint is missing or unreadable.
    """
    cfg = load_run_config(run_dir)
    path = find_checkpoint(run_dir, checkpoint)
    state = load_checkpoint(path)
    model = ActorCritic(observation_space, action_space, cfg.model).to(device)
    model.load_state_dict(state["model"])
    return model.eval(), path


def _device(cfg: Config, device: str | None) -> torch.device:
    return resolve_device(device or cfg.run.device)


def _plays_greedily(cfg: Config, greedy: bool | None) -> bool:
    """``greedy`` as asked, or else as the run evaluated its checkpoints (``run.eval_greedy``),
    so that a later evaluation plays the policy that ``best.pt`` was chosen for."""
    return cfg.run.eval_greedy if greedy is None else greedy


def evaluate(
    run_dir: str | os.PathLike[str],
    episodes: int,
    checkpoint: str = "latest",
    num_envs: int | None = None,
    device: str | None = None,
    greedy: bool | None = None,
    seed: int = 12345,
) -> EvalResult:
    """Plays ``episodes`` episodes with a checkpoint of the run, all envs stepping together.

    Each env plays an equal share of the episodes (not simply the first ones to finish,
    which would favour short episodes).

    Args:
        run_dir: The run folder.
        episodes: Episodes to play.
        checkpoint: "latest", "best" or a checkpoint path.
        num_envs: Envs in parallel; defaults to the run's ``num_envs`` (rounded up to whole
            games dealt evenly to the workers; envs beyond ``episodes`` play none).
        device: Overrides the run's device.
        greedy: Take the most likely action instead of sampling; by default as the run
            evaluated its checkpoints (``run.eval_greedy``).
        seed: Seed of the envs and the action sampling (unlike training's, by default).
    """
    cfg = load_run_config(run_dir)
    greedy = _plays_greedily(cfg, greedy)
    dev = _device(cfg, device)
    path = find_checkpoint(run_dir, checkpoint)

    def load(venv: AsyncVectorEnv) -> ActorCritic:
        spaces_ = (venv.single_observation_space, venv.single_action_space)
        return load_policy(run_dir, *spaces_, str(path), dev)[0]

    result = evaluate_policy(cfg, load, episodes, num_envs, dev, greedy, seed)
    return dataclasses.replace(result, checkpoint=path)


def evaluate_policy(
    cfg: Config,
    policy: ActorCritic | Callable[[AsyncVectorEnv], ActorCritic],
    episodes: int,
    num_envs: int | None = None,
    device: torch.device | str = "cpu",
    greedy: bool = False,
    seed: int = 12345,
) -> EvalResult:
    """Plays ``episodes`` episodes of ``cfg``'s env with ``policy`` (a model on ``device``, or
    a function that builds it for the vector env), every env an equal share. An episode that a
    worker's failure cut (``info["worker_restarted"]``) is no game's result: it does not count,
    and its env plays another.

    Raises:
        OptionError: If ``episodes`` < 1.
    """
    if episodes < 1:
        raise OptionError(f"episodes={episodes}: evaluate at least one episode")
    n = _eval_env_count(cfg, min(num_envs or cfg.env.num_envs, episodes))
    quota = np.full(n, episodes // n) + (np.arange(n) < episodes % n)
    venv = make_env(cfg.env, num_envs=n, batch_size=n)
    try:
        model = policy if isinstance(policy, ActorCritic) else policy(venv)
        names = game_variable_names(venv)
        done_count = np.zeros(n, dtype=np.int64)
        returns: list[float] = []
        played_by: list[int] = []
        lengths: list[int] = []
        cut: list[bool] = []
        variables: list[np.ndarray] = []
        generator = torch.Generator(device).manual_seed(seed)
        runner = PolicyRunner(model, n, device, generator, greedy)
        venv.async_reset(seed=seed)
        while (done_count < quota).any():
            obs, _, terminated, truncated, info = venv.recv()
            ids = np.asarray(info["env_id"]).astype(np.int64)
            ended = np.asarray(info["_episode_summary"], dtype=bool)
            if "worker_restarted" in info:  # cut by a worker's failure: no game's result
                ended = ended & ~np.asarray(info["worker_restarted"], dtype=bool)
            for row in np.flatnonzero(ended):
                e = ids[row]
                if done_count[e] < quota[e]:
                    done_count[e] += 1
                    returns.append(float(info["episode_summary"]["r"][row]))
                    played_by.append(int(e))
                    lengths.append(int(info["episode_summary"]["l"][row]))
                    cut.append(bool(truncated[row]) and not bool(terminated[row]))
                    final = info.get("final_info", {}).get("variables")
                    if final is not None and names:
                        # A copy: the row is a view of a buffer the next episode end overwrites.
                        variables.append(np.array(final[row], dtype=np.float64))
            runner.reset(ids[np.logical_or(terminated, truncated)])
            actions = runner.model.action_dist.for_env(runner.act(obs, ids))
            venv.send(actions.cpu().numpy(), ids)
    finally:
        venv.close()
    table = np.array(variables) if variables else np.zeros((0, len(names)))
    by_name = {name: table[:, j] for j, name in enumerate(names)} if len(table) else {}
    return EvalResult(
        None,
        np.array(returns),
        np.array(lengths),
        np.array(cut, bool),
        by_name,
        quota,
        greedy,
        np.array(played_by, dtype=np.int64),
    )


def _eval_env_count(cfg: Config, wanted: int) -> int:
    """``wanted`` envs rounded up to what the engine accepts in one synchronous batch: whole
    games, dealt evenly to the workers. Envs beyond the episode count play none."""
    agents = agents_per_game(cfg.env)  # the rows of one game step and end together
    games = -(-wanted // agents)
    workers = max(1, min(cfg.env.num_workers, games))
    return -(-games // workers) * workers * agents


def record_video(
    run_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    checkpoint: str = "latest",
    episodes: int = 1,
    greedy: bool | None = None,
    fps: float | None = None,
    seed: int = 0,
) -> tuple[Path, list[float]]:
    """Writes a GIF or MP4 (by ``out``'s suffix) of the policy playing full-size frames.

    A self-play run (``sf/DoomDuel-v0``) is filmed from ``player_0``'s view, with the policy
    playing every agent of the match. ``greedy`` defaults to how the run evaluated itself.

    Returns:
        The video path and the return of each recorded episode.

    Raises:
        OptionError: If the suffix is neither .gif nor .mp4, or MP4 lacks its ffmpeg backend.
    """
    import imageio.v2 as imageio

    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in (".gif", ".mp4"):
        raise OptionError(f"--out {out}: name a .gif or .mp4 file")
    if suffix == ".mp4":
        try:
            import imageio_ffmpeg  # noqa: F401
        except ImportError as e:
            raise OptionError(
                "writing .mp4 needs imageio-ffmpeg: pip install 'sf-train[video]' or write a .gif"
            ) from e
    cfg = load_run_config(run_dir)
    greedy = _plays_greedily(cfg, greedy)
    dev = _device(cfg, None)
    env: _OneAgent | _Match = (
        _Match(make_match_env(cfg.env))
        if agents_per_game(cfg.env) > 1
        else _OneAgent(make_single_env(cfg.env, render_mode="rgb_array"))
    )
    frames: list[ArrayLike] = []  # what imageio.mimwrite takes
    returns: list[float] = []
    try:
        model, _ = load_policy(run_dir, env.observation_space, env.action_space, checkpoint, dev)
        generator = torch.Generator(dev).manual_seed(seed)
        for episode in range(episodes):
            obs = env.reset(seed + episode)
            # One env id (memory) per agent: in self-play the policy plays every agent.
            env_id = {agent: k for k, agent in enumerate(obs)}
            runner = PolicyRunner(model, len(env_id), dev, generator, greedy)
            frames.append(env.render())
            total, ended = 0.0, False
            while not ended:
                ids = np.array([env_id[agent] for agent in obs])
                acted = runner.act(stack_obs(list(obs.values())), ids)
                chosen = runner.model.action_dist.for_env(acted).cpu().numpy()
                actions = {
                    a: _env_action(x, env.action_space) for a, x in zip(obs, chosen, strict=True)
                }
                obs, reward, ended = env.step(actions)
                total += reward
                frames.append(env.render())
            returns.append(total)
    finally:
        env.close()
    rate = fps or float(env.metadata.get("render_fps", 35)) / frames_per_step(cfg.env)
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".gif":
        imageio.mimwrite(out, frames, duration=1000.0 / rate, loop=0)
    else:
        imageio.mimwrite(out, frames, fps=rate, macro_block_size=1)
    return out, returns


class _OneAgent:
    """A gymnasium env in the terms of a match: observations and actions keyed by agent."""

    def __init__(self, env: gym.Env) -> None:
        self.env = env
        self.metadata = env.metadata
        self.observation_space, self.action_space = env.observation_space, env.action_space

    def reset(self, seed: int) -> dict[str, Any]:
        return {"agent": self.env.reset(seed=seed)[0]}

    def step(self, actions: dict[str, Any]) -> tuple[dict[str, Any], float, bool]:
        obs, reward, terminated, truncated, _ = self.env.step(actions["agent"])
        return {"agent": obs}, float(reward), bool(terminated or truncated)

    def render(self) -> np.ndarray:
        return cast(np.ndarray, self.env.render())  # made with render_mode="rgb_array"

    def close(self) -> None:
        self.env.close()


class _Match:
    """A PettingZoo match whose video and return are ``player_0``'s."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.metadata = env.metadata
        self.first = env.possible_agents[0]
        self.observation_space = env.observation_space(self.first)
        self.action_space = env.action_space(self.first)

    def reset(self, seed: int) -> dict[str, Any]:
        return self.env.reset(seed=seed)[0]

    def step(self, actions: dict[str, Any]) -> tuple[dict[str, Any], float, bool]:
        obs, rewards, terminated, truncated, _ = self.env.step(actions)
        ended = terminated[self.first] or truncated[self.first]
        return obs, float(rewards[self.first]), bool(ended)

    def render(self) -> np.ndarray:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def _env_action(a: np.ndarray, space: spaces.Space) -> Any:
    """One env's action (a row of the runner's) in the type its gymnasium space expects."""
    if isinstance(space, spaces.Discrete):
        return int(a)
    if isinstance(space, spaces.Tuple):
        return tuple(int(x) for x in a)
    return a
