"""The faiss backend's vector cache files and kinds: the HNSW kind's GrowingIndex (a FAISS HNSW
index read from disk plus a numpy delta of the rows added since, searched as one), the flat
kind's mapped index.flat, the older layouts, and a flat store that never imports FAISS.
Real FAISS, real files."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from pathlib import Path

import faiss
import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig
from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord, create_backend
from DeepResearch.src.memory.backends.faiss_caches import FLAT_FILE, INDEX_FILE, LEXICAL_FILE
from DeepResearch.src.memory.backends.faiss_files import (
    INDEX_TRAILER,
    read_header,
    write_index_file,
)
from DeepResearch.src.memory.backends.faiss_growing import GrowingIndex, hnsw_index
from DeepResearch.src.memory.backends.lexical import LexicalIndex
from DeepResearch.src.memory.errors import IndexMismatchError

DIM = 16
REPO = Path(__file__).resolve().parents[2]


def _vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _notes(vectors: np.ndarray) -> list[MemoryRecord]:
    return [MemoryRecord(id=f"m{i}", session_id="s", memory_type="note", content=f"note {i}",
                         created_at=1000.0 + i, vector=vectors[i]) for i in range(len(vectors))]


async def _stored(cfg: MemoryConfig, records: list[MemoryRecord]):  # type: ignore[no-untyped-def]
    """A store holding `records` whose index file is written, opened again."""
    backend = create_backend(cfg, DIM)
    await backend.open()
    await backend.upsert(records)
    await backend.close()  # first close: the file is written
    backend = create_backend(cfg, DIM)
    await backend.open()
    return backend


def _hnsw(vectors: np.ndarray, ids: np.ndarray) -> faiss.IndexIDMap:
    base = hnsw_index(DIM, "cosine", 16, 80)
    base.add_with_ids(vectors, ids)
    return base


def test_an_hnsw_base_and_its_delta_search_as_one_index() -> None:
    """Rows added after the base was built wait in the numpy delta: a search asks both, and
    an id restriction applies to both."""
    vectors, ids = _vectors(400, 6), np.arange(400, dtype=np.int64)
    base = _hnsw(vectors[:300], ids[:300])
    grown = GrowingIndex(base, "cosine", ef_search=200)
    grown.add(vectors[300:], ids[300:])
    assert grown.ntotal == 400 and base.ntotal == 300  # the base was not copied into
    np.testing.assert_array_equal(grown.ids(), ids)
    raw, found = grown.search(vectors[330], 5)
    assert found[0] == 330 and np.all(np.diff(raw) <= 1e-6)  # best first
    allowed = ids[::3]
    _, found = grown.search(vectors[330], 10, among=allowed)
    assert set(found) <= set(allowed) and found[0] == 330  # 330 = 3 x 110: allowed, in delta
    _, found = grown.search(vectors[12], 10, among=allowed)
    assert found[0] == 12 and set(found) <= set(allowed)  # in the base, allowed
    _, found = grown.search(vectors[13], 10, among=allowed)
    assert 13 not in found


def test_the_delta_removes_its_rows_and_folds_into_the_base() -> None:
    vectors, ids = _vectors(50, 3), np.arange(50, dtype=np.int64)
    grown = GrowingIndex(_hnsw(vectors[:30], ids[:30]), "cosine", ef_search=64)
    grown.add(vectors[30:], ids[30:])
    assert grown.remove(np.array([5, 31, 32])) == 2  # 5 is in the base: the cache counts it stale
    assert sorted(grown.ids()) == sorted(set(range(50)) - {31, 32})
    folded = grown.folded()
    assert folded.ntotal == 48 and grown.delta.ntotal == 0
    _, found = folded.search(vectors[40:41], 1)
    assert found[0, 0] == 40  # the delta's rows are searchable in the written index


def test_a_large_delta_joins_the_base(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past max(FOLD_MIN, base / FOLD_SHARE) rows the delta is folded in (an HNSW base must
    not sit beside a large brute-force delta)."""
    from DeepResearch.src.memory.backends import faiss_growing

    monkeypatch.setattr(faiss_growing, "FOLD_MIN", 10)
    vectors, ids = _vectors(200, 5), np.arange(200, dtype=np.int64)
    grown = GrowingIndex(_hnsw(vectors[:160], ids[:160]), "cosine", ef_search=64)
    grown.add(vectors[160:180], ids[160:180])  # 20 = 160 / 8: not yet
    assert (grown.base.ntotal, grown.delta.ntotal) == (160, 20)
    grown.add(vectors[180:181], ids[180:181])
    assert (grown.base.ntotal, grown.delta.ntotal) == (181, 0)


