"""Typed trainer configuration: dataclasses, validation and JSON persistence.

The defaults are for CPU training of ``sf/DoomBasic-v0`` on a 2-core machine: a small
network, two env workers (``docs/benchmarks/training.md`` gives the measurements behind each default).
The ``sample-factory`` preset (:mod:`sf_train.config.presets`) gives Sample Factory's larger model and
its settings.

Each field's docstring is its ``--help`` text (see :mod:`sf_train.config.arguments`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "AlgoConfig",
    "Config",
    "ConfigError",
    "EnvConfig",
    "ModelConfig",
    "RunConfig",
    "config_from_dict",
    "config_to_dict",
    "load_config",
    "save_config",
    "shaping_weights",
    "validate",
    "write_atomic",
]


class ConfigError(ValueError):
    """One or more invalid configuration fields; ``errors`` lists each problem and its fix."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        lines = "\n".join(f"  - {e}" for e in errors)
        super().__init__(f"{len(errors)} invalid configuration value(s):\n{lines}")


@dataclass
class EnvConfig:
    """Which environment to train on and how the vector engine runs it."""

    env: str = "sf/DoomBasic-v0"
    """Gymnasium id of the environment, e.g. a registered sf-envs Doom scenario, or MODULE:ID
    for an id that MODULE registers when imported (with a vector entry point)."""
    num_envs: int = 16
    """Number of environments stepped in parallel; also the number of trajectories per batch."""
    batch_size: int = 8
    """Envs returned per recv(); half of num_envs double-buffers (half step while the policy
    infers on the other half), equal to num_envs is synchronous stepping."""
    num_workers: int = 2
    """Worker processes of the vector engine; the envs are split among them."""
    obs_size: tuple[int, int] = (64, 36)
    """Width and height in pixels that frames are resized to; smaller frames make the encoder
    cheaper and show less detail."""
    grayscale: bool = True
    """Convert frames to one gray channel, which gives the encoder a third of the input of RGB
    frames."""
    frame_skip: int = 4
    """Game tics per agent step (the action is repeated); frames are counted in tics."""
    env_options: tuple[str, ...] = ()
    """More keyword arguments of the env id, each KEY=VALUE with VALUE read as JSON when it
    parses (else as text); e.g. for sf/DoomDuelBots-v0: bot_skill=1 timelimit=1.0
    map=cig_map02. Errors in them are the env's own, raised when training starts."""
    worker_timeout: float | None = None
    """Seconds a vector worker may show no progress before it counts as hung and is restarted
    (its envs' unfinished trajectories are dropped); unset: the engine's default (60 s for
    sf-envs)."""
    worker_max_restarts: int | None = None
    """Restarts of one vector worker tolerated within 5 minutes before training stops with the
    worker's error; unset: the engine's default (3 for sf-envs)."""

    def options(self) -> dict[str, Any]:
        """:attr:`env_options` as keyword arguments."""
        options = {}
        for item in self.env_options:
            key, _, text = item.partition("=")
            try:
                options[key] = json.loads(text)
            except json.JSONDecodeError:
                options[key] = text
        return options


