"""Memory in the workflow: real config, real FAISS (or in_memory), the real embedding model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hydra_config import compose_config
from omegaconf import DictConfig


@pytest.fixture
def make_config(tmp_path: Path) -> Callable[..., DictConfig]:
    """The composed config with memory ON (faiss in a fresh folder) unless overridden."""

    def make(*overrides: str) -> DictConfig:
        return compose_config(
            f"outputs_dir={tmp_path / 'outputs'}",
            "memory.backend=faiss",
            f"memory.faiss.path={tmp_path / 'memory'}",
            *overrides,
        )

    return make
