"""bench_workflow's verdict: every question under the target, and whether beyond the noise."""

from __future__ import annotations

from benchmarks.bench_workflow import verdict


def test_met_only_when_every_question_is_under_the_target() -> None:
    assert "meets the target" in verdict([1.08, 1.10], [1.12, 1.14])
    assert "not met yet" in verdict([1.08, 1.16], [1.12, 1.20])
    assert "misses the target" in verdict([1.16, 1.18], [1.20, 1.20])


def test_a_median_under_the_target_within_the_noise_says_so() -> None:
    said = verdict([1.11, 1.14], [1.18, 1.22])
    assert "meets" not in said
    assert "worst 1.14x" in said and "reaches 1.22x" in said