@dataclass
class ModelConfig:
    """The actor-critic network: conv encoder (or MLP for vectors), optional measurements MLP
    and GRU, two heads."""

    conv_channels: tuple[int, ...] = (16, 32)
    """Output channels of each conv layer (ELU after each), one entry per layer."""
    conv_kernels: tuple[int, ...] = (8, 4)
    """Kernel size of each conv layer (same length as conv_channels)."""
    conv_strides: tuple[int, ...] = (4, 2)
    """Stride of each conv layer (same length as conv_channels); no padding is used."""
    fc_size: int = 256
    """Width of the fully connected layer after the conv stack."""
    measurements_size: int = 64
    """Width of the MLP over the measurements vector (used when observations have one)."""
    mlp_sizes: tuple[int, ...] = (64, 64)
    """Widths of the MLP (tanh after each layer) that encodes vector observations, the whole
    observation of envs such as CartPole (screens go through the conv stack instead)."""
    rnn: bool = False
    """Use a GRU core, so the policy can remember what has left the screen; it adds compute to
    every step, which scenarios that show everything on screen can do without."""
    rnn_size: int = 128
    """Hidden size of the GRU core."""
    screen_norm: Literal["scale", "running", "per_pixel"] = "scale"
    """How screens are normalised: 'scale' divides by 255; 'running' subtracts a running mean
    and divides by a running std (one scalar each, saved with the model); 'per_pixel' keeps
    that mean and std for every pixel of every channel (Sample Factory's input normalisation),
    so what never changes on screen fades to zero."""
    normalize_measurements: bool = True
    """Normalise measurements and vector observations with a running per-entry mean and std,
    saved with the model."""
    normalize_values: bool = False
    """The critic predicts values in units of a running mean and std of its V-trace targets
    (saved with the model) and learns in those units, so its loss has the same scale whatever
    a scenario pays; off, it learns the scaled rewards' values directly (see reward_scale)."""


