"""The ``sf-train`` command: ``train``, ``eval``, ``enjoy`` and ``export``.

Examples::

    sf-train train --env sf/DoomBasic-v0 --run-dir runs/basic --frames 700000 --eval-greedy --env-options frame_stack=2
    sf-train train --run-dir runs/basic --frames 1000000 --resume
    sf-train eval runs/basic --episodes 100
    sf-train enjoy runs/basic --out agent.gif
    WANDB_PROJECT=doom sf-train train --env sf/DoomBasic-v0 --run-dir runs/basic2 --wandb
    sf-train export runs/basic --onnx basic.onnx --checkpoint best
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from rich.markup import escape
from rich.progress import BarColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from sf_envs.errors import OptionError
from sf_envs.terminal import DefaultsHelpFormatter, LineProgress, log_handler, make_console
from sf_train.config.arguments import add_config_arguments, config_from_args
from sf_train.config.presets import ENV_PRESETS, PRESETS, preset_for
from sf_train.config.schema import Config, ConfigError, config_to_dict
from sf_train.run.checkpoint import CheckpointError
from sf_train.run.folder import CONFIG_FILE, RunFolderError, load_run_config
from sf_train.run.members import TrainResult

__all__ = ["main"]

console = make_console(stderr=True)
# Problems with what the user gave (flags, ids, files) print as one line; anything else is a bug
# and keeps its traceback.
USER_ERRORS = (ConfigError, RunFolderError, CheckpointError, OptionError)


def _train_parser(defaults: Config | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sf-train train",
        description="Train an agent with asynchronous APPO / V-trace into a run folder.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --run-dir from its latest checkpoint; flags not given keep "
        f"the values saved in its {CONFIG_FILE}",
    )
    families = ", ".join(f"{env} -> {name}" for env, name in sorted(ENV_PRESETS.items()))
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default=None,
        help="start from a named configuration, which the other flags override: 'default', "
        "sf-train's own defaults; 'sample-factory', Sample Factory 2.1.1's Doom model and "
        "settings; or a task family's settings. Unset: the --env id's own preset where it has "
        f"one ({families or 'none yet'}), else 'default'",
    )
    add_config_arguments(parser, defaults)
    return parser


def _returns(returns: tuple[float | None, ...]) -> str:
    """Each policy's mean return ("-" until known), separated by slashes in a population."""
    return " / ".join("-" if r is None else f"{r:.2f}" for r in returns) or "-"


