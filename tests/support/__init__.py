"""What tests share, apart from the tests: nothing imports from a ``test_*`` module.

``tests/`` is on ``sys.path`` (pytest puts the directory of ``tests/conftest.py`` there), so
tests import ``from support.MODULE import ...``.

- ``api_coverage``: the public classes and functions of the packages against the API reference
  (also run by ``hatch run docs:build`` on the built site).
- ``fault_players``: game functions that fail on purpose, for the tournament fault tests.
- ``league``: sf-league runs, stores and tiny populations for the league tests.
- ``model``: the model tests' observation and action spaces.
- ``owner``: ending a process that owns engines, and what it left behind.
- ``runs``: a run's TensorBoard scalars; the config of the training fault runs.
- ``sampling``: a tiny model and the alignment check of a rollout, for the sampler tests.
- ``toy_env``: the "bright pixel" env that sf-train makes as ``support.toy_env:Toy-v0``.
"""