@dataclass
class AlgoConfig:
    """APPO with V-trace: sampling length, loss and optimiser."""

    rollout: int = 32
    """Trajectory length T; also the GRU's backpropagation-through-time horizon."""
    gamma: float = 0.99
    """Discount factor."""
    reward_scale: float = 0.01
    """Rewards are multiplied by this before learning (logged returns stay raw); scale rewards
    of hundreds, like ViZDoom's +100 a kill in basic, to about 1, so that the value loss does
    not swamp the policy's gradient."""
    reward_clip: float = 0.0
    """Rewards are clipped to [-reward_clip, reward_clip] before scaling, so that every point
    weighs alike whatever a game pays (Atari's standard training signal, with 1); 0 leaves them
    as they are. Logged returns stay raw."""
    life_loss_ends: bool = False
    """A lost life ends the episode for learning (no value bootstrapped across it, the
    recurrent memory reset) while the game and the return reported for it go on to the last
    life; needs an env with a 'lives' game variable (the sf/Atari ids)."""
    learning_rate: float = 1e-3
    """Adam learning rate, where lr_schedule starts."""
    lr_schedule: Literal["constant", "linear", "kl_adaptive"] = "linear"
    """Learning-rate schedule: 'linear' decays it to 0 at the last frame (run.frames);
    'constant' keeps it; 'kl_adaptive' divides it by 1.5 when a step's KL exceeds 2 x target_kl
    and multiplies it by 1.5 when the KL is under target_kl / 2."""
    target_kl: float = 0.01
    """KL divergence per optimiser step that the 'kl_adaptive' schedule aims for."""
    adam_eps: float = 1e-6
    """Adam epsilon."""
    num_epochs: int = 3
    """Passes over each batch; more than 1 reuses each sample, at the cost of policy lag."""
    num_minibatches: int = 4
    """Minibatches per epoch, split along envs so each keeps whole trajectories; must divide
    num_envs."""
    clip_ratio: float = 0.1
    """PPO clipping epsilon: the probability ratio is clipped to [1 - eps, 1 + eps]."""
    value_clip: float | None = None
    """Clip the value prediction to within this distance of its sampling-time value; unset
    disables value clipping."""
    value_coef: float = 0.5
    """Weight of the value loss."""
    entropy_coef: float = 0.001
    """Weight of the exploration term (see exploration); higher values keep the policy more
    random."""
    exploration: Literal["entropy", "uniform_kl"] = "entropy"
    """The exploration term: 'entropy', a bonus on the policy's entropy; or 'uniform_kl', a
    penalty on its symmetric KL divergence from the uniform policy, which (unlike the
    entropy's pull) grows without bound as any action becomes impossible."""
    max_grad_norm: float = 4.0
    """Clip the global gradient norm to this value."""
    rho_bar: float = 1.0
    """V-trace importance-weight truncation; inf disables it."""
    c_bar: float = 1.0
    """V-trace trace-coefficient truncation; inf disables it."""
    trace_lambda: float = 1.0
    """V-trace's lambda (the IMPALA paper's remark 2): trace coefficients are multiplied by it,
    so on-policy targets are lambda-returns as in GAE; lower values trade the returns' variance
    for reliance on the critic, 1 keeps whole-trajectory returns."""
    max_policy_lag: int = 100
    """Samples produced more than this many policy versions ago are excluded from the loss."""
    normalize_advantages: bool = True
    """Standardise advantages (see advantage_stats)."""
    advantage_stats: Literal["minibatch", "running"] = "minibatch"
    """The statistics advantages are standardised by: each minibatch's own, or means over
    about the last 100 minibatches ('running'), which keep the many minibatches of a
    sparse-reward task that hold no reward from turning the critic's noise into full-size
    updates."""
    opponent_pool: int = 0
    """Self-play envs (sf/DoomDuel-v0) only. 0: one policy plays every agent of a match and
    learns from all of them. N > 0: the first agent of every match learns, the others are
    played by a frozen opponent, a past self drawn uniformly from the last N frozen copies of
    the policy, so that it cannot merely cycle between strategies that beat its current self."""
    opponent_snapshot_every: int = 500
    """With opponent_pool: policy versions (optimiser steps) between two frozen copies added to
    the pool; each also draws the opponent anew. (The name keeps its first word, as saved
    configs do.)"""
    precision: Literal["float32", "bfloat16", "int8"] = "float32"
    """Precision of the network's convolutions and matrix products. 'bfloat16' keeps the
    sampler's copy of the weights in bfloat16 and runs the learner's passes under torch.autocast
    (weights, Adam's state, losses and V-trace stay float32); it is faster only on hardware with
    bfloat16 units. 'int8' (CPU, one policy) learns in float32 and acts with the FC layer and
    GRU quantized to int8 (see sf_train.model.int8). Log-probabilities are recorded from the policy
    that acted, so V-trace corrects for the rounding as for any policy lag."""
    value_bootstrap: bool = True
    """Where a time limit truncates an episode, bootstrap its last step from the value of the
    final observation (Pardo et al. 2018, "Time Limits in Reinforcement Learning") instead of
    treating the cut as a termination; real terminations are never bootstrapped."""
    num_policies: int = 1
    """Policies trained together on the same envs, each with its own model, optimiser,
    hyperparameters and batches of num_envs / num_policies trajectories; every game's seats go
    to policies drawn anew at each episode start. Each policy's checkpoints go to a run folder
    of its own (RUN_DIR/p0, p1, ...); 1 trains one policy in RUN_DIR."""
    shaping: tuple[str, ...] = ()
    """Reward shaping added to the env's reward, as VARIABLE=WEIGHT items over the env's game
    variables (their change each step), e.g. frags=1 deaths=-0.5 damage_dealt=0.01 on
    sf/DoomDuel-v0. Every policy starts with these weights; sf-league's population training
    mutates them per policy. Returns are logged without it (charts/shaping_return shows it)."""

    def __post_init__(self) -> None:
        # Former spellings of match events (frag, death, hit, damage) still load, from the
        # command line or an older run's config.json, with a warning naming the new one.
        if self.shaping and all(isinstance(item, str) for item in self.shaping):
            from sf_envs.match.rewards import current_event_names

            items = [item.partition("=") for item in self.shaping]
            names = current_event_names([name for name, _, _ in items], "algo.shaping")
            self.shaping = tuple(
                name + eq + weight for name, (_, eq, weight) in zip(names, items, strict=True)
            )


