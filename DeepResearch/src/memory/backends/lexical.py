"""An in-process BM25 index over integer row ids, scored exactly like SQLite FTS5's bm25().

The embedded backends (in_memory, faiss) share it. On a large store it replaces an FTS5
OR-query, which scored and joined every matching row in SQL (~90 ms at 100k rows), with
numpy over the postings of the query's terms (~1-3 ms).

- Postings live in two tiers: a frozen CSR (term -> slice of row ids and term counts) and a
  small pending list that new rows append to; the pending tier is merged into the frozen one
  when it grows past a fraction of it, so writes stay O(tokens) and reads stay vectorised.
- Removal only clears the row's `live` bit; dead postings are dropped at the next merge.
- Scoring: FTS5's Okapi BM25 (k1=1.2, b=0.75, idf = ln((N - df + 0.5) / (df + 0.5)), floored
  at 1e-6), N and the average length over live rows. Terms in more than half the rows of a
  store of 1000+ rows are skipped (their idf is ~0 anyway; they only cost time), unless every
  query term is that common.
- `to_bytes` / `from_buffer` persist it, so a large store need not re-tokenise on open; the
  postings are used in place from the buffer (a memory map of the cache file).
"""

from __future__ import annotations

import io
import json
import math
import mmap
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6
COMMON_TERM_SHARE = 0.5
COMMON_TERM_MIN_ROWS = 1000
MERGE_MIN_PENDING = 50_000  # pending postings merged once past this and 1/8 of the frozen ones


