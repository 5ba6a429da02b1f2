"""Benchmark results as JSON under outputs/bench-results/, so `make bench` can end with one
table of every target (benchmarks/run_all.py) whatever order the modules ran in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent.parent / "outputs" / "bench-results"


def save_result(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=True))
    return path


def load_result(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None
