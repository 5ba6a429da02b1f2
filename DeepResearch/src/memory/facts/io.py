"""Export and import of a namespace's entities and facts as JSONL, losslessly: ids, names,
aliases, attributes, confidences, evidence and all four times come back as they were.

One JSON object per line: `{"kind": "entity", ...Entity fields}` lines first, then
`{"kind": "fact", ...Fact fields}`. Import validates every line first (a bad one names its
line number and nothing is written), then writes everything in one FactStore.put, with the
facts' sentence memories re-made (episodes travel with `deepresearch-memory export`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.facts.graph_core import GraphCore
from DeepResearch.src.memory.facts.model import Entity, Fact, FactQuery
from DeepResearch.src.memory.facts.validation import check_confidence

MAX_ROWS = 10_000_000


async def export_lines(graph: GraphCore) -> list[str]:
    store = await graph.store()
    ids = sorted({i for i, _ in await store.entity_keys(graph.namespace)})
    entities = await store.get_entities(graph.namespace, ids)
    facts = await store.find_facts(FactQuery(graph.namespace, include_history=True,
                                             limit=MAX_ROWS))
    facts.sort(key=lambda f: (f.created_at, f.id))
    return [_line("entity", e) for e in entities] + [_line("fact", f) for f in facts]


def _line(kind: str, item: Entity | Fact) -> str:
    data = dataclasses.asdict(item)
    data.pop("namespace")
    return json.dumps({"kind": kind, **data}, ensure_ascii=False, sort_keys=True)


async def export_jsonl(graph: GraphCore, path: Path) -> int:
    """Write the export to `path`: a file through a temporary one renamed over it (no partial
    file), a link or a pipe (`/dev/stdout`, a FIFO) in place, so that the link is never
    replaced by a file. MemoryInputError naming `path` when it cannot be written."""
    text = "".join(line + "\n" for line in await export_lines(graph))
    in_place = path.is_symlink() or (path.exists() and not path.is_file())
    target = path if in_place else path.with_name(path.name + ".tmp")
    try:
        target.write_text(text, encoding="utf-8")
        if not in_place:
            target.replace(path)
    except BrokenPipeError:  # a reader that stopped early: a normal end (commandline.py)
        raise
    except OSError as exc:
        if not in_place:
            target.unlink(missing_ok=True)
        raise MemoryInputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return text.count("\n")


def parse_lines(lines: Iterable[str], namespace: str) -> tuple[list[Entity], list[Fact]]:
    entities: list[Entity] = []
    facts: list[Fact] = []
    for number, line in _numbered(lines):
        try:
            data = json.loads(line)
            kind = data.pop("kind") if isinstance(data, dict) else None
            if kind == "entity":
                data["aliases"] = tuple(data.get("aliases", ()))
                entities.append(Entity(namespace=namespace, **data))
            elif kind == "fact":
                data["evidence"] = tuple(data.get("evidence", ()))
                fact = Fact(namespace=namespace, **data)
                check_confidence(fact.confidence)
                if not fact.evidence:
                    raise MemoryInputError("a fact needs evidence")
                facts.append(fact)
            else:
                raise MemoryInputError(f"kind={kind!r}: expected 'entity' or 'fact'")
        except (ValueError, TypeError) as exc:  # JSONDecodeError, MemoryInputError, bad fields
            raise MemoryInputError(f"line {number}: {exc}; nothing was imported") from None
    known = {e.id for e in entities}
    for fact in facts:
        missing = {fact.subject_id, fact.object_id or fact.subject_id} - known
        if missing:
            raise MemoryInputError(f"fact {fact.id!r} names entities {sorted(missing)} the file "
                                   "does not hold; nothing was imported")
    return entities, facts


def _numbered(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield number, line


async def import_lines(graph: GraphCore, lines: Iterable[str]) -> dict[str, Any]:
    entities, facts = parse_lines(lines, graph.namespace)
    async with graph.writing() as store:
        names = {e.id: e.name for e in entities}
        records = await graph.fact_records(facts, names)
        await store.put(entities=entities, facts=facts, memories=records)
    return {"entities": len(entities), "facts": len(facts)}


async def import_jsonl(graph: GraphCore, path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MemoryInputError(f"cannot read {path}: {exc}") from None
    return await import_lines(graph, text.splitlines())
