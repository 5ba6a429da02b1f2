"""The memory side of checkpoints: what a resumed run needs from the killed one's memory
wiring, and ids that make the run's memory writes idempotent.

- `export_memory` / `import_memory`: the pending batch (tool runs not yet written), the plans
  waiting for their outcome, the recalls, flags and counts the report shows.
- `stamp_ids`: every memory the run's client stores without an id gets one derived from the
  run, session, type, loop, step and content (uuid5). A step redone after a crash stores the
  same ids again: the backend's upsert replaces, nothing is stored twice.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any
from uuid import UUID, uuid5

from DeepResearch.src.memory.models import RetrievedMemory
from DeepResearch.src.workflow.memory.hooks import _PlanDraft
from DeepResearch.src.workflow.memory.integration import MemoryIntegration
from DeepResearch.src.workflow.memory.run_context import Recall

if TYPE_CHECKING:
    from DeepResearch.src.memory.client import MemorySystemClient
    from DeepResearch.src.workflow.services import WorkflowServices
    from DeepResearch.src.workflow.state import ResearchState

ID_NAMESPACE = UUID("5b1d0c52-3f0e-4d8e-9a57-6f1f5a4c2e11")


def memory_id(run_id: str, *parts: Any) -> str:
    """A deterministic memory id for `parts` within the run `run_id`."""
    basis = json.dumps([run_id, *parts], sort_keys=True, default=str)
    return uuid5(ID_NAMESPACE, basis).hex


def find_integration(services: WorkflowServices) -> MemoryIntegration | None:
    found = [hook for hook in services.run_hooks if isinstance(hook, MemoryIntegration)]
    return found[0] if found else None


def stamp_ids(client: MemorySystemClient, run_id: str) -> None:
    """Wrap this client's store_many so that items without an id get a deterministic one."""
    store_many = client.store_many

    async def stamped(items: Sequence[Mapping[str, Any]], session_id: str | None = None) -> list[str]:
        if isinstance(items, Mapping | str | bytes):
            return await store_many(items, session_id)  # the client's own error
        default_session = session_id or client.session_id
        seen: Counter[str] = Counter()
        out = []
        for item in items:
            if not isinstance(item, Mapping) or item.get("id"):
                out.append(item)
                continue
            meta = item.get("metadata") or {}
            key = memory_id(
                run_id,
                item.get("session_id") or default_session,
                item.get("memory_type", "note"),
                meta.get("loop_id") if isinstance(meta, Mapping) else None,
                meta.get("step") if isinstance(meta, Mapping) else None,
                str(item.get("content")),
            )
            seen[key] += 1  # identical items in one batch stay distinct
            out.append({**item, "id": key if seen[key] == 1 else memory_id(run_id, key, seen[key])})
        return await store_many(out, session_id)

    client.store_many = stamped  # type: ignore[method-assign]


def fix_plan_id(integration: MemoryIntegration, state: ResearchState, run_id: str) -> None:
    """The plan a loop keeps for its outcome gets a deterministic id (its answer relates to it)."""
    plans = integration.node_hook.plans
    draft = plans.get(state.loop_id)
    if draft is not None:
        session = state.memory_session_id or ""
        plans[state.loop_id] = _PlanDraft(
            memory_id(run_id, session, "plan", state.loop_id), draft.question, draft.text
        )


def export_memory(integration: MemoryIntegration) -> dict[str, Any] | None:
    run, hook = integration.run, integration.node_hook
    if run is None:
        return None
    return {
        "root_session": run.root_session,
        "sessions": dict(run.sessions),
        "questions": dict(run.questions),
        "pending": list(run.pending),
        "recalls": [
            {"loop_id": r.loop_id, "phase": r.phase, "purpose": r.purpose, "query": r.query,
             "memories": [m.model_dump(mode="json") for m in r.memories]}
            for r in run.recalls
        ],
        "flags": list(run.flags),
        "stored": dict(run.stored),
        "merges": list(run.merges),
        "problems": list(run.problems),
        "plans": {loop: asdict(draft) for loop, draft in hook.plans.items()},
        "flagged": {loop: sorted(lines) for loop, lines in hook.flagged.items()},
        # facts of the documents read so far: written to the graph only at the run's end
        "documents": integration.documents.export(),
    }


def import_memory(integration: MemoryIntegration, data: Mapping[str, Any]) -> None:
    """Give the resumed run's memory wiring what the killed run's had at its checkpoint."""
    run, hook = integration.run, integration.node_hook
    if run is None:
        raise RuntimeError("import_memory needs a started memory run (on_run_start first)")
    run.sessions.update(data["sessions"])
    run.questions.update(data["questions"])
    run.pending[:0] = list(data["pending"])
    run.recalls[:0] = [
        Recall(r["loop_id"], r["phase"], r["purpose"], r["query"],
               [RetrievedMemory.model_validate(m) for m in r["memories"]])
        for r in data["recalls"]
    ]
    run.flags[:0] = list(data["flags"])
    for kind, n in data["stored"].items():
        run.stored[kind] = run.stored.get(kind, 0) + int(n)
    run.merges[:0] = list(data["merges"])
    run.problems[:0] = list(data["problems"])
    hook.plans.update({loop: _PlanDraft(**draft) for loop, draft in data["plans"].items()})
    hook.flagged.update({loop: set(lines) for loop, lines in data["flagged"].items()})
    integration.documents.restore(data.get("documents") or {})
