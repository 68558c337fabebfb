"""The frames/s a config's network allows on this machine, before any env runs.

sf-train acts in one thread (batched inference) and learns in another, one torch thread each.
This script runs exactly those two loops side by side on random observations, with no envs and
no trainer around them: the sampler's forward passes on ``batch_size`` envs, and the learner's
training steps on ``num_envs`` x ``rollout`` batches. Each env frame needs its share of both, so
``min(acting, learning)`` samples/s x ``frame_skip`` bounds what the trainer can reach; the
envs' own CPU comes on top. Printed beside it: the trainer's measured frames/s, if given.

Not part of CI. Compare a preset's two precisions, or the defaults:

    python benchmarks/model_limit.py --preset sample-factory [--precision bfloat16] [--seconds 20]
        [--trainer-fps 2099]
"""

from __future__ import annotations

import argparse
import threading
import time
from dataclasses import replace

import torch
from gymnasium import spaces

from sf_train.algo.learner import Learner
from sf_train.config.presets import PRESETS
from sf_train.model.network import ActorCritic
from sf_train.sampling.batch import TrajectoryBatch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="default")
    parser.add_argument("--precision", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--trainer-fps", type=float, help="the trainer's frames/s, for a ratio")
    args = parser.parse_args()

    cfg = PRESETS[args.preset]()
    cfg.algo = replace(cfg.algo, precision=args.precision)
    width, height = cfg.env.obs_size
    obs_space = spaces.Box(0, 255, (1 if cfg.env.grayscale else 3, height, width), "uint8")
    action_space = spaces.Discrete(4)  # Doom basic: left, right, attack, none
    torch.manual_seed(0)
    model = ActorCritic(obs_space, action_space, cfg.model)
    acting = model.acting_copy(args.precision).eval()
    learner = Learner(model, cfg.algo, torch.device("cpu"))
    batch = TrajectoryBatch(cfg.algo.rollout, args.num_envs, obs_space, (), model.rnn_size)
    batch.obs.random_(0, 256)
    batch.actions.random_(0, 4)
    batch.log_probs.fill_(-1.386)  # log(1/4)

    counts = {"acting": 0, "learning": 0}
    stop = threading.Event()

    def act() -> None:
        torch.set_num_threads(1)
        obs = batch.obs[0, : args.batch_size].clone()
        state = acting.initial_state(args.batch_size)
        with torch.no_grad():
            while not stop.is_set():
                acting(obs, state)
                counts["acting"] += args.batch_size

    def learn() -> None:
        torch.set_num_threads(1)
        while not stop.is_set():
            learner.train(batch)
            counts["learning"] += args.num_envs * cfg.algo.rollout

    threads = [threading.Thread(target=f) for f in (act, learn)]
    for t in threads:
        t.start()
    time.sleep(2.0)  # warm-up: first calls allocate and pick kernels
    start, before = time.perf_counter(), dict(counts)
    time.sleep(args.seconds)
    seconds, after = time.perf_counter() - start, dict(counts)
    stop.set()
    for t in threads:
        t.join()

    rates = {k: (after[k] - before[k]) / seconds for k in counts}
    bound = min(rates.values()) * cfg.env.frame_skip
    print(
        f"{args.preset}, {args.precision}, {args.num_envs} envs, batch {args.batch_size}, "
        f"{cfg.algo.num_epochs} epoch(s) x {cfg.algo.num_minibatches} minibatch(es)"
    )
    print(
        f"acting {rates['acting']:,.0f} samples/s, learning {rates['learning']:,.0f} samples/s "
        f"(side by side) -> at most {bound:,.0f} env frames/s"
    )
    if args.trainer_fps:
        print(f"trainer {args.trainer_fps:,.0f} frames/s = {args.trainer_fps / bound:.2f} of it")


if __name__ == "__main__":
    main()
