"""Neighbour smoothing: session neighbours along the FOLLOWS chain (every backend), the step's
arithmetic, and its effect through the client; the filtered, batched relation walk
(`related_many`) the neighbour and cross-reference steps fetch with."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from DeepResearch.src.memory import MemorySystemClient
from DeepResearch.src.memory.backends.base import (
    MemoryBackend,
    MemoryFilter,
    MemoryRecord,
    RelatedRecord,
)
from DeepResearch.src.memory.backends.record import record_matches
from DeepResearch.src.memory.config import ProfileConfig, RetrievalConfig
from DeepResearch.src.memory.ranking.neighbours import (
    EXPANSION_TYPES,
    FOCUS,
    CrossReferenceExpansion,
    NeighbourSmoothing,
)
from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory

MakeClient = Callable[..., MemorySystemClient]


async def test_session_neighbours_walk_the_follows_chain_both_ways(make_client: MakeClient) -> None:
    client = make_client()
    ids = await client.store_many([{"content": f"turn number {i}"} for i in range(6)], session_id="a")
    other = await client.store_many([{"content": "another session"}], session_id="b")
    await client.flush()
    found = await client.backend.session_neighbours([ids[2], ids[0], other[0]], 2)
    by_depth = {r.record.id: r.depth for r in found[ids[2]]}
    assert by_depth == {ids[1]: 1, ids[3]: 1, ids[0]: 2, ids[4]: 2}
    assert {r.record.id: r.depth for r in found[ids[0]]} == {ids[1]: 1, ids[2]: 2}
    assert not found.get(other[0])  # alone in its session
    assert all(r.record.vector is not None for r in found[ids[2]])


def _item(rid: str, score: float, vector: list[float] | None = None) -> ScoredMemory:
    v = np.asarray(vector or [1.0, 0.0], dtype=np.float32)
    return ScoredMemory(MemoryRecord(rid, "s", "note", rid, 0.0, vector=v), 0.5, score)


def _ctx(chain: list[str], items: dict[str, ScoredMemory], **cfg: object) -> RankingContext:
    """A context whose neighbours are positions in `chain` (one session)."""
    records = {rid: MemoryRecord(rid, "s", "note", rid, 0.0,
                                 vector=np.array([0.0, 1.0], dtype=np.float32)) for rid in chain}
    records.update({rid: m.record for rid, m in items.items()})

    async def fetch(ids: list[str], radius: int) -> dict[str, list[RelatedRecord]]:
        out = {}
        for rid in ids:
            i = chain.index(rid)
            out[rid] = [
                RelatedRecord(records[chain[j]], "follows", abs(j - i))
                for j in range(max(0, i - radius), min(len(chain), i + radius + 1)) if j != i
            ]
        return out

    return RankingContext(
        query="q", query_vector=np.array([1.0, 0.0], dtype=np.float32), query_tokens=frozenset(),
        now=0.0, limit=5, retrieval=RetrievalConfig(neighbour_smoothing=cfg), profile=None,
        accept=lambda r: r.id != "blocked", fetch_neighbours=fetch,
        score_unseen=lambda sim: 0.25 * sim,
    )


async def test_smoothing_adds_weight_times_best_neighbour_score() -> None:
    items = {"a": _item("a", 1.0), "b": _item("b", 0.2), "c": _item("c", 0.6)}
    ctx = _ctx(["a", "b", "c"], items, weight=0.5, radius=1, expand=False)
    out = {m.record.id: m.score for m in await NeighbourSmoothing()(list(items.values()), ctx)}
    # b's neighbours a (1.0) and c (0.6): best 1.0; a and c both neighbour b (0.2)
    assert out == pytest.approx({"a": 1.1, "b": 0.7, "c": 0.7})


async def test_smoothing_radius_reaches_two_steps() -> None:
    items = {"a": _item("a", 1.0), "c": _item("c", 0.0)}
    ctx = _ctx(["a", "x", "c"], items, weight=0.5, radius=2, expand=False)
    out = {m.record.id: m.score for m in await NeighbourSmoothing()(list(items.values()), ctx)}
    assert out["c"] == pytest.approx(0.5) and set(out) == {"a", "c"}
    ctx1 = _ctx(["a", "x", "c"], {k: _item(k, v.score) for k, v in items.items()},
                weight=0.5, radius=1, expand=False)
    out1 = {m.record.id: m.score for m in await NeighbourSmoothing()(
        [_item("a", 1.0), _item("c", 0.0)], ctx1)}
    assert out1["c"] == pytest.approx(0.0)


async def test_expansion_adds_unseen_neighbours_the_filter_allows() -> None:
    items = {"a": _item("a", 1.0)}
    ctx = _ctx(["x", "a", "blocked"], items, weight=0.5, radius=1, expand=True)
    out = {m.record.id: m for m in await NeighbourSmoothing()(list(items.values()), ctx)}
    assert set(out) == {"a", "x"}  # "blocked" is refused by the retrieve's filter
    # x: cosine 0 -> score_unseen 0, plus 0.5 * a's 1.0
    assert out["x"].score == pytest.approx(0.5) and out["x"].similarity == 0.0
    assert out["a"].score == pytest.approx(1.0 + 0.5 * 0.0)


async def test_smoothing_is_off_when_disabled() -> None:
    ctx = _ctx(["a"], {"a": _item("a", 1.0)}, enabled=False)
    assert not NeighbourSmoothing().enabled(ctx)


@pytest.mark.integration
@pytest.mark.parametrize("smoothing", [True, False])
async def test_client_finds_the_answer_next_to_the_question(
    make_client: MakeClient, smoothing: bool
) -> None:
    """An answer turn that shares no words with the query is found through the turn before
    it, which matches the query; without smoothing a turn about the harbour beats it."""
    client = make_client(
        retrieval={"neighbour_smoothing": {"enabled": smoothing, "weight": 0.5, "radius": 1}}
    )
    turns = [
        "Lena: the weather was grey all week",
        "Lena: did you ever finish restoring that old sailing boat?",
        "Tom: yes, finally, last Sunday!",
        "Lena: my cat knocked a plant off the shelf",
        "Tom: I cooked a curry with too much chilli",
        "Lena: the train was late again this morning",
        "Tom: the harbour fees went up",
    ]
    ids = await client.store_many([{"content": t} for t in turns], session_id="chat")
    hits = await client.retrieve("restoring the sailing boat", top_k=2, session_id="chat")
    assert hits[0].id == ids[1]
    assert (ids[2] in [h.id for h in hits]) is smoothing


async def test_scan_order_is_the_chain_order(make_client: MakeClient) -> None:
    client = make_client()
    ids = await client.store_many([{"content": f"t{i}"} for i in range(3)], session_id="s")
    rows = await client.backend.scan(MemoryFilter(session_ids=("s",)))
    assert [r.id for r in rows] == ids


async def test_only_the_best_candidates_neighbourhoods_are_fetched() -> None:
    items = {str(i): _item(str(i), 1.0 - i / 100) for i in range(50)}
    ctx = _ctx([str(i) for i in range(50)], items, radius=1, expand=False)
    asked: list[str] = []
    fetch = ctx.fetch_neighbours

    async def spy(ids: list[str], radius: int) -> dict[str, list[RelatedRecord]]:
        asked.extend(ids)
        return await fetch(ids, radius)

    ctx.fetch_neighbours = spy
    out = {m.record.id: m.score for m in await NeighbourSmoothing()(list(items.values()), ctx)}
    assert asked == [str(i) for i in range(FOCUS)]  # the best FOCUS, whatever the limit
    assert out[str(FOCUS)] > 1.0 - FOCUS / 100  # linked to FOCUS - 1, whose neighbourhood was fetched
    assert out["45"] == pytest.approx(0.55)  # no fetched neighbour: unchanged


# --- the filtered, batched walk (related_many / session_neighbours with a filter) -------------
async def _graph(client: MemorySystemClient) -> dict[str, str]:
    """One session a, b, c, d (each FOLLOWS the one before: the client links them), plus
    b -references-> a and c -caused_by-> b. b is the only tool_execution (kind "drop"); the
    others pass the filters the tests use, so a filter that is ignored shows up as b."""
    g = {name: f"{client.session_id}-{name}" for name in "abcd"}
    keep, drop = {"kind": "keep"}, {"kind": "drop"}
    await client.store_many(
        [
            {"id": g["a"], "content": "plan the alignment", "metadata": keep},
            {"id": g["b"], "content": "ran the aligner", "memory_type": "tool_execution",
             "metadata": drop, "relations": [("references", g["a"])]},
            {"id": g["c"], "content": "the reads aligned well", "memory_type": "answer",
             "metadata": keep, "relations": [("caused_by", g["b"])]},
            {"id": g["d"], "content": "variants were called next", "memory_type": "answer",
             "metadata": keep},
        ],
    )
    await client.flush()
    return g


def _found(result: dict[str, list[RelatedRecord]], names: dict[str, str]) -> dict[str, list]:
    """{start name: [(name, relation, depth), ...]} in the order the backend gave them."""
    name = {v: k for k, v in names.items()}
    return {
        name.get(start, start): [(name.get(r.record.id, r.record.id), r.relation, r.depth)
                                 for r in found]
        for start, found in result.items()
    }


ANSWERS = MemoryFilter(memory_types=("answer",))
KEEP = MemoryFilter(metadata={"kind": ("keep",)}, live_at=1.0)


async def test_the_filtered_walk_passes_through_records_it_does_not_return(
    make_client: MakeClient,
) -> None:
    client = make_client()
    g = await _graph(client)
    backend = client.backend
    unfiltered = _found(await backend.session_neighbours([g["a"]], 2), g)
    assert unfiltered == {"a": [("b", "follows", 1), ("c", "follows", 2)]}
    for flt in (ANSWERS, KEEP):  # b is refused: c is still found, two steps away, through it
        assert _found(await backend.session_neighbours([g["a"]], 2, flt), g) == {
            "a": [("c", "follows", 2)]
        }
        assert _found(await backend.related_many([g["a"]], ["follows"], 2, flt), g) == {
            "a": [("c", "follows", 2)]
        }
    # A start whose every neighbour is refused is left out (or maps to nothing).
    nothing = await backend.related_many([g["a"]], ["follows"], 1, ANSWERS)
    assert not nothing.get(g["a"])
    none_pass = await backend.related_many([g["a"]], ["follows"], 2, MemoryFilter(ids=()))
    assert not none_pass.get(g["a"])


async def test_relation_types_restrict_the_walk(make_client: MakeClient) -> None:
    client = make_client()
    g = await _graph(client)
    backend = client.backend
    assert _found(await backend.related_many([g["a"]], ["references"], 3), g) == {
        "a": [("b", "references", 1)]
    }
    assert _found(await backend.related_many([g["a"]], ["references", "caused_by"], 3), g) == {
        "a": [("b", "references", 1), ("c", "caused_by", 2)]  # d is linked by FOLLOWS only
    }
    answers = await backend.related_many([g["a"]], ["references", "caused_by"], 3, ANSWERS)
    assert _found(answers, g) == {"a": [("c", "caused_by", 2)]}
    assert not (await backend.related_many([g["a"]], ["caused_by"], 3)).get(g["a"])
    assert not (await backend.related_many([g["a"]], [], 3)).get(g["a"])


@pytest.mark.parametrize("flt", [None, ANSWERS, KEEP], ids=["unfiltered", "answers", "metadata"])
async def test_related_many_equals_related_per_start(
    make_client: MakeClient, flt: MemoryFilter | None
) -> None:
    """The batched walk over several starts answers what `related` answers for each start,
    filtered."""
    client = make_client()
    g = await _graph(client)
    backend = client.backend
    starts = [g["c"], g["a"], g["d"], g["b"], "no-such-memory", g["a"]]
    compared = 0
    for types in (None, ["follows"], ["references", "caused_by"]):
        for depth in (1, 2, 3):
            expected = {}
            for start in dict.fromkeys(starts):
                found = [r for r in await backend.related(start, types, depth)
                         if flt is None or record_matches(r.record, flt)]
                if found:
                    expected[start] = found
            batched = await backend.related_many(starts, types, depth, flt)
            want = _found(expected, g)
            assert _found({k: v for k, v in batched.items() if v}, g) == want, (types, depth)
            compared += sum(map(len, expected.values()))
    assert compared >= 20  # the walks found something to compare


async def test_retrieve_binds_its_filter_to_the_ranking_fetches(make_client: MakeClient) -> None:
    """The fetches a ranking step gets return only what the retrieve's filter passes."""
    seen: dict[str, object] = {}

    class Probe(BaseStep):
        name = "probe"

        async def __call__(
            self, items: list[ScoredMemory], ctx: RankingContext
        ) -> list[ScoredMemory]:
            assert ctx.fetch_neighbours is not None and ctx.fetch_related is not None
            seen["neighbours"] = await ctx.fetch_neighbours([seen["a"]], 2)
            seen["related"] = await ctx.fetch_related([seen["a"]], ["references", "caused_by"], 2)
            return items

    client = make_client()
    g = await _graph(client)
    seen["a"] = g["a"]
    client.steps = [*client.steps, Probe()]
    await client.retrieve("aligned reads", filters={"memory_type": "answer"}, all_sessions=True)
    assert _found(seen["neighbours"], g) == {"a": [("c", "follows", 2)]}
    assert _found(seen["related"], g) == {"a": [("c", "caused_by", 2)]}


