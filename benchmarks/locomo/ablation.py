"""Ablation of the retrieval pipeline on LoCoMo: the defaults, then each step switched off (or
changed) in turn, through the public MemorySystemClient with a faiss store -- the protocol of
run.py, except that turn vectors come from the embedding cache (the same model) so each
variant costs seconds. Prints recall@1/5/10/20 overall, recall@10 per category, the mean
number of distinct conversation sessions in the top 10, the retrieve latency p50/p95, and
recall@5/@10 per conversation. The "graph" variants first ingest each conversation's turns
through `FactGraph.ingest` (the offline extractor builds the knowledge graph, each turn's id
its facts' evidence), then store the turns under those ids. The "summaries" variants store each
turn with its speaker as `author_name` metadata (what `graph.ingest` writes on a message) and
run `summaries.summarize` on the conversation's session before its questions. The "static"
and "thesaurus" variants add a step of static_list.py (a model2vec model distilled from the
same MiniLM weights: a third candidate list, or a vocabulary expansion of the query).

Run: .venv/bin/python benchmarks/locomo/ablation.py [--only NAME[|NAME...]] [--paired "A|B"]
(--paired: only the retrieve latency of variants A and B, each question asked of both in turn)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from benchmarks.locomo.baselines import embed_cached
from benchmarks.locomo.data import SCORED_CATEGORIES, Conversation, load_conversations
from benchmarks.locomo.metrics import RecallTable
from benchmarks.locomo.project import TOP_K

OFF = {"enabled": False}


def recall_option(name: str) -> dict[str, Any]:
    """The retrieval settings of the config option memory/recall=`name` (its YAML file)."""
    from omegaconf import OmegaConf

    path = Path(__file__).resolve().parents[2] / "DeepResearch/conf/memory/recall" / f"{name}.yaml"
    return OmegaConf.to_container(OmegaConf.load(path))["retrieval"]


VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "session coverage (penalty 0.1, quota 2)": {"session_coverage": {"enabled": True}},
    "lexical feedback on": {"feedback": {"enabled": True}},
    "no time match": {"time_query": OFF},
    "no event_at, no as_of": {"_plain": True},
    "no neighbour smoothing": {"neighbour_smoothing": OFF},
    "smoothing without expansion": {"neighbour_smoothing": {"expand": False}},
    "dense only (hybrid off)": {"hybrid": False},
    "fusion rrf": {"fusion": "rrf"},
    "graph path": {"_graph": True, "graph": {"enabled": True}},
    "graph path, every fact": {"_graph": True, "graph": {"enabled": True, "max_fact_evidence": 100_000}},
    "graph path, weight 0.075": {"_graph": True, "graph": {"enabled": True, "weight": 0.075}},
    "graph path, weight 0.1": {"_graph": True, "graph": {"enabled": True, "weight": 0.1}},
    "graph built, path off": {"_graph": True, "graph": OFF},
    "graph path off": {"graph": OFF},
    "summaries (defaults)": {"_summaries": {}, "observations": {"enabled": True}},
    "summaries, weight 0.2": {"_summaries": {}, "observations": {"enabled": True, "weight": 0.2}},
    "summaries, weight 0.1, top 1": {"_summaries": {},
                                     "observations": {"enabled": True, "weight": 0.1, "top": 1}},
    "summaries, weight 0.2, groups of 16": {"_summaries": {"group_size": 16},
                                            "observations": {"enabled": True, "weight": 0.2}},
    "summaries, weight 0.2, top 1": {"_summaries": {},
                                     "observations": {"enabled": True, "weight": 0.2, "top": 1}},
    "summaries built, path off": {"_summaries": {}},
    # combinations of the options that each gained
    "combo: feedback + graph 0.1": {"feedback": {"enabled": True}, "_graph": True,
                                    "graph": {"enabled": True, "weight": 0.1}},
    "combo: feedback + summaries": {"feedback": {"enabled": True}, "_summaries": {},
                                    "observations": {"enabled": True}},
    "combo: graph 0.1 + summaries": {"_graph": True, "graph": {"enabled": True, "weight": 0.1},
                                     "_summaries": {}, "observations": {"enabled": True}},
    "combo: feedback + graph 0.1 + summaries": {
        "feedback": {"enabled": True}, "_graph": True, "graph": {"enabled": True, "weight": 0.1},
        "_summaries": {}, "observations": {"enabled": True}},
    # the ready-made option (conf/memory/recall/multi_session.yaml): feedback + graph 0.2 +
    # summaries
    "memory/recall=multi_session": {**recall_option("multi_session"), "_graph": True,
                                    "_summaries": {}},
    "combo: graph 0.2 + summaries": {"_graph": True, "graph": {"enabled": True, "weight": 0.2},
                                     "_summaries": {}, "observations": {"enabled": True}},
    # a second, static embedding (model2vec distilled from the same MiniLM weights) as a
    # third candidate list, min-max fused (ranking/static_path.py)
    "static list, weight 0.5": {"_static": {"weight": 0.5}},
    "static list, weight 1.0": {"_static": {"weight": 1.0}},
    "static list, weight 0.25": {"_static": {"weight": 0.25}},
    "combo: feedback + graph 0.1 + summaries + static 1.0": {
        "feedback": {"enabled": True}, "_graph": True, "graph": {"enabled": True, "weight": 0.1},
        "_summaries": {}, "observations": {"enabled": True}, "_static": {"weight": 1.0}},
    "combo: feedback + graph 0.1 + static 1.0": {
        "feedback": {"enabled": True}, "_graph": True, "graph": {"enabled": True, "weight": 0.1},
        "_static": {"weight": 1.0}},
    # the dense search embeds the query without the names it holds (retrieval.dense_query)
    "dense query without names": {"dense_query": "without_names"},
    "dense query without names + feedback": {"dense_query": "without_names",
                                             "feedback": {"enabled": True}},
    "dense query without names + graph 0.1 + summaries": {
        "dense_query": "without_names", "_graph": True, "graph": {"enabled": True, "weight": 0.1},
        "_summaries": {}, "observations": {"enabled": True}},
    "dense query without names + static 1.0": {"dense_query": "without_names",
                                              "_static": {"weight": 1.0}},
    "dense query without names + feedback + graph 0.1 + summaries": {
        "dense_query": "without_names", "feedback": {"enabled": True}, "_graph": True,
        "graph": {"enabled": True, "weight": 0.1}, "_summaries": {},
        "observations": {"enabled": True}},
    "dense query both, weight 0.5": {"dense_query": "both"},
    "dense query both, weight 1.0": {"dense_query": "both", "dense_query_weight": 1.0},
    "dense query both, weight 0.25": {"dense_query": "both", "dense_query_weight": 0.25},
    "combo: both 0.5 + feedback + graph 0.1 + summaries": {
        "dense_query": "both", "feedback": {"enabled": True}, "_graph": True,
        "graph": {"enabled": True, "weight": 0.1}, "_summaries": {},
        "observations": {"enabled": True}},
    "combo: both 0.5 + graph 0.1 + summaries": {
        "dense_query": "both", "_graph": True, "graph": {"enabled": True, "weight": 0.1},
        "_summaries": {}, "observations": {"enabled": True}},
    "combo: both 0.5 + feedback + graph 0.1 + summaries + static 1.0": {
        "dense_query": "both", "feedback": {"enabled": True}, "_graph": True,
        "graph": {"enabled": True, "weight": 0.1}, "_summaries": {},
        "observations": {"enabled": True}, "_static": {"weight": 1.0}},
    "combo: both 0.25 + feedback + graph 0.1 + summaries + static 1.0": {
        "dense_query": "both", "dense_query_weight": 0.25, "feedback": {"enabled": True},
        "_graph": True, "graph": {"enabled": True, "weight": 0.1}, "_summaries": {},
        "observations": {"enabled": True}, "_static": {"weight": 1.0}},
    "combo: both 0.5 + feedback + graph 0.2 + summaries + static 1.0": {
        "dense_query": "both", "feedback": {"enabled": True}, "_graph": True,
        "graph": {"enabled": True, "weight": 0.2}, "_summaries": {},
        "observations": {"enabled": True}, "_static": {"weight": 1.0}},
    "static list 1.0, name-free query": {"_static": {"weight": 1.0, "query": "without_names"}},
    "static list 0.5, name-free query": {"_static": {"weight": 0.5, "query": "without_names"}},
    "combo: both 0.5 + feedback + graph 0.1 + summaries + name-free static 1.0": {
        "dense_query": "both", "feedback": {"enabled": True}, "_graph": True,
        "graph": {"enabled": True, "weight": 0.1}, "_summaries": {},
        "observations": {"enabled": True},
        "_static": {"weight": 1.0, "query": "without_names"}},
    "combo: both 0.5 + feedback + graph 0.3 + summaries + static 1.0": {
        "dense_query": "both", "feedback": {"enabled": True}, "_graph": True,
        "graph": {"enabled": True, "weight": 0.3}, "_summaries": {},
        "observations": {"enabled": True}, "_static": {"weight": 1.0}},
    "combo: both 0.5 + feedback + graph 0.2 + summaries": {
        "dense_query": "both", "feedback": {"enabled": True}, "_graph": True,
        "graph": {"enabled": True, "weight": 0.2}, "_summaries": {},
        "observations": {"enabled": True}},
    "combo: both 0.5 + feedback + graph 0.3 + summaries": {
        "dense_query": "both", "feedback": {"enabled": True}, "_graph": True,
        "graph": {"enabled": True, "weight": 0.3}, "_summaries": {},
        "observations": {"enabled": True}},
    "combo: both 0.5 + feedback + graph 0.2 + summaries + static 1.5": {
        "dense_query": "both", "feedback": {"enabled": True}, "_graph": True,
        "graph": {"enabled": True, "weight": 0.2}, "_summaries": {},
        "observations": {"enabled": True}, "_static": {"weight": 1.5}},
    "combo: both 0.5 + feedback + graph 0.15 + summaries + static 1.0": {
        "dense_query": "both", "feedback": {"enabled": True}, "_graph": True,
        "graph": {"enabled": True, "weight": 0.15}, "_summaries": {},
        "observations": {"enabled": True}, "_static": {"weight": 1.0}},
    "combo: both 0.5 + feedback + graph 0.15 + summaries": {
        "dense_query": "both", "feedback": {"enabled": True}, "_graph": True,
        "graph": {"enabled": True, "weight": 0.15}, "_summaries": {},
        "observations": {"enabled": True}},
    # the static model's vocabulary as a thesaurus: a lexical search for the words nearest
    # to the query's (static_list.ExpansionPath)
    "thesaurus, weight 0.2": {"_expansion": {"weight": 0.2}},
    "thesaurus, weight 0.4": {"_expansion": {"weight": 0.4}},
    "thesaurus 0.2, 4 per word, floor 0.6": {"_expansion": {"weight": 0.2, "per_word": 4,
                                                             "floor": 0.6}},
}


def _client(path: str, retrieval: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A faiss client for the variant's retrieval settings, and its loading flags."""
    from DeepResearch.src.memory import MemoryConfig, MemorySystemClient

    settings = dict(retrieval)
    flags = {"plain": settings.pop("_plain", False),  # the turns without dates, asked "now"
             "graph": settings.pop("_graph", False),  # the turns ingested first: facts
             "summaries": settings.pop("_summaries", None),  # per-speaker observations
             "static": None}  # the static-embedding vectors of the stored turns
    static = settings.pop("_static", None)  # the static list's StaticPath arguments
    expansion = settings.pop("_expansion", None)  # ExpansionPath's arguments
    config = MemoryConfig(backend="faiss", faiss={"path": path}, retrieval=settings,
                          summaries=flags["summaries"] or {})
    steps = None
    if static is not None or expansion is not None:
        from benchmarks.locomo.static_list import (
            ExpansionPath,
            StaticEncoder,
            StaticPath,
            StaticVectors,
            TermNeighbours,
            distill_static,
        )
        from DeepResearch.src.memory.ranking import default_steps

        encoder = StaticEncoder(distill_static()[0])
        steps = default_steps()
        at = next(i for i, s in enumerate(steps) if s.name == "feedback")
        if expansion is not None:
            steps.insert(at, ExpansionPath(TermNeighbours(encoder), **expansion))
        if static is not None:
            flags["static"] = StaticVectors(encoder)
            steps.insert(at, StaticPath(flags["static"], **static))
    return MemorySystemClient(config, steps=steps), flags


