"""The detail of a health report (`deepresearch-memory health`, the service's
`/health?detail=true`): each tier reachable, the vector index against the records, growth,
the outbox, consolidation lag. Written once for the client and the service.

Consolidation records each finished run with `record_consolidation(backend, namespace, at)`:
the store marker CONSOLIDATION_MARKER of the namespace (MemoryBackend.set_marker), kept in the
store itself, so every machine using the store reports the same lag; `last_consolidation`
reads it (None: never ran).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from DeepResearch.src.memory.backends.base import MemoryBackend, MemoryFilter
from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.errors import MemoryBackendError
from DeepResearch.src.memory.facts.model import FactQuery
from DeepResearch.src.memory.writes import WriteQueue, spill_files

CONSOLIDATION_MARKER = "consolidation_finished_at"
# Where runs were recorded before the store kept them: read (never written) for a namespace
# whose store has no marker yet, so an upgraded store does not report "never".
CONSOLIDATION_FILE = "consolidation.json"
HOUR, DAY = 3600.0, 86400.0


# -- consolidation runs ------------------------------------------------------------------
async def record_consolidation(backend: MemoryBackend, namespace: str, finished_at: float) -> None:
    """Note in the store that a consolidation run of `namespace` ended at `finished_at`
    (epoch seconds)."""
    await backend.set_marker(namespace, CONSOLIDATION_MARKER, float(finished_at))


def _file_run(config: MemoryConfig, namespace: str) -> float | None:
    try:
        runs = json.loads((Path(config.faiss.path) / CONSOLIDATION_FILE).read_text("utf-8"))
        when = runs[namespace]["finished_at"]
    except (OSError, ValueError, LookupError, TypeError):
        return None
    return float(when) if isinstance(when, int | float) else None


async def last_consolidation(backend: MemoryBackend, config: MemoryConfig,
                             namespace: str) -> float | None:
    """When the last consolidation run of `namespace` ended (epoch seconds); None: never."""
    found = await backend.get_marker(namespace, CONSOLIDATION_MARKER)
    return found if found is not None else _file_run(config, namespace)


async def consolidation_lag(backend: MemoryBackend, config: MemoryConfig,
                            namespaces: Iterable[str], now: float) -> dict[str, Any]:
    """The oldest last run among `namespaces` and how long ago it ended (None / "never" when
    one of them never ran)."""
    runs = [await last_consolidation(backend, config, ns) for ns in namespaces]
    if not runs or any(r is None for r in runs):
        return {"last_run": None, "lag_seconds": None, "state": "never"}
    oldest = min(r for r in runs if r is not None)
    return {"last_run": datetime.fromtimestamp(oldest, UTC).isoformat(),
            "lag_seconds": round(max(0.0, now - oldest), 1), "state": "ran"}


# -- the parts ---------------------------------------------------------------------------
async def warm_tier(backend: MemoryBackend) -> dict[str, Any]:
    try:
        found = await backend.health()
    except MemoryBackendError as exc:
        return {"reachable": False, "backend": backend.name, "detail": str(exc)}
    return {"reachable": found.ok, "backend": found.backend, "detail": found.detail}


async def graph_tier(backend: MemoryBackend, namespace: str) -> dict[str, Any]:
    """The fact store answers a read (one fact of `namespace`)."""
    try:
        store = backend.fact_store()
        await store.find_facts(FactQuery(namespace, include_history=True, limit=1))
    except MemoryBackendError as exc:
        return {"reachable": False, "detail": str(exc)}
    return {"reachable": True, "detail": "the fact store answers"}


def hot_tier(counters: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The hot tiers' figures, summed (one per client)."""
    tiers = list(counters)
    hits = sum(t["hot_hits"] for t in tiers)
    misses = sum(t["hot_misses"] for t in tiers)
    return {
        "reachable": True,  # in this process
        "enabled": any(t["hot_enabled"] for t in tiers),
        "items": sum(t["hot_items"] for t in tiers),
        "bytes": sum(t["hot_bytes"] for t in tiers),
        "hits": hits, "misses": misses,
        "hit_ratio": round(hits / (hits + misses), 4) if hits + misses else None,
    }


