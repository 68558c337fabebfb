"""What the benchmark scripts share; nothing here is run on its own.

The scripts run as ``python benchmarks/SCRIPT.py`` (``benchmarks/`` first on ``sys.path``) and
import ``from common.MODULE import ...``; those in ``benchmarks/peers/`` put ``benchmarks/`` on
``sys.path`` first.

- ``baseline``: a git ref checked out beside this tree and measured in the same run
  (``--baseline REF``).
- ``cpu_time``: where the CPU went, from ``/proc``: engines, other processes, this process's
  threads.
- ``policies``: a run's best checkpoint and a random policy evaluated in the env's units.
- ``free_game``: ``sf-bench/FreeBasic-v0``, the real vector engine over units that cost nothing.
- ``match_timing``: match steps over a timed window with their CPU; the engines' spin modes.
- ``raw_vizdoom``: the raw limit, bare ``DoomGame`` s in parallel processes.
- ``training_speed``: sf-train's env frames/s over a timed window and where its CPU went.
- ``tournament``: the benchmark tournament's flags, round robin and ladder of players.
- ``peers_report``, ``supervise``: the results of ``peers/sample_factory.py`` (table, plot) and
  the supervision of each contender's process tree.
"""
