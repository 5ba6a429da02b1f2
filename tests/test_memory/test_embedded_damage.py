"""Damage to the embedded backend's files is detected, never served: a damaged index file is
rebuilt from the records with one warning, a damaged database is refused at open naming the
file, vanished records are never "repaired" into an empty store; `verify` reports problems."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig
from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord, create_backend
from DeepResearch.src.memory.backends.embedded import DB_FILE, INDEX_FILE, EmbeddedBackend
from DeepResearch.src.memory.errors import MemoryBackendError

pytestmark = pytest.mark.integration
N = 300


def _config(path: Path, kind: str = "flat") -> MemoryConfig:
    return MemoryConfig(backend="faiss", faiss={"path": str(path), "index_kind": kind})


async def _open(path: Path, kind: str = "flat") -> EmbeddedBackend:
    backend = create_backend(_config(path, kind), 8)
    await backend.open()
    return backend  # type: ignore[return-value]


def _records(n: int = N, seed: int = 7, prefix: str = "r") -> list[MemoryRecord]:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return [MemoryRecord(id=f"{prefix}{i}", session_id="s", memory_type="note",
                         content=f"memory number {i} word{i}", created_at=float(i),
                         metadata={"pad": "x" * 200}, vector=vecs[i]) for i in range(n)]


async def _store(path: Path, kind: str = "flat", seed: int = 7, prefix: str = "r") -> list[MemoryRecord]:
    backend = await _open(path, kind)
    records = _records(seed=seed, prefix=prefix)
    await backend.upsert(records)
    await backend.close()
    return records


async def _all_find_themselves(backend: EmbeddedBackend, records: list[MemoryRecord]) -> None:
    for r in records:
        hits = await backend.vector_search(r.vector, 1, MemoryFilter())
        assert [c.record.id for c in hits] == [r.id]


def _truncate(data: bytes) -> bytes:
    return data[: len(data) - 1000]


def _flip(data: bytes) -> bytes:
    damaged = bytearray(data)
    middle = len(data) // 2
    damaged[middle : middle + 16] = bytes(b ^ 0xFF for b in damaged[middle : middle + 16])
    return bytes(damaged)


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
@pytest.mark.parametrize("damage", [_truncate, _flip], ids=["truncated", "flipped bytes"])
async def test_a_damaged_index_file_is_rebuilt_with_one_warning(
    tmp_path: Path, kind: str, damage, caplog
) -> None:
    records = await _store(tmp_path, kind)
    index = tmp_path / INDEX_FILE
    index.write_bytes(damage(index.read_bytes()))
    with caplog.at_level("WARNING"):
        backend = await _open(tmp_path, kind)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and INDEX_FILE in warnings[0] and "rebuilding" in warnings[0]
    await _all_find_themselves(backend, records)
    assert await backend.verify() == []
    await backend.close()


async def test_an_index_that_disagrees_with_the_records_is_rebuilt(tmp_path: Path, caplog) -> None:
    """A sound index file of another store (same settings) is not trusted: its count differs."""
    await _store(tmp_path / "small")
    small = await _open(tmp_path / "small")
    await small.delete(MemoryFilter(ids=tuple(f"r{i}" for i in range(100))))
    await small.close()
    records = await _store(tmp_path / "big")
    (tmp_path / "big" / INDEX_FILE).write_bytes((tmp_path / "small" / INDEX_FILE).read_bytes())
    with caplog.at_level("WARNING"):
        backend = await _open(tmp_path / "big")
    assert any("rebuilding" in r.getMessage() for r in caplog.records)
    await _all_find_themselves(backend, records[:50])
    await backend.close()


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
async def test_the_index_file_of_another_store_of_the_same_size_is_refused_and_rebuilt(
    tmp_path: Path, kind: str, caplog
) -> None:
    """Same settings, same number of records, same seqs: only the store's identity and the
    vectors tell the two index files apart."""
    ours = await _store(tmp_path / "ours", kind, seed=7, prefix="ours")
    await _store(tmp_path / "theirs", kind, seed=8, prefix="theirs")
    (tmp_path / "ours" / INDEX_FILE).write_bytes((tmp_path / "theirs" / INDEX_FILE).read_bytes())
    with caplog.at_level("WARNING"):
        backend = await _open(tmp_path / "ours", kind)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "another store" in warnings[0] and "rebuilding" in warnings[0]
    await _all_find_themselves(backend, ours[:50])
    assert await backend.verify() == []  # what `health` runs
    await backend.close()
    caplog.clear()
    backend = await _open(tmp_path / "ours", kind)  # the rebuilt file is this store's
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    await backend.close()


async def test_health_fails_when_the_index_vectors_differ_from_the_records(tmp_path: Path) -> None:
    """Vectors changed in the database behind the open index (no write of the store logs
    it): the index no longer holds the records' vectors, and the full check says so."""
    records = await _store(tmp_path)
    backend = await _open(tmp_path)
    assert await backend.verify() == []
    other = _records(10, seed=9)
    with sqlite3.connect(tmp_path / DB_FILE) as conn:
        conn.executemany("UPDATE records SET vector = ? WHERE id = ?",
                         [(o.vector.tobytes(), r.id) for o, r in zip(other, records[::30], strict=True)])
    problems = await backend.verify()
    assert len(problems) == 1 and "sampled vectors of the index differ" in problems[0], problems
    await backend.close()


