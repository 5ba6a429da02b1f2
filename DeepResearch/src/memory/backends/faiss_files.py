"""The files of the faiss backend's caches, written atomically: `lexical.npz` and `index.flat`
(a header line, padded so that the body is ALIGN-aligned, then the body) and, for the HNSW
kind, `index.faiss` (the index as FAISS writes it, then the header; see INDEX_TRAILER).

FAISS is imported only to read or write `index.faiss`."""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from DeepResearch.src.memory.backends.flat_vectors import FlatVectors
from DeepResearch.src.memory.backends.lexical import ALIGN, aligned

if TYPE_CHECKING:
    import faiss

READ_CHUNK = 1 << 20  # FAISS reads the index file straight into the index, in chunks of this


def replace_atomically(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """`path` holds what `write` writes, or what it held before (a temporary file, synced,
    swapped in)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        write(fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_atomically(path: Path, header: dict, write_body: Callable[[BinaryIO], object]) -> None:
    """The header line, then what `write_body` writes to the file, swapped in atomically.
    The line is padded (JSON allows the spaces) so that the body starts at a multiple of
    ALIGN: arrays in it can be used in place from a memory map."""

    def write(fh: BinaryIO) -> None:
        line = json.dumps(header).encode()
        fh.write(line.ljust(-(-(len(line) + 1) // ALIGN) * ALIGN - 1) + b"\n")
        write_body(fh)

    replace_atomically(path, write)


# index.flat: the header line (with "rows": n), then the n ids (int64) padded to ALIGN, then
# the n vectors (float32, row by row): both used in place from a memory map.
FLAT_LAYOUT = "deepresearch-flat 1"


def write_flat_file(path: Path, header: dict, index: FlatVectors) -> None:
    parts = list(index.live_rows())
    rows = sum(len(ids) for _, ids in parts)
    header = {**header, "layout": FLAT_LAYOUT, "rows": rows, "dimension": index.d}

    def write_body(fh: BinaryIO) -> None:
        for _, ids in parts:
            fh.write(np.ascontiguousarray(ids, dtype="<i8").data)
        fh.write(bytes(aligned(8 * rows) - 8 * rows))
        for vectors, _ in parts:
            fh.write(np.ascontiguousarray(vectors, dtype="<f4").data)

    write_atomically(path, header, write_body)


def read_flat_file(path: Path, metric: str) -> tuple[dict, FlatVectors]:
    """(header, an index whose base is a read-only map of the file's rows)."""
    header, body, start = map_after_header(path)
    if header.get("layout") != FLAT_LAYOUT:
        raise ValueError(f"layout {header.get('layout')!r}, expected {FLAT_LAYOUT!r}")
    rows, dimension = header.get("rows"), header.get("dimension")
    if not isinstance(rows, int) or not isinstance(dimension, int) or rows < 0 or dimension < 1:
        raise ValueError(f"header has rows={rows!r}, dimension={dimension!r}")
    vectors_at = start + aligned(8 * rows)
    if len(body) != vectors_at + 4 * rows * dimension:
        raise ValueError(
            f"{len(body)} bytes, expected {vectors_at + 4 * rows * dimension} for {rows} rows "
            "(truncated?)"
        )
    ids = np.frombuffer(body, dtype="<i8", count=rows, offset=start)
    vectors = np.frombuffer(body, dtype="<f4", count=rows * dimension, offset=vectors_at)
    return header, FlatVectors.of(vectors.reshape(rows, dimension), ids, metric)


# index.faiss is the FAISS index as FAISS writes it, then the header as JSON and a footer: its
# length (8 bytes, little-endian) and this magic. FAISS ignores what follows an index. Files
# written before 2026-11-25 start with the header line (`{...}`) instead; they are still read,
# and rewritten at the next save.
INDEX_TRAILER = b"DR-INDEX"


def write_index_file(path: Path, header: dict, index: faiss.Index) -> None:
    import faiss

    def write(fh: BinaryIO) -> None:
        faiss.write_index(index, faiss.PyCallbackIOWriter(fh.write))
        meta = json.dumps(header).encode()
        fh.write(meta + len(meta).to_bytes(8, "little") + INDEX_TRAILER)

    replace_atomically(path, write)


def read_index_header(fh: BinaryIO) -> tuple[dict, bool]:
    """(the header of the index file open as `fh`, whether the file is in the older layout);
    `fh` is left at the start of the index."""
    if fh.read(1) == b"{":  # the layout before 2026-11-25: the header line first
        fh.seek(0)
        return read_header(fh), True
    size = fh.seek(0, os.SEEK_END)
    fh.seek(max(0, size - 16))
    footer = fh.read(16)
    if len(footer) < 16 or footer[8:] != INDEX_TRAILER:
        raise ValueError("no header after the index (truncated?)")
    length = int.from_bytes(footer[:8], "little")
    if length > size - 16:
        raise ValueError(f"header length {length} does not fit a file of {size} bytes")
    fh.seek(size - 16 - length)
    header = json.loads(fh.read(length))
    if not isinstance(header, dict) or not isinstance(header.get("watermark"), int):
        raise ValueError("header has no integer watermark")
    fh.seek(0)
    return header, False


def read_index_file(path: Path) -> tuple[dict, faiss.Index, bool]:
    """(header, index, whether the file is in the older layout). FAISS reads the index through
    a callback, which copies the bytes once, into the index (0.35 GB/s -> ~2 GB/s against one
    bytes object)."""
    import faiss

    with path.open("rb") as fh:
        header, older = read_index_header(fh)
        return header, faiss.read_index(faiss.PyCallbackIOReader(fh.read, READ_CHUNK)), older


def saved_kind(path: Path) -> str | None:
    """The index kind a cache file says it holds (None if it does not say), read without
    FAISS."""
    with path.open("rb") as fh:
        if path.suffix == ".flat":
            return read_header(fh).get("kind")
        return read_index_header(fh)[0].get("kind")


def map_after_header(path: Path) -> tuple[dict, mmap.mmap, int]:
    """(header, a read-only map of the whole file, where the body starts in it) of a cache
    file that starts with a header line: its arrays are used in place, not read."""
    with path.open("rb") as fh:
        header = read_header(fh)
        return header, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ), fh.tell()


def read_header(fh: BinaryIO) -> dict:
    """A cache file's header line; `fh` is left at the start of the body."""
    header = json.loads(fh.readline())
    if not isinstance(header, dict) or not isinstance(header.get("watermark"), int):
        raise ValueError("header line has no integer watermark")
    return header
