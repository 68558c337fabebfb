"""The ``sf-train`` command (training, evaluation and videos land with the trainer issue)."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]

PLANNED = {
    "train": "train an agent with APPO / V-trace: sf-train train --env sf/DoomBasic-v0 --run-dir DIR",
    "eval": "evaluate a run folder's checkpoint over N episodes",
    "enjoy": "record a video of a trained agent",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sf-train",
        description="Asynchronous APPO / V-trace training on sf Doom environments.",
        epilog="Not implemented yet: "
        + "; ".join(f"{name} ({what})" for name, what in PLANNED.items())
        + ". They arrive with the trainer issue.",
    )
    parser.parse_args(argv)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
