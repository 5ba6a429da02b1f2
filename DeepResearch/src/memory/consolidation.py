"""Consolidation and pruning of one namespace's live memories: what to merge and what to
archive, decided over the stored records, then applied through the client.

Consolidation. Memories of one memory type (and one session, when asked) merge when the
cosine of their stored vectors is at least `memory.consolidation.similarity` AND their
lexical signatures are equal: the numbers, dates and ids they contain, their capitalised
names, their outcome words (failed, succeeded, not, ...) and their `success` / `status`
metadata. "sample S1 failed" and "sample S2 failed" never merge, however close their vectors.
Each cluster (a connected component of such pairs) becomes ONE memory: the most complete
member (the longest), followed by every sentence of the others that adds a word (a mere
rewording adds none); the representative's vector, metadata, session and place in its
session's FOLLOWS chain (the memory after the representative follows it); its members' other
relations (and the live memories that referred to a source refer to it); `derived_from` =
the source ids, importance = the highest, the access counts summed, the time span in
`first_created_at` / `last_created_at`, created_at = the newest source's. The sources get a
`part_of` relation to it and are archived (reason "consolidated"). Because the new memory
has its representative's vector and the sources' signature, a second run finds nothing new
to merge.

Pruning. A memory's value (config_consolidation.PruningConfig) weighs its importance,
recency, access count and whether anything links to it; those below
`memory.pruning.min_value` are archived (reason "pruned").

Neither ever touches a pinned memory (`metadata.pinned is True`), a memory younger than the
grace period, the sentence memory of a fact, or the evidence of a current fact.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from DeepResearch.src.memory.backends.record import FOLLOWS, MemoryFilter, MemoryRecord
from DeepResearch.src.memory.compression import full_content
from DeepResearch.src.memory.config_consolidation import ConsolidationConfig, PruningConfig
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.facts.model import FACT_MEMORY_TYPE, FactQuery
from DeepResearch.src.memory.facts.store import fact_is_current
from DeepResearch.src.memory.health import record_consolidation
from DeepResearch.src.memory.text import STOP_WORDS, tokenize

if TYPE_CHECKING:
    from DeepResearch.src.memory.client import MemorySystemClient

log = logging.getLogger("DeepResearch.memory")
PART_OF = "part_of"  # RelationType.PART_OF: a source is part of its consolidated memory
CONSOLIDATED = "consolidated"  # archive reasons
PRUNED = "pruned"
# what a consolidated memory's metadata says of its sources
CONSOLIDATION_KEYS = ("derived_from", "consolidated_at", "first_created_at", "last_created_at",
                      "access_count", "last_accessed")
PAGE = 1000  # ids per access-statistics read, records per archive call
READ_PAGE = 10_000  # records per scan: an offset scan re-reads what it skips
# outcome words: two memories that differ in one of these say different things
_POLARITY = frozenset(
    "no not never none nothing cannot can't won't don't doesn't didn't isn't wasn't "
    "fail failed fails failing failure error errors succeeded succeeds success successful "
    "passed pass true false".split()
)
_OUTCOME_KEYS = ("success", "status")
_TOKEN = re.compile(r"[^\W_](?:[\w.:/@'-]*[^\W_])?", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")

Progress = Callable[[str, int, int], None]  # (stage, done, total)


# -- the lexical guard ------------------------------------------------------------------------
def signature(text: str) -> frozenset[str]:
    """What two memories must share to merge: tokens with a digit (numbers, dates, times,
    versions, ids such as S1 or run_42), capitalised words that are not common words (names,
    tools, acronyms) and outcome words, case-folded."""
    keys: set[str] = set()
    for token in _TOKEN.findall(text):
        folded = token.casefold()
        if any(c.isdigit() for c in token):
            keys.add(folded)
        elif token[0].isupper() and folded not in STOP_WORDS:
            keys.add(folded)
        elif folded in _POLARITY:
            keys.add(folded)
    return frozenset(keys)


def outcome(record: MemoryRecord) -> tuple[str, ...]:
    """The record's outcome metadata, as a comparable key."""
    return tuple(json.dumps(record.metadata.get(k), sort_keys=True) for k in _OUTCOME_KEYS)


