"""``sf-league train`` (a population trained by self-play and PBT) and ``sf-league lineage``.

Examples::

    sf-league train --run-dir runs/pop --db pop.sqlite --frames 10000000
    sf-league train --run-dir runs/pop --db pop.sqlite --frames 20000000 --resume
    sf-league lineage --db pop.sqlite
"""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from sf_envs.terminal import DefaultsHelpFormatter, log_handler
from sf_league.population.frozen import FrozenConfig
from sf_league.population.gauntlets import GauntletConfig
from sf_league.population.pbt import BOUNDS, PBTConfig
from sf_league.population.run_file import LeagueSettings, saved_layout, saved_settings
from sf_league.population.shards import ShardConfig, ShardedTrainer
from sf_league.population.training import MemberView, PopulationConfig, PopulationTrainer
from sf_league.store import LeagueStore
from sf_league.tournament.ray_games import ray_session

if TYPE_CHECKING:
    from sf_train.config.schema import Config
    from sf_train.run.members import Progress

__all__ = [
    "add_lineage_parser",
    "add_train_parser",
    "population_defaults",
    "run_lineage",
    "run_train",
]

DEFAULT_SHAPING = ("deaths=-0.5", "damage_dealt=0.01", "damage_taken=-0.003")
"""The duel's shaping on top of its frag reward: Sample Factory's duel scheme in spirit (a death
costs half a frag, damage dealt and taken count a little), over the variables a duel reports."""


def population_defaults() -> Any:
    """The sf-train settings ``sf-league train`` starts from: 4 members on duels, 8 duels."""
    from sf_train.config.schema import AlgoConfig, Config, EnvConfig, RunConfig

    return Config(
        env=EnvConfig(env="sf/DoomDuel-v0", num_envs=16, batch_size=8),
        # One minibatch per batch: a member's batch (16 / 4 = 4 trajectories) is the size of
        # one policy's minibatch on 16 envs, so each sample costs the same optimiser steps.
        # Rewards of about 1 per frag need no scaling, and 0.01 entropy kept self-play from
        # collapsing (the measurements in docs/benchmarks/training.md).
        algo=AlgoConfig(
            num_policies=4,
            num_minibatches=1,
            reward_scale=1.0,
            entropy_coef=0.01,
            shaping=DEFAULT_SHAPING,
        ),
        run=RunConfig(
            run_dir="runs/population",
            frames=10_000_000,
            checkpoint_every=1_000_000,
            eval_episodes=0,
        ),
    )


