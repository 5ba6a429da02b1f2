"""The embedded backend's FAISS index: a cache of the vectors in SQLite, ids = record seqs.

`flat` is `IndexIDMap2(IndexFlatIP)` (exact), `hnsw` is `IndexIDMap2(IndexHNSWFlat)`
(approximate, inner product). Vectors are unit length, so inner product is the cosine
whatever the configured metric, and orders like L2 would.

`index.faiss` holds one header line (magic, then JSON: kind, dimension, the id of the store
it was built for, the record seq and deletion-log position the index reflects, its size and
the CRC-32 of the body) and the body
(`faiss.serialize_index`). It is written to a temporary file in the same folder, fsynced and
renamed over the old one; the temporary file is removed whatever fails.
"""

from __future__ import annotations

import json
import logging
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

INDEX_FILE = "index.faiss"
MAGIC = b"deepresearch-faiss-index 1 "
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class IndexSettings:
    kind: str  # "flat" | "hnsw"
    dimension: int
    hnsw_m: int = 32
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 256


class UnusableIndexFile(Exception):
    """The index file cannot be used (damaged, built for other settings or another store)."""


class OtherIndexKind(UnusableIndexFile):
    """The index file is sound but of another kind (flat / hnsw) than the store now uses."""


class VectorIndex:
    """The index, where it stands in the records' history (`seq`: every record up to it has
    been added; `deleted_pos`: every deletion up to it applied), and the HNSW kind's deleted
    ids still inside it (HNSW cannot remove; reads drop them, as SQLite no longer has them).
    `store_id`: the store it is built for (Database.store_id), kept in its file; `unindexed`:
    the records up to `seq` left out because their stored vector has the wrong length."""

    def __init__(self, settings: IndexSettings, store_id: str) -> None:
        self.settings = settings
        self.store_id = store_id
        self.index = self._new()
        self.seq = 0
        self.deleted_pos = 0
        self.stale: set[int] = set()
        self.unindexed: set[int] = set()  # seqs of records whose stored vector is damaged
        self.changes = 0  # rows added or removed since the file was written or read

    def _new(self) -> faiss.IndexIDMap2:
        s = self.settings
        if s.kind == "hnsw":
            inner = faiss.IndexHNSWFlat(s.dimension, s.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efConstruction = s.hnsw_ef_construction
            inner.hnsw.efSearch = s.hnsw_ef_search
        else:
            inner = faiss.IndexFlatIP(s.dimension)
        return faiss.IndexIDMap2(inner)

    @property
    def live(self) -> int:
        return int(self.index.ntotal) - len(self.stale)

    def ids(self) -> np.ndarray:
        return faiss.vector_to_array(self.index.id_map).astype(np.int64)

    def add(self, seqs: np.ndarray, vectors: np.ndarray) -> None:
        if len(seqs):
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32),
                                    np.asarray(seqs, dtype=np.int64))
            self.changes += len(seqs)

    def remove(self, seqs: list[int]) -> None:
        """Drop `seqs` (those never added are ignored)."""
        if not seqs:
            return
        if self.settings.kind == "hnsw":
            present = set(seqs) & set(self.ids().tolist())
            self.stale |= present
            self.changes += len(present)
        else:
            self.changes += int(self.index.remove_ids(np.asarray(seqs, dtype=np.int64)))

    def vectors(self, seqs: np.ndarray) -> np.ndarray:
        """The vectors of `seqs` (each must be in the index), read from its memory: no
        database read, cost in proportion to len(seqs) whatever the index's size."""
        if not len(seqs):
            return np.zeros((0, self.settings.dimension), np.float32)
        return self.index.reconstruct_batch(np.ascontiguousarray(seqs, dtype=np.int64))

    def worth_rebuilding(self) -> bool:
        """An HNSW index a quarter stale is rebuilt (its searches over-fetch past the stale)."""
        return len(self.stale) > max(1000, int(self.index.ntotal) // 4)

    def search(self, query: np.ndarray, fetch: int) -> tuple[np.ndarray, np.ndarray]:
        """(seqs, cosine similarities) of the `fetch` nearest, best first, stale ones left out."""
        fetch = min(fetch, int(self.index.ntotal))
        if fetch <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        sims, ids = self.index.search(np.ascontiguousarray(query, dtype=np.float32)[None, :], fetch)
        keep = ids[0] >= 0
        if self.stale:
            keep &= ~np.isin(ids[0], np.fromiter(self.stale, np.int64, len(self.stale)))
        return ids[0][keep], sims[0][keep]

    # -- the file -------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        body = faiss.serialize_index(self.index)
        header = {
            "kind": self.settings.kind, "dimension": self.settings.dimension,
            "store_id": self.store_id, "seq": self.seq, "deleted_pos": self.deleted_pos,
            "ntotal": int(self.index.ntotal),
            "stale": sorted(self.stale), "unindexed": sorted(self.unindexed), "bytes": int(body.nbytes), "crc32": zlib.crc32(body),
        }
        write_atomically(path, MAGIC + json.dumps(header).encode() + b"\n", body)
        self.changes = 0

    def load(self, path: Path) -> None:
        """Read `path`; UnusableIndexFile if it is damaged, made for other settings or for
        another store."""
        data = path.read_bytes()
        if not data.startswith(MAGIC) or b"\n" not in data:
            raise UnusableIndexFile("no header: not an index file of this version")
        end = data.index(b"\n")
        try:
            header = json.loads(data[len(MAGIC) : end])
        except ValueError as exc:
            raise UnusableIndexFile(f"damaged header ({exc})") from exc
        body = np.frombuffer(data, dtype=np.uint8, offset=end + 1)
        if body.nbytes != header.get("bytes") or zlib.crc32(body) != header.get("crc32"):
            raise UnusableIndexFile(
                f"checksum mismatch ({body.nbytes} bytes, header says {header.get('bytes')}): "
                "the file is damaged or truncated"
            )
        want = {"kind": self.settings.kind, "dimension": self.settings.dimension}
        got = {key: header.get(key) for key in want}
        if got == {**want, "kind": got["kind"]} and got["kind"] != want["kind"]:
            raise OtherIndexKind(f"a {got['kind']} index, the store now uses {want['kind']}")
        if got != want:
            raise UnusableIndexFile(f"built as {got}, configured {want}")
        if header.get("store_id") != self.store_id:
            raise UnusableIndexFile(
                f"built for store {header.get('store_id')!r}, this store is {self.store_id!r}: "
                "copied from another store"
            )
        index = faiss.deserialize_index(body)
        if index.ntotal != header["ntotal"]:
            raise UnusableIndexFile(f"holds {index.ntotal} vectors, header says {header['ntotal']}")
        if self.settings.kind == "hnsw":
            faiss.downcast_index(index.index).hnsw.efSearch = self.settings.hnsw_ef_search
        self.index = index
        self.seq, self.deleted_pos = int(header["seq"]), int(header["deleted_pos"])
        self.stale = set(header["stale"])
        self.unindexed = set(header.get("unindexed", []))
        self.changes = 0


def write_atomically(path: Path, *parts: bytes | np.ndarray) -> None:
    """`parts` to `path`, all or nothing: a temporary file in the same folder, fsynced and
    renamed over `path`; the temporary file is removed on any failure (a full disk too)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            for part in parts:
                fh.write(memoryview(part))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
