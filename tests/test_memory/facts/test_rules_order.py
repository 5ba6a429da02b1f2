"""The single-valued timeline of rules.py against a direct computation: statements in any
arrival order (and one message naming two cities) give the same facts, one per run of
consecutive statements of one object, each closed when the next run starts."""

from __future__ import annotations

import random

import pytest

from DeepResearch.src.memory.facts.model import Fact
from DeepResearch.src.memory.facts.rules import apply_rules

NOW = 1_800_000_000.0


def arrive(statements: list[tuple[str, float, str]]) -> list[tuple[object, ...]]:
    pair: list[Fact] = []
    for n, (city, at, message) in enumerate(statements):
        new = Fact(id=f"f{n}", namespace="n", subject_id="ann", predicate="LIVES_IN",
                   object_id=None, object_value=city, confidence=0.9, evidence=(message,),
                   created_at=NOW + n, valid_at=at)
        pair.extend(apply_rules(new, pair, True, NOW + n).added)
    live = [f for f in pair if f.expired_at is None]
    return sorted((f.valid_at, f.object_value, f.invalid_at, f.evidence) for f in live)


def expected(statements: list[tuple[str, float, str]]) -> list[tuple[object, ...]]:
    runs: list[list] = []
    for city, at, message in sorted(statements, key=lambda s: (s[1], "=" + s[0].lower(), s[2])):
        if runs and runs[-1][0] == city:
            runs[-1][2].append(message)
        else:
            runs.append([city, at, [message]])
    return sorted((at, city, runs[i + 1][1] if i + 1 < len(runs) else None, tuple(messages))
                  for i, (city, at, messages) in enumerate(runs))


@pytest.mark.parametrize("seed", range(6))
def test_any_arrival_order_gives_the_timeline_of_the_statements_times(seed: int) -> None:
    rng = random.Random(seed)
    statements = [(rng.choice(["Berlin", "Paris", "Rome"]), 1.7e9 + rng.randrange(40) * 86400,
                   f"m{i}") for i in range(120)]
    statements.append(("Oslo", statements[5][1], statements[5][2]))  # one message, two cities
    want = expected(statements)
    for _ in range(3):
        rng.shuffle(statements)
        got = arrive(statements)
        assert got == want
        assert sum(end is None for _, _, end, _ in got) == 1
