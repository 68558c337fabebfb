"""The lifecycle of the processes sf starts: nothing outlives its owner.

Everything sf-envs, sf-train and sf-league start (env workers, ViZDoom engines, sampler and
game processes) is found, killed and cleaned up through this module:

- :mod:`sf_envs.lifecycle.procs`: finding processes from ``/proc``, killing a process group
  with its engines' shared memory, risky jobs in a child of their own session, engine consoles
  to a log file.
- :mod:`sf_envs.lifecycle.watchdog`: a watchdog process that removes a process's engines and
  scratch files once that process is gone, however it ended.
"""

from __future__ import annotations

from sf_envs.lifecycle.procs import (
    command_line_option,
    console_to,
    interruptible,
    kill_group,
    kill_processes,
    log_tail,
    redirect_console,
    run_in_child,
)
from sf_envs.lifecycle.watchdog import (
    VIZDOOM_SHM_PREFIXES,
    covered_by_parent,
    find_processes,
    guard,
    instance_ids,
    note_engines,
    option_value,
    release,
    remove_shared_memory,
)

__all__ = [
    "VIZDOOM_SHM_PREFIXES",
    "command_line_option",
    "console_to",
    "covered_by_parent",
    "find_processes",
    "guard",
    "instance_ids",
    "interruptible",
    "kill_group",
    "kill_processes",
    "log_tail",
    "note_engines",
    "option_value",
    "redirect_console",
    "release",
    "remove_shared_memory",
    "run_in_child",
]
