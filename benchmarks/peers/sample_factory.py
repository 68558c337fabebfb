"""sf-train against Sample Factory 2.1.1 on Doom, same machine, same sitting, same wall clock.

Five contenders train each scenario for the same wall-clock budget with 8 envs on 2 workers:

  a. Sample Factory 2.1.1's own Doom APPO through its entry point
     (``python -m sf_examples.vizdoom.train_vizdoom``): its default Doom model (conv 32/64/128,
     FC 512, GRU 512) on 128x72 RGB, 2 workers x 4 envs, all its algorithm defaults, and its own
     env for the scenario (on battle, ``doom_battle``: turning in 11 steps, a sprint button,
     health, ammo and weapons as an extra input vector, and a reward shaped with them).
  b. sf-train with that model, observation and algorithm (``--preset sample-factory``); on
     battle with Sample Factory's action set as well (``action_set=sample_factory``: the same
     heads, turning in 11 steps and a sprint button), so both play the same game, and health
     and ammo as an extra input (``measurements=true``; Sample Factory's vector also has its
     weapons, armour and kills).
  c. sf-train as ``sf-train train --env ID`` runs it: its defaults, or the id's task-family
     preset where it has one (``sf_train.config.presets.ENV_PRESETS``). Its learning rate
     decays to 0 at its frame budget: 600k frames on basic and defend_the_center
     (it may end before the clock); elsewhere none, as 600k frames would
     stop it after a few minutes of the budget: it trains until stopped, like b and d, at a
     constant rate as Sample Factory does by default.
     ``--c-frames`` sets the budget.
  d. b with ``--precision bfloat16``: the same model and settings, its products in bfloat16
     (the sampler's weights, and the learner under autocast; see ``sf_train.config.schema``).
  e. b with ``--precision int8``: the same model and settings, learning in float32 and acting
     with the FC layer and GRU quantized to int8 (``sf_train.model.int8``).

The sf-train contenders step half their envs per recv (``--batch-size 4``, as Sample Factory's
``worker_num_splits=2`` does), checkpoint by time only and skip their in-training evaluation
(``--eval-episodes 0``), which Sample Factory does not have either.

Each trainer saves a checkpoint every ``--grid`` seconds of its own clock and keeps them all; a
checkpoint's frames are the trainer's own count (Sample Factory's ``env_steps`` in its file
name, frame skip included; sf-train's ``checkpoint_<frames>.pt``), its time is its file's mtime
minus the contender's start. At the end of the budget the contender's process group gets
SIGINT (then SIGTERM, SIGKILL), and every process it started and every /dev/shm file they
mapped is checked gone. While it trains, the peak memory of its process tree is sampled from
/proc (the sum of RSS, which counts shared pages once per process, and of PSS, which splits
them). Nothing is evaluated until every contender has trained, so no evaluation shares the CPU
with a timed run; then every checkpoint plays ``--episodes`` episodes, an equal quota per env,
sampling its actions: sf-train's with ``sf_train.evaluation.evaluate``, Sample Factory's with
``sf_evaluate.py`` inside its own venv. Both record each episode's return in ViZDoom's raw
units (the engine's, before Sample Factory's scaling and shaping) and its kills, the engine's
``KILLCOUNT`` at the episode's end. Both sides' episodes end at the player's death or at the
same limit in game tics (battle: 2100 tics, 525 steps of 4 tics; Sample Factory's doom_battle
sets it in its cfg and again as a 2100-frame time limit, sf/DoomBattle-v0 in the engine).

Reported per scenario and contender: env frames/s (the median over the intervals between
consecutive checkpoints, the first excluded, and overall), peak memory, final frames, best and
final evaluated score, time and frames to a mean return of 75 (basic), and the ratios of b, c
and d to a; as results.md, results.json and a PNG per scenario in ``--out``. The score is the
mean return, except on battle: kills per episode, since there Sample Factory's return is its
shaped reward (sf-train's is +1 per kill, as the scenario's own reward).

Sample Factory runs in its own venv (default ``~/.cache/sf/peers/sample-factory-2.1.1``),
created on first use with python3.11 (about 1 min from the local wheels). Not part of CI. Run
it on an otherwise idle machine, from the repo root:

    hatch run python benchmarks/peers/sample_factory.py \\
        [--scenarios basic defend_the_center battle health_gathering_supreme my_way_home
         deadly_corridor defend_the_line] [--seconds 200] [--grid 20] \\
        [--episodes 100] [--contenders a b c d e] [--out runs/peers] [--venv PATH] \\
        [--c-frames N] [--c-args='SF-TRAIN FLAGS'] [--preset-args='SF-TRAIN FLAGS'] [--eval-only]

Wall time with the defaults (basic and defend_the_center) on a 2-core machine, about 60-80
min: training is scenarios x contenders x (``--seconds`` + ~5 s to stop), 28 min; evaluating
a checkpoint takes 3-9 s on basic (episodes of at most 75 steps) and up to ~1 min on
defend_the_center (at most 525 steps: longer as the agent survives longer). Doom basic alone
with ``--seconds 450 --grid 30 --contenders a b c`` took 19 min (results in
``docs/benchmarks/sittings/``). Battle learns slowly: Sample Factory's defaults against sf-train's for
15 min each takes about 40-60 min (31 min of training, then 10 checkpoints per contender, each
playing 50 episodes of up to 525 steps: 0.5-2 min for Sample Factory's, whose evaluation steps
its envs in one process, less for sf-train's):

    hatch run python benchmarks/peers/sample_factory.py --scenarios battle --contenders a c \\
        --seconds 900 --grid 90 --episodes 50 --out runs/peers_battle

``--eval-only`` evaluates the runs already in ``--out`` again without training. ``--sitting
NAME`` also writes the sitting's raw page for the docs: ``docs/benchmarks/sittings/NAME.md``
(the results table and its plot) and ``NAME.png`` (``NAME_<scenario>.png`` for several
scenarios); the curated page of the scenario (``docs/benchmarks/peers-*.md``) then gets a row
in its history table and a link to it.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for common
from common.peers_report import METRICS, Point, plot, summarize, table, write_sitting
from common.supervise import Supervision, run_for

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/peers/, for sf_venv
from sf_venv import DEFAULT_VENV, ensure_venv, say

#: Scenario name -> (sf-envs gymnasium id, Sample Factory env name).
SCENARIOS: dict[str, tuple[str, str]] = {
    "basic": ("sf/DoomBasic-v0", "doom_basic"),
    "defend_the_center": ("sf/DoomDefendTheCenter-v0", "doom_defend_the_center"),
    "battle": ("sf/DoomBattle-v0", "doom_battle"),
    "health_gathering_supreme": (
        "sf/DoomHealthGatheringSupreme-v0",
        "doom_health_gathering_supreme",
    ),
    "my_way_home": ("sf/DoomMyWayHome-v0", "doom_my_way_home"),
    "deadly_corridor": ("sf/DoomDeadlyCorridor-v0", "doom_deadly_corridor"),
    "defend_the_line": ("sf/DoomDefendTheLine-v0", "doom_defend_the_line"),
}
#: The per-episode score of a scenario (a key of ``report.METRICS``), by default its return.
#: On battle Sample Factory trains on a shaped reward, so both are scored by the engine's kills.
METRIC: dict[str, str] = {"battle": "kills", "health_gathering_supreme": "survival"}
CONTENDERS: dict[str, str] = {
    "a": "Sample Factory 2.1.1",
    "b": "sf-train --preset sample-factory",
    "c": "sf-train defaults",
    "d": "sf-train --preset sample-factory --precision bfloat16",
    "e": "sf-train --preset sample-factory --precision int8",
}
#: The contenders that run sf-train's sample-factory preset (with their extra flags).
PRESET_FLAGS: dict[str, list[str]] = {
    "b": [],
    "d": ["--precision", "bfloat16"],
    "e": ["--precision", "int8"],
}
#: Env options of the preset contenders per scenario: where Sample Factory's env plays with
#: other controls or inputs than sf-envs' defaults, the preset takes them too.
PRESET_ENV_OPTIONS: dict[str, list[str]] = {
    "battle": ["action_set=sample_factory", "measurements=true"]
}
TARGET = {"basic": 75.0}  # the mean return that counts as solved, in ViZDoom's units
NUM_ENVS, NUM_WORKERS = 8, 2
UNTIL_STOPPED = 10**12  # a frame budget no run reaches: it trains until the clock stops it
#: (c)'s frame budget: 600k frames where they learn the scenario with sf-train's defaults; on
#: battle, where 600k frames would use a few minutes of the budget, it trains until stopped.
C_FRAMES: dict[str, int] = {"basic": 600_000, "defend_the_center": 600_000}
BATCH_SIZE = 4  # envs per recv: half of them, as Sample Factory's worker_num_splits=2 does
HERE = Path(__file__).resolve().parent
SF_CHECKPOINT = re.compile(r"checkpoint_(\d+)_(\d+)\.pth")  # train step, env frames
OUR_CHECKPOINT = re.compile(r"checkpoint_(\d+)\.pt")  # env frames


# -- the contenders ------------------------------------------------------------------------


@dataclass
class Contender:
    """One trainer on one scenario: the command that trains it and where it writes."""

    key: str
    scenario: str
    run_dir: Path
    command: list[str]
    extra: tuple[str, ...] = ()  # flags on top of its configuration (--c-args, --preset-args)

    @property
    def label(self) -> str:
        return " ".join([CONTENDERS[self.key], *self.extra])

    @property
    def is_sample_factory(self) -> bool:
        return self.key == "a"

    @property
    def experiment_dir(self) -> Path:
        """Sample Factory's experiment folder (its train_dir/experiment), else the run folder."""
        return self.run_dir / "sf" if self.is_sample_factory else self.run_dir


