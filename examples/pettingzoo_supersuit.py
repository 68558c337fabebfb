"""PettingZoo + SuperSuit: a duel with the usual preprocessing (SuperSuit wants channels last)."""

import supersuit as ss

import sf_envs

env = sf_envs.make_match("duel", timelimit=0.5, channels_last=True)
env = ss.frame_stack_v1(ss.resize_v1(ss.color_reduction_v0(env, mode="full"), 42, 42), 4)
observations, infos = env.reset(seed=0)
while env.agents:
    actions = {agent: env.action_space(agent).sample() for agent in env.agents}
    observations, rewards, terminations, truncations, infos = env.step(actions)
print({agent: info["frags"] for agent, info in infos.items()})
env.close()