async def load(client: Any, conv: Conversation, flags: dict[str, Any]) -> tuple[str, Any]:
    """Store the conversation as the variant wants it; its session and the questions' as_of."""
    from DeepResearch.src.memory.summaries import summarize

    session = f"locomo-{conv.name}"
    vectors = embed_cached([t.content for t in conv.turns])
    items = conv.stored_items()
    if flags["graph"]:
        await ingest_turns(client, conv, items)
    for item, vector, turn in zip(items, vectors, conv.turns, strict=True):
        item["vector"] = vector
        if flags["plain"]:
            item.pop("event_at")
        if flags["summaries"] is not None:  # who said it, as graph.ingest writes it
            item["metadata"]["author_name"] = turn.speaker
    ids = await client.store_many(items, session_id=session)
    if flags["static"] is not None:
        flags["static"].add(ids, [t.content for t in conv.turns])
    if flags["summaries"] is not None:
        await summarize(client, session=session)
    return session, None if flags["plain"] else conv.last_session_time


async def run_variant(
    conversations: list[Conversation], retrieval: dict[str, Any]
) -> tuple[RecallTable, list[RecallTable], list[float]]:
    total, per, latencies = RecallTable(), [], []
    with tempfile.TemporaryDirectory(prefix="locomo-ablation-") as path:
        client, flags = _client(path, retrieval)
        try:
            for conv in conversations:
                session, as_of = await load(client, conv, flags)
                table = RecallTable()
                for q in conv.questions:
                    started = time.perf_counter()
                    hits = await client.retrieve(
                        q.question, top_k=TOP_K, session_id=session, as_of=as_of
                    )
                    latencies.append(time.perf_counter() - started)
                    ranked = [str(h.metadata.get("dia_id")) for h in hits]
                    sessions = [h.metadata.get("session") for h in hits]
                    table.add(q.category, ranked, q.evidence, sessions)
                    total.add(q.category, ranked, q.evidence, sessions)
                per.append(table)
        finally:
            await client.close()
    return total, per, latencies


