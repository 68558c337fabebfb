"""The ``sf-league`` command (tournaments and ratings land with the sf-league issues)."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]

PLANNED = {
    "evaluate": "run a tournament (round robin / gauntlet) among checkpoints and scripted bots",
    "ratings": "print the Elo table (maximum-likelihood fit with bootstrap intervals)",
    "plot": "write a PNG of ratings with error bars",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sf-league",
        description="Elo-rated tournaments among sf agents and scripted ViZDoom bots.",
        epilog="Not implemented yet: "
        + "; ".join(f"{name} ({what})" for name, what in PLANNED.items())
        + ". They arrive with the sf-league issue.",
    )
    parser.parse_args(argv)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