async def test_a_reopened_flat_store_maps_its_file_and_adds_beside_it(tmp_path: Path) -> None:
    """A reopened flat store uses index.flat in place (a read-only map: nothing is read until
    searched); rows written after the open go to the tail, a forgotten memory in the map is
    never found again, and a save writes one file holding every live row."""
    cfg = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path)})
    vectors = _vectors(120, 4)
    records = _notes(vectors)
    backend = await _stored(cfg, records[:100])
    index = backend._vectors.index
    assert not index.base.vectors.flags.writeable and (index.base.n, index.tail.n) == (100, 0)
    await backend.upsert(records[100:])
    assert (index.base.n, index.tail.n) == (100, 20)
    assert (await backend.vector_search(vectors[110], 3, MemoryFilter()))[0].record.id == "m110"
    assert await backend.delete(MemoryFilter(ids=("m5",))) == 1
    hits = await backend.vector_search(vectors[5], 3, MemoryFilter())
    assert "m5" not in [h.record.id for h in hits] and len(hits) == 3
    backend._vectors.save()  # what a close does once enough changed
    await backend.close()
    assert not (tmp_path / INDEX_FILE).exists()
    reopened = create_backend(cfg, DIM)
    await reopened.open()
    index = reopened._vectors.index
    assert (index.base.n, index.tail.n, reopened._vectors.unsaved) == (119, 0, 0)
    assert (await reopened.vector_search(vectors[115], 1, MemoryFilter()))[0].record.id == "m115"
    await reopened.close()


async def test_an_hnsw_store_reads_index_faiss(tmp_path: Path) -> None:
    cfg = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path), "index_kind": "hnsw"})
    vectors = _vectors(40, 11)
    backend = await _stored(cfg, _notes(vectors[:30]))
    assert isinstance(backend._vectors.index, GrowingIndex)
    assert (backend._vectors.index.base.ntotal, backend._vectors.index.delta.ntotal) == (30, 0)
    await backend.upsert(_notes(vectors)[30:])
    assert (await backend.vector_search(vectors[3], 1, MemoryFilter()))[0].record.id == "m3"
    assert (await backend.vector_search(vectors[35], 1, MemoryFilter()))[0].record.id == "m35"
    await backend.close()
    path = tmp_path / INDEX_FILE
    data = path.read_bytes()
    assert data.endswith(INDEX_TRAILER) and not (tmp_path / FLAT_FILE).exists()
    length = int.from_bytes(data[-16:-8], "little")  # the layout before 2026-11-25:
    path.write_bytes(data[-16 - length : -16] + b"\n" + data[: -16 - length])  # header first
    backend = create_backend(cfg, DIM)
    await backend.open()
    assert backend._vectors.outdated and backend._vectors.index.ntotal == 40
    assert (await backend.vector_search(vectors[35], 1, MemoryFilter()))[0].record.id == "m35"
    await backend.close()  # rewritten in the current layout
    assert path.read_bytes().endswith(INDEX_TRAILER)


async def test_a_store_of_one_kind_is_refused_as_the_other_until_rebuilt(tmp_path: Path) -> None:
    flat = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path)})
    hnsw = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path), "index_kind": "hnsw"})
    vectors = _vectors(30, 12)
    await (await _stored(flat, _notes(vectors))).close()
    refused = r"built as kind 'flat', configured 'hnsw'.*rebuild.*index_kind=hnsw"
    with pytest.raises(IndexMismatchError, match=refused):
        await create_backend(hnsw, DIM).open()
    assert create_backend(hnsw, DIM).rebuild() == 30
    assert (tmp_path / INDEX_FILE).exists() and not (tmp_path / FLAT_FILE).exists()
    with pytest.raises(IndexMismatchError, match=r"built as kind 'hnsw', configured 'flat'"):
        await create_backend(flat, DIM).open()
    backend = create_backend(hnsw, DIM)
    await backend.open()
    assert (await backend.vector_search(vectors[7], 1, MemoryFilter()))[0].record.id == "m7"
    await backend.close()


