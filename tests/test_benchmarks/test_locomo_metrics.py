"""The LoCoMo harness: recall metric, memory content per turn, question selection, fusion."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks.locomo.baselines import BM25Retriever, rrf, top_k
from benchmarks.locomo.data import (
    LocomoDataError,
    Turn,
    data_dir,
    load_conversations,
    parse_conversation,
    select_questions,
)
from benchmarks.locomo.metrics import RecallTable, percentile_ms, recall_at_k

pytestmark = pytest.mark.unit


def _raw() -> dict:
    return {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_2_date_time": "9:00 am on 2 May, 2023",
        "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "Back from Oslo."}],
        "session_10_date_time": "1:00 pm on 9 June, 2023",
        "session_10": [
            {"speaker": "Ann", "dia_id": "D10:1", "text": "Look!", "blip_caption": "a red kite"},
            {"speaker": "Bob", "dia_id": "D10:2", "text": "Nice."},
        ],
        "session_1_date_time": "8:00 am on 1 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob!"}],
        "session_11_date_time": "a date without turns",
        "qa": [
            {"question": "Where was Bob?", "answer": "Oslo", "evidence": ["D2:1"], "category": 4},
            {"question": "When?", "answer": "May", "evidence": ["D2:1", "D1:1"], "category": 2},
            {
                "question": "Unanswerable?",
                "adversarial_answer": "x",
                "evidence": ["D1:1"],
                "category": 5,
            },
            {"question": "No evidence?", "answer": "y", "evidence": [], "category": 1},
        ],
    }


def test_recall_counts_evidence_found_in_the_top_k() -> None:
    ranked = ["a", "b", "c", "d"]
    assert recall_at_k(ranked, ["c"], 1) == 0.0
    assert recall_at_k(ranked, ["c"], 3) == 1.0
    assert recall_at_k(ranked, ["a", "d", "z"], 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranked, ["a", "d", "z"], 20) == pytest.approx(2 / 3)
    assert recall_at_k(ranked, ["a", "a"], 1) == 1.0  # evidence is a set
    with pytest.raises(ValueError):
        recall_at_k(ranked, [], 5)


def test_table_averages_over_questions_overall_and_per_category() -> None:
    table = RecallTable(ks=(1, 2))
    table.add(1, ["x", "y"], ["y"])  # R@1 0, R@2 1
    table.add(2, ["x", "y"], ["x"])  # R@1 1, R@2 1
    table.add(2, ["p", "q"], ["x", "q"])  # R@1 0, R@2 0.5
    assert table.mean() == pytest.approx({1: 1 / 3, 2: 2.5 / 3})
    assert table.mean(2) == pytest.approx({1: 0.5, 2: 0.75})
    assert table.count(2) == 2 and table.categories() == [1, 2]
    assert all(math.isnan(v) for v in table.mean(4).values())


def test_percentiles_are_in_milliseconds() -> None:
    seconds = [0.001 * i for i in range(1, 101)]
    assert percentile_ms(seconds, 50) == pytest.approx(50.5)
    assert percentile_ms(seconds, 95) == pytest.approx(95.05)


def test_content_appends_the_photo_caption_only_when_present() -> None:
    plain = Turn("D1:1", "Ann", "Hi Bob!", 1, "8:00 am on 1 May, 2023")
    photo = Turn("D1:2", "Ann", "Look!", 1, "8:00 am on 1 May, 2023", "a red kite")
    assert plain.content == "Ann: Hi Bob!"
    assert photo.content == "Ann: Look! [shares a photo: a red kite]"
    assert photo.metadata == {
        "dia_id": "D1:2",
        "session": 1,
        "session_date": "8:00 am on 1 May, 2023",
    }


def test_turns_come_in_numeric_session_order_with_their_session_date() -> None:
    conv = parse_conversation("t", _raw())
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D2:1", "D10:1", "D10:2"]
    assert [t.session for t in conv.turns] == [1, 2, 10, 10]
    assert conv.turns[2].session_date == "1:00 pm on 9 June, 2023"
    assert conv.turns[2].content == "Ann: Look! [shares a photo: a red kite]"


def test_only_categories_1_to_4_with_evidence_are_scored() -> None:
    questions = select_questions(_raw()["qa"])
    assert [q.question for q in questions] == ["Where was Bob?", "When?"]
    assert questions[1].evidence == ("D2:1", "D1:1") and questions[1].category == 2


def test_loader_reads_locomo_dir_and_rejects_bad_folders(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LOCOMO_DIR", str(tmp_path))
    assert data_dir() == tmp_path.resolve()
    with pytest.raises(LocomoDataError, match=r"No \*\.json"):
        load_conversations()
    (tmp_path / "2.json").write_text(json.dumps(_raw()))
    (tmp_path / "10.json").write_text(json.dumps(_raw()))
    assert [c.name for c in load_conversations()] == ["2", "10"]
    assert [c.name for c in load_conversations(limit=1)] == ["2"]
    (tmp_path / "3.json").write_text(json.dumps({"qa": []}))
    with pytest.raises(LocomoDataError, match="session_N"):
        load_conversations()
    (tmp_path / "3.json").write_text("{not json")
    with pytest.raises(LocomoDataError, match="not readable JSON"):
        load_conversations()
    with pytest.raises(LocomoDataError, match="not found"):
        load_conversations(tmp_path / "missing")


def test_rrf_sums_reciprocal_ranks() -> None:
    # 7: 1/61 + 1/62 beats 3: 1/61 alone; 5 (rank 2 in one list) beats 9 (rank 3).
    assert rrf([[7, 5, 9], [3, 7]], 10, constant=60) == [7, 3, 5, 9]
    assert rrf([[1, 2], [2, 1]], 1) == [1]  # a tie goes to the lower index
    assert top_k(np.array([0.5, 2.0, 0.5, 1.0]), 3) == [1, 3, 0]


def test_bm25_ranks_the_turn_sharing_rare_words_first_and_drops_stop_words() -> None:
    bm25 = BM25Retriever(["Ann: I adopted a puppy", "Bob: the weather is nice", "Ann: hi"])
    assert bm25.search("Who adopted the puppy?", 1) == [0]
    assert bm25.scores("the is a")[1] == 0.0
