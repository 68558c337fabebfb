"""sf_train: asynchronous APPO with V-trace for pixel-based Doom RL on one machine.

Modules, one concept each:

- :mod:`sf_train.vtrace` and :mod:`sf_train.losses`: the maths, as pure ``[T, B]`` functions.
- :mod:`sf_train.distributions`: action distributions for Discrete / MultiDiscrete / Tuple.
- :mod:`sf_train.model` and :mod:`sf_train.normalize`: the actor-critic and its normalisers.
- :mod:`sf_train.config` and :mod:`sf_train.config_cli`: typed config, validation, JSON, CLI.
- :mod:`sf_train.acting`: the one acting loop (observations -> model -> actions, memories
  reset where episodes end) that training, evaluation, videos and league games share.
- :mod:`sf_train.buffer`, :mod:`sf_train.sampler`, :mod:`sf_train.learner`: sampling through
  the engine's async ``send``/``recv`` face and the APPO learner step; :mod:`sf_train.columns`,
  which batch, column and step each env writes its trajectory into (and how faults free them);
  :mod:`sf_train.shaping`, the sampler's per-policy reward shaping over game-variable changes.
- :mod:`sf_train.envs`: the one place that makes envs from the config (any gymnasium id with
  a vector entry point: the sf-envs Doom ids, or ``MODULE:ID`` for one MODULE registers).
- :mod:`sf_train.trainer`: the training loop, asynchronous (learner thread) or synchronous;
  :mod:`sf_train.reporting`, its TensorBoard logging and progress reports.
- :mod:`sf_train.checkpoint` and :mod:`sf_train.run_folder`: atomic checkpoints, run folders.
- :mod:`sf_train.evaluate`: evaluation and videos from a run folder.
- :mod:`sf_train.cli`: the ``sf-train`` command (train, eval, enjoy).
"""