def make_contender(key: str, scenario: str, args: argparse.Namespace, venv: Path) -> Contender:
    env_id, sf_env = SCENARIOS[scenario]
    run_dir = (args.out / scenario / key).resolve()
    extra = _extra_flags(key, args)
    if key == "a":
        command = [
            str(venv / "bin/python"),
            *("-m", "sf_examples.vizdoom.train_vizdoom", f"--env={sf_env}", "--experiment=sf"),
            *(f"--train_dir={run_dir}", "--device=cpu", f"--seed={args.seed}"),
            *(f"--num_workers={NUM_WORKERS}", f"--num_envs_per_worker={NUM_ENVS // NUM_WORKERS}"),
            *(f"--save_every_sec={args.grid}", "--keep_checkpoints=1000"),
        ]
    else:
        preset = (
            extra
            if key == "c"
            else ["--preset", "sample-factory", *PRESET_FLAGS[key], *_env_options(scenario), *extra]
        )
        command = [
            *(sys.executable, "-m", "sf_train.cli", "train", "--env", env_id),
            *("--run-dir", str(run_dir), *preset, "--seed", str(args.seed)),
            *("--num-envs", str(NUM_ENVS), "--num-workers", str(NUM_WORKERS)),
            # (c) trains its frame budget (its learning rate decays to 0 there) and may end
            # before the clock; the others run on until stopped.
            *("--batch-size", str(BATCH_SIZE), "--frames", str(_frames(key, scenario, args))),
            # Checkpoints on the time grid only (none by frames), all kept, and no evaluation
            # while the clock runs: every contender is evaluated after all have trained.
            *("--checkpoint-seconds", str(args.grid), "--checkpoint-every", str(10**12)),
            *("--keep-checkpoints", "1000", "--eval-episodes", "0"),
        ]
    return Contender(key, scenario, run_dir, command, tuple(extra))


