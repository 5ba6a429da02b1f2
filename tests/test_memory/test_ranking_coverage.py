"""The final list: session coverage (distinct episodes once they are relevant), the top_k
prefix property (a shorter list is the start of a longer one), and lexical matches that the
similarity floor no longer cuts. Real embedder and backends, no mocks."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from DeepResearch.src.memory import MemorySystemClient
from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.config import ProfileConfig, RetrievalConfig
from DeepResearch.src.memory.ranking.coverage import SessionCoverage, episode
from DeepResearch.src.memory.ranking.types import RankingContext, ScoredMemory

MakeClient = Callable[..., MemorySystemClient]
DAY0 = datetime(2024, 3, 1, 10, 0, tzinfo=UTC)


def _item(rid: str, session: str, day: int, score: float) -> ScoredMemory:
    record = MemoryRecord(rid, session, "note", rid, 0.0,
                          event_at=(DAY0 + timedelta(days=day)).timestamp())
    return ScoredMemory(record, 0.5, score)


def _ctx(limit: int, profile: ProfileConfig | None = None, **coverage: object) -> RankingContext:
    return RankingContext(
        query="q", query_vector=np.zeros(2, dtype=np.float32), query_tokens=frozenset(),
        now=0.0, limit=limit, retrieval=RetrievalConfig(session_coverage=coverage),
        profile=profile, accept=lambda r: True,
    )


def test_an_episode_is_a_session_on_one_day() -> None:
    a, b, c = _item("a", "s", 0, 1), _item("b", "s", 1, 1), _item("c", "t", 0, 1)
    assert len({episode(m.record) for m in (a, b, c)}) == 3
    assert episode(_item("d", "s", 0, 1).record) == episode(a.record)


async def test_each_pick_from_an_episode_lowers_its_next_one() -> None:
    items = [_item(f"a{i}", "s", 0, 1.0 - i * 0.01) for i in range(4)] + [_item("b", "t", 3, 0.85)]
    out = await SessionCoverage()(items, _ctx(3, penalty=0.1, quota=1))
    # a0 (1.0), then a1 at 0.99 - 0.1 = 0.89 beats b 0.85; a2 at 0.98 - 0.2 = 0.78 does not
    assert [m.record.id for m in out[:3]] == ["a0", "a1", "b"]
    assert [m.score for m in out] == sorted((m.score for m in out), reverse=True)
    # with the penalty 0 (the profile switches it off) the order is the score order
    off = ProfileConfig(session_coverage_penalty=0.0)
    assert not SessionCoverage().enabled(_ctx(3, off))


async def test_the_first_quota_picks_of_an_episode_are_free() -> None:
    items = [_item(f"a{i}", "s", 0, 1.0 - i * 0.01) for i in range(4)] + [_item("b", "t", 3, 0.9)]
    out = await SessionCoverage()(items, _ctx(4, penalty=0.1, quota=2))
    # a0, a1 free; a2 pays 0.1 (0.88) and b (0.9) goes first; then a2
    assert [m.record.id for m in out[:4]] == ["a0", "a1", "b", "a2"]


async def test_an_irrelevant_episode_is_not_pulled_in() -> None:
    items = [_item(f"a{i}", "s", 0, 1.0 - i * 0.01) for i in range(5)] + [_item("z", "t", 3, 0.2)]
    out = await SessionCoverage()(items, _ctx(5, penalty=0.1))
    assert "z" not in [m.record.id for m in out[:5]]


async def _trips(client: MemorySystemClient) -> None:
    first = [
        "We went hiking in the Alps and climbed a steep mountain trail",
        "The mountain trail in the Alps was steep, hiking took all day",
        "Hiking the Alps mountain trail, we saw glaciers from the top",
        "After hiking the mountain trail we slept in an Alps hut",
        "The Alps hiking trip: the mountain trail was the best part",
        "Hiking down the Alps mountain trail my knees hurt",
    ]
    await client.store_many([{"content": t, "event_at": DAY0} for t in first], session_id="alps")
    await client.store_many(
        [{"content": "Weekend hiking on a mountain trail in Scotland with my sister",
          "event_at": DAY0 + timedelta(days=40)}], session_id="scotland")
    await client.store_many(
        [{"content": "I baked sourdough bread and a lemon cake", "event_at": DAY0 + timedelta(days=9)}],
        session_id="kitchen")


async def test_coverage_lets_another_relevant_episode_in(make_client: MakeClient) -> None:
    query = "Where did I go hiking on a mountain trail?"
    alone = make_client(retrieval={"session_coverage": {"enabled": False}})
    await _trips(alone)
    before = await alone.retrieve(query, top_k=5, all_sessions=True)
    assert {h.document.session_id for h in before} == {"alps"}  # one session fills the list
    covered = make_client(
        retrieval={"session_coverage": {"enabled": True, "penalty": 0.2, "quota": 2}}
    )
    await _trips(covered)
    after = await covered.retrieve(query, top_k=5, all_sessions=True)
    sessions = [h.document.session_id for h in after]
    assert "scotland" in sessions and "kitchen" not in sessions
    assert sessions[0] == "alps"


@pytest.mark.parametrize("coverage", [False, True])
async def test_a_shorter_list_is_the_start_of_a_longer_one(
    make_client: MakeClient, coverage: bool
) -> None:
    client = make_client(retrieval={"session_coverage": {"enabled": coverage}})
    topics = ["hiking", "baking", "chess", "taxes", "guitar", "garden", "python", "sailing"]
    for s, topic in enumerate(topics):
        await client.store_many(
            [{"content": f"Notes on {topic}, part {i}: {topic} practice and {topics[(s + i) % 8]}",
              "event_at": DAY0 + timedelta(days=s)} for i in range(12)],
            session_id=f"s{s}",
        )
    for query in ("hiking and sailing practice", "what about taxes?", "guitar part 3"):
        short = await client.retrieve(query, top_k=10, all_sessions=True)
        long = await client.retrieve(query, top_k=50, all_sessions=True)
        assert [h.id for h in short] == [h.id for h in long[:10]]
        assert [h.score for h in short] == pytest.approx([h.score for h in long[:10]])


async def test_a_lexical_match_is_never_cut_by_min_similarity(make_client: MakeClient) -> None:
    client = make_client(retrieval={"min_similarity": 0.2})
    rare = await client.store("Ticket QZX-4471 was escalated to the storage team")
    other = await client.store("The storage team had lunch together on Friday")
    await client.flush()
    [record] = await client.backend.get([rare])
    # a query vector pointing away from the memory: its cosine is -1, below the floor
    away = -np.asarray(record.vector, dtype=np.float32)
    hits = await client.retrieve("qzx", query_vector=away, top_k=5)
    assert [h.id for h in hits] == [rare]
    assert hits[0].similarity < 0.2 and hits[0].signals["lexical"] > 0
    assert other not in [h.id for h in hits]  # no shared word, cosine below the floor: cut
