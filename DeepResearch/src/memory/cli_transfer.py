"""`deepresearch-memory export FILE` / `import FILE`: a namespace's memories as JSON lines
(records_io.py says what a line holds), written in pages, read back in checked batches."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from DeepResearch.src.memory.backends.base import MemoryFilter, MemoryRecord
from DeepResearch.src.memory.client import MemorySystemClient
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.records_io import record_from_json, record_to_json
from DeepResearch.src.memory.writes import UNWRITTEN_FACT, failure_cause

if TYPE_CHECKING:
    from DeepResearch.src.memory.facts.graph import FactGraph, FactSpec

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
    regular = stat.S_ISREG(os.fstat(fh.fileno()).st_mode)  # not a pipe, /dev/stdout, a device
    try:
        with fh:
            async for record in scan_all(client, scope):
                fh.write(json.dumps(record_to_json(record), ensure_ascii=False) + "\n")
                n += 1
    except BrokenPipeError:  # exported to a pipe (/dev/stdout) whose reader stopped: a normal end
        raise
    except OSError as exc:
        if regular:  # only a file this export wrote is removed, never a pipe's or device's name
            path.unlink(missing_ok=True)
        print(f"deepresearch-memory: export to {path} failed after {n} memories: "
              f"{exc.strerror or exc}" + ("; the partial file was removed" if regular else ""),
              file=sys.stderr)
        return 1
    print(f"exported {n} memories to {path}")
    return 0


async def import_jsonl(client: MemorySystemClient, path: Path) -> int:
    """Import a JSONL export or spill file (its unwritten facts go to the graph, after the
    memories). Each line is checked like `store` checks its items; bad lines are reported with
    their line numbers and skipped (exit status 1), the others imported. A file without any
    valid line is refused (exit status 2). The count printed is of distinct memories: a line
    repeating an id replaces the earlier one."""
    from tqdm import tqdm

    try:
        with path.open("rb") as fh:
            total = sum(1 for _ in fh)
    except OSError as exc:
        raise MemoryInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    from DeepResearch.src.memory.facts.graph import FactGraph, FactSpec

    graph = FactGraph(client)
    batch: list[MemoryRecord] = []
    facts: list[FactSpec] = []  # a spill file's unwritten facts: written after the memories
    imported: set[str] = set()  # ids written (a repeated id is one memory)
    bad: list[str] = []
    dimension = client.embedder.dimension
    # the bar shows on a terminal only (disable=None): a log or a pipe gets the report alone
    with path.open("rb") as fh, tqdm(total=total, unit="mem", desc="import", file=sys.stderr,
                                     disable=None) as bar:
        for lineno, raw in enumerate(fh, start=1):
            bar.update(1)
            record = _parse_line(raw, f"{path}:{lineno}", graph, dimension, bad)
            if record is None:
                continue
            if isinstance(record, FactSpec):
                facts.append(record)
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
    if facts:
        try:
            await graph.write(facts)
        except MemoryBackendError as exc:
            raise MemoryBackendError(
                f"import wrote {written} memories but not the {len(facts)} facts: "
                f"{failure_cause(exc)}; running it again is safe (a fact sent again adds "
                "nothing)") from exc
    for problem in bad[:SHOWN_BAD_LINES]:
        print(f"deepresearch-memory: skipped {problem}", file=sys.stderr)
    if len(bad) > SHOWN_BAD_LINES:
        print(f"deepresearch-memory: ... and {len(bad) - SHOWN_BAD_LINES} more bad lines",
              file=sys.stderr)
    if bad and not written and not facts:
        raise MemoryInputError(f"{path}: none of its {len(bad)} lines is a valid memory; "
                               "nothing imported (expected the JSON lines of an export)")
    skipped = f", skipped {len(bad)} bad lines" if bad else ""
    and_facts = f" and {len(facts)} facts" if facts else ""
    print(f"imported {written} memories{and_facts} from {path}{skipped}")
    return 1 if bad else 0


def _parse_line(
    raw: bytes, where: str, graph: FactGraph, dimension: int, bad: list[str]
) -> MemoryRecord | FactSpec | None:
    """The record (or, for a spill file's unwritten fact, the fact) of one line, or None for a
    blank line or a bad one (added to `bad`)."""
    try:
        text = raw.decode("utf-8")
        if not text.strip():
            return None
        data = json.loads(text)
        if isinstance(data, dict) and data.get("kind") == UNWRITTEN_FACT:
            return _fact_line(data, where, graph)
        return record_from_json(data, where, graph.client.config, dimension)
    except UnicodeDecodeError as exc:
        bad.append(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})")
    except json.JSONDecodeError as exc:
        bad.append(f"{where}: not a JSON line ({exc.msg} at column {exc.colno})")
    except MemoryInputError as exc:
        bad.append(str(exc))
    return None


def _fact_line(data: dict[str, Any], where: str, graph: FactGraph) -> FactSpec:
    fact = {k: v for k, v in data.items() if k not in ("kind", "namespace")}
    namespace = data.get("namespace")
    if namespace != graph.namespace:
        raise MemoryInputError(
            f"{where}: namespace {namespace!r} is not the configured memory.namespace="
            f"{graph.namespace!r}; import this file with memory.namespace={namespace}")
    try:
        return graph.spec(fact)
    except MemoryInputError as exc:
        raise MemoryInputError(f"{where}: {exc}") from None


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