def text_of(record: MemoryRecord) -> str:
    return full_content(record.content, record.content_codec, record.content_blob)


# -- merging text -----------------------------------------------------------------------------
def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def _words(text: str) -> set[str]:
    """Content words and the signature's keys (negations and outcome words included)."""
    return set(tokenize(text)) | signature(text)


def merged_text(texts: Sequence[str], max_bytes: int | None = None) -> str:
    """The first text, then each sentence of the others that says something it (or a
    sentence already added) does not: a sentence whose content words (text.tokenize: stemmed,
    stop words dropped) and signature keys are all there already is a rewording and is left
    out. The additions stop before `max_bytes`."""
    out = texts[0].rstrip()
    seen = _words(out)
    for text in texts[1:]:
        for sentence in sentences(text):
            words = _words(sentence)
            if words <= seen:
                continue
            candidate = f"{out}\n{sentence}" if out else sentence
            if max_bytes is not None and len(candidate.encode("utf-8")) > max_bytes:
                return out
            out = candidate
            seen |= words
    return out


# -- eligibility ------------------------------------------------------------------------------
def is_pinned(record: MemoryRecord) -> bool:
    return record.metadata.get("pinned") is True


@dataclass(frozen=True, slots=True)
class Protected:
    """Ids no consolidation or pruning touches: current facts' sentence memories and
    evidence (`current`), and what any fact, past ones included, names (`linked`)."""

    current: frozenset[str] = frozenset()
    linked: frozenset[str] = frozenset()

    def guards(self, record: MemoryRecord) -> bool:
        message_id = record.metadata.get("message_id")
        return record.id in self.current or (
            isinstance(message_id, str) and message_id in self.current)


def skip_reason(record: MemoryRecord, now: float, grace_hours: float,
                protected: Protected) -> str | None:
    """Why `record` may be neither merged nor pruned (None: it may)."""
    if is_pinned(record):
        return "pinned"
    if record.created_at > now - grace_hours * 3600.0:
        return "young"
    if record.memory_type == FACT_MEMORY_TYPE:
        return "fact"
    if protected.guards(record):
        return "fact evidence"
    return None


