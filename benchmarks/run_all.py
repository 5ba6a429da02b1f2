"""`make bench`: run every benchmark module in turn. Each module exposes `main(argv)` and writes
its own section of the docs. Add a module by adding its name (and arguments) to MODULES."""

from __future__ import annotations

import importlib
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MODULES = [
    "benchmarks.bench_node_memory",
    "benchmarks.bench_hot_tier",
    "benchmarks.bench_embedding --recall",
    "benchmarks.bench_memory",
    "benchmarks.bench_million",
    "benchmarks.bench_checkpoint",
    "benchmarks.bench_neo4j",
    "benchmarks.bench_facts",
    "benchmarks.bench_facts --backend neo4j",
    "benchmarks.bench_service",
    "benchmarks.bench_service_open",
    "benchmarks.bench_agent_service",
    "benchmarks.bench_sessions",
    "benchmarks.bench_extraction_quality",
    "benchmarks.bench_consolidation",
    "benchmarks.locomo.consolidated",
    "benchmarks.bench_full_context",
    "benchmarks.summary",  # last: the table of every target, from the results above
]


def main() -> int:
    failed = []
    for entry in MODULES:
        name, *argv = entry.split()
        print(f"== {entry}", flush=True)
        try:
            main_of = importlib.import_module(name).main
            main_of(argv) if argv else main_of()
        except Exception:
            traceback.print_exc()
            failed.append(entry)
    if failed:
        print(f"benchmarks failed: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