@dataclass
class RunConfig:
    """Where the run lives, how long it lasts and where it computes."""

    run_dir: str = "runs/default"
    """Folder of the run: config.json, checkpoints and TensorBoard events."""
    frames: int = 1_000_000
    """Environment frames (agent steps x frame_skip) to train for."""
    seconds: float = 0.0
    """Also stop after this many seconds of this session's training (0: no time limit); the
    learning-rate schedule then advances with whichever of frames and seconds runs out first."""
    device: str = "auto"
    """'auto' (CUDA when present, else CPU), 'cpu', 'cuda' or 'cuda:N'."""
    seed: int = 0
    """Seed for the envs, the weights and the action sampling."""
    torch_threads: int = 0
    """Threads for torch's CPU kernels, in each of the sampler and the learner thread; 0 picks
    1, so that torch's threads leave the cores to the env workers."""
    num_samplers: int = 0
    """Sampler processes, each acting for its share of the envs and workers with its own copy
    of the weights, into batches in shared memory; 1 acts from the trainer's main thread. 0
    picks one per 8 cores (at least 1) for an asynchronous run of one policy, else 1."""
    sync: bool = False
    """Synchronous mode: step all envs together (batch_size is ignored), then learn, so every
    batch comes from the policy that learns from it (PPO as CleanRL runs it, no policy lag);
    slower where envs could step while the learner works, and the plainest mode to debug."""
    checkpoint_every: int = 200_000
    """Frames between checkpoints (one is also written at the end of training)."""
    checkpoint_seconds: float = 0.0
    """Also write a checkpoint every this many seconds of wall time (0: only by frames); for
    learning curves against wall time, with keep_checkpoints large enough to keep them."""
    keep_checkpoints: int = 3
    """How many of the latest checkpoints to keep; best.pt (best evaluation) is kept too."""
    eval_episodes: int = 100
    """Episodes of the unbiased evaluation of each checkpoint as it is written (every env an
    equal share, seeds apart from training's); its mean return picks best.pt and is logged
    under eval/. 0 skips it, and best.pt then follows the training return. Sampling waits
    while it runs, for a time that grows with episode length, so long matches call for fewer
    episodes."""
    eval_share: float = 0.1
    """The largest share of the run's wall time that evaluating checkpoints may take: a
    checkpoint is evaluated only while the evaluations so far plus this one (priced by the
    training episodes' length) fit in this share of the time since training started, and leave
    room for a full final one in the share of the whole run, so runs whose episodes are long
    evaluate less often. A checkpoint not evaluated is kept but cannot become best.pt. The
    final checkpoint is always evaluated, over fewer episodes (whole rounds of the envs, at
    least one) when eval_episodes would not fit. 1 evaluates every checkpoint in full."""
    eval_greedy: bool = False
    """Evaluate the most likely action instead of sampling: best.pt is then the best greedy
    policy, and sf-train eval and enjoy play greedily unless told otherwise."""
    wandb: bool = False
    """Also log to Weights & Biases what goes to TensorBoard (same tags, steps in frames), the
    config and each checkpoint evaluation's summary; the usual WANDB_* environment variables
    apply (WANDB_PROJECT, WANDB_MODE=offline...). Needs pip install 'sf-train[wandb]'."""


