"""CleanRL's ``ppo_atari_envpool.py`` run with its file untouched, inside CleanRL's own venv
(started by ``cleanrl_atari.py``; it imports nothing of sf).

``train SCRIPT --out DIR --frames N... -- ARGS``: runs the script as ``python SCRIPT ARGS`` does, and
after each of its updates (when it logs its learning rate) keeps its agent's weights the first
time its frame count (its ``global_step`` agent steps of four frames) reaches each ``N``, with
the seconds since the start in ``DIR/kept.json``; past the last ``N`` it stops. Its own logs
(``runs/``, the episodic returns it prints) go to ``DIR``.

``eval SCRIPT --weights W --env-id ID --episodes K --seed S``: the script's own ``Agent`` with
the kept weights plays ``K`` whole games in ``K`` EnvPool envs, one game each (the first game
of every env, so short games are not favoured), with the script's EnvPool settings but
neither lives nor reward clipping, sampling its actions as it trains; prints the raw game
scores as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import time
from pathlib import Path

FRAME_SKIP = 4
"""EnvPool's Atari frame skip, which the script keeps: one agent step is four frames."""


def train(script: Path, out: Path, marks: list[int], script_args: list[str]) -> None:
    import torch
    from torch.utils.tensorboard import SummaryWriter

    pending = sorted(marks)
    kept: list[dict[str, float]] = []
    start = time.monotonic()
    log_scalar = SummaryWriter.add_scalar

    def add_scalar(self, tag, value, global_step=None, *args, **kwargs):  # type: ignore[no-untyped-def]
        log_scalar(self, tag, value, global_step, *args, **kwargs)
        if tag != "charts/learning_rate" or global_step * FRAME_SKIP < pending[0]:
            return
        frames = int(global_step) * FRAME_SKIP
        seconds = time.monotonic() - start
        path = out / f"agent_{frames}.pt"
        torch.save(sys.modules["__main__"].agent.state_dict(), path)
        kept.append({"frames": frames, "seconds": seconds, "weights": str(path)})
        (out / "kept.json").write_text(json.dumps(kept, indent=1))
        print(f"kept the agent at {frames:,} frames, {seconds:.0f} s", flush=True)
        while pending and pending[0] <= frames:
            pending.pop(0)
        if not pending:
            raise SystemExit(0)

    SummaryWriter.add_scalar = add_scalar  # type: ignore[method-assign]
    os.chdir(out)
    sys.argv = [str(script), *script_args]
    runpy.run_path(str(script), run_name="__main__")


def evaluate(script: Path, weights: Path, env_id: str, episodes: int, seed: int) -> None:
    import envpool
    import numpy as np
    import torch

    cleanrl = runpy.run_path(str(script), run_name="cleanrl_ppo")  # its classes, no training
    envs = envpool.make(
        env_id,
        env_type="gym",
        num_envs=episodes,
        episodic_life=False,
        reward_clip=False,
        seed=seed,
    )
    envs.single_action_space = envs.action_space
    agent = cleanrl["Agent"](envs)
    agent.load_state_dict(torch.load(weights))
    agent.eval()
    obs = envs.reset()
    running = np.zeros(episodes)
    scores: list[float | None] = [None] * episodes
    while any(score is None for score in scores):
        with torch.no_grad():
            action, *_ = agent.get_action_and_value(torch.Tensor(obs))
        obs, reward, done, _ = envs.step(action.numpy())
        running += reward
        for env in np.flatnonzero(done):
            if scores[env] is None:
                scores[env] = float(running[env])
        running[done] = 0.0
    envs.close()
    print(json.dumps({"scores": scores}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    training = modes.add_parser("train")
    training.add_argument("script", type=Path)
    training.add_argument("--out", type=Path, required=True)
    training.add_argument("--frames", type=int, nargs="+", required=True)
    scoring = modes.add_parser("eval")
    scoring.add_argument("script", type=Path)
    scoring.add_argument("--weights", type=Path, required=True)
    scoring.add_argument("--env-id", required=True)
    scoring.add_argument("--episodes", type=int, required=True)
    scoring.add_argument("--seed", type=int, required=True)
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    if args.mode == "train":
        train(args.script.resolve(), args.out.resolve(), args.frames, argv[split + 1 :])
    else:
        evaluate(args.script.resolve(), args.weights, args.env_id, args.episodes, args.seed)


if __name__ == "__main__":
    main()
