"""The packaged configuration as both commands compose it: group options, dotted overrides,
and a user's own config folder joined with hydra.searchpath."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from DeepResearch.src.memory.cli import load_config


@pytest.mark.unit
def test_memory_overrides_compose_through_the_cli_loader() -> None:
    cfg = load_config(["memory.backend=faiss", "memory.retrieval.top_k=10",
                       "memory.profiles.prime.max_items=20"])
    assert (cfg.backend, cfg.retrieval.top_k, cfg.profiles["prime"].max_items) == ("faiss", 10, 20)
    assert load_config(["memory=neo4j"]).backend == "neo4j"
    assert load_config(["memory=in_memory", "memory.enabled=false"]).enabled is False


def user_config_dir(tmp_path: Path) -> Path:
    (tmp_path / "myconf" / "memory").mkdir(parents=True)
    (tmp_path / "myconf" / "llm").mkdir()
    (tmp_path / "myconf" / "memory" / "mine.yaml").write_text(
        "defaults:\n  - default\n  - _self_\nbackend: in_memory\nretrieval:\n  top_k: 9\n")
    (tmp_path / "myconf" / "llm" / "short.yaml").write_text(
        "defaults:\n  - offline\n  - _self_\nsentences_per_answer: 2\n")
    return tmp_path / "myconf"


@pytest.mark.unit
def test_a_users_config_folder_joins_the_memory_cli(tmp_path: Path) -> None:
    myconf = user_config_dir(tmp_path)
    cfg = load_config(["memory=mine", f"hydra.searchpath=[{myconf}]"])
    assert (cfg.backend, cfg.retrieval.top_k) == ("in_memory", 9)


@pytest.mark.integration
def test_a_users_config_folder_joins_deepresearch(tmp_path: Path) -> None:
    user_config_dir(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "DeepResearch.app", "hydra.searchpath=[myconf]", "llm=short",
         "--cfg", "job", "--package", "llm"],
        cwd=tmp_path, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True,
        timeout=120)
    assert done.returncode == 0, done.stderr
    assert "sentences_per_answer: 2" in done.stdout and "provider: offline" in done.stdout
