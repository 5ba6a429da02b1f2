"""Real faults under the embedded backend: a full disk (a small tmpfs), a lock held by another
process. A failed write raises one MemoryBackendError naming the real cause, writes nothing,
leaves no temporary file, and the store works again once the fault is gone."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig
from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord, create_backend
from DeepResearch.src.memory.backends.embedded import DB_FILE, INDEX_FILE, EmbeddedBackend
from DeepResearch.src.memory.errors import MemoryBackendError
from tests.test_memory.fault_support import small_disk as tmpfs

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # real faults: `make test` runs them
DIM = 64


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs: a disk that really fills up."""
    with tmpfs(tmp_path / "disk", "2m") as disk:
        yield disk


def _records(n: int, start: int = 0) -> list[MemoryRecord]:
    rng = np.random.default_rng(start)
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return [MemoryRecord(id=f"r{start + i}", session_id="s", memory_type="note",
                         content=f"memory {start + i} " + "words " * 50, created_at=float(i),
                         vector=vecs[i]) for i in range(n)]


async def _open(path: Path, **faiss: object) -> EmbeddedBackend:
    backend = create_backend(
        MemoryConfig(backend="faiss", faiss={"path": str(path), **faiss}), DIM
    )
    await backend.open()
    return backend  # type: ignore[return-value]


def _fill(disk: Path) -> Path:
    """Fill `disk` to the last byte with one file; returns it."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as fh:
        for size in (65536, 4096, 512, 1):
            try:
                while fh.write(b"\0" * size):
                    pass
            except OSError:
                pass
    return filler


async def test_a_full_disk_fails_the_write_by_name_and_writes_nothing(small_disk: Path) -> None:
    store = small_disk / "memory"
    backend = await _open(store)
    await backend.upsert(_records(20))
    filler = _fill(small_disk)
    with pytest.raises(MemoryBackendError, match="disk full") as raised:
        for start in range(20, 2000, 100):  # the WAL may still hold a few pages
            await backend.upsert(_records(100, start))
    assert str(store) in str(raised.value)
    assert "cannot rollback" not in str(raised.value)
    written = await backend.count(MemoryFilter())
    assert written % 100 == 20  # whole batches only
    filler.unlink()
    await backend.upsert(_records(5, 5000))  # works again once there is room
    assert await backend.count(MemoryFilter()) == written + 5
    assert await backend.verify() == []
    await backend.close()


async def test_a_full_disk_at_close_leaves_no_temporary_file(small_disk: Path, caplog) -> None:
    store = small_disk / "memory"
    backend = await _open(store)
    records = _records(200)
    await backend.upsert(records)
    assert not (store / INDEX_FILE).exists()
    _fill(small_disk)
    with caplog.at_level("WARNING"):
        await backend.close()  # the index file cannot be written
    assert sorted(p.name for p in store.iterdir() if p.name.endswith(".tmp")) == []
    assert not (store / INDEX_FILE).exists()
    assert any("disk full" in r.getMessage() for r in caplog.records)
    (small_disk / "filler").unlink()
    reopened = await _open(store)  # the records are safe: the index is rebuilt from them
    hits = await reopened.vector_search(records[9].vector, 1, MemoryFilter())
    assert [c.record.id for c in hits] == ["r9"]
    await reopened.close()


HOLD_LOCK = textwrap.dedent(
    """
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    print("locked", flush=True)
    sys.stdin.read()  # until the test closes our stdin
    conn.execute("ROLLBACK")
    """
)


async def test_a_lock_held_by_another_process_is_named_and_then_released(tmp_path: Path) -> None:
    backend = await _open(tmp_path, busy_timeout=0.2)
    await backend.upsert(_records(3))
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(tmp_path / DB_FILE)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(MemoryBackendError, match="locked by another process") as raised:
            await backend.upsert(_records(3, 10))
        assert str(tmp_path / DB_FILE) in str(raised.value)
        assert "cannot rollback" not in str(raised.value)
        assert await backend.count(MemoryFilter()) == 3  # reads go on (WAL)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    await backend.upsert(_records(3, 10))
    assert await backend.count(MemoryFilter()) == 6
    await backend.close()
