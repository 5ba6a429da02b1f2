"""MemoryConfig validation, the Hydra group, and the CLI's export/import round trip."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf
from pydantic import BaseModel

from DeepResearch.src.memory import MemoryConfig, MemoryConfigError
from DeepResearch.src.memory.cli import compose_config

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "DeepResearch.src.memory.cli"]


@pytest.mark.unit
def test_yaml_defaults_equal_the_model_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEO4J_URI", raising=False)
    monkeypatch.delenv("NEO4J_PASSWORD", raising=False)
    monkeypatch.delenv("NEO4J_USERNAME", raising=False)
    for backend in ("faiss", "neo4j", "in_memory"):  # default.yaml + each backend option
        memory = compose_config([f"memory/backend={backend}"]).memory
        assert MemoryConfig.from_omegaconf(memory) == MemoryConfig(backend=backend)


def _keys(model: Any, prefix: str = "") -> Iterator[str]:
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from _keys(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}"


@pytest.mark.unit
@pytest.mark.parametrize("backend", ["in_memory", "faiss", "neo4j"])
def test_every_setting_is_in_the_yaml_so_an_override_can_reach_it(backend: str) -> None:
    # Hydra refuses an override of a key the composed YAML lacks: a setting the model has
    # and the YAML does not would be documented but impossible to set from a command line.
    composed = OmegaConf.to_container(compose_config([f"memory/backend={backend}"]).memory)
    other = {"faiss", "neo4j"} - {backend}  # each backend option composes its own section
    missing = []
    for key in _keys(MemoryConfig(backend=backend)):
        node: Any = composed
        for part in key.split("."):
            node = node.get(part, KeyError) if isinstance(node, dict) else KeyError
        if node is KeyError and key.split(".")[0] not in other:
            missing.append(key)
    assert missing == []


@pytest.mark.unit
@pytest.mark.parametrize("option", ["in_memory", "faiss", "neo4j"])
def test_group_options_select_a_backend_and_overrides_apply(option: str) -> None:
    overrides = ["enabled=false", "session_ttl=null", "retrieval.top_k=10",
                 "retrieval.min_similarity=0.8", "profiles.prime.max_items=20"]
    composed = compose_config([f"memory/backend={option}", *(f"memory.{o}" for o in overrides)])
    cfg = MemoryConfig.from_omegaconf(composed.memory)
    assert cfg.backend == option and cfg.enabled is False and cfg.session_ttl is None
    assert (cfg.retrieval.top_k, cfg.retrieval.min_similarity) == (10, 0.8)
    assert cfg.profiles["prime"].max_items == 20


@pytest.mark.unit
@pytest.mark.parametrize("spelling", ["memory/recall=multi_session", "memory.recall=multi_session"])
def test_the_recall_option_sets_its_retrieval_settings_under_overrides(spelling: str) -> None:
    composed = compose_config(["memory/backend=neo4j", spelling, "memory.retrieval.top_k=7"])
    cfg = MemoryConfig.from_omegaconf(composed.memory)
    assert cfg.backend == "neo4j" and cfg.retrieval.top_k == 7
    assert cfg.retrieval.feedback.enabled and cfg.retrieval.observations.enabled
    assert cfg.retrieval.graph.enabled and cfg.retrieval.graph.weight == 0.2
    plain = MemoryConfig.from_omegaconf(compose_config([]).memory).retrieval
    assert not plain.feedback.enabled and not plain.observations.enabled
    assert plain.graph.enabled and plain.graph.weight == 0.05  # the graph joins every search


@pytest.mark.unit
def test_the_group_choices_are_the_option_files() -> None:
    from DeepResearch.src.memory.config import GROUPS, as_group_choice

    conf = REPO / "DeepResearch" / "conf" / "memory"
    for group, choices in GROUPS.items():
        files = {f.stem for f in (conf / group).glob("*.yaml")}
        assert set(choices) == files, group
    with pytest.raises(MemoryConfigError, match=r"memory.recall='multihop': choices are"):
        as_group_choice(["memory.recall=multihop"])


@pytest.mark.unit
@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({"retrieval": {"top_k": -1}}, ["memory.retrieval.top_k", "-1", "greater than or equal to 1"]),
        ({"backend": "mongo"}, ["memory.backend", "'mongo'", "'in_memory', 'faiss' or 'neo4j'"]),
        ({"compression": {"algorithm": "brotli"}}, ["memory.compression.algorithm", "lz4"]),
        ({"vector_store": {"index_type": "manhattan"}}, ["memory.vector_store.index_type", "cosine"]),
        ({"faiss": {"index_kind": "ivf"}}, ["memory.faiss.index_kind", "hnsw"]),
        ({"vector_store": {"embedding_runtime": "tensorrt"}},
         ["memory.vector_store.embedding_runtime", "'tensorrt'", "'onnx-fp32'", "'onnx'",
          "'sentence-transformers'"]),
        ({"storage": {"batchsize": 3}}, ["memory.storage.batchsize", "allowed keys", "batch_size"]),
        ({"profiles": {"planner": {"priorities": {"plan": -1}}}}, ["memory.profiles.planner", "negative"]),
        ({"neo4j": {"node_label": "Memory) DETACH DELETE"}}, ["memory.neo4j.node_label"]),
        ({"on_unavailable": "ignore"}, ["memory.on_unavailable", "'warn' or 'fail'"]),
    ],
)
def test_bad_values_name_key_value_and_choices(kwargs: dict, fragments: list[str]) -> None:
    with pytest.raises(MemoryConfigError) as err:
        MemoryConfig(**kwargs)
    for fragment in fragments:
        assert fragment in str(err.value)


@pytest.mark.unit
def test_sections_accept_plain_dicts() -> None:
    cfg = MemoryConfig(backend="faiss", faiss={"path": "/tmp/x"})
    assert cfg.faiss.path == "/tmp/x" and cfg.retrieval.top_k == 5 and "executor" in cfg.profiles


@pytest.mark.integration
def test_cli_export_import_round_trips_exactly(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    lines = []
    for i in range(3):
        lines.append({
            "id": f"id-{i}", "session_id": "s1" if i < 2 else "s2", "memory_type": "note",
            "agent_type": None if i else "planner", "content": f"memory number {i} about STAR ✓",
            "created_at": 1_700_000_000.123456 + i, "expires_at": None if i else 2_000_000_000.5,
            "importance": 0.25 * i, "temporal_weight": 1.0, "metadata": {"i": i, "nested": {"x": [i]}},
            "relations": [["follows", f"id-{i - 1}"]] if i else [], "vector": None,
        })
    given = tmp_path / "given.jsonl"
    given.write_text("".join(json.dumps(line) + "\n" for line in lines))

    def cli(*args: str, path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI, *args, f"memory.faiss.path={path}", "memory.backend=faiss"],
                              capture_output=True, text=True, cwd=REPO, timeout=300, check=True)

    imported = cli("import", str(given), path=src)  # no vectors given: embeds them
    # stderr is no terminal here: no progress bar, the report alone on stdout
    assert imported.stderr == "" and imported.stdout.startswith("imported 3 memories")
    out1 = tmp_path / "export1.jsonl"
    cli("export", str(out1), path=src)
    cli("import", str(out1), path=dst)  # vectors given: no model needed
    out2 = tmp_path / "export2.jsonl"
    cli("export", str(out2), path=dst)
    exported = [json.loads(x) for x in out1.read_text().splitlines()]
    assert out1.read_text() == out2.read_text()
    for want, got in zip(lines, exported, strict=True):
        assert {k: v for k, v in got.items() if k != "vector"} == {
            "namespace": "default", **{k: v for k, v in want.items() if k != "vector"}}
        assert got["vector"]
    listed = cli("list", "--session", "s1", path=dst).stdout
    assert "id-0" in listed and "id-2" not in listed
    shown = json.loads(cli("show", "id-1", path=dst).stdout)
    assert shown["metadata"] == {"i": 1, "nested": {"x": [1]}}
    assert "forgot 1" in cli("forget", "id-2", path=dst).stdout
    assert json.loads(cli("stats", path=dst).stdout)["total"] == 2


@pytest.mark.unit
def test_cli_does_not_import_torch_for_non_embedding_commands() -> None:
    code = "import sys; from DeepResearch.src.memory import cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "False"


def test_the_top_k_limit_the_docs_quote_is_the_one_validation_uses() -> None:
    """One constant bounds top_k everywhere; every limit the docs give for it is that one."""
    from DeepResearch.src.memory.config_base import MAX_TOP_K
    from DeepResearch.src.memory.errors import MemoryInputError
    from DeepResearch.src.memory.inputs import clean_top_k
    from DeepResearch.src.memory.service.schemas import SearchRequest

    docs = Path(__file__).resolve().parents[2] / "docs"
    quoted = [
        int(n.replace(",", ""))
        for doc in docs.glob("*.md")
        for n in re.findall(r"top[_-]k`?[^\n]{0,40}?(?:at most |outside 1-|from 1 to )([\d,]+)",
                            doc.read_text())
    ]
    assert len(quoted) >= 3 and set(quoted) == {MAX_TOP_K}, quoted
    assert MemoryConfig.from_omegaconf({"retrieval": {"top_k": MAX_TOP_K}}).retrieval.top_k == MAX_TOP_K
    with pytest.raises(MemoryConfigError, match="top_k"):
        MemoryConfig.from_omegaconf({"retrieval": {"top_k": MAX_TOP_K + 1}})
    with pytest.raises(ValueError, match=str(MAX_TOP_K)):
        SearchRequest.model_validate({"query": "x", "top_k": MAX_TOP_K + 1})
    assert clean_top_k(MAX_TOP_K) == MAX_TOP_K
    with pytest.raises(MemoryInputError, match=str(MAX_TOP_K)):
        clean_top_k(MAX_TOP_K + 1)
