"""The faiss backend's row cache (sqlite_row_cache.py): reads served from it are the same
as reads from SQLite, whatever changed in between, in this connection or another one."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord
from DeepResearch.src.memory.backends.sqlite_records import SQLiteRecords
from DeepResearch.src.memory.backends.sqlite_row_cache import RowCache

pytestmark = pytest.mark.unit
DIM = 8


def _record(rid: str, *, session: str = "s", kind: str = "note", expires_at: float | None = None,
            relations: list[tuple[str, str]] | None = None, seed: int = 0) -> MemoryRecord:
    vector = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return MemoryRecord(
        id=rid, session_id=session, memory_type=kind, content=f"content of {rid}",
        created_at=time.time(), expires_at=expires_at, metadata={"tags": ["a"], "n": seed},
        relations=list(relations or []), vector=vector / np.linalg.norm(vector),
    )


@pytest.fixture
def db(tmp_path: Path) -> SQLiteRecords:
    records = SQLiteRecords(tmp_path / "memory.sqlite3")
    yield records
    records.close()


def _seqs(db: SQLiteRecords) -> dict[str, int]:
    return {r.id: seq for seq, r in db.by_seqs(list(range(1, 100)), MemoryFilter()).items()}


def test_a_second_read_comes_from_the_cache_and_equals_the_first(db: SQLiteRecords) -> None:
    db.upsert([_record("a", relations=[("follows", "x"), ("references", "y")]), _record("b", seed=1)])
    first = db.by_seqs([1, 2], MemoryFilter())
    assert 1 in db._cache and 2 in db._cache
    second = db.by_seqs([1, 2], MemoryFilter())
    for seq in (1, 2):
        a, b = first[seq], second[seq]
        assert (a.id, a.content, a.metadata, a.relations) == (b.id, b.content, b.metadata, b.relations)
        assert np.array_equal(a.vector, b.vector)
    assert first[1].relations == [("follows", "x"), ("references", "y")]  # stored order


def test_records_read_from_the_cache_share_nothing(db: SQLiteRecords) -> None:
    db.upsert([_record("a", relations=[("follows", "x")])])
    first = db.get(["a"])[0]
    first.metadata["tags"].append("changed by a caller")
    first.relations.append(("references", "z"))
    first.vector[0] = 42.0
    again = db.get(["a"])[0]
    assert again.metadata == {"tags": ["a"], "n": 0}
    assert again.relations == [("follows", "x")]
    assert again.vector[0] != 42.0


def test_filters_and_expiry_still_apply_to_cached_rows(db: SQLiteRecords) -> None:
    now = time.time()
    db.upsert([_record("soon", expires_at=now + 5), _record("plan", kind="plan", seed=1)])
    assert set(db.by_seqs([1, 2], MemoryFilter(live_at=now))) == {1, 2}  # both cached now
    assert set(db.by_seqs([1, 2], MemoryFilter(live_at=now + 10))) == {2}  # 'soon' expired
    assert set(db.by_seqs([1, 2], MemoryFilter(memory_types=("plan",)))) == {2}
    assert [r.id for r in db.get(["soon", "plan"], MemoryFilter(memory_types=("note",)))] == ["soon"]


def test_deleted_and_replaced_records_are_never_served(db: SQLiteRecords) -> None:
    db.upsert([_record("a"), _record("b", seed=1)])
    db.by_seqs([1, 2], MemoryFilter())
    db.delete(MemoryFilter(ids=("a",)))
    replaced = _record("b", seed=7)
    replaced.content = "b, written again"
    db.upsert([replaced])  # a new row under a new seq
    assert db.by_seqs([1, 2], MemoryFilter()) == {}
    (got,) = db.get(["a", "b"])
    assert got.content == "b, written again" and got.metadata["n"] == 7


def test_new_vectors_are_read_after_set_vectors(db: SQLiteRecords) -> None:
    db.upsert([_record("a")])
    db.by_seqs([1], MemoryFilter())
    fresh = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    db.set_vectors([(1, fresh)])
    assert np.allclose(db.by_seqs([1], MemoryFilter())[1].vector, fresh)


def test_a_commit_by_another_connection_empties_the_cache(db: SQLiteRecords) -> None:
    db.upsert([_record("a")])
    db.by_seqs([1], MemoryFilter())
    other = SQLiteRecords(db.path)  # e.g. `deepresearch-memory rebuild` in another process
    fresh = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    other.set_vectors([(1, fresh)])
    other.close()
    assert np.allclose(db.get(["a"])[0].vector, fresh)


def test_reads_mixing_cached_and_new_rows_return_each_once_in_seq_order(db: SQLiteRecords) -> None:
    db.upsert([_record(f"r{i}", seed=i) for i in range(12)])
    db.by_seqs([2, 4, 6], MemoryFilter())
    found = db.by_seqs([6, 1, 2, 3, 4, 5], MemoryFilter())  # half known: check, read the rest
    assert sorted(found) == [1, 2, 3, 4, 5, 6]
    assert {r.id for r in found.values()} == {f"r{i}" for i in range(6)}
    found = db.by_seqs([7, 8, 9, 10, 11, 12, 1], MemoryFilter())  # mostly new: one query
    assert sorted(found) == [1, 7, 8, 9, 10, 11, 12]
    assert [r.id for r in db.get(["r5", "r0", "missing", "r3"])] == ["r5", "r0", "r3"]


def test_the_cache_keeps_the_most_recently_used_rows() -> None:
    cache = RowCache(capacity=2)
    cache.valid_for(1)
    cache.put([(1, "a"), (2, "b")], [(), ()])
    assert cache.get(1) is not None  # 1 is now the most recent
    cache.put([(3, "c")], [()])
    assert 1 in cache and 3 in cache and 2 not in cache
    cache.valid_for(2)  # another connection committed
    assert len(cache) == 0


def test_reads_of_named_rows_go_by_rowid_not_through_a_filter_index(db: SQLiteRecords) -> None:
    """`seq IN (...) AND memory_type IN (...)`: without statistics SQLite preferred the type
    index and read every row of the type. Counted in SQLite VM steps."""
    db.upsert([_record(f"r{i}", kind="plan", seed=i) for i in range(3000)])
    flt = MemoryFilter(memory_types=("plan", "answer"), live_at=time.time())
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    db._conn.set_progress_handler(count, 1)
    for read in (db.copy_keys, db.seqs_matching, db.by_seqs):
        steps = 0
        assert len(read([5, 50, 500, 2500], flt)) == 4
        assert steps < 3000, f"{read.__name__} took {steps} VM steps for 4 rows"
    db._conn.set_progress_handler(None, 1)


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_reads_go_through_a_memory_map_of_the_database(db: SQLiteRecords) -> None:
    """A fresh process's first read of a page costs no system call and no copy: SQLite maps
    the file (up to MMAP_BYTES); every answer is the same as through reads."""
    db.upsert([_record(f"r{i}", seed=i) for i in range(20)])
    via_map = db.get([f"r{i}" for i in range(20)])
    mapped = [line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines()]
    assert str(db.path) in mapped  # the database file itself, not only its WAL index (-shm)
    plain = SQLiteRecords(db.path)
    plain._conn.execute("PRAGMA mmap_size=0")
    try:
        through_reads = plain.get([f"r{i}" for i in range(20)])
    finally:
        plain.close()
    assert [(r.id, r.metadata, r.vector.tobytes()) for r in via_map] == [
        (r.id, r.metadata, r.vector.tobytes()) for r in through_reads
    ]
