"""Named starting configurations: ``sf-train train --preset NAME``; flags override them.

``sample-factory`` reproduces Sample Factory 2.1.1's Doom setup (its ``doom_basic`` defaults,
read from its ``cfg.py`` and ``doom_params.py``) in sf-train's terms, so that the two trainers
can be compared with the same model and observations (``benchmarks/peers/sample_factory.py``):
its per-pixel input normalisation, its symmetric KL to the uniform policy as the exploration
term, critic targets in units of their running std, lambda 0.95, a constant learning rate.
Where the two algorithms have no common setting, the closest one is used:

- Sample Factory learns from batches of 1024 samples; an sf-train batch is one ``rollout`` of
  every env (256 samples with 8 envs), so it makes one update per 256 samples instead.
- Sample Factory's Doom runs PPO-style GAE (lambda 0.95) without V-trace; sf-train corrects
  with V-trace (rho and c truncated at 1) with the same lambda in its traces, which on policy
  gives the same lambda-returns.
"""

from __future__ import annotations

from collections.abc import Callable

from sf_train.config.schema import AlgoConfig, Config, EnvConfig, ModelConfig, RunConfig

__all__ = [
    "ENV_PRESETS",
    "PRESETS",
    "atari",
    "control",
    "exploration",
    "measurements",
    "preset_for",
    "sample_factory",
]


def sample_factory() -> Config:
    """Sample Factory's Doom model (conv 32/64/128, FC 512, GRU 512 over 128x72 RGB) and its
    APPO settings: one epoch of one minibatch per batch, rollout 32, Adam at a constant 1e-4,
    PPO clipping 0.1, value clipping 0.2, symmetric KL to uniform at 0.001, gradient norm 4,
    policy lag up to 1000, lambda 0.95, no value bootstrap at time limits, per-pixel input
    normalisation, normalised critic targets."""
    return Config(
        env=EnvConfig(obs_size=(128, 72), grayscale=False),
        model=ModelConfig(
            conv_channels=(32, 64, 128),
            conv_kernels=(8, 4, 3),
            conv_strides=(4, 2, 2),
            fc_size=512,
            rnn=True,
            rnn_size=512,
            screen_norm="per_pixel",
            normalize_values=True,
        ),
        algo=AlgoConfig(
            rollout=32,
            learning_rate=1e-4,
            lr_schedule="constant",
            num_epochs=1,
            num_minibatches=1,
            clip_ratio=0.1,
            value_clip=0.2,
            entropy_coef=0.001,
            exploration="uniform_kl",
            trace_lambda=0.95,
            max_grad_norm=4.0,
            max_policy_lag=1000,
            value_bootstrap=False,
        ),
    )


def measurements() -> Config:
    """The defaults with the game's measurements (health, armour, ammo of the id's scenario)
    given to the network beside the screen.

    For tasks whose reward follows the agent's health, such as the health-gathering family:
    from the screen alone the critic cannot tell a medkit picked up from one missed until the
    episode ends. On ``sf/DoomHealthGatheringSupreme-v0`` (4 minutes, 2 cores, sampled
    evaluation over 100 episodes) the defaults reached a mean of 368 (entropy 0.01) with a
    random policy at about 320, and collapsed to dying on the same tic with the default
    entropy; with measurements they reached 991 (IQM 930 [818, 1046]) with the default
    entropy, 1066 with 0.01, and colour frames added nothing."""
    return Config(env=EnvConfig(env_options=("measurements=true",)))


def exploration() -> Config:
    """For sparse-reward navigation: ten times the entropy bonus (0.01), colour screens,
    critic targets in units of their running std, Adam at 3e-4, synchronous sampling.

    On ``sf/DoomMyWayHome-v0`` a random policy finds the vest in about one episode of nine.
    With the default bonus the policy drifted away from those successes (its entropy fell from
    2.08 to 1.2 in 3.3M frames, its evaluation no better than random); with 0.01 alone the best
    checkpoint of a 10-minute run (2 cores) reached the vest in 23% of 100 fresh episodes. In
    gray screens the rooms' red, brown and gray walls, the landmarks that tell the policy where
    it is, are nearly one shade. With all five settings (those of the best run measured, not
    each measured alone) the best checkpoint of a 10-minute run reached it in 41% (mean 0.25
    [0.14, 0.36] against the random policy's -0.09). Synchronous batches are learnt from 5.5
    optimiser steps old (34 in an asynchronous GRU run on this task): the older a batch, the
    more V-trace truncates the long traces that carry the vest's reward back."""
    return Config(
        env=EnvConfig(grayscale=False),
        model=ModelConfig(normalize_values=True),
        algo=AlgoConfig(entropy_coef=0.01, learning_rate=3e-4),
        run=RunConfig(sync=True),
    )


