"""The knowledge-graph tier at scale: each fact tool's p50/p95 on a graph of N people with
F facts each, and offline ingest throughput (messages/s).

    python -m benchmarks.bench_facts                      # 10k people, 100k facts, faiss
    python -m benchmarks.bench_facts --people 2000 --facts-per-person 10
    python -m benchmarks.bench_facts --backend neo4j      # the test suite's Neo4j, or NEO4J_URI

Goals: every tool p95 <= 50 ms embedded, <= 100 ms on Neo4j; ingest >= 200 messages/s.

The graph is loaded through `FactStore.put` in batches (entities, facts and their sentence
memories, as the graph writes them), not fact by fact through resolution: the load is set-up,
the tools are what is timed. The sentences' vectors are `--vectors synthetic` by default
(seeded random unit vectors: a flat FAISS search costs the same whatever the vectors say, and
embedding 100k sentences takes ~10 min on an idle 2-core machine, far more on a busy one), or
`--vectors model` (the real model, cached under outputs/bench-cache). The query of
semantic_search_facts is always embedded by the real model (the query cache is cleared). Ingest
runs the real extractor (facts/extraction) and the real embedder on messages by the graph's
people, into the same store, resolving against its 10k people.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import random
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.neo4j_server import neo4j_auth, neo4j_server
from benchmarks.results import save_result
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.embeddings import Embedder, get_embedder
from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.memory.facts.model import Entity, Fact
from DeepResearch.src.memory.facts.tools import TOOLS

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "outputs" / "bench-cache"
FIRST = ["Alice", "Bob", "Carol", "Dana", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy",
         "Mallory", "Niaj", "Olivia", "Peggy", "Rupert", "Sybil", "Trent", "Uma", "Victor",
         "Wendy", "Xavier", "Yvonne", "Zach", "Amir", "Bea", "Chen", "Dmitri", "Eva", "Farid",
         "Gita", "Hugo", "Ines", "Jon", "Kemal", "Lena", "Marta", "Nils", "Omar", "Priya", "Quinn"]
LAST = ["Johnson", "Smith", "Garcia", "Kim", "Nguyen", "Patel", "Muller", "Rossi", "Tanaka",
        "Silva", "Novak", "Okafor", "Larsen", "Dubois", "Cohen", "Ivanova", "Haddad", "Moreau",
        "Schmidt", "Lopez", "Wang", "Singh", "Brown", "Khan", "Costa"]
PROFICIENCY = ["beginner", "intermediate", "advanced", "expert"]
GOAL_P95_MS = {"faiss": 50.0, "in_memory": 50.0, "neo4j": 100.0}  # per backend (issue 24)
GOAL_INGEST = 200.0
NAMESPACE = "bench-facts"


SYLLABLES = ["ka", "lo", "mi", "ra", "ven", "tor", "sil", "dan", "bre", "qua", "nix", "zel",
             "pol", "har", "gim", "tus"]


def word(i: int) -> str:
    """A made-up proper name, unique for i < 4096 ("Kalomi"): organisation, skill, topic and
    city names are words as in real data, not "Org 7" (number tokens would make the lexical
    half of semantic_search_facts match most sentences)."""
    n = len(SYLLABLES)
    return (SYLLABLES[i % n] + SYLLABLES[(i // n) % n] + SYLLABLES[(i // n // n) % n]).capitalize()


def org(i: int) -> str:
    return word(i)


def skill(i: int) -> str:
    return word(1000 + i)


def topic(i: int) -> str:
    return word(2000 + i)


def city(i: int) -> str:
    return word(3000 + i)


def person_name(i: int) -> str:
    base = f"{FIRST[i % len(FIRST)]} {LAST[(i // len(FIRST)) % len(LAST)]}"
    round_ = i // (len(FIRST) * len(LAST))
    return base if round_ == 0 else f"{base} {round_ + 1}"


class VectorSource(Embedder):
    """The benchmark's embedder: the real model for queries and ingest; for the loaded
    sentences either seeded random unit vectors or the model's vectors cached on disk."""

    def __init__(self, real: Embedder, mode: str) -> None:
        super().__init__(real.model_name, runtime=real.runtime)
        self._model = real.model
        self.mode = mode
        self.preset: dict[str, np.ndarray] = {}

    def preload(self, texts: list[str]) -> None:
        if self.mode == "synthetic":
            rng = np.random.default_rng(7)
            vectors = rng.standard_normal((len(texts), self.dimension)).astype(np.float32)
        else:
            key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
            path = CACHE / f"fact-sentences-{len(texts)}-{key}.npy"
            if path.exists():
                vectors = np.load(path)
            else:
                print(f"  embedding {len(texts)} sentences once (cached in {path})", flush=True)
                vectors = super().embed(texts)
                CACHE.mkdir(parents=True, exist_ok=True)
                np.save(path, vectors)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        self.preset = dict(zip(texts, vectors, strict=True))

    def embed(self, texts: Any) -> np.ndarray:
        if texts and all(t in self.preset for t in texts):
            return np.stack([self.preset[t] for t in texts])
        return super().embed(texts)


