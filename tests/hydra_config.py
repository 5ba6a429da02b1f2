"""The CLI's real Hydra config, composed for tests."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"


def compose_config(*overrides: str) -> DictConfig:
    """configs/config.yaml composed with `overrides`, as `deepresearch` would see it."""
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))
