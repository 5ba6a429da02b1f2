"""Merging two entities found to be one: nothing is lost.

The kept entity takes the other's names as aliases and its external ids; every fact that
names the other (as subject or object, history included) is re-pointed to the kept entity,
evidence and validity unchanged, its sentence rewritten; the other entity is deleted; all in
one FactStore.put.
"""

from __future__ import annotations

from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.facts.graph_core import GraphCore, ambiguity
from DeepResearch.src.memory.facts.model import Fact, FactQuery
from DeepResearch.src.memory.facts.resolution import EXTERNAL_IDS, Resolver
from DeepResearch.src.memory.facts.views import EntityOut, entity_out

MAX_FACTS = 100_000


async def merge_entities(graph: GraphCore, keep_ref: str, other_ref: str) -> EntityOut:
    """Call inside the graph's `writing()` block (FactGraph.merge_entities in graph.py)."""

    found = []
    for ref in (keep_ref, other_ref):
        res = await graph.lookup(ref)
        if res.ambiguous:
            raise MemoryInputError(ambiguity(ref, "entity", res))
        if res.entity is None:
            raise MemoryInputError(f"no entity named {ref!r} to merge")
        found.append(res.entity)
    keep, other = found
    if keep.id == other.id:
        return entity_out(keep)
    if keep.type != other.type:
        raise MemoryInputError(f"cannot merge {keep.type} {keep.name!r} with {other.type} "
                               f"{other.name!r}: different entity types")
    store = await graph.store()
    resolver = Resolver(store, graph.namespace, graph.config)
    for name in (other.name, other.real_name, *other.aliases):
        if name:
            resolver.learn_name(keep, name)
    ids = list(keep.attributes.get(EXTERNAL_IDS, []))
    ids += [i for i in other.attributes.get(EXTERNAL_IDS, []) if i not in ids]
    keep.attributes = {**other.attributes, **keep.attributes}
    if ids:
        keep.attributes[EXTERNAL_IDS] = ids
    moved: dict[str, Fact] = {}
    for query in (FactQuery(graph.namespace, subject_ids=(other.id,), include_history=True,
                            limit=MAX_FACTS),
                  FactQuery(graph.namespace, object_ids=(other.id,), include_history=True,
                            limit=MAX_FACTS)):
        for fact in await store.find_facts(query):
            fact = moved.get(fact.id, fact)
            if fact.subject_id == other.id:
                fact.subject_id = keep.id
            if fact.object_id == other.id:
                fact.object_id = keep.id
            moved[fact.id] = fact
    resolver.keep(keep)
    names = await graph._names(store, moved.values(), resolver.pending)
    records = await graph.fact_records(list(moved.values()), names)
    await store.put(entities=[keep], facts=list(moved.values()), memories=records,
                    delete_entity_ids=[other.id])
    return entity_out(keep)