# -- clustering -------------------------------------------------------------------------------
def clusters(records: Sequence[MemoryRecord], vectors: np.ndarray, similarity: float,
             by_session: bool = False, block_rows: int = 1024,
             progress: Progress | None = None) -> list[list[int]]:
    """Indexes of `records` (rows of `vectors`, L2-normalised) that merge, each cluster of at
    least two, sorted: records group by memory type (and session), signature and outcome;
    within a group, pairs with cosine >= `similarity` connect (blocked matrix products)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, r in enumerate(records):
        key = (r.memory_type, r.session_id if by_session else None,
               signature(text_of(r)), outcome(r))
        groups.setdefault(key, []).append(i)
    multi = [g for g in groups.values() if len(g) > 1]
    found: list[list[int]] = []
    for done, members in enumerate(multi, 1):
        idx = np.asarray(members)
        block = vectors[idx]
        rows_list, cols_list = [], []
        for start in range(0, len(idx), block_rows):
            sims = block[start:start + block_rows] @ block.T
            r, c = np.nonzero(sims >= similarity)
            keep = c > r + start
            rows_list.append(r[keep] + start)
            cols_list.append(c[keep])
        rows, cols = np.concatenate(rows_list), np.concatenate(cols_list)
        if rows.size:
            graph = coo_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)),
                               shape=(len(idx), len(idx)))
            n, labels = connected_components(graph, directed=False)
            sizes = np.bincount(labels, minlength=n)
            for label in np.nonzero(sizes > 1)[0]:
                found.append(sorted(idx[labels == label].tolist()))
        if progress is not None and (done % 100 == 0 or done == len(multi)):
            progress("comparing", done, len(multi))
    found.sort()
    return found


# -- the consolidated memory ------------------------------------------------------------------
def consolidated_id(source_ids: Iterable[str]) -> str:
    """The same sources always give the same id: a retried run replaces, never duplicates."""
    digest = hashlib.sha256("\n".join(sorted(source_ids)).encode()).hexdigest()
    return f"consolidated-{digest[:24]}"


def representative(members: Sequence[MemoryRecord]) -> MemoryRecord:
    """The most complete member: the longest text, then the newest, then the smallest id."""
    return min(members, key=lambda r: (-len(text_of(r)), -r.created_at, r.id))


@dataclass(frozen=True, slots=True)
class Access:
    count: int = 0
    last: float | None = None


def inherited_access(record: MemoryRecord, stats: Access) -> Access:
    """The record's own access statistics plus, for a consolidated memory, its sources'
    (its metadata `access_count` / `last_accessed`)."""
    consolidated = "derived_from" in record.metadata
    extra = record.metadata.get("access_count") if consolidated else None
    last = record.metadata.get("last_accessed") if consolidated else None
    count = stats.count + (extra if isinstance(extra, int) and not isinstance(extra, bool) else 0)
    lasts = [t for t in (stats.last, last) if isinstance(t, int | float) and not isinstance(t, bool)]
    return Access(count, max(lasts) if lasts else None)


@dataclass(frozen=True, slots=True)
class Redirect:
    """Where relations to merged memories point after a run: to their replacement; FOLLOWS
    only to a representative (its replacement takes its place in its session's chain; the
    chain of another source keeps its gap, closed again if that source is restored)."""

    ids: dict[str, str] = field(default_factory=dict)  # source id -> consolidated id
    representatives: frozenset[str] = frozenset()

    @classmethod
    def of(cls, groups: Sequence[Sequence[MemoryRecord]]) -> Redirect:
        ids: dict[str, str] = {}
        for g in groups:
            new_id = consolidated_id(m.id for m in g)
            ids.update((m.id, new_id) for m in g)
        return cls(ids, frozenset(representative(g).id for g in groups))

    def target(self, kind: str, target: str) -> str:
        if kind == FOLLOWS and target not in self.representatives:
            return target
        return self.ids.get(target, target)


def _json_size(data: Any) -> int:
    return len(json.dumps(data).encode("utf-8"))  # as inputs.clean_metadata measures it


def fit_metadata(metadata: dict[str, Any], max_bytes: int) -> dict[str, Any]:
    """`metadata` within `max_bytes` of JSON: when the source ids do not all fit,
    `derived_from` keeps as many as fit (the first, sorted) and `derived_from_count` says how
    many there are (every source names its replacement by its part_of relation all the same);
    when even that is too large, the representative's own keys are left out."""
    if _json_size(metadata) <= max_bytes:
        return metadata
    ids: list[str] = metadata["derived_from"]
    base = {**metadata, "derived_from": [], "derived_from_count": len(ids)}
    if _json_size(base) > max_bytes:
        base = {k: base[k] for k in (*CONSOLIDATION_KEYS, "derived_from_count") if k in base}
    low, high = 0, len(ids)  # the most ids that fit: binary search
    while low < high:
        mid = (low + high + 1) // 2
        if _json_size({**base, "derived_from": ids[:mid]}) <= max_bytes:
            low = mid
        else:
            high = mid - 1
    return {**base, "derived_from": ids[:low]}


def merge_item(members: Sequence[MemoryRecord], access: dict[str, Access], now: float,
               max_content_bytes: int, redirect: Redirect | None = None,
               max_metadata_bytes: int = 65_536) -> dict[str, Any]:
    """The `store_many` item of the memory that replaces `members` (see the module doc).
    It keeps its members' relations to memories outside the cluster (`redirect`: a target
    merged elsewhere in the same run) and takes its representative's place in its session's
    FOLLOWS chain."""
    rep = representative(members)
    ordered = [rep, *sorted((m for m in members if m is not rep), key=lambda r: (r.created_at, r.id))]
    ids = [m.id for m in ordered]
    new_id = consolidated_id(ids)
    redirect = redirect or Redirect()
    relations: dict[tuple[str, str], None] = {}
    for m in ordered:
        for kind, target in m.relations:
            target = redirect.target(kind, target)
            if target != new_id and target not in ids and (kind != FOLLOWS or m is rep):
                relations[(kind, target)] = None
    got = [inherited_access(m, access.get(m.id, Access())) for m in members]
    lasts = [a.last for a in got if a.last is not None]
    metadata = {k: v for k, v in rep.metadata.items()
                if k not in (*CONSOLIDATION_KEYS, "derived_from_count", "pinned")}
    metadata.update({
        "derived_from": sorted(ids),
        "consolidated_at": now,
        "first_created_at": min(m.created_at for m in members),
        "last_created_at": max(m.created_at for m in members),
        "access_count": sum(a.count for a in got),
    })
    if lasts:
        metadata["last_accessed"] = max(lasts)
    expiries = [m.expires_at for m in members]
    item: dict[str, Any] = {
        "id": new_id,
        "content": merged_text([text_of(m) for m in ordered], max_content_bytes),
        "metadata": fit_metadata(metadata, max_metadata_bytes),
        "memory_type": rep.memory_type,
        "agent_type": rep.agent_type,
        "importance": max(m.importance for m in members),
        "temporal_weight": max(m.temporal_weight for m in members),
        "relations": list(relations),
        "vector": rep.vector,
        "created_at": max(m.created_at for m in members),
        "session_id": rep.session_id,
    }
    if rep.event_at is not None:
        item["event_at"] = rep.event_at
    last_expiry = max((e for e in expiries if e is not None), default=None)
    if None not in expiries and last_expiry is not None and last_expiry > item["created_at"]:
        item["ttl"] = last_expiry - item["created_at"]  # expires when the last source would
    return item


