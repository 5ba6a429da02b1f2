"""The packaged configuration as both commands compose it: group options, dotted overrides,
and a user's own config folder joined with hydra.searchpath."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from DeepResearch.src.memory.cli import compose_config, load_config
from DeepResearch.src.memory.errors import MemoryConfigError


@pytest.mark.unit
def test_memory_overrides_compose_through_the_cli_loader() -> None:
    cfg = load_config(["memory.backend=faiss", "memory.retrieval.top_k=10",
                       "memory.profiles.prime.max_items=20"])
    assert (cfg.backend, cfg.retrieval.top_k, cfg.profiles["prime"].max_items) == ("faiss", 10, 20)
    assert load_config(["memory/backend=neo4j"]).backend == "neo4j"
    assert load_config(["memory/backend=in_memory", "memory.enabled=false"]).enabled is False


@pytest.mark.unit
@pytest.mark.parametrize("choice", ["memory/backend", "memory.backend", "memory"])
def test_a_backend_option_composes_its_own_section_only(choice: str) -> None:
    sections = {"faiss": "faiss", "neo4j": "neo4j", "in_memory": None}
    for backend, own in sections.items():
        memory = compose_config([f"{choice}={backend}"]).memory
        assert memory.backend == backend
        composed = {name for name in ("faiss", "neo4j") if name in memory}
        assert composed == ({own} if own else set()), (backend, composed)


@pytest.mark.unit
def test_the_value_spelling_takes_the_chosen_backends_section_keys() -> None:
    # Hydra alone would keep the faiss section and refuse memory.neo4j.uri beside it.
    cfg = load_config(["memory.backend=neo4j", "memory.neo4j.uri=bolt://db.example.org:7687"])
    assert (cfg.backend, cfg.neo4j.uri) == ("neo4j", "bolt://db.example.org:7687")


@pytest.mark.unit
@pytest.mark.parametrize("arg", ["memory.backend=redis", "memory/backend=faiss,redis"])
def test_an_unknown_backend_is_named_with_the_choices(arg: str) -> None:
    with pytest.raises(MemoryConfigError, match=r"memory.backend='redis': choices are .*neo4j"):
        load_config([arg])


@pytest.mark.unit
def test_neo4j_credentials_come_from_the_environment_by_default(monkeypatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://from-env:7687")
    monkeypatch.setenv("NEO4J_PASSWORD", "s3cret")
    cfg = load_config(["memory/backend=neo4j"])
    assert (cfg.neo4j.uri, cfg.neo4j.password) == ("bolt://from-env:7687", "s3cret")
    from DeepResearch.src.memory.config import MemoryConfig  # built in Python, no Hydra

    assert MemoryConfig(backend="neo4j").neo4j.uri == "bolt://from-env:7687"


def user_config_dir(tmp_path: Path) -> Path:
    (tmp_path / "myconf" / "memory").mkdir(parents=True)
    (tmp_path / "myconf" / "llm").mkdir()
    (tmp_path / "myconf" / "memory" / "mine.yaml").write_text(
        "defaults:\n  - default\n  - override backend: in_memory\n  - _self_\n"
        "retrieval:\n  top_k: 9\n")
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
