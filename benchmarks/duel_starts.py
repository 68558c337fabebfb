"""How often a duel starts in a fresh process: the success rate behind the fork guard.

Each round starts a new Python that imports what the user asks (``--import scipy``: numba then
imports it too, and scipy's OpenBLAS pre-fork handler is what deadlocked concurrent engine
forks), makes a duel, resets it and closes it. Run it with the Python of an environment that has
scipy installed to see the guard at work:

    python benchmarks/duel_starts.py --rounds 8 --import scipy.linalg
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

_START = (
    "import {module}, sf_envs\n"
    "match = sf_envs.make_match('duel', obs_size=(64, 36))\n"
    "match.reset(seed=0)\n"
    "match.close()\n"
    "print('started')\n"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--import", dest="module", default="numpy", help="imported first")
    parser.add_argument("--limit", type=float, default=300.0, help="seconds per round")
    args = parser.parse_args()
    started = 0
    for i in range(args.rounds):
        begin = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, "-c", _START.format(module=args.module)],
                capture_output=True,
                text=True,
                timeout=args.limit,
            )
            ok = done.returncode == 0 and "started" in done.stdout
            retries = done.stderr.count("retrying on a fresh port")
            status = "ok" if ok else f"failed (exit status {done.returncode})"
        except subprocess.TimeoutExpired:
            ok, retries, status = False, 0, f"hung past {args.limit:g} s"
        started += ok
        print(f"round {i}: {status}, {retries} retried starts, {time.monotonic() - begin:.1f} s")
    print(f"{started}/{args.rounds} duels started (after importing {args.module})")


if __name__ == "__main__":
    main()