def _extra_flags(key: str, args: argparse.Namespace) -> list[str]:
    """The flags a contender adds to its configuration: (c) ``--c-args``, the preset
    contenders ``--preset-args``, Sample Factory none."""
    if key == "a":
        return []
    return list(args.c_args if key == "c" else args.preset_args)


def _env_options(scenario: str) -> list[str]:
    options = PRESET_ENV_OPTIONS.get(scenario)
    return ["--env-options", *options] if options else []


def _frames(key: str, scenario: str, args: argparse.Namespace) -> int:
    """An sf-train contender's ``--frames``: (c)'s budget, else until stopped."""
    if key != "c":
        return UNTIL_STOPPED
    return args.c_frames or C_FRAMES.get(scenario, UNTIL_STOPPED)


# -- checkpoints and their evaluation ------------------------------------------------------


def train(contender: Contender, seconds: float) -> Supervision:
    """Trains the contender for ``seconds`` of wall time in a fresh run folder, with its
    supervision saved there as train.json."""
    if contender.run_dir.exists():
        shutil.rmtree(contender.run_dir)
    contender.run_dir.mkdir(parents=True)
    run = run_for(contender.command, contender.run_dir, seconds)
    if run.exit_code is not None:
        say(f"  warning: {contender.label} exited early with code {run.exit_code}; see train.log")
    (contender.run_dir / "train.json").write_text(json.dumps(asdict(run), indent=2))
    return run


