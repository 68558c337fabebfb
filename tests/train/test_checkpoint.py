from __future__ import annotations

import pytest
import torch

from sf_train.run import checkpoint
from sf_train.run.checkpoint import BEST, CheckpointError, Checkpoints, load_checkpoint


def state(value: float) -> dict:
    return {"model": {"w": torch.full((3,), value)}, "frames": int(value)}


def test_keeps_the_last_k_and_the_best(tmp_path):
    ckpts = Checkpoints(tmp_path, keep=2)
    for frames, mean_return in [(10, 1.0), (20, 5.0), (30, 2.0), (40, None)]:
        ckpts.save(state(frames), frames, mean_return)
    assert [p.name for p in ckpts.all()] == [
        "checkpoint_000000000030.pt",
        "checkpoint_000000000040.pt",
    ]
    best = load_checkpoint(tmp_path / BEST)
    assert best["frames"] == 20 and best["best_return"] == 5.0
    assert load_checkpoint(ckpts.latest())["best_return"] == 5.0


def test_a_crash_while_saving_leaves_the_previous_checkpoint_loadable(tmp_path, monkeypatch):
    ckpts = Checkpoints(tmp_path, keep=1)
    first = ckpts.save(state(1.0), 1, 1.0)
    real_save = torch.save

    def crash_midway(obj, f):
        real_save(obj, f)
        f.seek(0)
        f.truncate(20)  # half a file on disk, then the process "dies"
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint.torch, "save", crash_midway)
    with pytest.raises(OSError, match="disk full"):
        ckpts.save(state(2.0), 2, 9.0)
    monkeypatch.undo()
    assert ckpts.all() == [first]
    assert sorted(p.name for p in tmp_path.iterdir()) == [BEST, first.name]  # no temp files
    assert torch.equal(load_checkpoint(first)["model"]["w"], torch.full((3,), 1.0))
    assert load_checkpoint(tmp_path / BEST)["frames"] == 1
    assert ckpts.best_return == 1.0


def test_missing_and_corrupt_files_name_the_file_and_the_fix(tmp_path):
    with pytest.raises(CheckpointError, match=r"nothing\.pt does not exist: train first"):
        load_checkpoint(tmp_path / "nothing.pt")
    bad = tmp_path / "checkpoint_000000000001.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match=r"checkpoint_000000000001\.pt is corrupt.*delete it"):
        load_checkpoint(bad)
    torch.save({"weights": 1}, bad)
    with pytest.raises(CheckpointError, match="holds no model state"):
        load_checkpoint(bad)
