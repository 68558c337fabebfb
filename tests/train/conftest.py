"""Shared settings for the sf-train tests: few threads, so the suite stays fast on a shared CPU."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _few_threads() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
