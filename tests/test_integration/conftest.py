"""Memory in the workflow: real config, real FAISS (or in_memory), the real embedding model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"


@pytest.fixture
def make_config(tmp_path: Path) -> Callable[..., DictConfig]:
    """The composed config with memory ON (faiss in a fresh folder) unless overridden."""

    def make(*overrides: str) -> DictConfig:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            return compose(
                config_name="config",
                overrides=[
                    f"outputs_dir={tmp_path / 'outputs'}",
                    "memory.backend=faiss",
                    f"memory.faiss.path={tmp_path / 'memory'}",
                    *overrides,
                ],
            )

    return make