def _train(argv: list[str]) -> int:
    from sf_train.run.interrupts import stop_on_signals
    from sf_train.run.trainer import Progress as TrainProgress
    from sf_train.run.trainer import Trainer

    # The defaults come from the preset, or with --resume from the saved config, so only the
    # flags given change it.
    pre = _train_parser().parse_known_args(argv)[0]
    if pre.resume and pre.preset is not None:
        raise OptionError(
            "--preset starts a new run: drop it with --resume (the run keeps its own)"
        )
    if pre.resume:
        defaults = load_run_config(vars(pre)["run.run_dir"])
    else:
        env_id = vars(pre)["env.env"]
        preset = pre.preset or preset_for(env_id)
        if pre.preset is None and preset != "default":
            logging.getLogger(__name__).info(
                "preset %r, the settings of %s's task family (--preset default for sf-train's "
                "defaults; flags override either)",
                preset,
                env_id,
            )
        defaults = PRESETS[preset]()
    args = _train_parser(defaults).parse_args(argv)
    cfg = config_from_args(args)
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[frames]:,}/{task.fields[budget]}"),
        TextColumn("{task.fields[fps]:,.0f} fps"),
        TextColumn("reward {task.fields[reward]}"),
        TextColumn("lag {task.fields[lag]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with LineProgress(*columns, console=console) as bar:
        # The bar and its time left follow the run's fraction done, which a --seconds budget
        # can end long before the frame budget.
        budget = f"{cfg.run.frames:,} frames"
        if cfg.run.seconds > 0:
            budget += f" or {cfg.run.seconds:g} s"
        task = bar.add_task(
            cfg.env.env, total=1.0, frames=0, budget=budget, fps=0.0, reward="-", lag="-"
        )

        def show(p: TrainProgress) -> None:
            bar.update(
                task,
                completed=p.done,
                frames=p.frames,
                fps=p.fps,
                reward=_returns(p.returns),
                lag="-" if p.policy_lag is None else f"{p.policy_lag:.1f}",
            )

        with (
            Trainer(cfg, resume=args.resume, on_progress=show) as trainer,
            stop_on_signals(trainer.request_stop),
        ):
            result = trainer.train()
    console.print(
        f"[green]done[/]: {result.frames:,} frames, {result.fps:,.0f} frames/s over "
        f"{result.seconds:.0f} s; {_judged(result, cfg)}; checkpoint {result.checkpoint}",
        soft_wrap=True,
    )
    if result.worker_restarts or result.dropped_frames:
        console.print(
            f"[yellow]faults[/]: {result.worker_restarts} vector worker restart(s), "
            f"{result.dropped_frames:,} frames of experience dropped (not counted above)",
            soft_wrap=True,
        )
    return 0


def _judged(result: TrainResult, cfg: Config) -> str:
    """What the run's numbers mean: the unbiased evaluation behind best.pt where this session
    made it, else what is known and where it comes from."""
    if result.best is not None:
        frames, s = result.best
        low, high = s["return_iqm_ci"]
        mode = "greedy" if s["greedy"] else "sampled"
        return (
            f"best.pt ({frames:,} frames), {mode} evaluation over {s['episodes']} episodes: "
            f"mean {s['return_mean']:.2f}, median {s['return_median']:.2f}, IQM "
            f"{s['return_iqm']:.2f} [{low:.2f}, {high:.2f}], "
            f"{100 * s['timeout_fraction']:.0f}% time-outs"
        )
    window = f"last training episodes {_returns(result.returns)} (not an evaluation)"
    if cfg.run.eval_episodes > 0:
        return f"best.pt is from an earlier session (see its evaluation there); {window}"
    return window


_CHECKPOINT_HELP = "'latest', 'best' (best evaluation) or the path of a checkpoint file"


def _add_greedy_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--greedy",
        action=argparse.BooleanOptionalAction,
        help="play the most likely action instead of sampling one (default: as the run "
        "evaluated its checkpoints, its run.eval_greedy)",
    )


