"""The LoCoMo consolidation benchmark on a tiny conversation: consolidate merges the two
near-identical turns, and the merged memory counts as both turns, so a question whose evidence
is the archived one is still answered."""

from __future__ import annotations

import asyncio
from pathlib import Path

from benchmarks.locomo.consolidated import measure
from benchmarks.locomo.data import parse_conversation


def _raw() -> dict:
    turns = [
        ("Ann", "Thanks, Bob! See you at the pottery class on Friday."),
        ("Bob", "I fixed the bike chain this morning."),
        ("Ann", "Thanks, Bob! See you at the pottery class on Friday!"),
        ("Bob", "The garden needs water again."),
    ]
    return {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "8:00 am on 1 May, 2023",
        "session_1": [{"speaker": s, "dia_id": f"D1:{i + 1}", "text": t}
                      for i, (s, t) in enumerate(turns)],
        "qa": [{"question": "When is the pottery class?", "answer": "Friday",
                "evidence": ["D1:3"], "category": 4}],
    }


def test_a_merged_turn_still_answers_through_its_consolidated_memory(tmp_path: Path) -> None:
    conv = parse_conversation("c1", _raw())
    result = asyncio.run(measure([conv], str(tmp_path / "store")))
    assert result["memories_before"] == 4 and result["memories_after"] == 3
    assert result["clusters"] == 1 and result["consolidated"] == 2
    assert result["before"]["r10"] == result["after"]["r10"] == 1.0
    assert result["worst_change"] == 0.0
