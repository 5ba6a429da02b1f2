"""bench_service's own pieces: percentiles, the recorder, the lost count, the report."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from benchmarks.bench_service import missing_ids
from benchmarks.service_harness import Recorder, percentile
from benchmarks.service_report import report

pytestmark = pytest.mark.unit


def test_percentile_and_recorder() -> None:
    assert percentile([5, 1, 3], 0.5) == 3 and percentile([], 0.5) != percentile([], 0.5)
    rec = Recorder()
    rec.ms["search"] += [1.0, 2.0, 3.0, 4.0]
    s = rec.summary()["search"]
    assert s["n"] == 4 and s["p50"] in (2.0, 3.0) and s["p99"] == 4.0


def test_missing_ids_counts_what_the_database_lacks(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE records (id TEXT PRIMARY KEY)")
        conn.executemany("INSERT INTO records VALUES (?)", [("a",), ("b",)])
    assert missing_ids(db, ["a", "b", "b"]) == 0
    assert missing_ids(db, ["a", "c", "d"]) == 2


def test_report_names_the_goals() -> None:
    ep = {"n": 3, "p50": 1.0, "p95": 2.0, "p99": 3.0}
    out = {
        "sessions": 10, "stores_per_session": 1, "service_timeout": 300,
        "load_average_before": 1.0, "load_average_after": 2.0,
        "concurrency": {"seconds": 1.0, "requests": 30, "throughput_rps": 30.0, "errors": {},
                        "endpoints": {"POST /api/memory/memories": ep}},
        "latency": {"concurrent": 100, "seconds": 1.0, "throughput_rps": 3.0, "errors": {},
                    "endpoints": {"POST /api/memory/search": ep}},
        "growth": {"10": {**ep, "errors": 0}, "1000": {**ep, "errors": 0}}, "growth_ratio": 1.0,
        "lost": 0, "acked_total": 10, "graceful_stop": True, "fault_acked": 0,
    }
    text = report(out, "python -m benchmarks.bench_service")
    assert "errors: 0" in text and "0 of 10 acknowledged" in text
    assert "think time" not in text
    out["latency_think"] = {**out["latency"], "think_seconds": 5.0}
    text = report(out, "python -m benchmarks.bench_service")
    assert "closed loop" in text and "with think time** (a pause of 5 s" in text
    del out["concurrency"], out["latency"], out["latency_think"]  # a --phases growth run
    text = report(out, "python -m benchmarks.bench_service --phases growth")
    assert "growth** (2 sizes" in text and "closed loop" not in text