def checkpoints(contender: Contender, record: Supervision) -> list[Point]:
    """The contender's checkpoints written within its budget, by time."""
    if contender.is_sample_factory:
        folder, pattern, group = contender.experiment_dir / "checkpoint_p0", SF_CHECKPOINT, 2
    else:
        folder, pattern, group = contender.run_dir / "checkpoints", OUR_CHECKPOINT, 1
    points = []
    for path in folder.glob("checkpoint_*") if folder.is_dir() else []:
        if match := pattern.fullmatch(path.name):
            at = path.stat().st_mtime - record.start
            if at <= record.seconds:
                points.append(Point(str(path), at, int(match[group])))
    return sorted(points, key=lambda p: p.time_s)


def _frame_skip(contender: Contender) -> int:
    config = json.loads((contender.experiment_dir / "config.json").read_text())
    return int(
        config["env_frameskip"] if contender.is_sample_factory else config["env"]["frame_skip"]
    )


def evaluate(
    contender: Contender, points: list[Point], args: argparse.Namespace, venv: Path
) -> None:
    """Fills in every point's episodes: ``args.episodes`` each, an equal quota per env."""
    from sf_envs.scenarios import get_scenario

    if contender.is_sample_factory:
        results = _evaluate_sample_factory(contender, points, args, venv)
    else:
        results = _evaluate_sf_train(contender, points, args)
    # Both trainers' envs end an episode at the scenario's limit in tics (battle: Sample
    # Factory's doom_battle cfg and time limit, 2100 tics, the same as sf/DoomBattle-v0's).
    timeout = get_scenario(contender.scenario).episode_timeout
    skip = _frame_skip(contender)
    for point, (returns, lengths, kills) in zip(points, results, strict=True):
        point.returns, point.lengths, point.kills = returns, lengths, kills
        point.timeouts = statistics.fmean(n * skip >= timeout for n in lengths)


Episodes = tuple[list[float], list[int], list[float]]  # returns, lengths, kills


def _evaluate_sf_train(
    contender: Contender, points: list[Point], args: argparse.Namespace
) -> list[Episodes]:
    from sf_train.evaluation import evaluate as evaluate_run

    results = []
    for point in points:
        started = time.perf_counter()
        result = evaluate_run(
            contender.run_dir,
            args.episodes,
            checkpoint=point.path,
            num_envs=args.eval_envs,
            seed=args.eval_seed,
        )
        if "killcount" not in result.variables:
            raise SystemExit(
                f"{SCENARIOS[contender.scenario][0]} reports no KILLCOUNT at episode end "
                f"(variables: {sorted(result.variables)}): update sf-envs"
            )
        returns = [float(r) for r in result.returns]
        kills = [float(k) for k in result.variables["killcount"]]
        seconds = time.perf_counter() - started
        say(
            f"    {Path(point.path).name}: mean return {statistics.fmean(returns):.1f}, "
            f"kills {statistics.fmean(kills):.2f} ({seconds:.0f} s)"
        )
        results.append((returns, [int(n) for n in result.lengths], kills))
    return results


def _evaluate_sample_factory(
    contender: Contender, points: list[Point], args: argparse.Namespace, venv: Path
) -> list[Episodes]:
    out = contender.run_dir / "eval.json"
    command = [
        *(str(venv.resolve() / "bin/python"), "-P", str(HERE / "sf_evaluate.py")),
        *("--experiment-dir", str(contender.experiment_dir), "--out", str(out)),
        *("--episodes", str(args.episodes), "--envs", str(args.eval_envs)),
        *("--seed", str(args.eval_seed), "--checkpoints", *(p.path for p in points)),
    ]
    with (contender.run_dir / "eval.log").open("wb") as log:
        # In the run folder, where the game writes its _vizdoom.ini, as it does in training.
        subprocess.run(command, stderr=log, check=True, cwd=contender.run_dir)
    results = json.loads(out.read_text())
    if results:
        say(f"    returns converted: {results[0]['reward_conversion']}")
    return [(r["returns"], r["lengths"], r["kills"]) for r in results]


def _sf_train_problems(contenders: list[str]) -> list[str]:
    """Flags this script needs that the installed sf-train lacks."""
    needed = {"--checkpoint-seconds", "--eval-episodes"} | (
        {"--preset"} if set(contenders) & PRESET_FLAGS.keys() else set()
    )
    if set(contenders) <= {"a"}:
        return []
    help_text = subprocess.run(
        [sys.executable, "-m", "sf_train.cli", "train", "--help"], capture_output=True, text=True
    ).stdout
    return [
        f"sf-train train has no {flag}: update sf-train"
        for flag in sorted(needed)
        if flag not in help_text
    ]


