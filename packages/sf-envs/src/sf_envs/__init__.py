"""sf_envs."""
