"""Adapters for RL libraries whose own vector API is not Gymnasium's (each an optional extra).

Libraries that take a Gymnasium env or ``VectorEnv`` (CleanRL-style loops, TorchRL's
``GymWrapper``, RLlib, PettingZoo tooling) need no adapter: see the compatibility table in
``docs/integrations.md``. :mod:`sf_envs.integrations.sb3` gives Stable-Baselines3 the engine's
shared-memory batches.
"""
