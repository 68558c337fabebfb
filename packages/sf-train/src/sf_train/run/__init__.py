"""A training run: the trainer that joins sampling and learning, and what it keeps and reports.

- :mod:`sf_train.run.trainer`: the training loop, concurrent (learner thread) or synchronous.
- :mod:`sf_train.run.members`: the policies the trainer holds (weights, optimiser, versions).
- :mod:`sf_train.run.opponents`: self-play opponents and the pool of past policies.
- :mod:`sf_train.run.episodes`: training-time episode statistics, defined as evaluation does.
- :mod:`sf_train.run.reporting`: TensorBoard and progress reports.
- :mod:`sf_train.run.tracking`: the event file, mirrored to Weights & Biases on request.
- :mod:`sf_train.run.population`: what a population in one trainer reports and allows.
- :mod:`sf_train.run.steering`: the league's side of a trainer (stats, hyperparameters, copies).
- :mod:`sf_train.run.interrupts`: Ctrl-C and SIGTERM end a run as its frame budget does.
- :mod:`sf_train.run.checkpointing`: when the trainer writes checkpoints and evaluates them.
- :mod:`sf_train.run.checkpoint`: atomic checkpoints, the last K and the best.
- :mod:`sf_train.run.folder`: the run folder (``config.json``, checkpoints, events).
"""
