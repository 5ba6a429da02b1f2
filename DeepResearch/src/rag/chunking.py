"""Split text into overlapping chunks on paragraph/sentence boundaries where possible."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n{2,}")


def chunk_text(text: str, chunk_size: int = 700, overlap: int = 120) -> list[str]:
    """Chunks of at most `chunk_size` characters; neighbours share about `overlap` chars."""
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be > 0, got {chunk_size}")
    if not 0 <= overlap < chunk_size:
        raise ValueError(f"chunk_overlap must be in [0, chunk_size={chunk_size}), got {overlap}")
    pieces = [p.strip() for p in _SENTENCE_END.split(text) if p and p.strip()]
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        while len(piece) > chunk_size:  # a single over-long sentence is cut hard
            if current:
                chunks.append(current)
                current = ""
            chunks.append(piece[:chunk_size])
            piece = piece[chunk_size - overlap :]
        candidate = f"{current} {piece}".strip() if current else piece
        if len(candidate) <= chunk_size:
            current = candidate
            continue
        chunks.append(current)
        tail = current[-overlap:] if overlap else ""
        tail = tail[tail.find(" ") + 1 :] if " " in tail else tail
        current = f"{tail} {piece}".strip() if len(tail) + len(piece) < chunk_size else piece
    if current:
        chunks.append(current)
    return chunks
