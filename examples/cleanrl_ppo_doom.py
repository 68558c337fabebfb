"""PPO on ViZDoom's basic scenario in one file, laid out like CleanRL's ``ppo_atari.py``.

The envs come from ``gymnasium.make_vec`` (sf-envs' shared-memory vector engine) and are wrapped
with Gymnasium's standard vector wrappers only: episode returns are read from
``RecordEpisodeStatistics``'s ``info["episode"]`` (sf-envs' own summary, ``info["episode_summary"]``,
is not used). Needs torch and tensorboard (both come with sf-train).

    python examples/cleanrl_ppo_doom.py                       # learns Doom basic on CPU in minutes
    python examples/cleanrl_ppo_doom.py --total-timesteps 50000 --num-envs 4
    tensorboard --logdir runs
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import time
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import RecordEpisodeStatistics, TransformReward
from torch import nn
from torch.distributions import Categorical
from torch.utils.tensorboard import SummaryWriter

import sf_envs  # noqa: F401 - registers the sf/Doom*-v0 ids


def arg(default, help: str):
    return field(default=default, metadata={"help": help})


@dataclass
class Args:
    exp_name: str = arg("cleanrl_ppo_doom", "name of this experiment (part of the run name)")
    seed: int = arg(1, "seed of the envs, numpy, random and torch")
    torch_deterministic: bool = arg(True, "torch.backends.cudnn.deterministic")
    cuda: bool = arg(True, "use CUDA when it is available")
    torch_threads: int = arg(1, "torch CPU threads, 0: torch's default (all cores)")
    env_id: str = arg("sf/DoomBasic-v0", "id of the environment")
    num_envs: int = arg(8, "parallel envs")
    num_workers: int = arg(0, "env worker processes; 0: one per CPU core (the engine's default)")
    obs_width: int = arg(64, "observation width (at most the 160x120 render)")
    obs_height: int = arg(48, "observation height")
    frame_stack: int = arg(1, "frames stacked on the channel axis by the env")
    reward_scale: float = arg(0.01, "rewards are multiplied by this (Doom basic: -1/tic, +100)")
    total_timesteps: int = arg(200_000, "total env steps (agent steps over all envs)")
    learning_rate: float = arg(2.5e-4, "Adam learning rate")
    anneal_lr: bool = arg(True, "anneal the learning rate linearly to 0")
    num_steps: int = arg(128, "steps per env per rollout")
    gamma: float = arg(0.99, "discount factor")
    gae_lambda: float = arg(0.95, "lambda of generalized advantage estimation")
    num_minibatches: int = arg(4, "minibatches per epoch")
    update_epochs: int = arg(4, "epochs over each rollout")
    norm_adv: bool = arg(True, "normalize advantages per minibatch")
    clip_coef: float = arg(0.1, "surrogate clipping coefficient")
    clip_vloss: bool = arg(True, "clip the value loss as the policy loss is clipped")
    ent_coef: float = arg(0.01, "entropy coefficient")
    vf_coef: float = arg(0.5, "value loss coefficient")
    max_grad_norm: float = arg(0.5, "gradient clipping norm")
    target_kl: float | None = arg(None, "stop the epochs of an update early past this KL")
    eval_episodes: int = arg(100, "episodes the final policy is evaluated on (rounded up to envs)")


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        if f.type == "bool":
            how = {"action": argparse.BooleanOptionalAction}
        else:
            how = {"type": {"int": int, "float": float, "str": str, "float | None": float}[f.type]}
        parser.add_argument(flag, default=f.default, help=f.metadata["help"], **how)
    return Args(**vars(parser.parse_args()))


def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias: float = 0.0) -> nn.Module:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class Agent(nn.Module):
    """Nature-CNN torso on uint8 channels-first screens, a categorical actor and a critic."""

    def __init__(self, envs: gym.vector.VectorEnv) -> None:
        super().__init__()
        channels, height, width = envs.single_observation_space.shape
        conv = nn.Sequential(
            layer_init(nn.Conv2d(channels, 32, 8, stride=4)),
            nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, 4, stride=2)),
            nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)),
            nn.ReLU(),
            nn.Flatten(),
        )
        flat = conv(torch.zeros(1, channels, height, width)).shape[1]
        self.network = nn.Sequential(conv, layer_init(nn.Linear(flat, 512)), nn.ReLU())
        self.actor = layer_init(nn.Linear(512, envs.single_action_space.n), std=0.01)
        self.critic = layer_init(nn.Linear(512, 1), std=1.0)

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(self.network(x.float() / 255.0))

    def get_action_and_value(self, x: torch.Tensor, action: torch.Tensor | None = None):
        hidden = self.network(x.float() / 255.0)
        probs = Categorical(logits=self.actor(hidden))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(hidden)


if __name__ == "__main__":
    args = parse_args()
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_iterations = args.total_timesteps // batch_size
    run_name = f"{args.env_id.replace('/', '_')}__{args.exp_name}__{args.seed}__{int(time.time())}"
    writer = SummaryWriter(f"runs/{run_name}")
    writer.add_text(
        "hyperparameters",
        "|param|value|\n|-|-|\n" + "\n".join(f"|{k}|{v}|" for k, v in vars(args).items()),
    )

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    # One torch thread by default: on a CPU shared with the env workers, torch's spinning
    # threads stall each other (10x slower on 2 busy cores); raise it on a big idle machine.
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")

    # SAME_STEP autoreset (sf-envs supports it): the step that ends an episode already returns
    # the next episode's first obs, the ending obs being info["final_obs"]. That is the layout
    # CleanRL's loop assumes: `next_done` marks that `next_obs` starts a new episode, so GAE cuts
    # there and every stored transition is real. Gymnasium's default, NEXT_STEP, would instead
    # return one extra (reset obs, reward 0) step per episode that must be masked out of the batch.
    envs = gym.make_vec(
        args.env_id,
        num_envs=args.num_envs,
        vectorization_mode="vector_entry_point",
        autoreset_mode=AutoresetMode.SAME_STEP,
        num_workers=args.num_workers or None,
        grayscale=True,
        obs_size=(args.obs_width, args.obs_height),
        frame_stack=args.frame_stack,
    )
    envs = RecordEpisodeStatistics(envs)  # innermost, so it records the unscaled returns
    envs = TransformReward(envs, lambda r: r * args.reward_scale)
    assert isinstance(envs.single_action_space, gym.spaces.Discrete), "only discrete actions"

    agent = Agent(envs).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    # Rollout storage; screens stay uint8 (the network divides by 255).
    obs = torch.zeros((args.num_steps, args.num_envs, *envs.single_observation_space.shape))
    obs = obs.to(device, torch.uint8)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long, device=device)
    logprobs = torch.zeros((args.num_steps, args.num_envs), device=device)
    rewards = torch.zeros((args.num_steps, args.num_envs), device=device)
    dones = torch.zeros((args.num_steps, args.num_envs), device=device)
    values = torch.zeros((args.num_steps, args.num_envs), device=device)

    global_step = 0
    start_time = time.time()
    next_obs, _ = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(next_obs, device=device)
    next_done = torch.zeros(args.num_envs, device=device)

    for iteration in range(1, num_iterations + 1):
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / num_iterations
            optimizer.param_groups[0]["lr"] = frac * args.learning_rate

        ended_returns = []
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob

            next_obs, reward, terminated, truncated, info = envs.step(action.cpu().numpy())
            rewards[step] = torch.as_tensor(reward, device=device).float()
            # A time-limit end is not a real end: bootstrap from the value of the final obs.
            cut = np.flatnonzero(truncated & ~terminated)
            if cut.size:
                final = torch.as_tensor(np.stack(info["final_obs"][cut]), device=device)
                with torch.no_grad():
                    rewards[step, cut] += args.gamma * agent.get_value(final).flatten()
            next_obs = torch.as_tensor(next_obs, device=device)
            next_done = torch.as_tensor(terminated | truncated, device=device).float()

            if "episode" in info:  # RecordEpisodeStatistics: episodes that ended this step
                episode = info["episode"]
                for i in np.flatnonzero(info["_episode"]):
                    ended_returns.append(float(episode["r"][i]))
                    writer.add_scalar("charts/episodic_return", episode["r"][i], global_step)
                    writer.add_scalar("charts/episodic_length", episode["l"][i], global_step)

        # Generalized advantage estimation, walking the rollout backwards.
        with torch.no_grad():
            next_value = agent.get_value(next_obs).flatten()
            advantages = torch.zeros_like(rewards)
            last_gae = 0
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    next_nonterminal, next_values = 1.0 - next_done, next_value
                else:
                    next_nonterminal, next_values = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + args.gamma * next_values * next_nonterminal - values[t]
                last_gae = delta + args.gamma * args.gae_lambda * next_nonterminal * last_gae
                advantages[t] = last_gae
            returns = advantages + values

        b_obs = obs.reshape((-1, *envs.single_observation_space.shape))
        b_logprobs, b_actions, b_values = (
            logprobs.reshape(-1),
            actions.reshape(-1),
            values.reshape(-1),
        )
        b_advantages, b_returns = advantages.reshape(-1), returns.reshape(-1)

        # Clipped PPO updates over shuffled minibatches.
        b_inds = np.arange(batch_size)
        clipfracs = []
        for _epoch in range(args.update_epochs):
            np.random.shuffle(b_inds)
            for start in range(0, batch_size, minibatch_size):
                mb = b_inds[start : start + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb], b_actions[mb]
                )
                logratio = newlogprob - b_logprobs[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()  # the low-variance k3 estimator
                    clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())

                mb_adv = b_advantages[mb]
                if args.norm_adv:
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss1 = -mb_adv * ratio
                pg_loss2 = -mb_adv * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                newvalue = newvalue.flatten()
                if args.clip_vloss:
                    v_clipped = b_values[mb] + torch.clamp(
                        newvalue - b_values[mb], -args.clip_coef, args.clip_coef
                    )
                    v_loss_unclipped = (newvalue - b_returns[mb]) ** 2
                    v_loss_clipped = (v_clipped - b_returns[mb]) ** 2
                    v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
                else:
                    v_loss = 0.5 * ((newvalue - b_returns[mb]) ** 2).mean()

                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

            if args.target_kl is not None and approx_kl > args.target_kl:
                break

        y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y

        sps = int(global_step / (time.time() - start_time))
        writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
        writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
        writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
        writer.add_scalar("losses/entropy", entropy_loss.item(), global_step)
        writer.add_scalar("losses/approx_kl", approx_kl.item(), global_step)
        writer.add_scalar("losses/clipfrac", np.mean(clipfracs), global_step)
        writer.add_scalar("losses/explained_variance", explained_var, global_step)
        writer.add_scalar("charts/SPS", sps, global_step)
        if ended_returns:
            print(
                f"global_step={global_step}, episodic_return={np.mean(ended_returns):.1f} "
                f"(mean of {len(ended_returns)} episodes), SPS={sps}"
            )

    # Judge the final policy by an evaluation, not by the training log: fresh episodes, each
    # env an equal share, so long (failed) episodes count as often as short ones.
    quota = -(-args.eval_episodes // args.num_envs)
    eval_returns: list[list[float]] = [[] for _ in range(args.num_envs)]
    next_obs, _ = envs.reset(seed=args.seed + 1)
    while min(len(r) for r in eval_returns) < quota:
        with torch.no_grad():
            action, _, _, _ = agent.get_action_and_value(torch.as_tensor(next_obs, device=device))
        next_obs, _, _, _, info = envs.step(action.cpu().numpy())
        for i in np.flatnonzero(info.get("_episode", [])):
            if len(eval_returns[i]) < quota:
                eval_returns[i].append(float(info["episode"]["r"][i]))
    played = np.concatenate(eval_returns)
    sem = played.std(ddof=1) / np.sqrt(len(played)) if len(played) > 1 else float("nan")
    writer.add_scalar("eval/episodic_return", played.mean(), global_step)
    print(f"evaluation: return {played.mean():.1f} +- {sem:.1f} over {len(played)} episodes")

    envs.close()
    writer.close()