def _git_version() -> str:
    result = subprocess.run(
        ["git", "-C", str(HERE), "describe", "--always", "--dirty"], capture_output=True, text=True
    )
    return result.stdout.strip() or "unknown"


# -- main ----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scenarios",
        nargs="+",
        choices=list(SCENARIOS),
        default=["basic", "defend_the_center"],
        help="default: basic defend_the_center (battle needs a longer --seconds to learn)",
    )
    parser.add_argument(
        "--contenders", nargs="+", choices=list(CONTENDERS), default=list(CONTENDERS)
    )
    parser.add_argument("--seconds", type=float, default=200.0, help="wall budget per contender")
    parser.add_argument("--grid", type=int, default=20, help="seconds between checkpoints")
    parser.add_argument("--episodes", type=int, default=100, help="eval episodes per checkpoint")
    parser.add_argument(
        "--eval-envs",
        type=int,
        default=None,
        help="envs per evaluation (must divide --episodes); "
        "default: the largest divisor of --episodes up to 10",
    )
    parser.add_argument("--out", type=Path, default=Path("runs/peers"), help="output folder")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="Sample Factory's venv")
    parser.add_argument(
        "--c-frames",
        type=int,
        default=None,
        help="(c)'s --frames, where its learning rate reaches 0; default: 600k on basic and "
        "defend_the_center, until stopped on battle",
    )
    parser.add_argument(
        "--c-args",
        type=shlex.split,
        default=[],
        help="sf-train flags that (c) adds to its defaults, as one string after '=', e.g. "
        "--c-args='--entropy-coef 0.01' (shown in its label)",
    )
    parser.add_argument(
        "--preset-args",
        type=shlex.split,
        default=[],
        help="sf-train flags that b, d and e add to the preset, as one string after '=', e.g. "
        "--preset-args='--shaping health=0.004' (shown in their labels)",
    )
    parser.add_argument("--seed", type=int, default=0, help="training seed")
    parser.add_argument("--eval-seed", type=int, default=12345, help="evaluation seed")
    parser.add_argument("--eval-only", action="store_true", help="evaluate the runs in --out again")
    parser.add_argument(
        "--sitting",
        default=None,
        help="also write the raw page docs/benchmarks/sittings/SITTING.md and its PNG, e.g. "
        "peers_basic_450s_twelfth_sitting",
    )
    args = parser.parse_args(argv)
    if args.eval_envs is None:
        args.eval_envs = (
            max(n for n in range(1, 11) if args.episodes % n == 0) if args.episodes > 0 else 1
        )
    errors = []
    if args.c_frames is not None and args.c_frames < 1:
        errors.append(f"--c-frames {args.c_frames}: use a positive number of frames")
    if args.grid < 1:
        errors.append(f"--grid {args.grid}: use at least 1 second")
    if args.seconds < 3 * args.grid:
        errors.append(f"--seconds {args.seconds:g}: use at least 3 x --grid for two rate windows")
    if args.episodes < 1 or args.eval_envs < 1 or args.episodes % args.eval_envs:
        errors.append(
            f"--episodes {args.episodes} must be a positive multiple of --eval-envs {args.eval_envs}"
        )
    if not args.eval_only:
        errors += _sf_train_problems(args.contenders)
    if args.sitting is not None and not re.fullmatch(r"[a-z0-9_]+", args.sitting):
        errors.append(f"--sitting {args.sitting!r}: use lower-case letters, digits and _")
    if errors:
        parser.error("\n  ".join(["", *errors]))
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    versions = ensure_venv(args.venv) if "a" in args.contenders else {}
    if versions:
        say("Sample Factory's venv: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    runs = [
        make_contender(key, scenario, args, args.venv)
        for scenario in args.scenarios
        for key in args.contenders
    ]
    records: dict[tuple[str, str], Supervision] = {}
    for contender in runs:
        if args.eval_only:
            saved = contender.run_dir / "train.json"
            if not saved.is_file():
                raise SystemExit(f"--eval-only: {saved} does not exist; train that run first")
            data = json.loads(saved.read_text())
            records[contender.scenario, contender.key] = Supervision(**data)
            continue
        say(
            f"training {contender.scenario} / ({contender.key}) {contender.label} for {args.seconds:g} s"
        )
        record = train(contender, args.seconds)
        records[contender.scenario, contender.key] = record
        say(
            f"  stopped ({record.stop_signal}); peak RSS {record.peak_rss_mib:,.0f} MiB, "
            f"PSS {record.peak_pss_mib:,.0f} MiB; processes {record.processes}, "
            f"{record.leftover_processes} outlived SIGINT, {len(record.leftover_shm)} shm files removed"
        )

    report: dict[str, Any] = {
        "settings": {k: str(v) for k, v in vars(args).items()},
        "sample_factory_venv": versions,
        "sf_train_version": _git_version(),
        "num_envs": NUM_ENVS,
        "num_workers": NUM_WORKERS,
        "scenarios": {},
    }
    markdown = []
    for scenario in args.scenarios:
        curves: dict[str, tuple[str, list[Point]]] = {}
        summaries = []
        entry: dict[str, Any] = {}
        metric = METRIC.get(scenario, "return")
        for contender in (c for c in runs if c.scenario == scenario):
            record = records[scenario, contender.key]
            points = checkpoints(contender, record)
            say(
                f"evaluating {scenario} / ({contender.key}) {contender.label}: {len(points)} checkpoints"
            )
            if points:
                evaluate(contender, points, args, args.venv)
            curves[contender.key] = (contender.label, points)
            summary = summarize(
                contender.key, contender.label, record, points, TARGET.get(scenario), metric
            )
            summaries.append(summary)
            config = json.loads((contender.experiment_dir / "config.json").read_text())
            entry[contender.key] = {
                "summary": asdict(summary),
                "train": asdict(record),
                "command": contender.command,
                "config": config,
                "checkpoints": [
                    {**asdict(p), "mean": p.mean, "median": p.median, "kills_mean": p.kills_mean}
                    for p in points
                ],
            }
        report["scenarios"][scenario] = entry
        markdown.append(table(scenario, summaries, TARGET.get(scenario)))
        title = f"{scenario}: {NUM_ENVS} envs, {NUM_WORKERS} workers"
        plot(title, curves, TARGET.get(scenario), args.out / f"{scenario}.png", metric)
    text = _header(args, versions) + "\n\n" + "\n\n".join(markdown) + "\n"
    (args.out / "results.md").write_text(text)
    (args.out / "results.json").write_text(json.dumps(report, indent=1))
    print(text)
    say(f"wrote {args.out}/results.md, results.json and one PNG per scenario")
    if args.sitting is not None:
        page = write_sitting(args.sitting, text, args.out, args.scenarios)
        say(f"wrote the sitting's page {page} and its plot beside it")


