"""The actor-critic network and what it is built of.

- :mod:`sf_train.model.network`: conv encoder, measurements MLP, GRU core, policy and value heads.
- :mod:`sf_train.model.gru`: the GRU unrolled over a trajectory batch, backward pass written out.
- :mod:`sf_train.model.distributions`: action distributions for Discrete, MultiDiscrete, Tuple.
- :mod:`sf_train.model.normalize`: running mean and deviation of observations and returns.
- :mod:`sf_train.model.int8`: acting with int8 weights.
- :mod:`sf_train.model.device`: which torch device a run uses.
"""