def _train_parser(
    parser: argparse.ArgumentParser, defaults: Any, saved: LeagueSettings | None = None
) -> None:
    """The flags of ``sf-league train``, defaulting to ``defaults`` (sf-train's) and to
    ``saved`` (the league settings of a resumed run; None: a new run's)."""
    from sf_train.config.arguments import add_config_arguments

    league = saved or LeagueSettings()

    parser.add_argument("--db", required=True, help="the league file (SQLite) of the population")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --run-dir from its checkpoints and its league; flags not "
        "given keep the values saved in its config.json and population.json",
    )
    pbt = league.pbt
    group = parser.add_argument_group("population-based training")
    group.add_argument(
        "--pbt-interval",
        type=int,
        default=pbt.interval,
        help="env frames each member plays between two PBT steps",
    )
    group.add_argument(
        "--pbt-fraction",
        type=float,
        default=pbt.fraction,
        help="share of the population in the worst group, which copies a best group of the "
        "same size",
    )
    group.add_argument(
        "--pbt-window",
        type=int,
        default=pbt.window,
        help="matches per member that the ranking looks at, the most recent ones",
    )
    group.add_argument(
        "--pbt-min-matches",
        type=int,
        default=pbt.min_matches,
        help="matches a member needs in its window to be ranked",
    )
    group.add_argument(
        "--pbt-confidence",
        type=float,
        default=pbt.confidence,
        help="one-sided confidence that a best member beats a worst one before it is copied",
    )
    group.add_argument(
        "--pbt-draw-score",
        type=float,
        default=pbt.draw_score,
        help="what a draw counts in the ranking (win 1, loss 0); 0 ranks on wins alone",
    )
    group.add_argument(
        "--mutation-probability",
        type=float,
        default=pbt.probability,
        help="chance that each hyperparameter or shaping weight of a copy is changed",
    )
    group.add_argument(
        "--mutation-factor",
        type=float,
        default=pbt.factor,
        help="a change multiplies the value by this factor or by its inverse",
    )
    group.add_argument(
        "--mutate",
        nargs="+",
        default=list(pbt.mutate),
        choices=list(BOUNDS),
        metavar="NAME",
        help=f"hyperparameters that a copy's mutations may change, of: {', '.join(BOUNDS)}; "
        "shaping weights always may",
    )
    group.add_argument(
        "--pbt-control",
        action=argparse.BooleanOptionalAction,
        default=pbt.control,
        help="keep member 0 as it started (never mutated or replaced), as a control",
    )
    gauntlet = parser.add_argument_group("gauntlets (ratings over training time)")
    gauntlet.add_argument(
        "--gauntlet-every",
        type=int,
        default=league.gauntlet.every,
        help="env frames (all members together) between gauntlets of every member against "
        "--gauntlet-players; 0: no gauntlets",
    )
    gauntlet.add_argument(
        "--gauntlet-players",
        nargs="+",
        default=list(league.gauntlet.players),
        help="the gauntlets' fixed opponents: bot:N, scripted:N, random, noop",
    )
    gauntlet.add_argument(
        "--gauntlet-games",
        type=int,
        default=league.gauntlet.games,
        help="games of each member against each opponent per gauntlet",
    )
    gauntlet.add_argument(
        "--gauntlet-workers",
        type=int,
        help="game processes of a gauntlet (default: one per CPU core)",
    )
    frozen = league.frozen
    # The flags keep their first word, "snapshot", so that older command lines still run.
    opponents = parser.add_argument_group("frozen opponents (past members kept as opponents)")
    opponents.add_argument(
        "--snapshots",
        type=int,
        metavar="N",
        help="frozen opponents: copies of past members kept as opponents; 0: members only meet "
        "each other "
        "(default: 0, or a resumed run's own count)",
    )
    opponents.add_argument(
        "--snapshot-interval",
        type=int,
        metavar="FRAMES",
        default=None if saved is None else frozen.interval,
        help=f"env frames (all seats together) between two freezes of a member into the oldest "
        f"frozen slot (default: {FrozenConfig.interval}); with --ray, between two draws of each "
        f"shard's guests (default: {ShardConfig.guest_interval}); a resumed run keeps its own",
    )
    opponents.add_argument(
        "--snapshot-share",
        type=float,
        metavar="P",
        default=frozen.share,
        help="chance that a seat facing a member goes to a frozen opponent",
    )
    opponents.add_argument(
        "--pfsp",
        action=argparse.BooleanOptionalAction,
        default=frozen.pfsp,
        help="draw frozen opponents by prioritized fictitious self-play, weighting each by (1 - "
        "the member's win rate against it)^2, instead of uniformly",
    )
    split = ShardConfig()
    ray = parser.add_argument_group("on a Ray cluster (needs sf-league[ray])")
    ray.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="train the population in --shards Ray actors: auto (the cluster running here), "
        "HOST:PORT, or no address to start Ray here (default: no Ray, one trainer in this "
        "process)",
    )
    ray.add_argument(
        "--shards",
        type=int,
        default=split.shards,
        help="shards (Ray actors), among which the members, envs and frames are divided",
    )
    ray.add_argument(
        "--guests",
        type=int,
        help="guests per shard: frozen copies of other shards' members, exchanged between shards "
        "(default: "
        "the shard's member count)",
    )
    ray.add_argument(
        "--shard-cpus",
        type=float,
        help="CPUs each shard declares to Ray (default: its vector engine's workers)",
    )
    add_config_arguments(parser, defaults)


def add_train_parser(sub: Any) -> None:
    """Adds ``train`` to the ``sf-league`` subcommands."""
    parser = sub.add_parser(
        "train",
        help="train a population by self-play with population-based training",
        description="Trains --num-policies members together on a duel (one sf-train trainer, "
        "every game's seats drawn anew at each episode start), records every training match in "
        "--db, and every --pbt-interval frames lets the worst members copy the best and mutates "
        "the copies. Checkpoints: RUN_DIR/p0, p1, ... (each a run folder). Ctrl-C saves every "
        "member; --resume continues.",
        formatter_class=DefaultsHelpFormatter,
    )
    _train_parser(parser, population_defaults())


