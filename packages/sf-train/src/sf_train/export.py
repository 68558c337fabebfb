"""A run's acting policy as one ONNX file, which ONNX Runtime plays without torch or sf-train.

A policy deployed outside training (a game client, another language, a machine without
torch) needs the network and nothing else, so everything acting needs goes into the file:

- The input normalisation: the model's running statistics of screens (``screen_norm``) and
  measurements, as constants of the graph, so the file takes observations as the env gives
  them.
- The recurrent state as an explicit input and output, so the caller keeps one state per
  env and zeroes it when that env's episode ends, as
  :class:`~sf_train.sampling.acting.PolicyRunner` does. A run without GRU has no state at
  all: neither input nor output (rather than a ``[B, 0]`` tensor, which some runtimes reject).
- In ``metadata_props``, what makes the env it was trained on and decodes the logits into
  actions, each value JSON text: ``sf.env_id`` (the gymnasium id), ``sf.env_kwargs`` (its
  keyword arguments, :func:`sf_train.envs.env_kwargs`), ``sf.action_nvec`` (choices of each
  sub-action: ``logits`` holds one group of that many per sub-action), ``sf.action_starts``
  (the space's ``start`` of each), ``sf.greedy`` (whether the run evaluated its most likely
  actions, ``run.eval_greedy``) and ``sf.checkpoint`` (where the weights come from).

The graph, for a batch of ``B`` envs:

- inputs: ``screen``, uint8 ``[B, C, H, W]`` (``vector``, ``[B, D]`` in the env's dtype, for
  a model of vector observations); for Dict observations one input per key the model reads,
  named after it and typed as the env gives it (Doom's: ``screen`` and ``measurements``,
  float32 ``[B, M]``), the screen first; ``rnn_state``, float32 ``[B, rnn_size]``, with a GRU.
- outputs: ``logits``, float32 ``[B, sum(nvec)]``; ``values``, float32 ``[B]``;
  ``new_rnn_state``, float32 ``[B, rnn_size]``, with a GRU.

The onnx and onnxruntime packages are the optional extra ``sf-train[onnx]``, imported only here.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor, nn

from sf_envs.errors import OptionError
from sf_train.config.schema import Config
from sf_train.envs import agents_per_game, env_kwargs, make_match_env, make_single_env
from sf_train.model.distributions import ActionDistribution
from sf_train.model.network import ActorCritic, Obs
from sf_train.run.checkpoint import load_checkpoint
from sf_train.run.folder import find_checkpoint, load_run_config

__all__ = ["export_onnx"]

OPSET = 17
"""ONNX opset of the graph: one that every ONNX Runtime since 1.14 runs."""


class _ActingGraph(nn.Module):
    """:meth:`ActorCritic.forward` over the graph's inputs in order (the observation's, then
    the state if it has a GRU), as the exporter traces it."""

    def __init__(self, model: ActorCritic) -> None:
        super().__init__()
        self.model = model

    def forward(self, *inputs: Tensor) -> tuple[Tensor, ...]:
        layout = self.model.layout
        obs: Obs = (
            dict(zip(_obs_names(self.model), inputs, strict=False)) if layout.keys else inputs[0]
        )
        recurrent = self.model.rnn is not None
        state = inputs[-1] if recurrent else self.model.initial_state(inputs[0].shape[0])
        out = self.model(obs, state)
        return (out.logits, out.values, out.rnn_state) if recurrent else (out.logits, out.values)


def _obs_names(model: ActorCritic) -> list[str]:
    """The graph's observation inputs: the screen's and the vectors' keys (a Box
    observation's: ``screen`` or ``vector``)."""
    layout = model.layout
    return [*([layout.screen] if layout.screen else []), *layout.vector]


def _io_names(model: ActorCritic) -> tuple[list[str], list[str]]:
    inputs = _obs_names(model)
    outputs = ["logits", "values"]
    if model.rnn is not None:
        inputs.append("rnn_state")
        outputs.append("new_rnn_state")
    return inputs, outputs


