"""Compose the real Hydra config for workflow tests (memory off: these test the Foundation)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"


@pytest.fixture
def make_config(tmp_path: Path) -> Callable[..., DictConfig]:
    def make(*overrides: str) -> DictConfig:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            return compose(
                config_name="config",
                overrides=[
                    f"outputs_dir={tmp_path / 'outputs'}",
                    "memory.enabled=false",
                    *overrides,
                ],
            )

    return make