def _header(args: argparse.Namespace, versions: dict[str, str]) -> str:
    sf = ", ".join(f"{k} {v}" for k, v in versions.items()) or "not run"
    return (
        f"## sf-train ({_git_version()}) against Sample Factory ({sf})\n\n"
        f"{NUM_ENVS} envs on {NUM_WORKERS} workers, {args.seconds:g} s of wall time per "
        f"contender, a checkpoint every {args.grid} s; each checkpoint evaluated over "
        f"{args.episodes} episodes ({args.episodes // args.eval_envs} in each of "
        f"{args.eval_envs} envs, sampled actions), returns in ViZDoom's units. Time-outs: "
        f"episodes that lasted to the scenario's time limit." + "".join(_scenario_notes(args))
    )


def _scenario_notes(args: argparse.Namespace) -> list[str]:
    """What the header must add for the scenarios run: battle's metric and (c)'s budget."""
    from sf_envs.scenarios import get_scenario

    notes = []
    if "battle" in args.scenarios:
        tics = get_scenario("battle").episode_timeout
        notes.append(
            f" Battle is scored in {METRICS['kills']}: the engine's KILLCOUNT at each "
            f"episode's end, for both trainers (Sample Factory trains on a shaped reward, "
            f"sf-train on +1 per kill); episodes end at death or after {tics} tics "
            f"({tics // 35} s of game time) on both sides."
        )
    if "health_gathering_supreme" in args.scenarios:
        notes.append(
            f" health_gathering_supreme is scored in {METRICS['survival']} (4 tics each on both "
            "sides): ViZDoom's scenario, which sf-train plays, pays 1 a tic and -100 at death, "
            "Sample Factory's 0.01 a tic; both end at death or after 2100 tics."
        )
    if "c" in args.contenders:
        budgets = {s: _frames("c", s, args) for s in args.scenarios}
        shown = [
            f"{s} {'until stopped' if f >= UNTIL_STOPPED else f'{f:,}'}" for s, f in budgets.items()
        ]
        notes.append(
            f" (c)'s frame budget (its learning rate reaches 0 there): {', '.join(shown)}."
        )
    return notes


if __name__ == "__main__":
    main()