async def test_older_layouts_open_and_are_rewritten(tmp_path: Path) -> None:
    """A flat index saved before 2026-11-25 (in index.faiss, FAISS's layout) is rebuilt from
    the records and saved as index.flat at the next close; a BM25 index saved as an npz is
    read and rewritten in the current layout."""
    cfg = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path)})
    vectors = _vectors(80, 10)
    records = _notes(vectors)
    await (await _stored(cfg, records)).close()
    (tmp_path / FLAT_FILE).unlink()
    old = faiss.IndexIDMap(faiss.IndexFlatIP(DIM))
    old.add_with_ids(vectors[:70], np.arange(1, 71, dtype=np.int64))  # seqs start at 1
    write_index_file(tmp_path / INDEX_FILE, {"watermark": 70, "kind": "flat", "metric": "cosine",
                                             "dimension": DIM}, old)
    lexical_path = tmp_path / LEXICAL_FILE  # the BM25 index as it was saved, as an npz of before
    with lexical_path.open("rb") as fh:
        saved = read_header(fh)
        bm25 = LexicalIndex.from_bytes(fh.read())
    old_npz, live = io.BytesIO(), bm25.live_rows()
    np.savez(old_npz, vocab=np.frombuffer("\n".join(bm25._vocab).encode(), dtype=np.uint8),
             offsets=bm25._offsets, rows=bm25._rows, counts=bm25._counts, live=live,
             length=bm25._length[live])
    lexical_path.write_bytes(b'{"watermark": %d}\n' % saved["watermark"] + old_npz.getvalue())
    backend = create_backend(cfg, DIM)
    await backend.open()
    assert backend._vectors.outdated and backend._lexical.outdated
    assert (await backend.vector_search(vectors[77], 1, MemoryFilter()))[0].record.id == "m77"
    assert [c.record.id for c in await backend.text_search("note 9", 1, MemoryFilter())] == ["m9"]
    assert backend._vectors.index.ntotal == 80
    await backend.close()  # nothing changed, yet both files are rewritten in the new layouts
    assert (tmp_path / FLAT_FILE).exists() and not (tmp_path / INDEX_FILE).exists()
    assert b"deepresearch-bm25 2" in lexical_path.read_bytes()[:200]
    backend = create_backend(cfg, DIM)
    await backend.open()
    assert backend._vectors.index.base.n == 80 and backend._vectors.unsaved == 0
    assert not backend._vectors.outdated and not backend._lexical.outdated
    await backend.close()


NO_FAISS = textwrap.dedent(
    """
    import asyncio, sys, tempfile
    import numpy as np
    from DeepResearch.src.memory import MemoryConfig
    from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord, create_backend

    async def main():
        with tempfile.TemporaryDirectory() as folder:
            cfg = MemoryConfig(backend="faiss", faiss={"path": folder})
            vectors = np.eye(8, dtype=np.float32)
            for _ in range(2):  # the second open maps the file the first close wrote
                backend = create_backend(cfg, 8)
                await backend.open()
                await backend.upsert([MemoryRecord(id=f"m{i}", session_id="s", memory_type="note",
                                                   content=f"note {i}", created_at=1.0 + i,
                                               vector=vectors[i])
                                      for i in range(8)])
                hits = await backend.vector_search(vectors[3], 2, MemoryFilter())
                some = await backend.vector_search(vectors[3], 2, MemoryFilter(ids=("m3", "m4")))
                await backend.close()
                print(hits[0].record.id, some[0].record.id, "faiss" in sys.modules,
                      "numpy.ma" in sys.modules)

    asyncio.run(main())
    """
)


def test_a_flat_store_never_imports_faiss() -> None:
    """The point of the numpy flat index: a process that opens, writes, searches and saves a
    flat store does not pay FAISS's import (~35-45 ms), nor numpy.ma's (~9 ms; np.unique
    imports it)."""
    out = subprocess.run([sys.executable, "-c", NO_FAISS], capture_output=True, text=True,
                         cwd=REPO, timeout=300, check=True).stdout.split()
    assert out == ["m3", "m3", "False", "False"] * 2