# -- pruning ----------------------------------------------------------------------------------
def value(record: MemoryRecord, access: Access, linked: bool, now: float,
          cfg: PruningConfig) -> float:
    """The memory's value in [0, 1] (see PruningConfig)."""
    last_use = max(record.created_at, access.last or 0.0)
    age_days = max(0.0, now - last_use) / 86_400.0
    recency = 0.5 ** (age_days / cfg.half_life_days)
    used = min(1.0, math.log1p(access.count) / math.log1p(cfg.access_saturation))
    w = cfg.weights
    total = w.importance + w.recency + w.access + w.links
    score = (w.importance * record.importance + w.recency * recency + w.access * used
             + w.links * (1.0 if linked else 0.0))
    return min(1.0, max(0.0, score / total))


# -- the report -------------------------------------------------------------------------------
def record_bytes(record: MemoryRecord) -> int:
    """What a memory occupies: its text, its metadata as JSON, its vector."""
    size = len(text_of(record).encode("utf-8"))
    size += len(json.dumps(record.metadata, ensure_ascii=False).encode("utf-8"))
    return size + (record.vector.nbytes if record.vector is not None else 0)


def _preview(text: str, width: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


@dataclass
class ClusterReport:
    id: str  # the consolidated memory's
    memory_type: str
    sources: list[str]
    content: str  # a preview


@dataclass
class PrunedReport:
    id: str
    memory_type: str
    value: float
    content: str  # a preview


@dataclass
class ConsolidationReport:
    namespace: str
    session: str | None
    dry_run: bool
    memories_before: int = 0
    memories_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    clusters: list[ClusterReport] = field(default_factory=list)
    consolidated: int = 0  # sources archived (or that would be)
    pruned: list[PrunedReport] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> memories left alone
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        merge, prune = ("would merge", "would be") if self.dry_run else ("merged", "were")
        where = self.namespace + (f", session {self.session}" if self.session else "")
        lines = [
            f"consolidation of {where}{' (dry run: nothing changed)' if self.dry_run else ''}:",
            f"  clusters: {len(self.clusters)} ({self.consolidated} memories {merge} into "
            f"{len(self.clusters)})",
            f"  pruned: {len(self.pruned)} memories {prune} archived as low-value",
            f"  live memories {self.memories_before} -> {self.memories_after}, bytes "
            f"{self.bytes_before} -> {self.bytes_after}",
        ]
        if self.skipped:
            left = ", ".join(f"{n} {reason}" for reason, n in sorted(self.skipped.items()))
            lines.append(f"  left alone: {left}")
        for c in self.clusters[:20]:
            lines.append(f"  + {c.id} <- {len(c.sources)} {c.memory_type}: {c.content}")
        if len(self.clusters) > 20:
            lines.append(f"  ... {len(self.clusters) - 20} more clusters (--json lists all)")
        for p in self.pruned[:20]:
            lines.append(f"  - {p.id} (value {p.value:.3f}, {p.memory_type}): {p.content}")
        if len(self.pruned) > 20:
            lines.append(f"  ... {len(self.pruned) - 20} more pruned (--json lists all)")
        lines.append(f"  {self.seconds:.2f} s")
        return "\n".join(lines)


# -- reading and applying ---------------------------------------------------------------------
async def live_records(client: MemorySystemClient, session: str | None, now: float,
                       progress: Progress | None = None) -> list[MemoryRecord]:
    """The namespace's live (not expired) memories, of one session if given, with their
    vectors, read in pages."""
    flt = MemoryFilter(namespaces=(client.namespace,), live_at=now,
                       session_ids=None if session is None else (session,))
    total = await client.backend.count(flt)
    out: list[MemoryRecord] = []
    while True:
        batch = await client.backend.scan(flt, limit=READ_PAGE, offset=len(out))
        out += batch
        if progress is not None:
            progress("reading", len(out), total)
        if len(batch) < READ_PAGE:
            break
    missing = [r.id for r in out if r.vector is None]
    if missing:  # a backend whose scan leaves vectors out
        vectors: dict[str, Any] = {}
        for start in range(0, len(missing), PAGE):
            for r in await client.backend.get(missing[start:start + PAGE], client.namespace):
                vectors[r.id] = r.vector
        out = [r if r.vector is not None else replace(r, vector=vectors.get(r.id)) for r in out]
    return out


async def _protected(client: MemorySystemClient, now: float) -> Protected:
    """What the namespace's facts name (none on a backend without a fact store)."""
    try:
        store = client.backend.fact_store()
    except MemoryBackendError:
        return Protected()
    facts = await store.find_facts(FactQuery(namespace=client.namespace, include_history=True,
                                             limit=2**31 - 1))
    current: set[str] = set()
    linked: set[str] = set()
    for fact in facts:
        named = {fact.id, *fact.evidence}
        linked |= named
        if fact_is_current(fact, now):
            current |= named
    return Protected(frozenset(current), frozenset(linked))


async def _access(client: MemorySystemClient, ids: Sequence[str]) -> dict[str, Access]:
    out: dict[str, Access] = {}
    for start in range(0, len(ids), PAGE):
        stats = await client.access_stats(list(ids[start:start + PAGE]))
        for record_id, s in stats.items():
            out[record_id] = Access(int(s.count), s.last_accessed)
    return out


async def consolidate(
    client: MemorySystemClient, *, session: str | None = None, dry_run: bool = False,
    prune: bool = False, now: float | None = None, progress: Progress | None = None,
) -> ConsolidationReport:
    """Consolidate (and with `prune`, prune) the live memories of the client's namespace
    (of one `session` if given); with `dry_run` decide and report only. The rules: the module
    doc; settings: memory.consolidation, memory.pruning."""
    started = time.perf_counter()
    ccfg: ConsolidationConfig = client.config.consolidation
    pcfg: PruningConfig = client.config.pruning
    if prune and pcfg.min_value is None:
        raise MemoryInputError("pruning needs memory.pruning.min_value (a value in [0, 1], "
                               "e.g. memory.pruning.min_value=0.2); it is null (pruning off)")
    now = time.time() if now is None else now
    await client.open()
    if not client.available:
        raise MemoryBackendError(f"memory backend unavailable: {client.writes.cause()}")
    await client.flush()
    report = ConsolidationReport(client.namespace, session, dry_run)
    records = await live_records(client, session, now, progress)
    protected = await _protected(client, now)
    report.memories_before = len(records)
    report.bytes_before = sum(record_bytes(r) for r in records)

    eligible: list[MemoryRecord] = []
    for r in records:
        reason = skip_reason(r, now, ccfg.grace_hours, protected)
        if reason is None and r.vector is not None:
            eligible.append(r)
        elif reason is not None:
            report.skipped[reason] = report.skipped.get(reason, 0) + 1
    vectors = (np.stack([np.asarray(r.vector, dtype=np.float32) for r in eligible])
               if eligible else np.zeros((0, 1), dtype=np.float32))
    found = await asyncio.to_thread(  # CPU work off the event loop (the service's requests)
        clusters, eligible, vectors, ccfg.similarity, session is not None, ccfg.block_rows,
        progress)
    groups = [[eligible[i] for i in c] for c in found]
    merged_ids = [m.id for g in groups for m in g]
    access = await _access(client, merged_ids) if groups else {}
    redirect = Redirect.of(groups)
    items = [merge_item(g, access, now, client.config.max_content_bytes, redirect,
                        client.config.max_metadata_bytes) for g in groups]

    pruned: list[tuple[MemoryRecord, float]] = []
    if prune:
        assert pcfg.min_value is not None
        gone = set(merged_ids)
        linked = set(protected.linked)
        for r in records:
            linked.update(t for kind, t in r.relations if kind != FOLLOWS and t != r.id)
        candidates = [r for r in records if r.id not in gone
                      and skip_reason(r, now, pcfg.grace_hours, protected) is None]
        stats = await _access(client, [r.id for r in candidates]) if candidates else {}
        for r in candidates:
            v = value(r, inherited_access(r, stats.get(r.id, Access())), r.id in linked, now, pcfg)
            if v < pcfg.min_value:
                pruned.append((r, v))

    new_records = [_as_record(client, item, i) for i, item in enumerate(items)]
    removed = set(merged_ids) | {r.id for r, _ in pruned}
    kept = [r for r in records if r.id not in removed]
    report.memories_after = len(kept) + len(new_records)
    report.bytes_after = sum(record_bytes(r) for r in kept) + sum(
        record_bytes(r) for r in new_records)
    report.clusters = [ClusterReport(item["id"], item["memory_type"], sorted(m.id for m in g),
                                     _preview(item["content"])) for item, g in zip(items, groups, strict=True)]
    report.consolidated = len(merged_ids)
    report.pruned = [PrunedReport(r.id, r.memory_type, round(v, 4), _preview(text_of(r)))
                     for r, v in pruned]
    if not dry_run:
        relinked = relink(kept, redirect)
        await _apply(client, new_records, groups, relinked, [r.id for r, _ in pruned], progress)
        # health's consolidation lag: a run that failed above records nothing; a marker that
        # cannot be written (the store locked, or gone) does not undo a consolidation that is done
        try:
            await record_consolidation(client.backend, client.namespace, time.time())
        except MemoryBackendError as exc:
            log.warning("memory: consolidation done, but its end not recorded for health: %s", exc)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def relink(records: Sequence[MemoryRecord], redirect: Redirect) -> list[MemoryRecord]:
    """The records with a relation to a merged memory, pointing to its replacement instead
    (`Redirect`: the memory after a representative follows its replacement)."""
    out = []
    for r in records:
        if any(redirect.target(k, t) != t for k, t in r.relations):
            moved = dict.fromkeys((k, redirect.target(k, t)) for k, t in r.relations)
            out.append(replace(r, relations=[(k, t) for k, t in moved if t != r.id]))
    return out


def _as_record(client: MemorySystemClient, item: dict[str, Any], index: int) -> MemoryRecord:
    from DeepResearch.src.memory.inputs import prepare_record

    return prepare_record(item, client.config, item["session_id"], index, client.namespace,
                          client.embedder.dimension)


async def _apply(client: MemorySystemClient, new_records: list[MemoryRecord],
                 groups: list[list[MemoryRecord]], relinked: list[MemoryRecord],
                 pruned: list[str], progress: Progress | None) -> None:
    """Write each consolidated memory first (nothing is lost if the run stops), then give its
    sources their part_of relation and archive them; then point the relations of the live
    memories that named a source to its replacement; then archive the pruned."""
    step = 200
    for start in range(0, len(new_records), step):
        chunk = new_records[start:start + step]
        await client.import_records(chunk)
        sources = [replace(m, relations=[*m.relations, (PART_OF, new.id)])
                   for new, g in zip(chunk, groups[start:start + step], strict=True) for m in g]
        await client.backend.upsert(sources)
        await client.archive([m.id for m in sources], reason=CONSOLIDATED)
        if progress is not None:
            progress("writing", start + len(chunk), len(new_records))
    for start in range(0, len(relinked), PAGE):
        chunk = relinked[start:start + PAGE]
        await client.backend.upsert(chunk)
        client.hot.changed(r.id for r in chunk)  # written past the client: its hot tier
    for start in range(0, len(pruned), PAGE):
        await client.archive(pruned[start:start + PAGE], reason=PRUNED)