async def index(backend: MemoryBackend) -> dict[str, Any]:
    try:
        found = await backend.index_agreement()
    except MemoryBackendError as exc:
        return {"agree": False, "problems": [str(exc)]}
    if found is None:
        return {"agree": True, "problems": [],
                "detail": "the vectors are stored with their records: no separate index"}
    return found


async def growth(backend: MemoryBackend, namespaces: tuple[str, ...] | None,
                 now: float) -> dict[str, Any]:
    """Memories in store, and stored in the last hour and day (by created_at)."""
    def count(**conditions: Any) -> Any:
        return backend.count(MemoryFilter(namespaces=namespaces, **conditions))

    day = await count(created_after=now - DAY)
    return {"total": await count(), "last_hour": await count(created_after=now - HOUR),
            "last_day": day, "per_hour_last_day": round(day / 24, 2)}


VECTOR_LAG_PROBLEM = 300.0  # seconds a memory may wait for its vector before health says so


async def vectors(backend: MemoryBackend, now: float) -> dict[str, Any]:
    """Memories committed whose vectors are still to be filled (vector_fill.py): found by
    their words now, by meaning once filled. `lag_seconds`: how long the oldest has waited."""
    waiting, oldest = await backend.pending_figures()
    return {"awaiting": waiting,
            "lag_seconds": round(max(0.0, now - oldest), 1) if oldest is not None else 0.0}


def outbox(config: MemoryConfig, queues: Iterable[WriteQueue]) -> dict[str, Any]:
    """Writes waiting: pending (write-behind), in the outbox (failed, retried), and the spill
    files no import has loaded yet."""
    queues = list(queues)
    return {"pending": sum(len(q.pending) for q in queues),
            "outbox": sum(len(q.outbox) for q in queues),
            "spill_files": len(spill_files(config))}


async def detail(
    backend: MemoryBackend, config: MemoryConfig, namespaces: tuple[str, ...],
    hot_counters: Iterable[Mapping[str, Any]], queues: Iterable[WriteQueue], now: float,
    *, whole_store: bool = False,
) -> dict[str, Any]:
    """The report: `tiers` (hot, warm, graph), `index`, `growth`, `vectors`, `outbox`, `consolidation`,
    and the `problems` found in them (none: healthy). Growth counts `namespaces`, or the whole
    store with `whole_store`."""
    warm = await warm_tier(backend)
    report: dict[str, Any] = {
        "tiers": {"hot": hot_tier(hot_counters), "warm": warm,
                  "graph": await graph_tier(backend, namespaces[0]) if warm["reachable"]
                  else {"reachable": False, "detail": "the warm tier is unreachable"}},
    }
    problems = [] if warm["reachable"] else [f"warm tier unreachable: {warm['detail']}"]
    if warm["reachable"]:
        report["index"] = await index(backend)
        problems += report["index"]["problems"]
        try:
            report["growth"] = await growth(backend, None if whole_store else namespaces, now)
            report["vectors"] = await vectors(backend, now)
        except MemoryBackendError as exc:
            problems.append(f"counting memories failed: {exc}")
        lag = report.get("vectors", {}).get("lag_seconds", 0.0)
        if lag > VECTOR_LAG_PROBLEM:
            problems.append(f"{report['vectors']['awaiting']} memories have waited {lag:.0f} s "
                            "for their vectors (found by their words only until filled)")
    report["outbox"] = outbox(config, queues)
    if report["outbox"]["outbox"]:
        problems.append(f"{report['outbox']['outbox']} writes wait in the outbox")
    report["consolidation"] = {"last_run": None, "lag_seconds": None, "state": "unknown"}
    if warm["reachable"]:
        try:
            report["consolidation"] = await consolidation_lag(backend, config, namespaces, now)
        except MemoryBackendError as exc:
            problems.append(f"reading the consolidation marker failed: {exc}")
    report["problems"] = problems
    return report
