"""The extraction-quality scorer (benchmarks/extraction_quality.py) on a hand-made case, and the
evaluation set's two files (benchmarks/extraction_eval/) against their format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_extraction_quality
from benchmarks.extraction_quality import (
    FILES,
    PREDICATES,
    EvalDataError,
    extracted_keys,
    gold_keys,
    load_set,
    messages_of,
    parse_set,
    score,
)
from DeepResearch.src.memory.facts.model import ExtractedFact

pytestmark = pytest.mark.unit


def _conversation() -> list[dict]:
    return [{
        "id": "c1", "channel": "general",
        "messages": [
            {"id": "m1", "author": "Alice", "timestamp": "2025-03-01T09:00:00Z",
             "text": "Switched from Google to Stripe, and I'm on the platform team now"},
            {"id": "m2", "author": "Bob", "timestamp": "2025-03-01T09:05:00Z",
             "text": "nice! Alice and I go way back btw"},
        ],
        "facts": [
            {"message": "m1", "subject": "Alice", "predicate": "WORKED_AT",
             "object": "Google", "current": False},
            {"message": "m1", "subject": "Alice", "predicate": "WORKS_AT",
             "object": "Stripe", "current": True},
            {"message": "m1", "subject": "Alice", "predicate": "MEMBER_OF",
             "object": "platform team", "current": True},
            {"message": "m2", "subject": "Bob", "predicate": "KNOWS", "object": "Alice",
             "current": True},
        ],
    }]


def _fact(subject: str, predicate: str, obj: str, evidence: str = "m1",
          invalid_at: float | None = None) -> ExtractedFact:
    return ExtractedFact(subject=subject, predicate=predicate, object=obj, evidence=evidence,
                         confidence=0.9, invalid_at=invalid_at)


def _scores(extracted: list[ExtractedFact]):
    [conv] = parse_set(_conversation())
    return score({"c1": gold_keys(conv)},
                 {"c1": extracted_keys(extracted, messages_of(conv))})


def _perfect() -> list[ExtractedFact]:
    # The same facts as the reader's, as an extractor may phrase them: a job closed at the
    # message's time instead of WORKED_AT, other case and an article, KNOWS the other way
    # round, and a structural MENTIONED that does not count.
    [message] = [m for m in messages_of(parse_set(_conversation())[0]) if m.message_id == "m1"]
    return [_fact("Alice", "WORKS_AT", "Google", invalid_at=message.timestamp),
            _fact("alice", "WORKS_AT", "Stripe"),
            _fact("Alice", "MEMBER_OF", "the Platform  Team"),
            _fact("Alice", "KNOWS", "Bob", evidence="m2"),
            _fact("Alice", "MENTIONED", "Google")]


def test_perfect_extraction_scores_one() -> None:
    overall = _scores(_perfect()).overall
    assert (overall.tp, overall.fp, overall.fn) == (4, 0, 0)
    assert overall.precision == overall.recall == overall.f1 == 1.0


def test_a_missing_fact_lowers_recall_only() -> None:
    scores = _scores([f for f in _perfect() if f.object != "Stripe"])
    assert scores.overall.recall == 0.75 and scores.overall.precision == 1.0
    assert scores.per_predicate["WORKS_AT"].recall == 0.0
    assert scores.missed == [("c1", ("alice", "WORKS_AT", "stripe", True))]


def test_a_wrong_fact_lowers_precision_only() -> None:
    scores = _scores([*_perfect(), _fact("Alice", "LIVES_IN", "Google")])
    assert scores.overall.precision == 0.8 and scores.overall.recall == 1.0
    assert scores.per_predicate["LIVES_IN"].precision == 0.0
    assert scores.wrong == [("c1", ("alice", "LIVES_IN", "google", True))]


def test_a_current_job_read_as_ended_is_wrong_and_missed() -> None:
    scores = _scores([*[f for f in _perfect() if f.object != "Stripe"],
                      _fact("Alice", "WORKED_AT", "Stripe")])
    assert scores.per_predicate["WORKS_AT"].fn == 1
    assert scores.per_predicate["WORKED_AT"].fp == 1


@pytest.mark.parametrize("name", FILES)
def test_the_data_files_validate(name: str) -> None:
    conversations = load_set(name)
    messages = [m for c in conversations for m in c.messages]
    facts = [f for c in conversations for f in c.facts]
    assert len(messages) >= 150
    assert {f["predicate"] for f in facts} == set(PREDICATES)
    with_facts = {f["message"] for f in facts}
    assert 0.2 < 1 - len(with_facts) / len(messages) < 0.6  # messages that state nothing
    for conv in conversations:
        ids = {m["id"] for m in conv.messages}
        assert all(f["message"] in ids for f in conv.facts)


def test_the_two_files_hold_at_least_300_messages() -> None:
    assert sum(len(c.messages) for name in FILES for c in load_set(name)) >= 300


@pytest.mark.parametrize(("change", "named"), [
    (lambda c: c["facts"][0].update(predicate="LOVES"), "unknown predicate 'LOVES'"),
    (lambda c: c["facts"][0].update(message="m9"), "message 'm9' is not in the conversation"),
    (lambda c: c["facts"][1].update(current=False), "WORKS_AT with current=False"),
    (lambda c: c["messages"][1].update(id="m1"), "repeated message id 'm1'"),
    (lambda c: c["messages"][0].update(timestamp="yesterday"), "'yesterday'"),
    (lambda c: c["facts"][2].pop("current"), "current must be true or false"),
])
def test_a_bad_file_is_refused_naming_the_value(change, named: str, tmp_path: Path) -> None:
    raw = _conversation()
    change(raw[0])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(EvalDataError, match="conversation 'c1'") as error:
        load_set(path)
    assert named in str(error.value) and str(path) in str(error.value)


def test_the_benchmark_prints_its_table_and_writes_nothing_with_no_write(capsys) -> None:
    docs = Path(bench_extraction_quality.__file__).resolve().parent.parent / "docs"
    before = (docs / "fact_extraction.md").read_text()
    bench_extraction_quality.main(["--no-write"])
    out = capsys.readouterr().out
    assert "| `HAS_SKILL` |" in out and "| **all** |" in out
    assert "not written" in out
    assert (docs / "fact_extraction.md").read_text() == before


def test_a_usage_error_exits_2() -> None:
    with pytest.raises(SystemExit) as exited:
        bench_extraction_quality.main(["--bogus"])
    assert exited.value.code == 2