def add_lineage_parser(sub: Any) -> None:
    """Adds ``lineage`` to the ``sf-league`` subcommands."""
    parser = sub.add_parser(
        "lineage",
        help="print the exploit and explore events of population training",
        description="Every PBT event stored in --db: when, which member, its generation, whom "
        "it copied and which values changed (old -> new).",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("--db", required=True, help="the league file (SQLite) of the population")
    parser.add_argument("--run", help="only this run folder's events (default: every run's)")


def run_train(argv: list[str], console: Console) -> int:
    """``sf-league train``: parses its own arguments (the defaults depend on ``--resume``)."""
    from sf_train.config.arguments import config_from_args
    from sf_train.config.schema import ConfigError
    from sf_train.run.folder import load_run_config

    probe = argparse.ArgumentParser(add_help=False)
    _train_parser(probe, population_defaults())
    pre = probe.parse_known_args(argv)[0]
    defaults, saved = population_defaults(), None
    if pre.resume:
        run_dir = vars(pre)["run.run_dir"]
        defaults = load_run_config(run_dir)
        layout = saved_layout(run_dir)
        if layout is not None:  # the saved trainer's policies count the frozen slots too
            defaults.algo.num_policies = layout[0]
        saved = saved_settings(run_dir)
    parser = argparse.ArgumentParser(prog="sf-league train", formatter_class=DefaultsHelpFormatter)
    _train_parser(parser, defaults, saved)
    args = parser.parse_args(argv)
    # Members are frozen (or, on Ray, guests drawn) at this interval; saved with the run.
    interval = args.snapshot_interval or (
        FrozenConfig.interval if args.ray is None else ShardConfig.guest_interval
    )
    cfg = PopulationConfig(
        train=config_from_args(args),
        db=args.db,
        pbt=PBTConfig(
            interval=args.pbt_interval,
            fraction=args.pbt_fraction,
            window=args.pbt_window,
            min_matches=args.pbt_min_matches,
            confidence=args.pbt_confidence,
            draw_score=args.pbt_draw_score,
            probability=args.mutation_probability,
            factor=args.mutation_factor,
            mutate=tuple(args.mutate),
            control=args.pbt_control,
            seed=vars(args)["run.seed"],
        ),
        gauntlet=GauntletConfig(
            every=args.gauntlet_every,
            players=tuple(args.gauntlet_players),
            games=args.gauntlet_games,
            workers=args.gauntlet_workers,
        ),
        frozen=FrozenConfig(
            count=args.snapshots,
            share=args.snapshot_share,
            pfsp=args.pfsp,
            interval=interval,
        ),
    )
    logging.basicConfig(level=logging.INFO, format="%(message)s", handlers=[log_handler(console)])
    session: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    make_trainer = None
    if args.ray is not None:
        if args.snapshots:
            raise ConfigError(
                [
                    f"--snapshots {args.snapshots} with --ray: on a cluster each shard's "
                    "--guests play the part of frozen opponents; leave out --snapshots"
                ]
            )
        split = ShardConfig(args.shards, args.guests, interval, args.shard_cpus)
        session = ray_session(args.ray or None)

        def make_trainer(
            train: Config, resume: bool, on_progress: Callable[[Progress | None], None]
        ) -> ShardedTrainer:
            return ShardedTrainer(train, split, on_progress, resume)

    with (
        session,
        PopulationTrainer(
            cfg,
            resume=args.resume,
            on_view=lambda v: print_view(console, v),
            make_trainer=make_trainer,
        ) as pop,
    ):
        result = pop.train()
        print_view(console, pop.view())
    run_dir = cfg.train.run.run_dir
    console.print(
        f"[green]done[/]: {result.frames:,} frames at {result.fps:,.0f} frames/s; members in "
        f"{run_dir}/p0..p{len(pop.members) - 1}, league {cfg.db}. Continue with: sf-league "
        f"train --run-dir {run_dir} --db {cfg.db} --frames N --resume",
        soft_wrap=True,
    )
    return 0


def _num(x: float | None, fmt: str = ".2f") -> str:
    return "-" if x is None else format(x, fmt)


def print_view(console: Console, view: list[MemberView]) -> None:
    """The population's live view: one row per member; the current best (highest win rate
    against the others) is marked."""
    rated = [m for m in view if m.win_rate is not None]
    best = max(rated, key=lambda m: m.win_rate or 0.0).policy if rated else None
    table = Table(title="population", title_justify="left", caption="* best win rate")
    for column in (
        "member",
        "gen",
        "frames",
        "frames/s",
        "return",
        "frags-deaths",
        "win rate",
        "matches",
        "entropy",
    ):
        table.add_column(column, justify="right")
    for m in view:
        table.add_row(
            f"p{m.policy}" + ("*" if m.policy == best else ""),
            str(m.generation),
            f"{m.frames:,}",
            _num(m.fps, ",.0f"),
            _num(m.mean_return),
            _num(m.objective),
            _num(m.win_rate),
            str(m.matches),
            _num(m.entropy, ".3f"),
        )
    console.print(table)


def run_lineage(args: argparse.Namespace, console: Console) -> int:
    """``sf-league lineage``: prints the PBT events stored in ``--db`` as a table."""
    with LeagueStore(args.db, create=False) as store:
        events = store.pbt_events(args.run)
    if not events:
        console.print(f"no population-training events in {args.db}")
        return 0
    table = Table(title=f"lineage ({len(events)} events)", title_justify="left")
    for column in ("frames", "member", "gen", "event", "parent", "changes"):
        table.add_column(column, justify="left" if column == "changes" else "right")
    for e in events:
        changes = ", ".join(
            f"{name} {old:.4g}->{new:.4g}" for name, (old, new) in sorted(e.changes.items())
        )
        table.add_row(
            f"{e.frames:,}",
            f"p{e.policy}",
            str(e.generation),
            e.kind,
            "" if e.parent is None else f"p{e.parent}",
            changes,
        )
    console.print(table)
    return 0
