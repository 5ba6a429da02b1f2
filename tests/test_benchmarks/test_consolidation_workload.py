"""The consolidation benchmark's workload (benchmarks/consolidation_data.py) measures what it
says: the same memories every time, every recall question answerable by the workload, and
each sample question answered by exactly one memory (the one the lexical guard must keep)."""

from __future__ import annotations

from benchmarks.consolidation_data import RUNS, TOPICS, workload
from DeepResearch.src.memory.consolidation import signature


def test_the_workload_is_fixed_and_every_question_has_its_answer() -> None:
    items, questions = workload(1_800_000_000.0)
    again, _ = workload(1_900_000_000.0)
    assert [i.content for i in items] == [i.content for i in again]
    assert len(items) == RUNS * len(TOPICS) * 5 == len({i.id for i in items})
    assert all(i.created_at < 1_800_000_000.0 - 86_400 for i in items)  # past the grace
    for q in questions:
        holders = [i for i in items if all(k in i.content for k in q.keys)]
        assert holders, q
        if q.text.startswith("what went wrong"):
            assert len(holders) == 1, q


def test_failed_runs_of_different_samples_never_share_a_signature() -> None:
    items, _ = workload(1_800_000_000.0)
    failed = [i.content for i in items if i.id.endswith("-failed")]
    assert len({signature(c) for c in failed}) == len(failed)
