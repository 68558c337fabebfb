"""Older code as a reference measured in the same run: a git ref checked out beside this one.

A speed-up claimed against numbers taken on another day means little on a machine whose speed
drifts by tens of percent between sittings. :func:`checkout` puts a commit's tree in a temporary
git worktree (removed on exit) and :func:`measure_in` runs a snippet there, in a fresh Python
whose imports resolve to that tree's packages first, so the benchmarks can alternate old and
new code on the same machine.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("sf-envs", "sf-train", "sf-league")
_MARK = "sf-baseline-value"


@contextlib.contextmanager
def checkout(ref: str) -> Iterator[Path]:
    """The tree of ``ref`` in a temporary worktree of this repository, removed on exit."""
    with tempfile.TemporaryDirectory(prefix="sf_baseline_") as parent:
        tree = Path(parent) / "tree"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet", str(tree), ref],
            check=True,
        )
        try:
            yield tree
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False
            )
            subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], check=False)


def measure_in(tree: Path, setup: str, expression: str) -> float:
    """Runs ``setup`` in a fresh Python that imports ``tree``'s packages and benchmarks (ahead of
    the installed ones) and returns the value of ``expression`` there. Engines started inside
    share its output, so the value travels on a line of its own, marked."""
    paths = [str(tree / "packages" / p / "src") for p in PACKAGES] + [str(tree / "benchmarks")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    code = f"{setup}\nprint({_MARK!r}, float({expression}), flush=True)\n"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tree,
        env=env,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    (value,) = [line.split()[-1] for line in out.splitlines() if line.startswith(_MARK)]
    return float(value)
