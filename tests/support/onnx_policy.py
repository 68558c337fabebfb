"""What the export tests share: an exported policy stepped beside the torch policy it came from,
and a run folder holding an untrained checkpoint (for runs too slow to train in a test)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

from sf_train.config.schema import Config, save_config
from sf_train.envs import make_env, make_single_env
from sf_train.evaluation import load_policy
from sf_train.model.network import ActorCritic
from sf_train.run.folder import CONFIG_FILE, checkpoints_of
from sf_train.sampling.acting import PolicyRunner

__all__ = ["Divergence", "step_side_by_side", "untrained_run"]


@dataclasses.dataclass
class Divergence:
    """The largest absolute differences between ONNX Runtime's outputs and torch's."""

    logits: float = 0.0
    values: float = 0.0
    rnn_state: float = 0.0
    episode_ends: int = 0
    """Episode ends met on the way (each zeroes that env's state on both sides)."""


def step_side_by_side(cfg: Config, onnx_file: Path, steps: int, num_envs: int = 4) -> Divergence:
    """Plays ``steps`` synchronous steps of ``num_envs`` envs of the run's env with the torch
    policy of the run's latest checkpoint, acting as the sampler acts
    (:class:`PolicyRunner`, its states zeroed where an episode ended), and feeds the same
    observations to ``onnx_file``, whose states are carried here from its own outputs."""
    session = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    venv = make_env(cfg.env, num_envs=num_envs, batch_size=num_envs)
    out = Divergence()
    try:
        spaces_ = (venv.single_observation_space, venv.single_action_space)
        model, _ = load_policy(cfg.run.run_dir, *spaces_)
        runner = PolicyRunner(model, num_envs, "cpu", torch.Generator().manual_seed(0))
        state = np.zeros((num_envs, model.rnn_size), np.float32)
        venv.async_reset(seed=0)
        for _ in range(steps):
            obs, _, terminated, truncated, info = venv.recv()
            ids = np.asarray(info["env_id"]).astype(np.int64)
            ended = ids[np.logical_or(terminated, truncated)]
            runner.reset(ended)
            state[ended] = 0.0
            out.episode_ends += len(ended)
            feed = dict(obs) if isinstance(obs, dict) else {"screen": obs}
            if model.rnn is not None:
                feed["rnn_state"] = state[ids]
            got = dict(zip(names, session.run(names, feed), strict=True))
            logits = _logits(model, runner, obs, ids)
            decision = runner.decide(obs, ids)  # advances the runner's states
            out.logits = max(out.logits, _gap(got["logits"], logits))
            out.values = max(out.values, _gap(got["values"], decision.values))
            if model.rnn is not None:
                out.rnn_state = max(
                    out.rnn_state, _gap(got["new_rnn_state"], runner.rnn_state[ids])
                )
                state[ids] = got["new_rnn_state"]
            venv.send(decision.actions.numpy(), ids)
    finally:
        venv.close()
    return out


def _logits(model: ActorCritic, runner: PolicyRunner, obs, ids: np.ndarray) -> torch.Tensor:
    """The logits the runner is about to choose from (its decisions keep only the actions)."""
    tensors = (
        {k: torch.as_tensor(v) for k, v in obs.items()}
        if isinstance(obs, dict)
        else torch.as_tensor(obs)
    )
    with torch.no_grad():
        return model(tensors, runner.rnn_state[torch.from_numpy(ids)]).logits


def _gap(a: np.ndarray, b: torch.Tensor) -> float:
    return float(np.abs(a - b.numpy()).max())


def untrained_run(cfg: Config) -> Path:
    """Writes a run folder for ``cfg`` whose one checkpoint is a freshly initialised model
    (made for the spaces of one env of ``cfg``); returns the folder."""
    run_dir = Path(cfg.run.run_dir)
    save_config(cfg, run_dir / CONFIG_FILE)
    env = make_single_env(cfg.env, render_mode=None)
    try:
        model = ActorCritic(env.observation_space, env.action_space, cfg.model)
    finally:
        env.close()
    checkpoints_of(run_dir).save({"model": model.state_dict()}, frames=0, mean_return=None)
    return run_dir
