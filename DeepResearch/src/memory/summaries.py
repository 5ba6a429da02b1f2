"""Per-entity summaries: observation memories that gather what one person (or agent, tool,
topic: whatever a metadata key names) said or did on one subject, each linking to its
evidence.

`summarize(client, session=None)` reads the live memories of the client's namespace (of one
session if given) whose metadata `memory.summaries.entity_key` (default "author_name", what
`graph.ingest` writes on each message) names an entity, and for each (session, entity) with at
least `min_memories` of them:
- groups them by topic: bisecting 2-means over their stored vectors until no group holds
  more than `group_size` (the same memories always give the same groups);
- writes ONE observation memory per group of two or more: memory_type "observation", content
  "<entity>: " then the texts of the `sentences` members nearest the group's centre (up to
  `max_chars`; lines that already start with "<entity>:" keep it instead), its own embedding as vector, in the entity's session, a REFERENCES relation to
  every member and metadata {"observation_of": entity, "evidence": [member ids]}.
Observations written by an earlier run for the same scope are replaced (deleted first), and
no observation is summarised again. The retrieval side is ranking/observations.py
(`memory.retrieval.observations`, off by default): observations among the best candidates
bring their evidence in.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from DeepResearch.src.memory.backends.record import MemoryRecord
from DeepResearch.src.memory.compression import full_content
from DeepResearch.src.memory.config_consolidation import OBSERVATION
from DeepResearch.src.memory.consolidation import live_records
from DeepResearch.src.memory.errors import MemoryBackendError

if TYPE_CHECKING:
    from DeepResearch.src.memory.client import MemorySystemClient
    from DeepResearch.src.memory.config_consolidation import SummariesConfig

PAGE = 1000
ITERATIONS = 12  # 2-means rounds per split (assignments settle well before)


@dataclass
class SummaryReport:
    namespace: str
    session: str | None
    entities: int = 0  # (session, entity) pairs summarised
    observations: int = 0  # written
    replaced: int = 0  # observations of an earlier run deleted
    memories: int = 0  # memories grouped
    seconds: float = 0.0
    examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def summary(self) -> str:
        lines = [f"summaries of namespace {self.namespace!r}"
                 + (f", session {self.session!r}" if self.session else "") + ":",
                 f"  {self.entities} entities, {self.memories} memories -> "
                 f"{self.observations} observations ({self.replaced} replaced), "
                 f"{self.seconds:.2f} s"]
        lines += [f"  e.g. {e}" for e in self.examples]
        return "\n".join(lines)


def topic_groups(vectors: np.ndarray, group_size: int) -> list[list[int]]:
    """Row indexes of `vectors` (unit length) grouped by topic: bisecting 2-means, a group
    of more than `group_size` split in two (seeded by the sign of its first principal
    component; at the median when a side would hold fewer than two) until none is larger;
    deterministic. Each group sorted by cosine to its centre, nearest first."""
    out: list[list[int]] = []
    todo = [np.arange(len(vectors))]
    while todo:
        idx = todo.pop()
        if len(idx) <= group_size:
            centre = _unit(vectors[idx].mean(axis=0))
            out.append(idx[np.argsort(-(vectors[idx] @ centre), kind="stable")].tolist())
            continue
        todo += _bisect(vectors, idx)
    return sorted(out, key=lambda g: g[0])


def _bisect(vectors: np.ndarray, idx: np.ndarray) -> list[np.ndarray]:
    rows = vectors[idx]
    centred = rows - rows.mean(axis=0)
    direction = np.linalg.svd(centred, full_matrices=False)[2][0]
    side = centred @ direction > 0
    for _ in range(ITERATIONS):  # 2-means from that split
        if side.all() or not side.any():
            break
        a, b = _unit(rows[side].mean(axis=0)), _unit(rows[~side].mean(axis=0))
        new = rows @ a > rows @ b
        if np.array_equal(new, side):
            break
        side = new
    if min(int(side.sum()), int((~side).sum())) < 2:  # a lopsided split: halve at the median
        order = np.argsort(centred @ direction, kind="stable")
        side = np.zeros(len(idx), dtype=bool)
        side[order[len(idx) // 2:]] = True
    return [idx[~side], idx[side]]


def _unit(v: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def observation_text(entity: str, texts: Sequence[str], sentences: int, max_chars: int) -> str:
    """The first `sentences` texts (nearest the centre first), each once, joined by " | ",
    after "<entity>: " unless they already start with it (transcript lines "<entity>: ..."
    keep the name on each line), cut to `max_chars`."""
    kept: list[str] = []
    for text in texts:
        text = " ".join(text.split())
        if text and text not in kept:
            kept.append(text)
        if len(kept) == sentences:
            break
    named = all(t.startswith(f"{entity}:") for t in kept)
    return (" | ".join(kept) if named else f"{entity}: {' | '.join(kept)}")[:max_chars]


def observation_id(session: str, entity: str, member_ids: Sequence[str]) -> str:
    digest = hashlib.sha256("\x1e".join([session, entity, *sorted(member_ids)]).encode())
    return f"obs-{digest.hexdigest()[:24]}"


def plan(records: Sequence[MemoryRecord], cfg: SummariesConfig) -> list[dict[str, Any]]:
    """The observation items (without vectors) for `records`: see the module doc."""
    by_entity: dict[tuple[str, str], list[MemoryRecord]] = defaultdict(list)
    for r in records:
        entity = r.metadata.get(cfg.entity_key)
        if r.memory_type != OBSERVATION and r.vector is not None and isinstance(entity, str) \
                and entity.strip():
            by_entity[(r.session_id, entity.strip())].append(r)
    items: list[dict[str, Any]] = []
    for (session, entity), members in sorted(by_entity.items()):
        if len(members) < cfg.min_memories:
            continue
        vectors = np.stack([np.asarray(m.vector, dtype=np.float32) for m in members])
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        for group in topic_groups(vectors, cfg.group_size):
            if len(group) < 2:
                continue
            chosen = [members[i] for i in group]
            ids = [m.id for m in chosen]
            items.append({
                "id": observation_id(session, entity, ids),
                "session_id": session,
                "memory_type": OBSERVATION,
                "content": observation_text(
                    entity, [full_content(m.content, m.content_codec, m.content_blob)
                             for m in chosen], cfg.sentences, cfg.max_chars),
                "metadata": {"observation_of": entity, "evidence": ids},
                "relations": [("references", i) for i in ids],
                "importance": max(m.importance for m in chosen),
                "created_at": max(m.created_at for m in chosen),
            })
    return items


async def summarize(client: MemorySystemClient, *, session: str | None = None,
                    dry_run: bool = False, now: float | None = None) -> SummaryReport:
    """Write the observations of the client's namespace (of one `session` if given),
    replacing those of an earlier run; with `dry_run` decide and report only."""
    from DeepResearch.src.memory.inputs import prepare_record

    started = time.perf_counter()
    now = time.time() if now is None else now
    await client.open()
    if not client.available:
        raise MemoryBackendError(f"memory backend unavailable: {client.writes.cause()}")
    await client.flush()
    records = await live_records(client, session, now)
    old = [r.id for r in records if r.memory_type == OBSERVATION]
    items = plan(records, client.config.summaries)
    report = SummaryReport(client.namespace, session, replaced=len(old),
                           observations=len(items))
    report.entities = len({(i["session_id"], i["metadata"]["observation_of"]) for i in items})
    report.memories = sum(len(i["metadata"]["evidence"]) for i in items)
    report.examples = [i["content"][:120] for i in items[:3]]
    if not dry_run:
        if old:
            await client.forget(old, confirm=True)
        vectors = (await asyncio.to_thread(client.embedder.embed, [i["content"] for i in items])
                   if items else [])
        new = []
        for n, (item, vector) in enumerate(zip(items, vectors, strict=True)):
            item["vector"] = vector
            new.append(prepare_record(item, client.config, item["session_id"], n,
                                      client.namespace, client.embedder.dimension))
        for start in range(0, len(new), PAGE):
            await client.import_records(new[start:start + PAGE])
    report.seconds = round(time.perf_counter() - started, 3)
    return report
