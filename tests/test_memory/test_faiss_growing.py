"""GrowingIndex: an index read from disk plus a flat delta of the rows added since, searched
as one; real FAISS throughout."""

from __future__ import annotations

import io
from pathlib import Path

import faiss
import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig
from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord, create_backend
from DeepResearch.src.memory.backends.faiss_growing import GrowingIndex, flat_index, flat_rows

DIM = 16


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


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_base_and_delta_search_like_one_index(metric: str) -> None:
    vectors, ids = _vectors(300, 1), np.arange(1000, 1300, dtype=np.int64)
    whole = flat_index(DIM, metric)
    whole.add_with_ids(vectors, ids)
    base = flat_index(DIM, metric)
    base.add_with_ids(vectors[:200], ids[:200])
    grown = GrowingIndex(base, metric)
    grown.add(vectors[200:], ids[200:])
    assert grown.ntotal == 300 and base.ntotal == 200  # the base was not copied into
    queries = _vectors(5, 2)
    for k in (1, 10, 299, 400):  # 400: more than it holds, padded with -1 like FAISS
        want_d, want_i = whole.search(queries, k)
        got_d, got_i = grown.search(queries, k)
        np.testing.assert_array_equal(got_i, want_i)
        np.testing.assert_allclose(got_d, want_d, rtol=1e-5)
    # An id selector applies to both parts.
    params = faiss.SearchParameters()
    params.sel = faiss.IDSelectorBatch(ids[::7])
    want_d, want_i = whole.search(queries, 20, params=params)
    got_d, got_i = grown.search(queries, 20, params=params)
    np.testing.assert_array_equal(got_i, want_i)


def test_removal_and_folding() -> None:
    vectors, ids = _vectors(50, 3), np.arange(50, dtype=np.int64)
    base = flat_index(DIM, "cosine")
    base.add_with_ids(vectors[:30], ids[:30])
    grown = GrowingIndex(base, "cosine")
    grown.add(vectors[30:], ids[30:])
    assert grown.remove_from_delta(np.array([5, 31, 32])) == 2  # 5 is in the base
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
    base = flat_index(DIM, "cosine")
    base.add_with_ids(vectors[:160], ids[:160])
    grown = GrowingIndex(base, "cosine")
    grown.add(vectors[160:180], ids[160:180])  # 20 = 160 / 8: not yet
    assert (grown.base.ntotal, grown.delta.ntotal) == (160, 20)
    grown.add(vectors[180:181], ids[180:181])
    assert (grown.base.ntotal, grown.delta.ntotal) == (181, 0)


async def test_a_reopened_store_adds_to_the_delta_and_writes_one_index(tmp_path: Path) -> None:
    """Rows written after an open go to the delta (the index read from disk is not copied
    into); a store reopened after its file was written finds every row."""
    cfg = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path)})
    vectors = _vectors(120, 4)
    records = _notes(vectors)
    backend = await _stored(cfg, records[:100])
    index = backend._vectors.index
    assert (index.base.ntotal, index.delta.ntotal) == (100, 0)
    await backend.upsert(records[100:])
    assert (index.base.ntotal, index.delta.ntotal) == (100, 20)
    hits = await backend.vector_search(vectors[110], 3, MemoryFilter())
    assert hits[0].record.id == "m110"
    backend._vectors.save()  # what a close does once enough changed
    assert (index.base.ntotal, index.delta.ntotal) == (120, 0)
    await backend.close()
    reopened = create_backend(cfg, DIM)
    await reopened.open()
    assert (reopened._vectors.index.base.ntotal, reopened._vectors.index.delta.ntotal) == (120, 0)
    assert (await reopened.vector_search(vectors[115], 1, MemoryFilter()))[0].record.id == "m115"
    await reopened.close()


def test_an_hnsw_base_and_its_flat_delta_take_the_same_search_parameters() -> None:
    """The faiss backend passes HNSW parameters (efSearch, an id selector) to the search; the
    flat delta must accept them and honour the selector."""
    vectors, ids = _vectors(400, 6), np.arange(400, dtype=np.int64)
    base = faiss.IndexIDMap(faiss.IndexHNSWFlat(DIM, 16, faiss.METRIC_INNER_PRODUCT))
    base.add_with_ids(vectors[:300], ids[:300])
    grown = GrowingIndex(base, "cosine")
    grown.add(vectors[300:], ids[300:])
    allowed = ids[::3]
    params = faiss.SearchParametersHNSW(efSearch=200)
    params.sel = faiss.IDSelectorBatch(allowed)
    _, found = grown.search(vectors[330:331], 10, params=params)
    assert set(found[0]) <= set(allowed) and 330 in found[0]  # 330 = 3 x 110: allowed, in delta
    _, found = grown.search(vectors[12:13], 10, params=params)
    assert found[0][0] == 12  # in the base, allowed