class LexicalIndex:
    def __init__(self) -> None:
        self._vocab: dict[str, int] = {}
        self._offsets = np.zeros(1, dtype=np.int64)  # frozen CSR over term ids
        self._rows = np.zeros(0, dtype=np.int64)
        self._counts = np.zeros(0, dtype=np.int32)
        self._pending_terms: list[int] = []
        self._pending_rows: list[int] = []
        self._pending_counts: list[int] = []
        self._pending_csr: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._length = np.zeros(1024, dtype=np.int32)  # tokens per row, by row id
        self._live = np.zeros(1024, dtype=bool)
        self._used = np.zeros(1024, dtype=bool)  # rows that ever had postings
        self._n_live = 0
        self._total_length = 0

    def __len__(self) -> int:
        return self._n_live

    def __contains__(self, row: int) -> bool:
        return 0 <= row < len(self._live) and bool(self._live[row])

    def live_rows(self) -> np.ndarray:
        return np.flatnonzero(self._live).astype(np.int64)

    # -- writes ---------------------------------------------------------------------------
    def add(self, row: int, tokens: Sequence[str]) -> None:
        """Index a new `row` with these tokens. Row ids are never reused (like SQLite's
        AUTOINCREMENT seq): a replaced document gets a new row, the old one is removed."""
        if row < 0:
            raise ValueError(f"row ids are non-negative, got {row}")
        self._grow(row + 1)
        if self._used[row]:
            raise ValueError(f"row {row} was indexed before; row ids are never reused")
        self._used[row] = True
        for token, count in Counter(tokens).items():
            term = self._vocab.setdefault(token, len(self._vocab))
            self._pending_terms.append(term)
            self._pending_rows.append(row)
            self._pending_counts.append(count)
        self._pending_csr = None
        self._length[row] = len(tokens)
        self._live[row] = True
        self._n_live += 1
        self._total_length += len(tokens)
        if len(self._pending_rows) > max(MERGE_MIN_PENDING, len(self._rows) // 8):
            self._merge()

    def add_many(self, items: Iterable[tuple[int, Sequence[str]]]) -> None:
        for row, tokens in items:
            self.add(row, tokens)

    def remove(self, rows: Iterable[int]) -> None:
        for row in rows:
            if row in self:
                self._live[row] = False
                self._n_live -= 1
                self._total_length -= int(self._length[row])

    def _grow(self, size: int) -> None:
        if size <= len(self._live):
            return
        new = max(size, 2 * len(self._live))
        self._length = np.concatenate([self._length, np.zeros(new - len(self._length), np.int32)])
        self._live = np.concatenate([self._live, np.zeros(new - len(self._live), bool)])
        self._used = np.concatenate([self._used, np.zeros(new - len(self._used), bool)])

    def _pending(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pending postings as a CSR (offsets, rows, counts), built once per change."""
        if self._pending_csr is None:
            self._pending_csr = _csr(
                np.asarray(self._pending_terms, dtype=np.int64),
                np.asarray(self._pending_rows, dtype=np.int64),
                np.asarray(self._pending_counts, dtype=np.int32),
                len(self._vocab),
            )
        return self._pending_csr

    def _merge(self) -> None:
        """Fold the pending postings into the frozen CSR and drop dead postings."""
        terms = np.repeat(np.arange(len(self._offsets) - 1, dtype=np.int64), np.diff(self._offsets))
        terms = np.concatenate([terms, np.asarray(self._pending_terms, dtype=np.int64)])
        rows = np.concatenate([self._rows, np.asarray(self._pending_rows, dtype=np.int64)])
        counts = np.concatenate([self._counts, np.asarray(self._pending_counts, dtype=np.int32)])
        keep = self._live[rows]
        self._offsets, self._rows, self._counts = _csr(
            terms[keep], rows[keep], counts[keep], len(self._vocab)
        )
        self._pending_terms, self._pending_rows, self._pending_counts = [], [], []
        self._pending_csr = None

    # -- search ---------------------------------------------------------------------------
    def _postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        """Live (rows, counts) of one term, from both tiers."""
        parts = []
        if term + 1 < len(self._offsets):
            lo, hi = self._offsets[term], self._offsets[term + 1]
            parts.append((self._rows[lo:hi], self._counts[lo:hi]))
        if self._pending_rows:
            offsets, rows, counts = self._pending()
            lo, hi = offsets[term], offsets[term + 1]
            parts.append((rows[lo:hi], counts[lo:hi]))
        rows = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
        counts = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int32)
        keep = self._live[rows]
        return rows[keep], counts[keep]

    def search(
        self, tokens: Sequence[str], k: int, among: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The k best (rows, scores), best first (ties: lower row first), scores > 0.
        `among` restricts the result to these row ids."""
        n = self._n_live
        terms = sorted({self._vocab[t] for t in tokens if t in self._vocab})
        if n == 0 or k <= 0 or not terms:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        postings = [self._postings(term) for term in terms]
        postings = [p for p in postings if len(p[0])]
        if n >= COMMON_TERM_MIN_ROWS and postings:
            useful = [p for p in postings if len(p[0]) <= COMMON_TERM_SHARE * n]
            postings = useful or [min(postings, key=lambda p: len(p[0]))]
        avg_length = self._total_length / n or 1.0
        scores = np.zeros(len(self._live), dtype=np.float64)
        for rows, counts in postings:
            df = len(rows)
            idf = max(math.log((n - df + 0.5) / (df + 0.5)), IDF_FLOOR)
            tf = counts.astype(np.float64)
            norm = K1 * (1.0 - B + B * self._length[rows] / avg_length)
            scores[rows] += idf * tf * (K1 + 1.0) / (tf + norm)  # rows are unique per term
        if among is not None:
            among = np.asarray(among, dtype=np.int64)
            among = among[(among >= 0) & (among < len(scores))]
            candidates = among[scores[among] > 0]
        else:
            candidates = np.flatnonzero(scores > 0)
        if len(candidates) > k:
            part = np.argpartition(-scores[candidates], k - 1)[:k]
            threshold = scores[candidates[part]].min()
            candidates = candidates[scores[candidates] >= threshold]  # keep ties at the edge
        order = np.lexsort((candidates, -scores[candidates]))[:k]
        best = candidates[order]
        return best.astype(np.int64), scores[best]

    # -- persistence ------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """Live rows only: a dead row's id stays unused-looking after a reload, which is
        safe because its owner never hands it out again. The layout (see `_MAGIC`) lets
        `from_buffer` use the postings in place, from a memory map, without copying them."""
        self._merge()
        live = self.live_rows()
        arrays = {
            "vocab": np.frombuffer("\n".join(self._vocab).encode(), dtype=np.uint8),
            "offsets": self._offsets, "rows": self._rows, "counts": self._counts,
            "live": live, "length": self._length[live],
        }
        return _pack(arrays)

    @classmethod
    def from_bytes(cls, blob: bytes) -> LexicalIndex:
        """The index `to_bytes` saved; ValueError naming the cause on a damaged blob."""
        return cls.from_buffer(blob)

    @classmethod
    def from_buffer(cls, buffer: bytes | mmap.mmap, offset: int = 0) -> LexicalIndex:
        """The index saved in `buffer` from `offset` on (what `to_bytes` wrote, or the npz
        of earlier versions). The postings are read-only views of `buffer` (a merge
        replaces them, nothing writes into them); ValueError naming the cause when damaged."""
        try:
            if saved_in_current_layout(buffer, offset):
                return cls._from_arrays(_unpack(buffer, offset))
            with np.load(io.BytesIO(buffer[offset:]), allow_pickle=False) as data:  # npz
                return cls._from_arrays({name: data[name] for name in _ARRAYS})
        except Exception as exc:
            raise ValueError(f"damaged lexical index ({type(exc).__name__}: {exc})") from exc

    @classmethod
    def _from_arrays(cls, data: dict[str, np.ndarray]) -> LexicalIndex:
        index = cls()
        words = bytes(data["vocab"]).decode()
        index._vocab = {w: i for i, w in enumerate(words.split("\n"))} if words else {}
        index._offsets = data["offsets"].astype(np.int64, copy=False)
        index._rows = data["rows"].astype(np.int64, copy=False)
        index._counts = data["counts"].astype(np.int32, copy=False)
        live, length = data["live"].astype(np.int64), data["length"].astype(np.int32)
        if len(index._offsets) != len(index._vocab) + 1 or index._offsets[-1] != len(index._rows):
            raise ValueError("lexical index: offsets do not match vocabulary and postings")
        top = int(max(live.max(initial=-1), index._rows.max(initial=-1))) + 1
        index._grow(top)
        index._live[live] = True
        index._used[live] = True
        index._used[index._rows] = True
        index._length[live] = length
        index._n_live = len(live)
        index._total_length = int(length.sum())
        return index


# The saved layout: _MAGIC, one JSON line {name: [dtype, count, offset]}, zero bytes up to
# the next multiple of ALIGN, where the arrays begin (offsets count from there), each at an
# ALIGN multiple. A buffer that starts ALIGN-aligned (the cache file pads its header line so)
# gives aligned views.
_MAGIC = b"deepresearch-bm25 2\n"
_ARRAYS = ("vocab", "offsets", "rows", "counts", "live", "length")
ALIGN = 64


def saved_in_current_layout(buffer: bytes | mmap.mmap, offset: int = 0) -> bool:
    """Whether `buffer` holds, from `offset` on, what `to_bytes` writes now (not an npz)."""
    return bytes(buffer[offset : offset + len(_MAGIC)]) == _MAGIC


def aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _pack(arrays: dict[str, np.ndarray]) -> bytes:
    directory, position = {}, 0
    for name, array in arrays.items():
        directory[name] = [array.dtype.str, int(array.size), position]
        position += aligned(array.nbytes)
    head = _MAGIC + json.dumps(directory).encode() + b"\n"
    out = bytearray(head.ljust(aligned(len(head)), b"\0"))
    for array in arrays.values():
        data = np.ascontiguousarray(array).tobytes()
        out += data.ljust(aligned(len(data)), b"\0")
    return bytes(out)


def _unpack(buffer: bytes | mmap.mmap, offset: int) -> dict[str, np.ndarray]:
    end = buffer.find(b"\n", offset + len(_MAGIC))
    if end < 0:
        raise ValueError("no array directory after the magic line")
    directory = json.loads(bytes(buffer[offset + len(_MAGIC) : end]))
    missing = set(_ARRAYS) - set(directory)
    if missing:
        raise ValueError(f"arrays {sorted(missing)} missing")
    data_start = offset + aligned(end + 1 - offset)
    size = sum(aligned(count * np.dtype(dtype).itemsize) for dtype, count, _ in directory.values())
    if len(buffer) < data_start + size:
        raise ValueError(f"truncated: {len(buffer) - offset} bytes, the layout needs {data_start + size - offset}")
    return {
        name: np.frombuffer(buffer, np.dtype(dtype), count, data_start + start)
        for name, (dtype, count, start) in directory.items()
    }


def _csr(
    terms: np.ndarray, rows: np.ndarray, counts: np.ndarray, n_terms: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.argsort(terms, kind="stable")
    offsets = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=n_terms), out=offsets[1:])
    return offsets, rows[order], counts[order]
