"""The files of the faiss backend's caches, written atomically: `lexical.npz` (a header line,
padded so that the body is ALIGN-aligned, then the body) and `index.faiss` (the index as FAISS
writes it, then the header; see INDEX_TRAILER)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import faiss

from DeepResearch.src.memory.backends.lexical import ALIGN

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


# index.faiss is the FAISS index as FAISS writes it, so that FAISS can map the file itself,
# then the header as JSON and a footer: its length (8 bytes, little-endian) and this magic.
# FAISS ignores what follows an index. Files written before 2026-11-25 start with the header
# line (`{...}`) instead; they are still read, and rewritten at the next save.
INDEX_TRAILER = b"DR-INDEX"


def write_index_file(path: Path, header: dict, index: faiss.Index) -> None:
    def write(fh: BinaryIO) -> None:
        faiss.write_index(index, faiss.PyCallbackIOWriter(fh.write))
        meta = json.dumps(header).encode()
        fh.write(meta + len(meta).to_bytes(8, "little") + INDEX_TRAILER)

    replace_atomically(path, write)


def read_index_file(path: Path, map_flat: bool) -> tuple[dict, faiss.Index, bool, bool]:
    """(header, index, whether the index is a read-only map of the file, whether the file is
    in the older layout). A flat index is mapped when `map_flat` (its vectors are used in
    place: a 100k store's 150 MB are not read at open); otherwise, and for HNSW, FAISS reads
    it through a callback, which copies the bytes once, into the index (0.35 GB/s -> ~2 GB/s
    against one bytes object)."""
    with path.open("rb") as fh:
        if fh.read(1) == b"{":  # the layout before 2026-11-25: the header line first
            fh.seek(0)
            header = read_header(fh)
            index = faiss.read_index(faiss.PyCallbackIOReader(fh.read, READ_CHUNK))
            return header, index, False, True
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
        if map_flat and header.get("kind") == "flat":
            return header, faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC), True, False
        fh.seek(0)
        return header, faiss.read_index(faiss.PyCallbackIOReader(fh.read, READ_CHUNK)), False, False


def read_header(fh: BinaryIO) -> dict:
    """A cache file's header line; `fh` is left at the start of the body."""
    header = json.loads(fh.readline())
    if not isinstance(header, dict) or not isinstance(header.get("watermark"), int):
        raise ValueError("header line has no integer watermark")
    return header
