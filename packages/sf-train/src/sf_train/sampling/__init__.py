"""The acting side: envs stepped through their async face, actions from the acting copies of
the policies, trajectory batches filled for the learner.

- :mod:`sf_train.sampling.acting`: the one acting loop (observations -> model -> actions) that
  training, evaluation, videos and league games share.
- :mod:`sf_train.sampling.stacked`: several policies of one architecture acting in one pass.
- :mod:`sf_train.sampling.protocols`: what the sampler relies on (the vector env's faces, the
  weights it acts with, who plays each game).
- :mod:`sf_train.sampling.batch`: a trajectory batch (``[T, B]`` preallocated storage, what the
  learner trains on) and what collecting one hands out with it (the episodes that ended).
- :mod:`sf_train.sampling.columns`: which trajectory batch, column and step each env writes
  into (the sampler alone writes them).
- :mod:`sf_train.sampling.shaping`: per-policy reward shaping over game-variable changes.
- :mod:`sf_train.sampling.lives`: lost lives as ends of episodes for learning (Atari).
- :mod:`sf_train.sampling.sampler`: the sampler loop in one process.
- :mod:`sf_train.sampling.pool`: sampling in several sampler processes (the trainer's side).
- :mod:`sf_train.sampling.process`: inside one sampler process.
- :mod:`sf_train.sampling.messages`: the dataclass messages between a pool and its processes.

One word for one thing: a *trajectory batch* (:class:`~sf_train.sampling.batch.TrajectoryBatch`)
is ``B`` trajectories of ``T`` steps, filled by the sampler and trained on by the learner; each
policy has a *ring* of them.
"""
