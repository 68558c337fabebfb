"""The acting side: envs stepped through their async face, actions from the acting copies of
the policies, trajectory batches filled for the learner.

- :mod:`sf_train.sampling.acting`: the one acting loop (observations -> model -> actions) that
  training, evaluation, videos and league games share.
- :mod:`sf_train.sampling.stacked`: several policies of one architecture acting in one pass.
- :mod:`sf_train.sampling.rollout`: what the sampler drives (the vector env's face) and what it
  hands the learner (a filled trajectory batch and the episodes that ended in it).
- :mod:`sf_train.sampling.buffer`: preallocated ``[T, B]`` storage of one trajectory batch.
- :mod:`sf_train.sampling.columns`: which batch, column and step each env writes into.
- :mod:`sf_train.sampling.shaping`: per-policy reward shaping over game-variable changes.
- :mod:`sf_train.sampling.sampler`: the sampler loop in one process.
- :mod:`sf_train.sampling.pool`: sampling in several sampler processes (the trainer's side).
- :mod:`sf_train.sampling.process`: inside one sampler process.
"""