def _example_inputs(model: ActorCritic, observation_space: spaces.Space) -> tuple[Tensor, ...]:
    """A batch of two of one observation of the space (the graph's batch axis stays
    dynamic), and zero states."""
    obs = observation_space.sample()
    parts = [obs[k] for k in _obs_names(model)] if model.layout.keys else [obs]
    inputs = [torch.as_tensor(np.stack([part, part])) for part in parts]
    if model.rnn is not None:
        inputs.append(model.initial_state(2))
    return tuple(inputs)


def _env_spaces(cfg: Config) -> tuple[spaces.Space, spaces.Space]:
    """The observation and action spaces of one agent of the run's env."""
    if agents_per_game(cfg.env) > 1:
        match = make_match_env(cfg.env, render_mode=None)
        try:
            agent = match.possible_agents[0]
            return match.observation_space(agent), match.action_space(agent)
        finally:
            match.close()
    env = make_single_env(cfg.env, render_mode=None)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def _require_onnx() -> Any:
    try:
        import onnx
        import onnxruntime  # noqa: F401  (what plays the file; checked here, not at first use)
    except ImportError as e:
        raise OptionError(
            f"exporting to ONNX needs the onnx and onnxruntime packages ({e.name} is missing): "
            "pip install 'sf-train[onnx]'"
        ) from e
    return onnx


def export_onnx(
    run_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    checkpoint: str = "latest",
) -> Path:
    """Writes a run's acting policy as ONNX (the graph and metadata in the module docstring).

    The file is written to a temporary file beside ``out`` and renamed over it, so ``out`` is
    never half-written.

    Args:
        run_dir: The run folder.
        out: The ``.onnx`` file to write (its folder is created if needed).
        checkpoint: "latest", "best" or a checkpoint path.

    Returns:
        The path written.

    Raises:
        OptionError: If onnx or onnxruntime is not installed.
        RunFolderError: If ``run_dir`` is not a run folder.
        CheckpointError: If the checkpoint is missing or unreadable.
    """
    onnx = _require_onnx()
    cfg = load_run_config(run_dir)
    path = find_checkpoint(run_dir, checkpoint)
    state = load_checkpoint(path)
    observation_space, action_space = _env_spaces(cfg)
    model = ActorCritic(observation_space, action_space, cfg.model)
    model.load_state_dict(state["model"])
    model.eval()
    dist = model.action_dist
    if not isinstance(dist, ActionDistribution):
        raise ValueError(
            f"{cfg.env.env} has Box actions: the export writes the categorical heads of "
            "discrete actions only"
        )
    metadata = {
        "sf.env_id": cfg.env.env,
        "sf.env_kwargs": env_kwargs(cfg.env),
        "sf.action_nvec": dist.nvec,
        "sf.action_starts": dist.starts,
        "sf.greedy": cfg.run.eval_greedy,
        "sf.checkpoint": str(path),
    }
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.close(fd)
    try:
        _trace(model, _example_inputs(model, observation_space), Path(tmp))
        proto = onnx.load(tmp)
        for key, value in metadata.items():
            entry = proto.metadata_props.add()
            entry.key, entry.value = key, json.dumps(value)
        onnx.checker.check_model(proto)
        with open(tmp, "wb") as f:
            f.write(proto.SerializeToString())
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; an export is shared like any output
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


def _trace(model: ActorCritic, inputs: tuple[Tensor, ...], path: Path) -> None:
    """The graph of ``model``'s acting step, traced by torch's TorchScript exporter into
    ``path``. That exporter runs the eager forward as it is; the newer torch.export-based one
    needs onnxscript besides, which a policy this plain does not call for."""
    input_names, output_names = _io_names(model)
    with torch.no_grad(), warnings.catch_warnings():
        # The TorchScript exporter warns that it is deprecated on every call.
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            _ActingGraph(model),
            inputs,
            str(path),
            dynamo=False,
            input_names=input_names,
            output_names=output_names,
            dynamic_axes={name: {0: "batch"} for name in input_names + output_names},
            opset_version=OPSET,
        )