@dataclass
class Config:
    """Everything a training run needs; saved as config.json in the run folder."""

    env: EnvConfig = field(default_factory=EnvConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    run: RunConfig = field(default_factory=RunConfig)


def _conv_output_size(size: int, kernels: tuple[int, ...], strides: tuple[int, ...]) -> int:
    for k, s in zip(kernels, strides, strict=True):
        size = (size - k) // s + 1
    return size


def _validate_env(c: EnvConfig, errors: list[str]) -> None:
    if c.num_envs < 1:
        errors.append(f"env.num_envs={c.num_envs}: use at least 1")
    if not 1 <= c.batch_size <= max(c.num_envs, 1):
        errors.append(
            f"env.batch_size={c.batch_size}: use 1..num_envs ({c.num_envs}); "
            "num_envs / 2 double-buffers"
        )
    if not 1 <= c.num_workers <= max(c.num_envs, 1):
        errors.append(f"env.num_workers={c.num_workers}: use 1..num_envs ({c.num_envs})")
    if len(c.obs_size) != 2 or min(c.obs_size) < 1:
        errors.append(f"env.obs_size={c.obs_size}: give positive WIDTH HEIGHT, e.g. 64 36")
    if c.frame_skip < 1:
        errors.append(f"env.frame_skip={c.frame_skip}: use at least 1")
    if c.worker_timeout is not None and not c.worker_timeout > 0:
        errors.append(f"env.worker_timeout={c.worker_timeout}: use a positive number of seconds")
    if c.worker_max_restarts is not None and c.worker_max_restarts < 0:
        errors.append(f"env.worker_max_restarts={c.worker_max_restarts}: use 0 or more")
    # Keyword arguments that sf-train sets itself, and the flag that sets each.
    reserved = {
        key: key
        for key in ("frame_skip", "obs_size", "grayscale", "num_envs", "batch_size", "num_workers")
    }
    reserved |= {"step_timeout_s": "worker_timeout", "max_restarts": "worker_max_restarts"}
    for item in c.env_options:
        key = item.partition("=")[0]
        if "=" not in item or not key.isidentifier():
            errors.append(f"env.env_options: {item!r} is not KEY=VALUE, e.g. bot_skill=1")
        elif key in reserved:
            flag = reserved[key].replace("_", "-")
            errors.append(f"env.env_options: {key} has its own flag, --{flag}")


def _validate_model(c: ModelConfig, env: EnvConfig, errors: list[str]) -> None:
    lengths = {len(c.conv_channels), len(c.conv_kernels), len(c.conv_strides)}
    if len(lengths) != 1 or 0 in lengths:
        errors.append(
            f"model.conv_channels/conv_kernels/conv_strides have lengths "
            f"{len(c.conv_channels)}/{len(c.conv_kernels)}/{len(c.conv_strides)}: give one "
            "entry per conv layer in each (at least one layer)"
        )
    elif min(c.conv_channels + c.conv_kernels + c.conv_strides) < 1:
        errors.append("model.conv_channels/conv_kernels/conv_strides: all entries must be >= 1")
    elif len(env.obs_size) == 2 and min(env.obs_size) >= 1:
        out = [_conv_output_size(s, c.conv_kernels, c.conv_strides) for s in env.obs_size]
        if min(out) < 1:
            errors.append(
                f"model.conv_kernels={c.conv_kernels} with conv_strides={c.conv_strides} shrink "
                f"env.obs_size={env.obs_size} to nothing: use smaller kernels/strides, fewer "
                "layers or a larger obs_size"
            )
    for name in ("fc_size", "measurements_size", "rnn_size"):
        if getattr(c, name) < 1:
            errors.append(f"model.{name}={getattr(c, name)}: use at least 1")


def _validate_algo(c: AlgoConfig, env: EnvConfig, errors: list[str]) -> None:
    if c.rollout < 1:
        errors.append(f"algo.rollout={c.rollout}: use at least 1 (32 is typical)")
    if not 0.0 < c.gamma <= 1.0:
        errors.append(f"algo.gamma={c.gamma}: use a value in (0, 1], e.g. 0.99")
    if not c.reward_scale > 0:
        errors.append(f"algo.reward_scale={c.reward_scale}: use a positive value, e.g. 0.01")
    if not c.reward_clip >= 0:
        errors.append(f"algo.reward_clip={c.reward_clip}: use 0 (no clipping) or a positive bound")
    if not c.learning_rate > 0:
        errors.append(f"algo.learning_rate={c.learning_rate}: use a positive value, e.g. 3e-4")
    if not c.target_kl > 0:
        errors.append(f"algo.target_kl={c.target_kl}: use a positive value, e.g. 0.01")
    if not c.adam_eps > 0:
        errors.append(f"algo.adam_eps={c.adam_eps}: use a positive value, e.g. 1e-6")
    if c.num_epochs < 1:
        errors.append(f"algo.num_epochs={c.num_epochs}: use at least 1")
    if c.num_policies < 1 or env.num_envs % c.num_policies:
        errors.append(
            f"algo.num_policies={c.num_policies}: use a divisor of env.num_envs ({env.num_envs}), "
            "each policy's batches hold num_envs / num_policies trajectories"
        )
    elif c.num_minibatches < 1 or (env.num_envs // c.num_policies) % c.num_minibatches:
        errors.append(
            f"algo.num_minibatches={c.num_minibatches}: use a divisor of env.num_envs "
            f"({env.num_envs}) / num_policies ({c.num_policies}), minibatches are split along "
            "envs"
        )
    if c.num_policies > 1 and c.precision == "int8":
        errors.append(
            f"algo.precision='int8' with num_policies={c.num_policies}: a population acts in "
            "one stacked float32 pass; use --precision float32 (or train one policy)"
        )
    if c.num_policies > 1 and c.opponent_pool:
        errors.append(
            f"algo.opponent_pool={c.opponent_pool} with num_policies={c.num_policies}: a "
            "population plays itself; drop --opponent-pool (or train one policy)"
        )
    for item in c.shaping:
        name, _, weight = item.partition("=")
        if not name.isidentifier() or not _is_float(weight):
            errors.append(
                f"algo.shaping: {item!r} is not VARIABLE=WEIGHT, e.g. frags=1 or deaths=-0.5"
            )
    if not 0.0 < c.clip_ratio < 1.0:
        errors.append(f"algo.clip_ratio={c.clip_ratio}: use a value in (0, 1), e.g. 0.1")
    if c.value_clip is not None and not c.value_clip > 0:
        errors.append(f"algo.value_clip={c.value_clip}: use a positive value or leave it unset")
    for name in ("value_coef", "entropy_coef"):
        if not getattr(c, name) >= 0:
            errors.append(f"algo.{name}={getattr(c, name)}: use a value >= 0")
    for name in ("max_grad_norm", "rho_bar", "c_bar"):
        if not getattr(c, name) > 0:
            errors.append(f"algo.{name}={getattr(c, name)}: use a positive value (inf allowed)")
    if not 0.0 < c.trace_lambda <= 1.0:
        errors.append(f"algo.trace_lambda={c.trace_lambda}: use a value in (0, 1], e.g. 0.95")
    if c.opponent_pool < 0:
        errors.append(f"algo.opponent_pool={c.opponent_pool}: use 0 (pure self-play) or more")
    if c.opponent_snapshot_every < 1:
        errors.append(
            f"algo.opponent_snapshot_every={c.opponent_snapshot_every}: use at least 1 (500 is "
            "typical)"
        )
    if c.max_policy_lag < 0:
        errors.append(f"algo.max_policy_lag={c.max_policy_lag}: use a value >= 0")


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def shaping_weights(cfg: AlgoConfig) -> dict[str, float]:
    """``cfg.shaping`` as ``{variable: weight}``."""
    return {
        name: float(weight) for name, _, weight in (item.partition("=") for item in cfg.shaping)
    }


def _validate_run(c: RunConfig, errors: list[str]) -> None:
    if not c.run_dir:
        errors.append("run.run_dir is empty: name a folder for the run, e.g. runs/basic")
    if c.frames < 1:
        errors.append(f"run.frames={c.frames}: use a positive number of frames")
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", c.device):
        errors.append(f"run.device={c.device!r}: use 'auto', 'cpu', 'cuda' or 'cuda:N'")
    if c.checkpoint_seconds < 0:
        errors.append(f"run.checkpoint_seconds={c.checkpoint_seconds}: use 0 (off) or more")
    if c.seconds < 0:
        errors.append(f"run.seconds={c.seconds}: use 0 (no time limit) or more")
    if c.eval_episodes < 0:
        errors.append(f"run.eval_episodes={c.eval_episodes}: use 0 (no evaluation) or more")
    if not 0 < c.eval_share <= 1:
        errors.append(f"run.eval_share={c.eval_share}: use a share in (0, 1]; 1 evaluates always")
    if c.torch_threads < 0:
        errors.append(f"run.torch_threads={c.torch_threads}: use 0 (automatic) or more")
    if c.num_samplers < 0:
        errors.append(f"run.num_samplers={c.num_samplers}: use 0 (one per 8 cores) or more")
    if c.checkpoint_every < 1:
        errors.append(f"run.checkpoint_every={c.checkpoint_every}: use a positive frame count")
    if c.keep_checkpoints < 1:
        errors.append(f"run.keep_checkpoints={c.keep_checkpoints}: keep at least 1")


def validate(cfg: Config) -> None:
    """Checks every field and reports all problems at once.

    Raises:
        ConfigError: Listing each invalid field, its value and how to fix it.
    """
    errors: list[str] = []
    _validate_env(cfg.env, errors)
    _validate_model(cfg.model, cfg.env, errors)
    _validate_algo(cfg.algo, cfg.env, errors)
    if cfg.algo.advantage_stats == "running" and not cfg.algo.normalize_advantages:
        errors.append(
            "algo.advantage_stats='running' with normalize_advantages off: the running "
            "statistics standardise advantages; use --normalize-advantages or drop "
            "--advantage-stats"
        )
    _validate_run(cfg.run, errors)
    if errors:
        raise ConfigError(errors)


def config_to_dict(cfg: Config) -> dict[str, Any]:
    """The config as plain JSON-ready data (tuples become lists)."""
    return dataclasses.asdict(cfg)


def _coerce(value: Any, tp: Any, where: str, errors: list[str]) -> Any:
    """Converts a JSON value to the annotated type, recording a type error when impossible."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (tp,) = [a for a in args if a is not type(None)]
        return _coerce(value, tp, where, errors)
    if origin is Literal:
        if value not in args:
            errors.append(f"{where}={value!r}: use one of {', '.join(map(repr, args))}")
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):
            errors.append(f"{where}={value!r}: expected a list")
            return value
        item_types = [args[0]] * len(value) if args[-1] is Ellipsis else list(args)
        if len(item_types) != len(value):
            errors.append(f"{where}={value!r}: expected {len(item_types)} entries")
            return tuple(value)
        return tuple(_coerce(v, t, where, errors) for v, t in zip(value, item_types, strict=True))
    if tp is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if tp in (int, str, bool) and type(value) is tp:
        return value
    errors.append(f"{where}={value!r}: expected {tp.__name__}")
    return value


def config_from_dict(data: dict[str, Any]) -> Config:
    """Builds a config from :func:`config_to_dict` output; missing fields keep their defaults.

    Raises:
        ConfigError: Listing unknown sections or fields and values of the wrong type.
    """
    errors: list[str] = []
    sections = {}
    hints = typing.get_type_hints(Config)
    for key in data.keys() - hints.keys():
        errors.append(f"unknown section {key!r}: use one of {', '.join(hints)}")
    for name, section_type in hints.items():
        raw = data.get(name, {})
        field_types = typing.get_type_hints(section_type)
        for key in raw.keys() - field_types.keys():
            errors.append(f"unknown field {name}.{key}: remove it or check its spelling")
        values = {
            key: _coerce(raw[key], tp, f"{name}.{key}", errors)
            for key, tp in field_types.items()
            if key in raw
        }
        sections[name] = section_type(**values)
    if errors:
        raise ConfigError(errors)
    return Config(**sections)


def save_config(cfg: Config, path: str | os.PathLike[str]) -> None:
    """Writes the config as JSON atomically (see :func:`write_atomic`)."""
    write_atomic(path, json.dumps(config_to_dict(cfg), indent=2, allow_nan=True) + "\n")


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Writes ``text`` to ``path`` through a temp file and a rename, so a crash never leaves a
    half-written file behind (the old one stays until the new one is complete)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; these files are for everyone to read
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_config(path: str | os.PathLike[str]) -> Config:
    """Reads a config written by :func:`save_config` and validates it.

    Raises:
        ConfigError: If the file holds unknown or invalid fields.
    """
    cfg = config_from_dict(json.loads(Path(path).read_text()))
    validate(cfg)
    return cfg
