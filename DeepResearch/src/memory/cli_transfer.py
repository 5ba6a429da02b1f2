"""`deepresearch-memory export FILE` / `import FILE`: a namespace's memories as JSON lines
(records_io.py says what a line holds), written in pages, read back in checked batches."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from DeepResearch.src.memory.backends.base import MemoryFilter, MemoryRecord
from DeepResearch.src.memory.client import MemorySystemClient
from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.records_io import record_from_json, record_to_json
from DeepResearch.src.memory.writes import failure_cause

PAGE = 1000
SHOWN_BAD_LINES = 20  # an import reports this many bad lines one by one, then counts the rest


async def scan_all(client: MemorySystemClient, flt: MemoryFilter) -> AsyncIterator[MemoryRecord]:
    offset = 0
    while True:
        page = await client.backend.scan(flt, limit=PAGE, offset=offset)
        for record in page:
            yield record
        if len(page) < PAGE:
            return
        offset += PAGE


async def export_jsonl(client: MemorySystemClient, scope: MemoryFilter, path: Path) -> int:
    try:
        fh = path.open("w", encoding="utf-8")
    except OSError as exc:
        raise MemoryInputError(f"cannot write {path}: {exc.strerror or exc}") from None
    n = 0
    try:
        with fh:
            async for record in scan_all(client, scope):
                fh.write(json.dumps(record_to_json(record), ensure_ascii=False) + "\n")
                n += 1
    except OSError as exc:
        path.unlink(missing_ok=True)
        print(f"deepresearch-memory: export to {path} failed after {n} memories: "
              f"{exc.strerror or exc}; the partial file was removed", file=sys.stderr)
        return 1
    print(f"exported {n} memories to {path}")
    return 0


async def import_jsonl(client: MemorySystemClient, path: Path) -> int:
    """Import a JSONL export or spill file. Each line is checked like `store` checks its
    items; bad lines are reported with their line numbers and skipped (exit status 1), the
    others imported. A file without any valid line is refused (exit status 2). The count
    printed is of distinct memories: a line repeating an id replaces the earlier one."""
    from tqdm import tqdm

    try:
        with path.open("rb") as fh:
            total = sum(1 for _ in fh)
    except OSError as exc:
        raise MemoryInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    batch: list[MemoryRecord] = []
    imported: set[str] = set()  # ids written (a repeated id is one memory)
    bad: list[str] = []
    dimension = client.embedder.dimension
    with path.open("rb") as fh, tqdm(total=total, unit="mem", desc="import") as bar:
        for lineno, raw in enumerate(fh, start=1):
            bar.update(1)
            record = _parse_line(raw, f"{path}:{lineno}", client.config, dimension, bad)
            if record is None:
                continue
            batch.append(record)
            if len(batch) >= client.config.storage.batch_size:
                await _write_batch(client, batch, len(imported))
                imported.update(r.id for r in batch)
                batch = []
        if batch:
            await _write_batch(client, batch, len(imported))
            imported.update(r.id for r in batch)
    written = len(imported)
    for problem in bad[:SHOWN_BAD_LINES]:
        print(f"deepresearch-memory: skipped {problem}", file=sys.stderr)
    if len(bad) > SHOWN_BAD_LINES:
        print(f"deepresearch-memory: ... and {len(bad) - SHOWN_BAD_LINES} more bad lines",
              file=sys.stderr)
    if bad and not written:
        raise MemoryInputError(f"{path}: none of its {len(bad)} lines is a valid memory; "
                               "nothing imported (expected the JSON lines of an export)")
    skipped = f", skipped {len(bad)} bad lines" if bad else ""
    print(f"imported {written} memories from {path}{skipped}")
    return 1 if bad else 0


def _parse_line(
    raw: bytes, where: str, config: MemoryConfig, dimension: int, bad: list[str]
) -> MemoryRecord | None:
    """The record of one line, or None for a blank line or a bad one (added to `bad`)."""
    try:
        text = raw.decode("utf-8")
        if not text.strip():
            return None
        return record_from_json(json.loads(text), where, config, dimension)
    except UnicodeDecodeError as exc:
        bad.append(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})")
    except json.JSONDecodeError as exc:
        bad.append(f"{where}: not a JSON line ({exc.msg} at column {exc.colno})")
    except MemoryInputError as exc:
        bad.append(str(exc))
    return None


async def _write_batch(client: MemorySystemClient, batch: list[MemoryRecord], before: int) -> int:
    todo = [r for r in batch if r.vector is None]
    if todo:
        from DeepResearch.src.memory.compression import full_content

        vectors = client.embedder.embed([full_content(r.content, r.content_codec, r.content_blob) for r in todo])
        for record, vector in zip(todo, vectors, strict=True):
            record.vector = vector
    try:
        return await client.import_records(batch)
    except Exception as exc:
        raise MemoryBackendError(
            f"import stopped after {before} memories: {failure_cause(exc)}; running it again "
            "is safe (a memory imported again replaces itself, by id)"
        ) from exc
