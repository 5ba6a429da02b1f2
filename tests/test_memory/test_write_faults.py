"""A write leaves the queue only when committed: real full disks (tmpfs), a real SQLite lock
held by another process, an unreachable Neo4j, and spills that cannot be written."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.backends.embedded import DB_FILE
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.errors import MemoryBackendError
from DeepResearch.src.memory.records_io import record_from_json
from DeepResearch.src.memory.writes import spill_name
from test_memory.fault_support import (
    env_without_keys,
    fill,
    small_disk,
    spill_files,
    write_lock_held,
)

pytestmark = [pytest.mark.slow, pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]
QUESTION = "question='Which aligner suits RNA-seq reads?'"
UNREACHABLE = ["memory.backend=neo4j", "memory.neo4j.uri=bolt://127.0.0.1:1",
               "memory.neo4j.connection_timeout=1", "memory.neo4j.retry_attempts=0"]


def faiss_config(path: Path, **storage: object) -> MemoryConfig:
    return MemoryConfig(backend="faiss", faiss={"path": str(path)}, storage=storage)


def stored_ids(path: Path) -> set[str]:
    """The ids committed in the store at `path` (read with sqlite3: opening a client would
    write cache files, which a full disk refuses)."""
    with contextlib.closing(sqlite3.connect(path / DB_FILE)) as conn:
        return {row[0] for row in conn.execute("SELECT id FROM records")}


def noise(n: int) -> str:
    """Text that does not compress: fills a disk as fast as it claims to."""
    return os.urandom(n // 2).hex()


async def test_locked_database_loses_no_write_behind_batch(tmp_path: Path, embedder: Embedder) -> None:
    store = tmp_path / "memory"
    config = faiss_config(store, enable_async_writes=True, flush_interval=0.1, batch_size=1000)
    client = MemorySystemClient(config, session_id="locked", embedder=embedder)
    await client.store(content="stored before the lock", id="first")
    await client.flush()
    with write_lock_held(store / DB_FILE):
        for i in range(60):
            await client.store(content=f"note {i} about aligners", id=f"n{i}")
        deadline = time.monotonic() + 60
        while client.writes.failed_attempts == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)  # the background flush meets the lock
        assert client.writes.failed_attempts >= 1
    await client.close()  # the lock is gone: the outbox is written
    assert stored_ids(store) == {"first", *(f"n{i}" for i in range(60))}
    assert spill_files(store) == []


async def test_locked_database_sync_store_raises_the_cause_once_and_keeps_the_records(
    tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "memory"
    client = MemorySystemClient(faiss_config(store), session_id="locked", embedder=embedder)
    await client.store(content="stored before the lock", id="first")
    with write_lock_held(store / DB_FILE), caplog.at_level(logging.WARNING):
        with pytest.raises(MemoryBackendError) as raised:
            await client.store_many([{"content": f"locked note {i}", "id": f"l{i}"} for i in range(3)])
        assert "locked" in str(raised.value) and "kept in the outbox" in str(raised.value)
        assert client.writes.counters()["outbox"] == 3
    assert not [r for r in caplog.records if r.name.startswith("DeepResearch")]  # the error says it
    await client.close()  # retried: the same ids, written once
    assert stored_ids(store) == {"first", "l0", "l1", "l2"}
    assert spill_files(store) == []


async def test_full_disk_sync_store_names_the_cause_and_close_spills_elsewhere(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.chdir(tmp_path)
    with small_disk(tmp_path / "disk") as disk:
        store = disk / "memory"
        config = faiss_config(store)
        client = MemorySystemClient(config, session_id="full", embedder=embedder)
        await client.store(content="stored before the disk filled", id="first")
        filler = fill(disk)
        items = [{"content": f"{i} {noise(40_000)}", "id": f"f{i}"} for i in range(5)]
        with pytest.raises(MemoryBackendError, match="full"):
            await client.store_many(items)
        assert client.writes.counters()["outbox"] == 5
        with caplog.at_level(logging.WARNING):
            await client.close()  # returns: the spill goes elsewhere, a full disk is a warning
        (spilled,) = spill_files(store, tmp_path / "memory-unwritten")
        assert spilled.parent == tmp_path / "memory-unwritten"
        assert any(str(spilled) in r.getMessage() for r in caplog.records)  # one names it
        lines = spilled.read_text().splitlines()
        assert [json.loads(line)["id"] for line in lines] == [f"f{i}" for i in range(5)]
        filler.unlink()  # room again: the spill file brings every memory back
        async with MemorySystemClient(config, session_id="full", embedder=embedder) as again:
            await again.import_records(
                [record_from_json(json.loads(line), f"{spilled}:{n}", config, embedder.dimension) for n, line in enumerate(lines, 1)]
            )
        assert stored_ids(store) == {"first", *(f"f{i}" for i in range(5))}


async def test_full_disk_write_behind_keeps_every_record_in_the_store_or_the_spill(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.chdir(tmp_path)
    with small_disk(tmp_path / "disk", "3m") as disk:
        store = disk / "memory"
        config = faiss_config(store, enable_async_writes=True, flush_interval=0.05, batch_size=4)
        client = MemorySystemClient(config, session_id="full", embedder=embedder)
        ids = [await client.store(content=f"{i} {noise(20_000)}", id=f"a{i}") for i in range(120)]
        with caplog.at_level(logging.WARNING):
            await client.close()  # returns: the spill goes elsewhere, a full disk is a warning
        assert client.writes.failed_attempts >= 1  # the disk did fill up
        files = spill_files(store, tmp_path / "memory-unwritten")
        assert files and all(any(str(f) in r.getMessage() for r in caplog.records) for f in files)
        spilled = {json.loads(line)["id"] for f in files for line in f.read_text().splitlines()}
        for leftover in disk.glob("filler*"):
            leftover.unlink()
        in_store = stored_ids(store)
        assert in_store | spilled == set(ids) and spilled  # nothing lost, some spilled


async def test_spill_file_name_is_safe_for_any_session_id(tmp_path: Path, embedder: Embedder) -> None:
    names = ["team/alice", "../../etc/passwd", "quote'\"\n", "x" * 5000, "ünïcode/セッション"]
    for session in names:
        name = spill_name(session)
        assert "/" not in name and "\n" not in name and len(name) < 100 and name.isascii()
    assert spill_name("team/alice") != spill_name("team-alice")
    config = MemoryConfig(backend="neo4j", neo4j={"uri": "bolt://127.0.0.1:1", "connection_timeout": 1,
                                                  "retry_attempts": 0},
                          faiss={"path": str(tmp_path / "spill")})
    client = MemorySystemClient(config, session_id="team:alice@lab", embedder=embedder)
    await client.store(content="kept although the server is down", id="kept")
    await client.close()
    (spilled,) = spill_files(tmp_path / "spill")
    assert "team-alice-lab" in spilled.name and json.loads(spilled.read_text())["id"] == "kept"


def deepresearch(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "DeepResearch.app", QUESTION, *args], cwd=cwd,
                          env=env or env_without_keys(), capture_output=True, text=True, timeout=300)


def test_workflow_with_a_nested_session_id_and_no_server_spills_and_says_where(tmp_path: Path) -> None:
    refused = deepresearch(tmp_path, f"outputs_dir={tmp_path / 'out'}", *UNREACHABLE,
                           "memory.session_id=team/alice", f"memory.storage.spill_dir={tmp_path / 'spill'}")
    assert refused.returncode == 2 and "memory.session_id='team/alice'" in refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "spill").exists()
    done = deepresearch(tmp_path, f"outputs_dir={tmp_path / 'out'}", *UNREACHABLE,
                        "memory.session_id=team:alice", f"memory.storage.spill_dir={tmp_path / 'spill'}")
    assert done.returncode == 0, done.stderr
    (spilled,) = spill_files(tmp_path / "spill")
    kinds = {json.loads(line).get("memory_type") for line in spilled.read_text().splitlines()}
    assert {"plan", "answer"} <= kinds  # and the facts of the documents read (no memory_type)
    assert f"saved to {spilled}" in done.stdout + done.stderr


FULL_BOX = """
set -e
box=$1; shift
for d in /tmp /var/tmp; do  # read-only in this namespace (contents still visible: a checkout
  if [ -d "$d" ]; then mount --rbind "$d" "$d"; mount -o remount,bind,ro "$d"; fi  # there runs)
