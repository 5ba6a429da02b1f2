"""FlatVectors, the flat kind's exact numpy index, and its file: checked against real FAISS
(IndexFlatIP / IndexFlatL2, IDSelectorBatch) on the same rows."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np
import pytest

from DeepResearch.src.memory.backends import flat_vectors
from DeepResearch.src.memory.backends.faiss_files import read_flat_file, write_flat_file
from DeepResearch.src.memory.backends.flat_vectors import FlatVectors

DIM = 16


def _vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _faiss(vectors: np.ndarray, ids: np.ndarray, metric: str) -> faiss.IndexIDMap:
    inner = faiss.IndexFlatL2(DIM) if metric == "euclidean" else faiss.IndexFlatIP(DIM)
    index = faiss.IndexIDMap(inner)
    index.add_with_ids(vectors, ids)
    return index


def _same_hits(index: FlatVectors, reference: faiss.IndexIDMap, queries: np.ndarray, k: int,
               among: np.ndarray | None = None) -> None:
    """`index` answers each query as FAISS does: the same ids in the same order, the same
    scores, and no padding where FAISS pads with -1."""
    params = None
    if among is not None:
        params = faiss.SearchParameters()
        params.sel = faiss.IDSelectorBatch(among)
    want_raw, want_ids = reference.search(queries, k, params=params)
    for query, raw, ids in zip(queries, want_raw, want_ids, strict=True):
        got_raw, got_ids = index.search(query, k, among=among)
        np.testing.assert_array_equal(got_ids, ids[ids >= 0])
        np.testing.assert_allclose(got_raw, raw[ids >= 0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_searches_like_faiss_over_base_and_tail(metric: str) -> None:
    vectors, ids = _vectors(300, 1), np.arange(1000, 1300, dtype=np.int64)
    index = FlatVectors.of(vectors[:200], ids[:200], metric)
    index.add(vectors[200:260], ids[200:260])
    index.add(vectors[260:], ids[260:])  # the tail grows past its first capacity
    assert index.ntotal == 300 and index.base.n == 200
    np.testing.assert_array_equal(index.ids(), ids)
    reference = _faiss(vectors, ids, metric)
    queries = np.concatenate([_vectors(4, 2), vectors[[3, 250]]])
    for k in (1, 10, 299, 400):  # 400: more than it holds
        _same_hits(index, reference, queries, k)
    # Only the ids asked for, in both segments; ids it does not hold are ignored.
    among = np.concatenate([ids[::7], [5, 99_999]])
    for k in (1, 5, 60):
        _same_hits(index, reference, queries, k, among=among)
    assert index.search(queries[0], 5, among=np.array([7], np.int64))[1].size == 0
    assert index.search(queries[0], 0)[1].size == 0


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_removed_rows_are_never_found_and_compaction_keeps_the_rest(
    metric: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flat_vectors, "COMPACT_MIN", 8)
    vectors, ids = _vectors(120, 3), np.arange(120, dtype=np.int64) * 3
    base = vectors[:100].copy()
    base.setflags(write=False)  # as a memory map is: a write would raise
    index = FlatVectors.of(base, ids[:100], metric)
    index.add(vectors[100:], ids[100:])
    gone = np.array([ids[0], ids[10], ids[105], 7, ids[10]], dtype=np.int64)  # base, tail, unknown
    assert index.remove(gone) == 3 and index.ntotal == 117
    assert index.base.dead == 2 and index.base.vectors is base  # not copied yet
    keep = ~np.isin(ids, gone)
    np.testing.assert_array_equal(index.ids(), ids[keep])
    queries = np.concatenate([vectors[[0, 10, 105, 50]], _vectors(3, 4)])
    for k in (1, 5, 40):
        _same_hits(index, _faiss(vectors[keep], ids[keep], metric), queries, k)
        _same_hits(index, _faiss(vectors[keep], ids[keep], metric), queries, k, among=ids[::2])
    # Past max(COMPACT_MIN, a quarter) dead rows the base is copied into an array of its own.
    assert index.remove(ids[20:45]) == 25 and index.base.dead == 0
    assert index.base.vectors is not base and index.base.n == 73
    keep &= ~np.isin(ids, ids[20:45])
    _same_hits(index, _faiss(vectors[keep], ids[keep], metric), queries, 30)
    assert index.remove(ids[20:45]) == 0


def test_the_tail_looks_ids_up_in_any_order() -> None:
    """Rows another process wrote are added late, with lower ids: restricted searches must
    still find them."""
    vectors = _vectors(40, 5)
    ids = np.random.default_rng(6).permutation(np.arange(40, dtype=np.int64) * 5)
    index = FlatVectors(DIM, "cosine")
    index.add(vectors[:25], ids[:25])
    index.add(vectors[25:], ids[25:])
    _same_hits(index, _faiss(vectors, ids, "cosine"), vectors[:6], 4, among=ids[::3].copy())
    assert index.remove(ids[[1, 30]]) == 2
    assert ids[1] not in index.search(vectors[1], 40)[1]


def test_bad_input_is_refused_naming_the_shapes() -> None:
    index = FlatVectors(DIM, "cosine")
    with pytest.raises(ValueError, match=r"\(2, 16\) vectors, got \(2, 8\)"):
        index.add(np.zeros((2, 8), np.float32), np.arange(2))
    with pytest.raises(ValueError, match="dimension 8, index has 16"):
        index.search(np.zeros(8, np.float32), 3)


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_the_file_holds_the_live_rows_and_is_mapped_read_only(tmp_path: Path, metric: str) -> None:
    vectors, ids = _vectors(70, 7), np.arange(70, dtype=np.int64) + 10
    index = FlatVectors.of(vectors[:50], ids[:50], metric)
    index.add(vectors[50:], ids[50:])
    index.remove(ids[[3, 60]])
    path = tmp_path / "index.flat"
    write_flat_file(path, {"watermark": 79, "kind": "flat"}, index)
    header, read = read_flat_file(path, metric)
    assert header["watermark"] == 79 and header["rows"] == 68
    keep = ~np.isin(ids, ids[[3, 60]])
    np.testing.assert_array_equal(read.ids(), ids[keep])
    np.testing.assert_array_equal(read.base.vectors, vectors[keep])  # the bytes as written
    assert not read.base.vectors.flags.writeable and read.base.vectors.flags.aligned
    assert read.base.vectors.ctypes.data % 64 == 0  # a body at an ALIGN multiple
    _same_hits(read, _faiss(vectors[keep], ids[keep], metric), vectors[:5], 6)
    read.add(vectors[3:4], ids[3:4])  # writes go to the tail, never into the map
    read.remove(ids[:2])
    assert read.ntotal == 67

    empty = tmp_path / "empty.flat"
    write_flat_file(empty, {"watermark": 0}, FlatVectors(DIM, metric))
    header, read = read_flat_file(empty, metric)
    assert header["rows"] == 0 and read.ntotal == 0 and read.search(vectors[0], 3)[1].size == 0


@pytest.mark.parametrize(
    "damage", ["truncated body", "a byte too many", "more rows than written", "other layout"]
)
def test_a_damaged_file_is_refused(tmp_path: Path, damage: str) -> None:
    index = FlatVectors.of(_vectors(20, 8), np.arange(20, dtype=np.int64), "cosine")
    path = tmp_path / "index.flat"
    write_flat_file(path, {"watermark": 20, "kind": "flat", "dimension": DIM}, index)
    data = path.read_bytes()
    damaged = {
        "truncated body": data[:-10],
        "a byte too many": data + b"\0",
        "more rows than written": data.replace(b'"rows": 20', b'"rows": 21'),
        "other layout": data.replace(b"deepresearch-flat 1", b"deepresearch-flat 9"),
    }[damage]
    assert damaged != data
    path.write_bytes(damaged)
    with pytest.raises(ValueError, match=r"truncated|layout"):
        read_flat_file(path, "cosine")


def test_rows_added_after_a_removal_are_alive_when_the_tail_grows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(flat_vectors, "TAIL_START", 4)
    vectors, ids = _vectors(30, 9), np.arange(30, dtype=np.int64)
    index = FlatVectors(DIM, "cosine")
    index.add(vectors[:3], ids[:3])
    assert index.remove(ids[1:2]) == 1
    for start in range(3, 30, 3):  # the tail grows 4 -> 8 -> 16 -> 32 with a row dead
        index.add(vectors[start : start + 3], ids[start : start + 3])
    keep = ids != 1
    assert index.ntotal == 29
    _same_hits(index, _faiss(vectors[keep], ids[keep], "cosine"), vectors[::4], 5)
