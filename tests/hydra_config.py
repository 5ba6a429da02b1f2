"""The CLI's real Hydra config, composed for tests."""

from __future__ import annotations

from hydra import compose, initialize_config_module
from omegaconf import DictConfig

from DeepResearch.src.memory.config import as_group_choice

CONFIG_MODULE = "DeepResearch.conf"


def compose_config(*overrides: str) -> DictConfig:
    """DeepResearch/conf/config.yaml composed with `overrides`, as `deepresearch` would see it."""
    with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
        return compose(config_name="config", overrides=as_group_choice(overrides))