def n_orgs(n_people: int) -> int:
    return min(1000, max(20, n_people // 20))


def make_graph_data(n_people: int, per_person: int, namespace: str, seed: int = 11
                    ) -> tuple[list[Entity], list[Fact]]:
    rng = random.Random(seed)
    now = time.time()
    entities: list[Entity] = []

    def make(type_: str, name: str) -> Entity:
        e = Entity(id=f"{type_.lower()}-{len(entities)}", namespace=namespace, type=type_,
                   name=name, created_at=now)
        entities.append(e)
        return e

    orgs = [make("Organization", org(i)) for i in range(n_orgs(n_people))]
    skills = [make("Skill", skill(i)) for i in range(200)]
    topics = [make("Topic", topic(i)) for i in range(300)]
    places = [make("Location", city(i)) for i in range(200)]
    channels = [make("Channel", f"channel-{i}") for i in range(100)]
    people = [make("Person", person_name(i)) for i in range(n_people)]
    facts: list[Fact] = []

    def fact(p: Entity, predicate: str, obj: Entity, **kw: Any) -> None:
        if len(facts) < n_people * per_person:
            facts.append(Fact(id=f"fact-{len(facts)}", namespace=namespace, subject_id=p.id,
                              predicate=predicate, object_id=obj.id, object_value=None,
                              confidence=round(rng.uniform(0.5, 1.0), 3),
                              evidence=tuple(f"msg-{rng.randrange(10**6)}"
                                             for _ in range(rng.randint(1, 4))),
                              created_at=now, **kw))

    year = 365 * 86400.0
    for p in people:
        start = now - rng.uniform(1, 8) * year
        fact(p, "WORKS_AT", rng.choice(orgs), valid_at=start - rng.uniform(1, 5) * year,
             invalid_at=start, attributes={"role": "Engineer"})
        fact(p, "WORKS_AT", rng.choice(orgs), valid_at=start, attributes={"role": "Engineer"})
        for s in rng.sample(skills, 3):
            fact(p, "HAS_SKILL", s, attributes={"proficiency": rng.choice(PROFICIENCY),
                                                "years": rng.randint(1, 15)})
        fact(p, "LIVES_IN", rng.choice(places), valid_at=start)
        for t in rng.sample(topics, 2):
            fact(p, "INTERESTED_IN", t)
        fact(p, "PARTICIPATED_IN", rng.choice(channels), valid_at=now - rng.uniform(0, 1) * year,
             attributes={"last_seen": now - rng.uniform(0, 0.5) * year})
        fact(p, "KNOWS", rng.choice(people))
    return entities, facts


async def load(graph: FactGraph, entities: list[Entity], facts: list[Fact],
               source: VectorSource, batch: int = 5000) -> float:
    from DeepResearch.src.memory.facts.views import sentence

    names = {e.id: e.name for e in entities}
    source.preload([sentence(f, names) for f in facts])
    store = await graph.store()
    started = time.perf_counter()
    await store.put(entities=entities)
    for i in range(0, len(facts), batch):
        chunk = facts[i : i + batch]
        await store.put(facts=chunk, memories=await graph.fact_records(chunk, names))
    return time.perf_counter() - started


def tool_calls(n_people: int, rng: random.Random) -> dict[str, Any]:
    person = lambda: person_name(rng.randrange(n_people))  # noqa: E731
    return {
        "get_person_profile": lambda: {"person": person()},
        "find_people_by_skill": lambda: {"skill": skill(rng.randrange(200)),
                                         "min_proficiency": "advanced"},
        "find_people_by_organization": lambda: {"organization": org(rng.randrange(n_orgs(n_people)))},
        "get_relationships_between": lambda: {"person_a": person(), "person_b": person()},
        "find_people_by_topic": lambda: {"topic": topic(rng.randrange(300))},
        "get_person_timeline": lambda: {"person": person()},
        "find_people_by_location": lambda: {"location": city(rng.randrange(200))},
        "get_conversation_participants": lambda: {"channel_id": f"channel-{rng.randrange(100)}"},
        "find_experts": lambda: {"query": skill(rng.randrange(200))},
        "semantic_search_facts": lambda: {"query": f"who works at {org(rng.randrange(n_orgs(n_people)))} "
                                                   f"and knows {skill(rng.randrange(200))}"},
    }


SEMANTIC = "semantic_search_facts"
WARM_UP = 10  # calls before timing: the server's (or SQLite's) caches, the first query's work


async def time_tools(graph: FactGraph, n_people: int, rounds: int,
                     only: list[str] | None = None) -> dict[str, dict[str, float]]:
    rng = random.Random(5)
    calls = {k: v for k, v in tool_calls(n_people, rng).items() if not only or k in only}
    out: dict[str, dict[str, float]] = {}
    for name, args in calls.items():
        for _ in range(WARM_UP):
            await TOOLS[name](graph, **args())
        if name == SEMANTIC:
            out.update(await time_semantic(graph, args, rounds))
            continue
        times = []
        for kwargs in [args() for _ in range(rounds)]:
            started = time.perf_counter()
            await TOOLS[name](graph, **kwargs)
            times.append((time.perf_counter() - started) * 1000)
        out[name] = summary(name, times)
    return out


async def time_semantic(graph: FactGraph, args: Callable[[], dict[str, Any]],
                        rounds: int) -> dict[str, dict[str, float]]:
    """semantic_search_facts as a caller meets it (the call embeds its query) and with the
    query vector cached (the tool without the model's own time: one query embedding, ~11 ms
    idle). The two alternate, a new query each, so both see the same warm store."""
    cold: list[float] = []
    cached: list[float] = []
    embedder = graph.client.embedder
    for _ in range(rounds):
        first, second = args(), args()
        embedder.clear_cache()
        started = time.perf_counter()
        await TOOLS[SEMANTIC](graph, **first)
        cold.append((time.perf_counter() - started) * 1000)
        embedder.embed_query(second["query"])
        started = time.perf_counter()
        await TOOLS[SEMANTIC](graph, **second)
        cached.append((time.perf_counter() - started) * 1000)
    return {SEMANTIC: summary(SEMANTIC, cold),
            f"{SEMANTIC} (query vector cached)": summary(f"{SEMANTIC} (query vector cached)", cached)}


def summary(label: str, times: list[float]) -> dict[str, float]:
    times = sorted(times)
    out = {"p50_ms": statistics.median(times),
           "p95_ms": times[min(len(times) - 1, int(0.95 * len(times)))]}
    print(f"  {label:52} p50 {out['p50_ms']:7.1f} ms  p95 {out['p95_ms']:7.1f} ms", flush=True)
    return out


def messages(n: int, n_people: int, seed: int = 3) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    templates = ["I work at {o} now.", "I live in {c}.", "I know {s} pretty well.",
                 "I'm interested in {t}.", "Anyone tried {s}? I use it daily.", "Lunch at noon?"]
    start = time.time() - 86400
    out = []
    for i in range(n):
        who = rng.randrange(n_people)
        text = rng.choice(templates).format(o=org(rng.randrange(n_orgs(n_people))),
                                            c=city(rng.randrange(200)),
                                            s=skill(rng.randrange(200)), t=topic(rng.randrange(300)))
        out.append({"message_id": f"bench-msg-{i}", "author_id": f"user-{who}",
                    "author_name": person_name(who), "content": text,
                    "timestamp": start + i, "channel_id": f"channel-{rng.randrange(100)}"})
    return out


async def time_ingest(graph: FactGraph, n: int, n_people: int, batch: int) -> dict[str, float]:
    msgs = messages(n, n_people)
    embed_seconds = 0.0
    real_embed = graph.client.embedder.embed

    def counted(texts: Any) -> np.ndarray:
        nonlocal embed_seconds
        started = time.perf_counter()
        try:
            return real_embed(texts)
        finally:
            embed_seconds += time.perf_counter() - started

    graph.client.embedder.embed = counted  # type: ignore[method-assign]
    facts = 0
    started = time.perf_counter()
    try:
        for i in range(0, n, batch):
            facts += len((await graph.ingest(msgs[i : i + batch])).facts)
        acknowledged = time.perf_counter() - started
        await graph.client.flush()  # sustained: every vector filled (storage.vectors=behind)
    finally:
        del graph.client.embedder.embed
    total = time.perf_counter() - started
    return {"messages": n, "batch": batch, "seconds": total, "messages_per_s": n / total,
            "acknowledged_per_s": n / acknowledged,
            "embedding_seconds": embed_seconds, "facts": facts}


def config_for(backend: str, path: Path, index: str = "flat", uri: str | None = None) -> MemoryConfig:
    if backend == "neo4j":
        auth = neo4j_auth()
        return MemoryConfig(backend="neo4j", namespace=NAMESPACE, neo4j={
            "uri": uri, "username": auth[0] if auth else "neo4j",
            "password": auth[1] if auth else None})
    return MemoryConfig(backend=backend, namespace=NAMESPACE,
                        faiss={"path": str(path), "index_kind": index})


def clear_neo4j_namespace(uri: str) -> None:
    """A server named by NEO4J_URI may hold an earlier run's graph: start from nothing."""
    from neo4j import GraphDatabase

    with GraphDatabase.driver(uri, auth=neo4j_auth()) as driver, driver.session() as session:
        # CALL ... IN TRANSACTIONS runs only in an auto-commit transaction (session.run)
        session.run("MATCH (n {namespace: $ns}) CALL (n) { DETACH DELETE n } "
                    "IN TRANSACTIONS OF 10000 ROWS", ns=NAMESPACE).consume()


async def run(args: argparse.Namespace, uri: str | None = None) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    path = ROOT / "outputs" / "bench-facts"
    shutil.rmtree(path, ignore_errors=True)
    if uri is not None:
        clear_neo4j_namespace(uri)
    source = VectorSource(get_embedder(), args.vectors)
    client = MemorySystemClient(config_for(args.backend, path, args.index, uri), embedder=source)
    graph = FactGraph(client)
    try:
        entities, facts = make_graph_data(args.people, args.facts_per_person, client.namespace)
        print(f"  loading {len(entities)} entities, {len(facts)} facts ({args.vectors} vectors)",
              flush=True)
        load_s = await load(graph, entities, facts, source)
        print(f"  loaded in {load_s:.1f} s", flush=True)
        tools = await time_tools(graph, args.people, args.rounds,
                                 args.tools.split(",") if args.tools else None)
        ingest = await time_ingest(graph, args.messages, args.people, args.batch) \
            if args.messages else {"messages_per_s": float("nan"), "acknowledged_per_s": float("nan"),
                                   "embedding_seconds": float("nan"), "seconds": float("nan")}
        print(f"  ingest: {ingest['messages_per_s']:.1f} messages/s with every vector filled, "
              f"{ingest['acknowledged_per_s']:.1f}/s acknowledged; embedding "
              f"{ingest['embedding_seconds']:.1f} s of {ingest['seconds']:.1f} s")
    finally:
        await client.close()
    return {"backend": args.backend, "people": args.people, "facts": len(facts),
            "vectors": args.vectors, "index": args.index, "load_seconds": load_s, "tools": tools, "ingest": ingest,
            "worst_p95_ms": max(t["p95_ms"] for t in tools.values()),
            "cpus": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()[0]}


def report(result: dict[str, Any], argv: list[str]) -> str:
    ingest = result["ingest"]
    goal = GOAL_P95_MS[result["backend"]]
    lines = [
        f"Graph: {result['people']:,} people, {result['facts']:,} facts on `{result['backend']}` "
        f"({result['index']} index, {result['vectors']} sentence vectors), loaded in "
        f"{result['load_seconds']:.0f} s on {result['cpus']} cores"
        + (f", shared with other jobs (load average {result['load_before']:.1f} before the run): "
           "its times are pessimistic." if result["load_before"] > 2 else "."),
        "",
        f"| tool | p50 ms | p95 ms | p95 <= {goal:.0f} ms |", "|---|---|---|---|",
        *(f"| `{name}` | {t['p50_ms']:.1f} | {t['p95_ms']:.1f} | "
          f"{'yes' if t['p95_ms'] <= goal else '**no**'} |"
          for name, t in result["tools"].items()),
        "",
        f"Ingest ({ingest.get('messages', 0)} messages in batches of {ingest.get('batch', 0)}, "
        "offline extractor, real embedder, into the graph above): "
        f"**{ingest['messages_per_s']:.1f} messages/s** with every vector filled (goal >= "
        f"{GOAL_INGEST:.0f}); acknowledged at "
        f"{ingest.get('acknowledged_per_s', ingest['messages_per_s']):.1f}/s (vectors filled "
        "behind on faiss). The embedding of episodes and sentences ran "
        f"{ingest['embedding_seconds']:.1f} s of the {ingest['seconds']:.1f} s: ingest is "
        "bound by the model's throughput.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="bench_facts")
    p.add_argument("--backend", default="faiss", choices=["faiss", "in_memory", "neo4j"])
    p.add_argument("--people", type=int, default=10_000)
    p.add_argument("--facts-per-person", type=int, default=10)
    p.add_argument("--rounds", type=int, default=100, help="timed calls per tool")
    p.add_argument("--messages", type=int, default=400, help="messages ingested")
    p.add_argument("--batch", type=int, default=100, help="messages per ingest call")
    p.add_argument("--vectors", default="synthetic", choices=["synthetic", "model"])
    p.add_argument("--tools", default="", help="comma-separated tools to time (default: all)")
    p.add_argument("--index", default="flat", choices=["flat", "hnsw"],
                   help="memory.faiss.index_kind of the store")
    args = p.parse_args([] if argv is None else argv)
    if args.backend == "neo4j":
        with neo4j_server() as uri:
            result = asyncio.run(run(args, uri))
    else:
        result = asyncio.run(run(args))
    save_result(f"facts-{args.backend}-{args.index}" if args.index != "flat"
                else f"facts-{args.backend}", result)
    if args.backend in ("faiss", "neo4j") and args.index == "flat" and not args.tools:
        from benchmarks.report import write_section

        title = "Fact tools and ingest" + (" on Neo4j" if args.backend == "neo4j" else "")
        write_section("facts" if args.backend == "faiss" else "facts_neo4j", title,
                      "python -m benchmarks.bench_facts " + " ".join(argv or []),
                      report(result, argv or []))
    print(f"worst tool p95 {result['worst_p95_ms']:.1f} ms (goal <= "
          f"{GOAL_P95_MS[args.backend]:.0f}); ingest {result['ingest']['messages_per_s']:.1f} "
          f"messages/s (goal >= {GOAL_INGEST:.0f})")

if __name__ == "__main__":
    main(sys.argv[1:])