def test_a_backend_must_implement_the_batched_walk() -> None:
    with pytest.raises(TypeError, match="related_many"):
        type("NoWalk", (MemoryBackend,), {})()


async def test_cross_reference_expansion_asks_once_for_all_top_items() -> None:
    items = [_item("a", 1.0), _item("b", 0.8), _item("c", 0.6)]
    shared = MemoryRecord("x", "s", "note", "x", 0.0, vector=np.array([1.0, 0.0], dtype=np.float32))
    only_b = MemoryRecord("y", "s", "note", "y", 0.0, vector=np.array([0.0, 1.0], dtype=np.float32))
    calls: list[tuple[list[str], list[str] | None, int]] = []

    async def fetch(
        ids: list[str], types: list[str] | None, depth: int
    ) -> dict[str, list[RelatedRecord]]:
        calls.append((list(ids), types, depth))
        return {
            "a": [RelatedRecord(shared, "references", 1)],
            "b": [RelatedRecord(shared, "references", 1), RelatedRecord(only_b, "caused_by", 1)],
            "c": [RelatedRecord(only_b, "references", 1)],
        }

    ctx = _ctx(["a", "b", "c"], {m.record.id: m for m in items})
    ctx.limit, ctx.fetch_related = 2, fetch
    ctx.profile = ProfileConfig(cross_reference_expansion=True)
    out = {m.record.id: m for m in await CrossReferenceExpansion()(items, ctx)}
    assert calls == [(["a", "b"], EXPANSION_TYPES, 1)]  # one call, the top `limit` items
    assert out["x"].score == pytest.approx(0.5)  # from a, the better referrer
    assert out["y"].score == pytest.approx(0.4) and out["y"].similarity == 0.0