async def paired_latency(conversations: list[Conversation], names: list[str]
                         ) -> dict[str, list[float]]:
    """Retrieve latency of several variants, each question asked of every variant in turn
    (the order rotating per question), so the machine's load falls on all alike."""
    out: dict[str, list[float]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory(prefix="locomo-paired-") as root:
        clients = [_client(f"{root}/{i}", VARIANTS[n]) for i, n in enumerate(names)]
        try:
            k = 0
            for conv in conversations:
                loaded = [await load(c, conv, f) for c, f in clients]
                for q in conv.questions:
                    for j in range(len(names)):
                        i = (j + k) % len(names)
                        session, as_of = loaded[i]
                        started = time.perf_counter()
                        await clients[i][0].retrieve(q.question, top_k=TOP_K,
                                                     session_id=session, as_of=as_of)
                        out[names[i]].append(time.perf_counter() - started)
                    k += 1
        finally:
            for c, _ in clients:
                await c.close()
    return out


async def ingest_turns(client: Any, conv: Conversation, items: list[dict]) -> None:
    """The conversation's turns through the graph's ingest (the offline extractor), one
    message per turn whose id is the turn memory's id, so the facts' evidence are the turns;
    the turns are then stored under those ids (replacing the episode memories ingest wrote)."""
    from DeepResearch.src.memory.facts.graph import FactGraph

    messages = []
    for i, (turn, item) in enumerate(zip(conv.turns, items, strict=True)):
        item["id"] = f"{conv.name}-{i}"
        when = turn.event_at.timestamp() if turn.event_at else 0.0
        messages.append({"message_id": item["id"], "author_id": turn.speaker,
                         "author_name": turn.speaker, "content": turn.text, "timestamp": when})
    await FactGraph(client).ingest(messages, channel_id=conv.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="",
                        help="the variant of this name, else those whose name contains "
                        "it (or one of a|b|...)")
    parser.add_argument("--paired", default="",
                        help="A|B: only the retrieve latency of these variants, paired")
    args = parser.parse_args()
    conversations = load_conversations()
    if args.paired:
        names = args.paired.split("|")
        times = asyncio.run(paired_latency(conversations, names))
        for name in names:
            p50, p95 = (1000 * float(np.percentile(times[name], q)) for q in (50, 95))
            print(f"{name}: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
        return
    names = [c.name for c in conversations]
    cats = [f"c{c} R@10" for c in SCORED_CATEGORIES]
    print("| variant | R@1 | R@5 | R@10 | R@20 | " + " | ".join(cats) + " | sessions@10 | p50 ms | p95 ms | "
          + " | ".join(f"{n} R@5/R@10" for n in names) + " |")
    print("|---|" + "---:|" * (7 + len(cats) + len(names)))
    for name, retrieval in VARIANTS.items():
        if not any(part in name if part not in VARIANTS else part == name
                   for part in args.only.split("|")):
            continue
        total, per, latencies = asyncio.run(run_variant(conversations, retrieval))
        m = total.mean()
        cells = [f"{m[k]:.3f}" for k in total.ks]
        cells += [f"{total.mean(c)[10]:.3f}" for c in SCORED_CATEGORIES]
        cells += [f"{total.mean_sessions():.2f}"]
        cells += [f"{1000 * float(np.percentile(latencies, q)):.1f}" for q in (50, 95)]
        cells += [f"{t.mean()[5]:.3f}/{t.mean()[10]:.3f}" for t in per]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
