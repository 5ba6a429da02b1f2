"""LexicalIndex: the in-process BM25 must score like SQLite FTS5's bm25() (its reference), in
both tiers, after removals, restricted to rows, and after a save/load round trip."""

from __future__ import annotations

import random
import sqlite3

import numpy as np
import pytest

from DeepResearch.src.memory.backends import lexical
from DeepResearch.src.memory.backends.lexical import LexicalIndex

WORDS = "align read salmon star hisat gene variant call bam index crash memori quant trim".split()


def _docs(n: int, seed: int = 0) -> dict[int, list[str]]:
    rng = random.Random(seed)
    return {row: rng.choices(WORDS, k=rng.randint(1, 12)) for row in range(1, n + 1)}


def _fts5(docs: dict[int, list[str]], query: list[str]) -> dict[int, float]:
    """-bm25() of every matching row, from a real FTS5 table holding the same tokens."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE fts USING fts5 (tokens)")
    conn.executemany("INSERT INTO fts (rowid, tokens) VALUES (?, ?)",
                     [(row, " ".join(tokens)) for row, tokens in docs.items()])
    match = " OR ".join(f'"{t}"' for t in sorted(set(query)))
    return dict(conn.execute("SELECT rowid, -bm25(fts) FROM fts WHERE fts MATCH ?", (match,)).fetchall())


def _assert_same_as_fts5(index: LexicalIndex, docs: dict[int, list[str]], query: list[str]) -> None:
    reference = _fts5(docs, query)
    rows, scores = index.search(query, len(docs))
    assert dict(zip(rows.tolist(), scores.tolist(), strict=True)) == pytest.approx(reference, rel=1e-9)
    assert list(scores) == sorted(scores, reverse=True)


@pytest.mark.parametrize("query", [["salmon"], ["salmon", "crash", "bam"], ["align", "read", "gene", "trim"]])
def test_scores_equal_sqlite_fts5_bm25(query: list[str]) -> None:
    docs = _docs(400)
    index = LexicalIndex()
    index.add_many(docs.items())
    _assert_same_as_fts5(index, docs, query)


def test_removed_rows_vanish_and_statistics_follow(monkeypatch) -> None:
    monkeypatch.setattr(lexical, "MERGE_MIN_PENDING", 100)  # exercise both tiers and merges
    docs = _docs(300, seed=1)
    index = LexicalIndex()
    index.add_many(docs.items())
    gone = [row for row in docs if row % 3 == 0]
    index.remove(gone)
    for row in gone:
        del docs[row]
    extra = {400 + row: tokens for row, tokens in _docs(40, seed=2).items()}
    index.add_many(extra.items())  # new rows after the removal, partly pending
    docs.update(extra)
    assert len(index) == len(docs)
    _assert_same_as_fts5(index, docs, ["salmon", "variant", "trim"])
    rows, _ = index.search(["salmon", "variant", "trim"], 10_000)
    assert not set(rows.tolist()) & set(gone)


def test_among_restricts_to_those_rows_with_global_statistics() -> None:
    docs = _docs(200, seed=3)
    index = LexicalIndex()
    index.add_many(docs.items())
    reference = _fts5(docs, ["star", "crash"])
    among = np.array([r for r in docs if r % 10 == 0] + [9999, -5])  # unknown rows are ignored
    rows, scores = index.search(["star", "crash"], 5, among=among)
    expected = sorted(((s, r) for r, s in reference.items() if r % 10 == 0), key=lambda p: (-p[0], p[1]))[:5]
    assert rows.tolist() == [r for _, r in expected]
    assert scores.tolist() == pytest.approx([s for s, _ in expected], rel=1e-9)


def test_round_trip_through_bytes_keeps_results_and_a_damaged_blob_is_refused() -> None:
    docs = _docs(150, seed=4)
    index = LexicalIndex()
    index.add_many(docs.items())
    index.remove([5, 6, 7])
    loaded = LexicalIndex.from_bytes(index.to_bytes())
    for query in (["gene"], ["call", "index", "memori"]):
        a_rows, a_scores = index.search(query, 20)
        b_rows, b_scores = loaded.search(query, 20)
        assert a_rows.tolist() == b_rows.tolist()
        assert a_scores.tolist() == pytest.approx(b_scores.tolist())
    assert 5 not in loaded and 8 in loaded and len(loaded) == 147
    loaded.add(1000, ["gene"])  # still writable after a load
    assert 1000 in loaded.search(["gene"], 200)[0].tolist()
    for damaged in (index.to_bytes()[:-40], b"not an npz"):
        with pytest.raises(ValueError, match="damaged lexical index"):
            LexicalIndex.from_bytes(damaged)


def test_row_ids_are_never_reused_and_must_be_non_negative() -> None:
    index = LexicalIndex()
    index.add(3, ["salmon"])
    index.remove([3])
    with pytest.raises(ValueError, match="never reused"):
        index.add(3, ["star"])
    with pytest.raises(ValueError, match="non-negative"):
        index.add(-1, ["star"])


def test_terms_in_most_rows_of_a_large_index_are_skipped_unless_alone() -> None:
    index = LexicalIndex()
    for row in range(1200):
        index.add(row, ["common", "rare"] if row < 3 else ["common", f"w{row}"])
    rows, _ = index.search(["common", "rare"], 50)
    assert sorted(rows.tolist()) == [0, 1, 2]  # "common" (every row) is not scored
    rows, scores = index.search(["common"], 5)
    assert len(rows) == 5 and (scores > 0).all()  # alone, it still finds rows


def test_empty_queries_and_unknown_words_find_nothing() -> None:
    index = LexicalIndex()
    assert index.search(["salmon"], 5)[0].size == 0
    index.add(1, ["salmon"])
    assert index.search([], 5)[0].size == 0
    assert index.search(["unknown"], 5)[0].size == 0
    assert index.search(["salmon"], 0)[0].size == 0


def test_the_saved_postings_are_used_in_place_and_older_npz_files_still_load(tmp_path) -> None:
    """A saved index read from a memory map keeps its postings in the map (read-only views,
    no copy) and stays writable; an index saved as npz by earlier versions loads the same."""
    import io
    import mmap

    docs = _docs(120, seed=7)
    index = LexicalIndex()
    index.add_many(docs.items())
    path = tmp_path / "lexical.bin"
    path.write_bytes(b"x" * 64 + index.to_bytes())  # as the cache file: a 64-byte header first
    with path.open("rb") as fh:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    loaded = LexicalIndex.from_buffer(mapped, 64)
    assert not loaded._rows.flags.writeable and not loaded._rows.flags.owndata
    assert loaded._rows.ctypes.data % 64 == 0  # aligned views
    live = index.live_rows()
    old = io.BytesIO()
    np.savez(old, vocab=np.frombuffer("\n".join(index._vocab).encode(), dtype=np.uint8),
             offsets=index._offsets, rows=index._rows, counts=index._counts,
             live=live, length=index._length[live])
    from_npz = LexicalIndex.from_bytes(old.getvalue())
    for query in (["gene"], ["call", "index", "memori"]):
        want = index.search(query, 15)
        for other in (loaded, from_npz):
            got = other.search(query, 15)
            assert got[0].tolist() == want[0].tolist()
            assert got[1].tolist() == pytest.approx(want[1].tolist())
    loaded.add(5000, ["gene"] * 3)  # writes go to the pending tier, never into the map
    loaded.remove([1])
    assert 5000 in loaded.search(["gene"], 500)[0].tolist() and 1 not in loaded
    loaded._merge()  # a merge builds new arrays
    assert loaded._rows.flags.writeable