done
mount -t tmpfs -o size=1m tmpfs "$box"
mkdir "$box/work" "$box/out"
mount -t tmpfs -o size=64m tmpfs "$box/out"
dd if=/dev/zero of="$box/filler" bs=4k 2>/dev/null || true
cd "$box/work"
exec "$@"
"""


def with_full_box(box: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """Run `command` in a mount namespace where `box` (a private folder) is a full tmpfs and
    the working folder, the store and the temp folder (TMPDIR) are in it; `box/out` has room;
    /tmp and /var/tmp, the other temp folders Python tries, are read-only there. Nothing the
    project needs is hidden, wherever its checkout lives. Skipped if namespaces are refused."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) is needed to give a process a full disk of its own")
    box.mkdir()
    done = subprocess.run(["unshare", "-m", "sh", "-c", FULL_BOX, "sh", str(box), *command],
                          env={**env_without_keys(), "TMPDIR": str(box), "TEMP": str(box),
                               "TMP": str(box)},
                          capture_output=True, text=True, timeout=300)
    if "mount" in done.stderr and done.returncode == 32:
        pytest.skip(f"cannot mount a tmpfs in a namespace: {done.stderr.strip()}")
    return done


def test_workflow_whose_memories_cannot_be_saved_anywhere_exits_1(tmp_path: Path) -> None:
    box = tmp_path / "box"
    done = with_full_box(box, sys.executable, "-m", "DeepResearch.app", QUESTION,
                         f"outputs_dir={box / 'out'}", *UNREACHABLE,
                         f"memory.storage.spill_dir={box / 'memory'}")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert f"Outputs: {box / 'out'}/" in done.stdout  # the run itself completed
    assert "neither stored nor saved to a spill file" in done.stderr
    assert "Traceback" not in output