@pytest.mark.parametrize("state", ["zero-length", "missing"])
async def test_vanished_records_are_refused_not_replaced_by_an_empty_store(
    tmp_path: Path, state: str
) -> None:
    await _store(tmp_path)
    db = tmp_path / DB_FILE
    if state == "zero-length":
        db.write_bytes(b"")
    else:
        db.unlink()
    with pytest.raises(MemoryBackendError, match=f"{DB_FILE}.*records are gone"):
        await _open(tmp_path)
    assert not db.exists() or db.stat().st_size == 0  # nothing created over it


async def test_a_damaged_database_page_is_refused_at_open(tmp_path: Path) -> None:
    await _store(tmp_path)
    db = tmp_path / DB_FILE
    with sqlite3.connect(db) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = db.stat().st_size // page_size
    assert pages > 20
    with open(db, "r+b") as fh:  # garbage over a page in the middle of the file
        fh.seek((pages // 2) * page_size)
        fh.write(np.random.default_rng(1).bytes(page_size))
    with pytest.raises(MemoryBackendError, match=f"{DB_FILE}.*damaged"):
        await _open(tmp_path)


async def test_verify_reports_an_index_file_damaged_while_open(tmp_path: Path) -> None:
    await _store(tmp_path)
    backend = await _open(tmp_path)
    assert await backend.verify() == []
    index = tmp_path / INDEX_FILE
    index.write_bytes(_flip(index.read_bytes()))
    problems = await backend.verify()
    assert len(problems) == 1 and INDEX_FILE in problems[0] and "checksum" in problems[0]
    await backend.close()


async def test_verify_reports_vectors_that_are_not_unit_length(tmp_path: Path) -> None:
    backend = await _open(tmp_path)
    records = _records(5)
    records[2].vector = records[2].vector * 1e6
    await backend.upsert(records)
    problems = await backend.verify()
    assert len(problems) == 1 and "1 stored vectors" in problems[0]
    await backend.close()


async def test_a_stored_vector_of_the_wrong_length_is_counted_not_indexed_nor_fatal(
    tmp_path: Path, caplog
) -> None:
    records = await _store(tmp_path)
    with sqlite3.connect(tmp_path / DB_FILE) as conn:
        conn.execute("UPDATE records SET vector = substr(vector, 1, 20) WHERE id = 'r5'")
    (tmp_path / INDEX_FILE).unlink()  # built again from the records: r5 cannot be indexed
    for _ in range(2):  # neither open warns about the index (nor rebuilds it again)
        with caplog.at_level("WARNING"):
            backend = await _open(tmp_path)
            assert not [r for r in caplog.records if r.levelname == "WARNING"]
            hits = await backend.vector_search(records[5].vector, 3, MemoryFilter())
            assert "r5" not in [c.record.id for c in hits] and len(hits) == 3
            exact = await backend.vector_search(records[5].vector, 3, MemoryFilter(ids=("r4", "r5")))
            assert [c.record.id for c in exact] == ["r4"]
            problems = await backend.verify()
        assert len(problems) == 1 and "1 damaged records" in problems[0] and "'r5'" in problems[0]
        assert "stored vector has 5 values" in problems[0]
        await backend.close()
        caplog.clear()
    backend = await _open(tmp_path)
    assert await backend.delete(MemoryFilter(ids=("r5",))) == 1
    assert await backend.verify() == []
    await backend.close()
