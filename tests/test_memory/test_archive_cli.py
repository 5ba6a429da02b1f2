"""`deepresearch-memory archive / restore / list --archived / forget --archived` on a real
embedded store, through the real command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.embeddings import Embedder

pytestmark = [pytest.mark.slow, pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]


def memory_cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "DeepResearch.src.memory.cli", *args, "memory.backend=faiss",
         f"memory.faiss.path={store}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0 and not done.stderr.strip(), (done.stdout, done.stderr)
    return done.stdout


@pytest.fixture
async def store(tmp_path: Path, embedder: Embedder) -> Path:
    path = tmp_path / "memory"
    client = MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(path)}),
                                session_id="s1", embedder=embedder)
    for name in ("alpha", "beta", "gamma"):
        await client.store(f"the {name} experiment finished", id=name)
    await client.close()
    return path


def listed(store: Path, *args: str) -> list[str]:
    done = memory_cli(store, "list", *args)
    assert done.returncode == 0, done.stderr
    if not done.stdout:  # an empty list says where it looked, on stderr
        assert done.stderr.startswith("deepresearch-memory: no "), done.stderr
    return [line.split()[0] for line in ok(done).splitlines()] if done.stdout else []


async def test_archive_restore_and_forget_from_the_archive(store: Path) -> None:
    assert "archived 2 of 2" in ok(memory_cli(store, "archive", "alpha", "beta",
                                              "--reason", "old runs"))
    assert listed(store) == ["gamma"]
    assert listed(store, "--archived") == ["alpha", "beta"]
    shown = json.loads(ok(memory_cli(store, "show", "alpha")))
    assert shown["archived"] is True and shown["metadata"]["archive_reason"] == "old runs"
    stats = json.loads(ok(memory_cli(store, "stats")))
    assert (stats["total"], stats["archived"]) == (1, 2)
    assert "forgot 1" in ok(memory_cli(store, "forget", "--archived", "alpha"))
    partly = memory_cli(store, "restore", "beta", "alpha")  # alpha is forgotten: exit 1, beta back
    assert partly.returncode == 1 and "restored 1 of 2" in partly.stdout
    assert "1 of the ids given are not in the archive of namespace 'default'" in partly.stderr
    assert listed(store) == ["beta", "gamma"] and listed(store, "--archived") == []
    shown = json.loads(ok(memory_cli(store, "show", "beta")))
    assert shown["archived"] is False and "archive_reason" not in shown["metadata"]
    health = memory_cli(store, "health")
    assert health.returncode == 0 and json.loads(health.stdout)["problems"] == []


async def test_pin_and_unpin(store: Path) -> None:
    partly = memory_cli(store, "pin", "alpha", "nope")
    assert partly.returncode == 1 and "pinned 1 of 2" in partly.stdout
    assert "1 of the ids given are not live in namespace 'default'" in partly.stderr
    assert json.loads(ok(memory_cli(store, "show", "alpha")))["metadata"]["pinned"] is True
    assert "unpinned 1 of 1" in ok(memory_cli(store, "unpin", "alpha"))
    assert "pinned" not in json.loads(ok(memory_cli(store, "show", "alpha")))["metadata"]


async def test_show_gives_the_access_statistics(store: Path, embedder: Embedder) -> None:
    shown = json.loads(ok(memory_cli(store, "show", "alpha")))
    assert (shown["access_count"], shown["last_accessed"]) == (0, None)
    client = MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(store)}),
                                embedder=embedder)
    found = await client.retrieve("alpha experiment", top_k=1, all_sessions=True)
    await client.close()
    assert [m.id for m in found] == ["alpha"]
    shown = json.loads(ok(memory_cli(store, "show", "alpha")))
    assert shown["access_count"] == 1 and shown["last_accessed"] > 0


async def test_archive_mistakes_are_one_line_and_exit_2(store: Path) -> None:
    for args, fragment in ((["archive"], "the following arguments are required: ids"),
                           (["archive", "a b"], "not a valid id"),
                           (["restore", "x~y"], "not a valid id"),
                           (["pin"], "the following arguments are required: ids")):
        done = memory_cli(store, *args)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert fragment in done.stderr