AT_EXIT = """
import asyncio, sys
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
config = MemoryConfig(backend="neo4j", faiss={"path": sys.argv[1]},
                      neo4j={"uri": "bolt://127.0.0.1:1", "connection_timeout": 1, "retry_attempts": 0})
client = MemorySystemClient(config, session_id="a:b")
asyncio.run(client.store(content="never closed", id="left", vector=[1.0] + [0.0] * 383))
print("stored", flush=True)
"""


def test_exit_hook_spills_or_ends_the_process_with_status_1(tmp_path: Path) -> None:
    run = [sys.executable, "-c", AT_EXIT]
    done = subprocess.run([*run, str(tmp_path / "spill")], cwd=tmp_path, env=env_without_keys(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (spilled,) = spill_files(tmp_path / "spill")
    assert json.loads(spilled.read_text())["id"] == "left"
    box = tmp_path / "box"
    done = with_full_box(box, *run, str(box / "memory"))
    assert done.returncode == 1, done.stderr
    assert "stored" in done.stdout and "lost at exit" in done.stderr


def test_workflow_on_a_locked_store_finishes_with_a_warning_and_keeps_the_memories(
    tmp_path: Path,
) -> None:
    store = tmp_path / "memory"
    created = deepresearch(tmp_path, f"outputs_dir={tmp_path / 'out'}", f"memory.faiss.path={store}")
    assert created.returncode == 0, created.stderr
    before = stored_ids(store)
    with write_lock_held(store / DB_FILE):
        done = deepresearch(tmp_path, f"outputs_dir={tmp_path / 'out'}", f"memory.faiss.path={store}")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "Traceback" not in output and "locked" in output
    (spilled,) = spill_files(store)
    assert len(spilled.read_text().splitlines()) > 0
    assert stored_ids(store) == before


async def test_batched_writes_on_a_locked_database_keep_their_records(
    tmp_path: Path, embedder: Embedder
) -> None:
    store = tmp_path / "memory"
    client = MemorySystemClient(faiss_config(store), session_id="held", embedder=embedder)
    await client.store(content="stored before the lock", id="first")
    with write_lock_held(store / DB_FILE):
        async with client.batched_writes():  # its one write at the end meets the lock
            await client.store_many([{"content": f"held note {i}", "id": f"h{i}"} for i in range(4)])
        assert client.writes.counters()["outbox"] == 4
    await client.close()
    assert stored_ids(store) == {"first", "h0", "h1", "h2", "h3"}
