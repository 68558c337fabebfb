"""The learning side: one APPO step over a trajectory batch, and its maths as pure functions.

- :mod:`sf_train.algo.learner`: the learner step (forward, V-trace targets, losses, update).
- :mod:`sf_train.algo.losses`: policy, value and entropy losses over ``[T, B]`` tensors.
- :mod:`sf_train.algo.vtrace`: V-trace value targets and policy-gradient advantages.
"""
