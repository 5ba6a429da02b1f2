"""Compression of large memory contents, written once above the backends.

A record whose content is at least `min_size_bytes` (UTF-8) keeps only a searchable prefix in
`content` and the whole text, compressed, in `content_blob` / `content_codec`. Reading goes
through `full_content`, so callers always see exactly what was stored.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable

import lz4.frame
import zstandard

from DeepResearch.src.memory.config import CompressionConfig
from DeepResearch.src.memory.errors import MemoryBackendError

_ZSTD_LEVEL = 3
_zstd_c = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
_zstd_d = zstandard.ZstdDecompressor()

_COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "lz4": lz4.frame.compress,
    "gzip": lambda data: gzip.compress(data, compresslevel=6, mtime=0),
    "zstd": _zstd_c.compress,
}
_DECOMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "lz4": lz4.frame.decompress,
    "gzip": gzip.decompress,
    "zstd": _zstd_d.decompress,
}


def compress_content(content: str, cfg: CompressionConfig) -> tuple[str, str | None, bytes | None]:
    """(content to store, codec, blob): unchanged content and no blob below the threshold."""
    raw = content.encode("utf-8")
    if not cfg.enabled or len(raw) < cfg.min_size_bytes:
        return content, None, None
    blob = _COMPRESS[cfg.algorithm](raw)
    if len(blob) >= len(raw):  # incompressible: storing it twice would only cost space
        return content, None, None
    return content[: cfg.searchable_prefix_chars], cfg.algorithm, blob


def full_content(content: str, codec: str | None, blob: bytes | None) -> str:
    """The original text of a record, decompressing `blob` when a codec is set."""
    if codec is None:
        return content
    if blob is None:
        raise MemoryBackendError(f"record says content_codec={codec!r} but has no content_blob")
    try:
        decompress = _DECOMPRESS[codec]
    except KeyError:
        raise MemoryBackendError(
            f"unknown content_codec {codec!r}; known: {sorted(_DECOMPRESS)}"
        ) from None
    try:
        return decompress(blob).decode("utf-8")
    except Exception as exc:
        raise MemoryBackendError(f"cannot decompress a {codec} content blob: {exc}") from exc


def content_problem(codec: str | None, blob: bytes | None) -> str | None:
    """Why a stored (codec, blob) pair does not give back its text (None: it does)."""
    if codec is None:
        return None
    try:
        full_content("", codec, blob)
    except MemoryBackendError as exc:
        return str(exc)
    return None
