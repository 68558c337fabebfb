"""Unbiased evaluation of Sample Factory 2.1.1 Doom checkpoints; runs inside Sample Factory's venv.

Helper of ``benchmarks/peers/sample_factory.py`` (which starts it; not part of CI). It rebuilds the
experiment's env and actor-critic through Sample Factory's own public functions (its
``config.json``, ``create_env`` for the registered Doom env name, ``create_actor_critic``) and
plays an equal quota of episodes in each of K envs, stepped one after another in this process
with one batched forward pass. Like Sample Factory's ``enjoy`` (unless ``--eval_deterministic``),
actions are sampled from the policy; each env keeps its own GRU state, zeroed when its episode
ends. Unlike ``enjoy``, the env runs with the training frame skip (``env_frameskip``), not
``eval_env_frameskip=1`` with the action repeated, which plays the same game tics.

Sample Factory's Doom envs multiply the engine's reward by their spec's ``reward_scaling``
(0.01 for doom_basic) and some add a shaped reward (doom_battle: ammo, health, weapon, damage),
so the returns reported are the engine's own, ``DoomGame.get_total_reward()`` at each episode's
end, in ViZDoom's raw units (on doom_basic exactly Sample Factory's return / 0.01); Sample
Factory's returns are kept beside them. Each episode's kills are the engine's ``KILLCOUNT`` at
its end, read from the game whether or not its config lists that variable (doom_battle's
does not). Run it with ``python -P`` so that ``sample_factory.py`` beside it cannot shadow the
``sample_factory`` package::

    python -P sf_evaluate.py --experiment-dir DIR --checkpoints A.pth B.pth --episodes 100 \\
        --envs 10 --out results.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# The folder of this script must not shadow the sample_factory package (see the docstring).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]


@dataclass
class CheckpointResult:
    """Every episode of one checkpoint's evaluation: returns in ViZDoom's raw units, lengths in
    agent steps, kills as the engine counts them, and the returns Sample Factory trains on."""

    checkpoint: str
    env_steps: int
    returns: list[float]
    lengths: list[int]
    kills: list[float]
    returns_sf_units: list[float]
    reward_conversion: str
    seconds: float


def _load_cfg(experiment_dir: Path) -> Any:
    from sample_factory.utils.attr_dict import AttrDict

    path = experiment_dir / "config.json"
    if not path.is_file():
        raise SystemExit(f"{path} does not exist: name a Sample Factory experiment folder")
    cfg = AttrDict(json.loads(path.read_text()))
    cfg.device = "cpu"
    return cfg


def _make_envs(cfg: Any, count: int) -> list[Any]:
    from sample_factory.envs.create_env import create_env
    from sample_factory.utils.attr_dict import AttrDict

    return [
        create_env(cfg.env, cfg=cfg, env_config=AttrDict(worker_index=0, vector_index=i, env_id=i))
        for i in range(count)
    ]


def _stack(obs: list[Any]) -> dict[str, Any]:
    """The envs' observations as the model's batch: a dict of tensors, ``obs`` for an image
    and, where the spec adds them (doom_battle), ``measurements``."""
    import numpy as np
    import torch

    if isinstance(obs[0], dict):
        return {k: torch.from_numpy(np.stack([o[k] for o in obs])) for k in obs[0]}
    return {"obs": torch.from_numpy(np.stack(obs))}


def _to_env_action(action: Any) -> Any:
    """One row of the policy's actions as the env takes it: an int, or a tuple of ints."""
    values = action.reshape(-1).tolist()
    return int(values[0]) if len(values) == 1 else tuple(int(v) for v in values)


def evaluate_checkpoint(
    cfg: Any, envs: list[Any], checkpoint: Path, episodes: int, seed: int
) -> CheckpointResult:
    """Plays ``episodes`` episodes, an equal quota in each env, with the checkpoint's policy."""
    import gymnasium as gym
    import numpy as np
    import torch
    from sample_factory.algo.utils.rl_utils import prepare_and_normalize_obs
    from sample_factory.model.actor_critic import create_actor_critic
    from sample_factory.model.model_utils import get_rnn_size
    from vizdoom import GameVariable

    start = time.perf_counter()
    n = len(envs)
    quota = episodes // n
    obs_space = envs[0].observation_space
    if not isinstance(obs_space, gym.spaces.Dict):
        obs_space = gym.spaces.Dict({"obs": obs_space})
    model = create_actor_critic(cfg, obs_space, envs[0].action_space)
    model.model_to_device(torch.device("cpu"))
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    model.load_state_dict(state["model"])
    model.eval()

    torch.manual_seed(seed)
    obs = [env.reset(seed=seed + i)[0] for i, env in enumerate(envs)]
    rnn_states = torch.zeros(n, get_rnn_size(cfg))
    running = np.zeros(n)
    steps = np.zeros(n, dtype=np.int64)
    done = [0] * n
    returns: list[float] = []
    lengths: list[int] = []
    kills: list[float] = []
    returns_sf: list[float] = []
    with torch.no_grad():
        while min(done) < quota:
            out = model(prepare_and_normalize_obs(model, _stack(obs)), rnn_states)
            rnn_states = out["new_rnn_states"]
            actions = out["actions"].cpu().numpy()
            for i, env in enumerate(envs):
                obs[i], reward, terminated, truncated, _ = env.step(_to_env_action(actions[i]))
                running[i] += reward
                steps[i] += 1
                if terminated or truncated:
                    if done[i] < quota:
                        # The game is created on the first reset; its tallies outlive the
                        # episode's end until the next reset.
                        game = env.unwrapped.game
                        done[i] += 1
                        returns.append(float(game.get_total_reward()))
                        kills.append(float(game.get_game_variable(GameVariable.KILLCOUNT)))
                        returns_sf.append(float(running[i]))
                        lengths.append(int(steps[i]))
                    running[i], steps[i] = 0.0, 0
                    rnn_states[i] = 0.0
                    obs[i] = env.reset()[0]
    return CheckpointResult(
        checkpoint=str(checkpoint),
        env_steps=int(state["env_steps"]),
        returns=returns,
        lengths=lengths,
        kills=kills,
        returns_sf_units=returns_sf,
        reward_conversion="raw = DoomGame.get_total_reward() at the episode's end (Sample "
        "Factory's returns, scaled and shaped, in returns_sf_units)",
        seconds=time.perf_counter() - start,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment-dir", type=Path, required=True)
    parser.add_argument("--checkpoints", type=Path, nargs="+", required=True)
    parser.add_argument("--episodes", type=int, default=100, help="episodes per checkpoint")
    parser.add_argument("--envs", type=int, default=10, help="envs; must divide --episodes")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--out", type=Path, required=True, help="JSON file for the results")
    args = parser.parse_args()
    if args.envs < 1 or args.episodes % args.envs:
        parser.error(f"--envs {args.envs} must divide --episodes {args.episodes}")

    from sf_examples.vizdoom.train_vizdoom import register_vizdoom_components

    register_vizdoom_components()
    cfg = _load_cfg(args.experiment_dir)
    envs = _make_envs(cfg, args.envs)
    results = []
    try:
        for path in args.checkpoints:
            result = evaluate_checkpoint(cfg, envs, path, args.episodes, args.seed)
            mean = sum(result.returns) / len(result.returns)
            kills = sum(result.kills) / len(result.kills)
            print(
                f"    {path.name}: mean return {mean:.1f}, kills {kills:.2f} "
                f"({result.seconds:.0f} s)",
                flush=True,
            )
            results.append(asdict(result))
    finally:
        for env in envs:
            env.close()
    args.out.write_text(json.dumps(results))


if __name__ == "__main__":
    main()