def control() -> Config:
    """For control from state vectors with a reward every step (Gymnasium's classic control):
    a shorter horizon (gamma 0.95, lambda 0.95), ten epochs over each batch, rewards scaled by
    0.1, critic targets in units of their running std, no entropy bonus, 500k frames (agent
    steps), evaluations that take the most likely action (for Box actions the Gaussian's mean,
    as continuous-control results are reported).

    With the defaults, Pendulum-v1 evaluated a mean of -758 after 300k frames (sampled, 100
    episodes; a random policy: -1230); gamma 0.9 and lambda 0.95 gave -287, and gamma
    0.95 with ten epochs -191 on one seed but -553 on another, still learning. That seed reached
    -205 at 300k frames with normalised critic targets, and -160 (greedy) after 500k frames
    without them. CartPole-v1 reaches 500 with the defaults and with the first settings."""
    return Config(
        algo=AlgoConfig(
            gamma=0.95,
            trace_lambda=0.95,
            num_epochs=10,
            reward_scale=0.1,
            entropy_coef=0.0,
        ),
        model=ModelConfig(normalize_values=True),
        run=RunConfig(frames=500_000, eval_greedy=True),
    )


def atari() -> Config:
    """The standard Atari agent: the Nature CNN (Mnih et al. 2015: conv 32/64/64, kernels 8/4/3,
    strides 4/2/1, FC 512, no recurrence) over four stacked 84x84 gray frames, a step of four
    frames, and PPO's Atari settings as CleanRL's ``ppo_atari_envpool`` has them: rewards
    clipped to [-1, 1], a lost life ending the episode for learning, lambda 0.95, four epochs of
    four minibatches, clipping 0.1 (of the value too), entropy 0.01, Adam (epsilon 1e-5) at
    2.5e-4 decaying linearly to zero at 40M frames (CleanRL's 10M steps of four frames: a run as
    long as the published ones, whose learning rate falls at the same pace per frame), gradient
    norm 0.5; synchronous sampling and learning, so that each batch is learnt from by the policy
    that played it, as in CleanRL (on Pong, 2 cores, bfloat16: 1,761 frames/s against 1,858 async,
    whose batches were 45 optimiser steps old on average); two torch threads (the
    emulator is cheap and the network is not: on Pong, 2 cores, 1,466 frames/s against 1,109
    with one). Reported returns are the raw game scores of whole games."""
    return Config(
        env=EnvConfig(obs_size=(84, 84), grayscale=True, frame_skip=4, num_envs=16, batch_size=8),
        model=ModelConfig(
            conv_channels=(32, 64, 64),
            conv_kernels=(8, 4, 3),
            conv_strides=(4, 2, 1),
            fc_size=512,
            rnn=False,
        ),
        algo=AlgoConfig(
            rollout=64,
            reward_scale=1.0,
            reward_clip=1.0,
            life_loss_ends=True,
            learning_rate=2.5e-4,
            num_epochs=4,
            num_minibatches=4,
            clip_ratio=0.1,
            value_clip=0.1,
            adam_eps=1e-5,
            entropy_coef=0.01,
            trace_lambda=0.95,
            max_grad_norm=0.5,
        ),
        run=RunConfig(frames=40_000_000, torch_threads=2, sync=True),
    )


PRESETS: dict[str, Callable[[], Config]] = {
    "default": Config,
    "sample-factory": sample_factory,
    "measurements": measurements,
    "exploration": exploration,
    "control": control,
    "atari": atari,
}
"""Preset names and the functions that build them."""


ENV_PRESETS: dict[str, str] = {
    "sf/DoomHealthGathering-v0": "measurements",
    "sf/DoomHealthGatheringSupreme-v0": "measurements",
    "sf/DoomMyWayHome-v0": "exploration",
    "CartPole-v1": "control",
    "Pendulum-v1": "control",
}
"""The preset ``sf-train train --env ID`` starts from when no ``--preset`` is given, for the ids
whose task family needs more than the defaults (measured on the scoreboard,
``benchmarks/scoreboard.py``); the ``sf/Atari-*-v0`` ids start from ``atari``, every other id
from ``default``."""


def preset_for(env_id: str) -> str:
    """The name of the preset that ``env_id`` trains with unless the user names another."""
    if env_id.startswith("sf/Atari-"):
        return "atari"
    return ENV_PRESETS.get(env_id, "default")
