"""A training run's TensorBoard scalars as series over frames and training seconds, read the
same way by every script that plots or compares runs."""

from __future__ import annotations

from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import (
    SCALARS,
    EventAccumulator,
)

__all__ = ["Series", "read_series"]

Series = list[tuple[int, float, float]]
"""(frames, value, seconds of training before it) of one TensorBoard tag."""


def read_series(run_dir: Path) -> dict[str, Series]:
    """Every tag's points over every session of the run, a resumed run's sessions one after
    the other: seconds count training sessions only, not the time between them (each session
    writes an event file of its own, named after its start)."""
    tags: dict[str, Series] = {}
    offset = 0.0
    files = sorted(run_dir.glob("events.out.tfevents.*"), key=lambda p: int(p.name.split(".")[3]))
    for path in files:
        events = EventAccumulator(str(path), size_guidance={SCALARS: 0})
        events.Reload()
        points = {tag: events.Scalars(tag) for tag in events.Tags()["scalars"]}
        times = [p.wall_time for scalars in points.values() for p in scalars]
        if not times:
            continue
        start = min(times)
        for tag, scalars in points.items():
            tags.setdefault(tag, []).extend(
                (p.step, p.value, offset + p.wall_time - start) for p in scalars
            )
        offset += max(times) - start
    return tags