def _eval(argv: list[str]) -> int:
    from sf_train.evaluation import evaluate

    parser = argparse.ArgumentParser(
        prog="sf-train eval",
        description="Evaluate a run's policy without bias: every env plays an equal share of "
        "the episodes. Prints mean, std and median of each statistic, the return's interquartile "
        "mean with 95% stratified bootstrap intervals, and the share of time-outs.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("run_dir", help="the run folder")
    parser.add_argument("--episodes", type=int, default=100, help="episodes to play")
    parser.add_argument("--checkpoint", default="latest", help=_CHECKPOINT_HELP)
    parser.add_argument(
        "--num-envs", type=int, help="envs played in parallel (default: the run's num_envs)"
    )
    parser.add_argument(
        "--device", help="'auto', 'cpu', 'cuda' or 'cuda:N' (default: the run's device)"
    )
    _add_greedy_flag(parser)
    parser.add_argument("--seed", type=int, default=12345, help="seed of the envs and actions")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    result = evaluate(
        args.run_dir,
        args.episodes,
        checkpoint=args.checkpoint,
        num_envs=args.num_envs,
        device=args.device,
        greedy=args.greedy,
        seed=args.seed,
    )
    summary = result.summary()
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    per_env = result.episodes_per_env
    spread = (
        f"{per_env.min()}" if per_env.min() == per_env.max() else f"{per_env.min()}-{per_env.max()}"
    )
    table = Table(
        title=f"{summary['episodes']} episodes on {len(per_env)} envs ({spread} per env)",
        caption=f"{result.checkpoint}\n"
        + ("most likely actions" if result.greedy else "sampled actions")
        + f"; time-outs: {summary['timeout_fraction']:.0%} of episodes"
        + "\nreturn IQM {:.2f} [{:.2f}, {:.2f}], mean [{:.2f}, {:.2f}] (95% stratified bootstrap)".format(
            summary["return_iqm"], *summary["return_iqm_ci"], *summary["return_mean_ci"]
        ),
    )
    table.add_column("stat")
    table.add_column("mean ± std", justify="right")
    table.add_column("median", justify="right")
    for name in ["return", "length", *result.variables]:
        table.add_row(
            name,
            f"{summary[name + '_mean']:.2f} ± {summary[name + '_std']:.2f}",
            f"{summary[name + '_median']:.2f}",
        )
    make_console().print(table)
    return 0


def _enjoy(argv: list[str]) -> int:
    from sf_train.evaluation import record_video
    from sf_train.run.tracking import log_video, require_wandb

    parser = argparse.ArgumentParser(
        prog="sf-train enjoy",
        description="Record a video of a run's policy playing.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("run_dir", help="the run folder")
    parser.add_argument("--out", required=True, help="video file to write, .gif or .mp4")
    parser.add_argument("--episodes", type=int, default=1, help="episodes to record")
    parser.add_argument("--checkpoint", default="latest", help=_CHECKPOINT_HELP)
    _add_greedy_flag(parser)
    parser.add_argument(
        "--fps", type=float, help="playback frames/s (default: the game's real speed)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the env and actions")
    parser.add_argument(
        "--wandb",
        action="store_true",
        help="also log the video to a Weights & Biases run of its own (job type 'enjoy', "
        "grouped with the training run; WANDB_* variables apply); needs pip install "
        "'sf-train[wandb]'",
    )
    args = parser.parse_args(argv)
    if args.wandb:
        require_wandb()  # before the video is recorded
    path, returns = record_video(
        args.run_dir,
        args.out,
        checkpoint=args.checkpoint,
        episodes=args.episodes,
        greedy=args.greedy,
        fps=args.fps,
        seed=args.seed,
    )
    played = f"{len(returns)} episodes, returns {', '.join(f'{r:.1f}' for r in returns)}"
    console.print(f"wrote {path} ({played})", soft_wrap=True)
    if args.wandb:
        log_video(args.run_dir, config_to_dict(load_run_config(args.run_dir)), path, played)
    return 0


def _export(argv: list[str]) -> int:
    from sf_train.export import export_onnx

    parser = argparse.ArgumentParser(
        prog="sf-train export",
        description="Write a run's acting policy as an ONNX file, with its input normalisation "
        "inside, the GRU state as an input and output, and what makes its env as metadata: "
        "ONNX Runtime plays it without torch (examples/onnx_play.py). Needs "
        "pip install 'sf-train[onnx]'.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("run_dir", help="the run folder")
    parser.add_argument("--onnx", required=True, help="the .onnx file to write")
    parser.add_argument("--checkpoint", default="latest", help=_CHECKPOINT_HELP)
    args = parser.parse_args(argv)
    path = export_onnx(args.run_dir, args.onnx, checkpoint=args.checkpoint)
    console.print(f"wrote {path}", soft_wrap=True)
    return 0


COMMANDS = {
    "train": (_train, "train an agent: sf-train train --env sf/DoomBasic-v0 --run-dir DIR"),
    "eval": (_eval, "evaluate a run folder's checkpoint: sf-train eval DIR --episodes N"),
    "enjoy": (_enjoy, "record a video of the agent: sf-train enjoy DIR --out agent.gif"),
    "export": (_export, "write the policy as ONNX: sf-train export DIR --onnx policy.onnx"),
}


def main(argv: list[str] | None = None) -> int:
    """Runs ``sf-train``; returns the exit status (2 for user errors, with the fix printed)."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="sf-train",
        description="Asynchronous APPO / V-trace training on sf Doom environments "
        "(or any gymnasium id with the engine's async vector face).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    if not argv or argv[0] not in COMMANDS:
        parser.parse_args(argv)  # prints usage / help and exits
        return 2
    logging.basicConfig(
        level=logging.INFO,
        format="%(message)s",
        handlers=[log_handler(console)],
    )
    command, rest = COMMANDS[argv[0]][0], argv[1:]
    try:
        return command(rest)
    except USER_ERRORS as e:
        console.print("[red]error:[/]", escape(str(e)), soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        console.print(
            "[yellow]interrupted[/]: a training run continues from its last checkpoint with "
            "sf-train train --run-dir DIR --resume",
            soft_wrap=True,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