def _mapped(tmp_path: Path, index: faiss.IndexIDMap) -> faiss.IndexIDMap:
    path = tmp_path / "mapped.faiss"
    faiss.write_index(index, str(path))
    return faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC)


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_a_mapped_base_is_never_written_into_and_searches_as_one_index(
    tmp_path: Path, metric: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A base mapped from the index file (FAISS would abort the process on a write into
    it): removed rows are filtered out of its results, folding copies its live rows first,
    and after DROPPED_MAX removals it is copied into an index of its own."""
    from DeepResearch.src.memory.backends import faiss_growing

    vectors, ids = _vectors(300, 8), np.arange(300, dtype=np.int64) * 3
    base = flat_index(DIM, metric)
    base.add_with_ids(vectors[:250], ids[:250])
    grown = GrowingIndex(_mapped(tmp_path, base), metric, base_is_view=True)
    grown.add(vectors[250:], ids[250:])
    gone = np.array([ids[0], ids[10], ids[260], 99_999], dtype=np.int64)  # base, delta, unknown
    assert grown.remove_from_delta(gone) == 1
    grown.remove_from_base(gone)
    assert grown.base_is_view and grown.ntotal == 297
    keep = ~np.isin(ids, gone)
    whole = flat_index(DIM, metric)
    whole.add_with_ids(vectors[keep], ids[keep])
    assert sorted(grown.ids()) == sorted(ids[keep])
    queries = np.concatenate([vectors[[0, 10, 5, 270]], _vectors(3, 9)])
    for k in (1, 5, 40):
        want_d, want_i = whole.search(queries, k)
        got_d, got_i = grown.search(queries, k)
        np.testing.assert_array_equal(got_i, want_i)
        np.testing.assert_allclose(got_d, want_d, rtol=1e-5)
    folded = grown.folded()  # what a save writes: a copy, the view left untouched
    assert not grown.base_is_view and folded.ntotal == 297 and grown.delta.ntotal == 0
    np.testing.assert_array_equal(folded.search(queries, 5)[1], whole.search(queries, 5)[1])
    # the base's live rows, then the delta's, each vector as it was added
    folded_vectors, folded_ids = flat_rows(folded)
    np.testing.assert_array_equal(folded_ids, ids[keep])
    np.testing.assert_array_equal(folded_vectors, vectors[keep])
    assert flat_rows(grown.delta)[0].shape == (0, DIM)

    monkeypatch.setattr(faiss_growing, "DROPPED_MAX", 3)
    again = GrowingIndex(_mapped(tmp_path, base), metric, base_is_view=True)
    again.remove_from_base(ids[:3])
    assert again.base_is_view
    again.remove_from_base(ids[3:4])  # the fourth: the base becomes its own
    assert not again.base_is_view and again.ntotal == 246
    again.remove_from_base(ids[4:5])  # now removed from it for real
    assert again.base.ntotal == 245 and ids[4] not in again.search(vectors[4:5], 3)[1][0]


async def test_a_store_maps_its_flat_index_and_reads_the_older_layout(tmp_path: Path) -> None:
    """A reopened flat store maps index.faiss (nothing is read until searched); forgetting
    a memory that is in the map works and is saved; a file in the layout before 2026-11-25
    (the header line first) still opens, unmapped, and is rewritten in the new layout. An
    HNSW index is read, not mapped."""
    from DeepResearch.src.memory.backends.faiss_caches import INDEX_FILE, LEXICAL_FILE
    from DeepResearch.src.memory.backends.faiss_files import INDEX_TRAILER, read_header
    from DeepResearch.src.memory.backends.lexical import LexicalIndex

    cfg = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path)})
    vectors = _vectors(80, 10)
    records = _notes(vectors)
    backend = await _stored(cfg, records)
    assert backend._vectors.index.base_is_view
    assert await backend.delete(MemoryFilter(ids=("m5",))) == 1
    hits = await backend.vector_search(vectors[5], 3, MemoryFilter())
    assert "m5" not in [h.record.id for h in hits] and len(hits) == 3
    backend._vectors.save()
    await backend.close()

    path = tmp_path / INDEX_FILE
    data = path.read_bytes()
    length = int.from_bytes(data[-16:-8], "little")
    assert data.endswith(INDEX_TRAILER)
    older = data[-16 - length : -16] + b"\n" + data[: -16 - length]  # header line first
    path.write_bytes(older)
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
    assert not backend._vectors.index.base_is_view
    assert (await backend.vector_search(vectors[7], 1, MemoryFilter()))[0].record.id == "m7"
    assert [c.record.id for c in await backend.text_search("note 9", 1, MemoryFilter())] == ["m9"]
    assert backend._vectors.index.ntotal == 79
    await backend.close()  # nothing changed, yet both files are rewritten in the new layouts
    assert path.read_bytes().endswith(INDEX_TRAILER)
    assert b"deepresearch-bm25 2" in lexical_path.read_bytes()[:200]
    backend = create_backend(cfg, DIM)
    await backend.open()
    assert backend._vectors.index.base_is_view and not backend._lexical.outdated
    await backend.close()

    hnsw = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "h"), "index_kind": "hnsw"})
    backend = await _stored(hnsw, records[:20])
    assert not backend._vectors.index.base_is_view
    assert (await backend.vector_search(vectors[3], 1, MemoryFilter()))[0].record.id == "m3"
    await backend.close()
