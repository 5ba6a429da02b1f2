"""The detail of a health report (`deepresearch-memory health`, the service's
`/health?detail=true`): each tier reachable, the vector index against the records, growth,
the outbox, consolidation lag. Written once for the client and the service.

Consolidation records each finished run with `record_consolidation(config, namespace)`: a
small JSON file, CONSOLIDATION_FILE in the store's folder (memory.faiss.path, the local folder
of every backend), mapping each namespace to the end of its last run; `last_consolidation`
reads it (None: never ran).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from DeepResearch.src.memory.backends.base import MemoryBackend, MemoryFilter
from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.errors import MemoryBackendError
from DeepResearch.src.memory.facts.model import FactQuery
from DeepResearch.src.memory.writes import WriteQueue, spill_files

CONSOLIDATION_FILE = "consolidation.json"
HOUR, DAY = 3600.0, 86400.0


# -- consolidation runs ------------------------------------------------------------------
def consolidation_file(config: MemoryConfig) -> Path:
    return Path(config.faiss.path) / CONSOLIDATION_FILE


def _runs(config: MemoryConfig) -> dict[str, Any]:
    try:
        data = json.loads(consolidation_file(config).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record_consolidation(config: MemoryConfig, namespace: str, finished_at: float) -> None:
    """Note that a consolidation run of `namespace` ended at `finished_at` (epoch seconds);
    written whole (a temporary file renamed over the old one)."""
    path = consolidation_file(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    runs = {**_runs(config), namespace: {"finished_at": float(finished_at)}}
    fd, tmp = tempfile.mkstemp(prefix=".consolidation-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(runs, fh, indent=2, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def last_consolidation(config: MemoryConfig, namespace: str) -> float | None:
    """When the last consolidation run of `namespace` ended (epoch seconds); None: never."""
    run = _runs(config).get(namespace)
    when = run.get("finished_at") if isinstance(run, dict) else None
    return float(when) if isinstance(when, int | float) else None


def consolidation_lag(config: MemoryConfig, namespaces: Iterable[str], now: float) -> dict[str, Any]:
    """The oldest last run among `namespaces` and how long ago it ended (None / "never" when
    one of them never ran)."""
    runs = [last_consolidation(config, ns) for ns in namespaces]
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
    report["consolidation"] = consolidation_lag(config, namespaces, now)
    report["problems"] = problems
    return report
