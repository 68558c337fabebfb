"""Plays one Doom episode with a policy exported by ``sf-train export``, on ONNX Runtime alone.

    sf-train export runs/basic --onnx basic.onnx --checkpoint best
    python examples/onnx_play.py basic.onnx

The file holds all that playing needs: the env it was trained on (id and options, in its
metadata), the input normalisation and, for a GRU policy, the recurrent state as an input and
an output. So this script needs onnxruntime, numpy and sf-envs only, and never imports torch.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import gymnasium as gym
import numpy as np
import onnxruntime as ort

import sf_envs  # noqa: F401 - registers the sf/Doom*-v0 ids


def choose(
    logits: np.ndarray, metadata: dict[str, Any], greedy: bool, rng: np.random.Generator
) -> list[int]:
    """One action index per sub-action (its space's start added): the most likely, or sampled
    from the softmax of its share of the logits."""
    nvec, starts = metadata["sf.action_nvec"], metadata["sf.action_starts"]
    heads = np.split(logits, np.cumsum(nvec)[:-1])
    if greedy:
        picked = [int(np.argmax(h)) for h in heads]
    else:
        probs = [np.exp(h - h.max()) / np.exp(h - h.max()).sum() for h in heads]
        picked = [int(rng.choice(len(p), p=p)) for p in probs]
    return [start + k for start, k in zip(starts, picked, strict=True)]


def env_action(action: list[int], space: gym.Space) -> Any:
    """The action in the type the env's space expects."""
    if isinstance(space, gym.spaces.Discrete):
        return action[0]
    if isinstance(space, gym.spaces.Tuple):
        return tuple(action)
    return np.array(action, dtype=np.int64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy", help="the .onnx file written by sf-train export")
    parser.add_argument("--seed", type=int, default=0, help="seed of the episode and actions")
    parser.add_argument(
        "--greedy",
        action=argparse.BooleanOptionalAction,
        help="play the most likely action (default: as the run evaluated itself)",
    )
    args = parser.parse_args()

    session = ort.InferenceSession(args.policy, providers=["CPUExecutionProvider"])
    custom = session.get_modelmeta().custom_metadata_map
    metadata = {k: json.loads(v) for k, v in custom.items() if k.startswith("sf.")}
    greedy = metadata["sf.greedy"] if args.greedy is None else args.greedy
    inputs = {i.name: i for i in session.get_inputs()}
    outputs = [o.name for o in session.get_outputs()]
    # A GRU policy's memory: zeros at the episode's start, then what the last step returned.
    state = (
        np.zeros((1, inputs["rnn_state"].shape[1]), np.float32) if "rnn_state" in inputs else None
    )

    env = gym.make(metadata["sf.env_id"], **metadata["sf.env_kwargs"])
    rng = np.random.default_rng(args.seed)
    try:
        obs, _ = env.reset(seed=args.seed)
        total, steps, ended = 0.0, 0, False
        while not ended:
            screen = obs["screen"] if isinstance(obs, dict) else obs
            feed = {"screen": screen[None]}
            if "measurements" in inputs:
                feed["measurements"] = obs["measurements"][None].astype(np.float32)
            if state is not None:
                feed["rnn_state"] = state
            result = dict(zip(outputs, session.run(outputs, feed), strict=True))
            state = result.get("new_rnn_state")
            action = choose(result["logits"][0], metadata, greedy, rng)
            obs, reward, terminated, truncated, _ = env.step(env_action(action, env.action_space))
            total += float(reward)
            steps += 1
            ended = terminated or truncated
    finally:
        env.close()
    print(f"{metadata['sf.env_id']}: return {total:.1f} over {steps} steps")
    assert "torch" not in sys.modules, "the exported policy plays without torch"


if __name__ == "__main__":
    main()
