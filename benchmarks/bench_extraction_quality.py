"""Fact-extraction quality: precision and recall of the offline extractor, per predicate, on
the conversations of benchmarks/extraction_eval/ (dev, heldout, both), against the facts a
careful reader wrote for them. Goal: precision >= 0.90 and recall >= 0.75 overall.

    .venv/bin/python -m benchmarks.bench_extraction_quality [--no-write] [--errors]

`--no-write`: print only (docs/ and outputs/ untouched). `--errors`: also list the dev
file's missed and wrong facts (never the held-out file's: it is for measuring only).
How facts are compared: benchmarks/extraction_quality.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.extraction_quality import (
    FILES,
    PREDICATES,
    Counts,
    EvalDataError,
    Scores,
    evaluate_files,
    load_set,
)
from benchmarks.report import write_section
from benchmarks.results import save_result

COMMAND = "python -m benchmarks.bench_extraction_quality"
GOAL_PRECISION, GOAL_RECALL = 0.90, 0.75


def _fig(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _cells(c: Counts) -> str:
    return f"{_fig(c.precision)} | {_fig(c.recall)}"


def table(results: dict[str, Scores]) -> str:
    gold = {name: {p: c.tp + c.fn for p, c in s.per_predicate.items()}
            for name, s in results.items()}
    lines = ["| predicate | facts (dev / heldout) | dev P | dev R | heldout P | heldout R "
             "| both P | both R | both F1 |", "|---|---|---|---|---|---|---|---|---|"]
    for p in PREDICATES:
        both = results["both"].per_predicate[p]
        lines.append(f"| `{p}` | {gold['dev'][p]} / {gold['heldout'][p]} | "
                     f"{_cells(results['dev'].per_predicate[p])} | "
                     f"{_cells(results['heldout'].per_predicate[p])} | {_cells(both)} | "
                     f"{_fig(both.f1)} |")
    o = {name: s.overall for name, s in results.items()}
    lines.append(f"| **all** | {o['dev'].tp + o['dev'].fn} / {o['heldout'].tp + o['heldout'].fn}"
                 f" | {_cells(o['dev'])} | {_cells(o['heldout'])} | "
                 f"**{_fig(o['both'].precision)}** | **{_fig(o['both'].recall)}** | "
                 f"{_fig(o['both'].f1)} |")
    return "\n".join(lines)


def body(results: dict[str, Scores]) -> str:
    sizes = {name: load_set(name) for name in FILES}
    counts = ", ".join(f"{name} {len(convs)} conversations / "
                       f"{sum(len(c.messages) for c in convs)} messages"
                       for name, convs in sizes.items())
    both = results["both"].overall
    met = [f"precision {_fig(both.precision)} (goal >= {GOAL_PRECISION:.2f}: "
           f"{'met' if (both.precision or 0) >= GOAL_PRECISION else 'not met'})",
           f"recall {_fig(both.recall)} (goal >= {GOAL_RECALL:.2f}: "
           f"{'met' if (both.recall or 0) >= GOAL_RECALL else 'not met'})"]
    return "\n".join([
        f"Offline extractor (`extract(messages)`, no model) on benchmarks/extraction_eval/ "
        f"({counts}). P: precision, R: recall; a fact is (subject, predicate, object, "
        "current), compared within its conversation; `n/a`: nothing extracted or nothing to "
        "find.",
        "",
        table(results),
        "",
        f"Both files: {'; '.join(met)}; {both.tp} facts found, {both.fn} missed, "
        f"{both.fp} wrong.",
    ])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true",
                        help="print only; leave docs/ and outputs/ untouched")
    parser.add_argument("--errors", action="store_true",
                        help="also list the dev file's missed and wrong facts")
    args = parser.parse_args(argv if argv is not None else [])
    try:
        results = evaluate_files()
    except EvalDataError as exc:
        print(f"bench_extraction_quality: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    text = body(results)
    print(text)
    if args.errors:
        for label, rows in (("missed", results["dev"].missed), ("wrong", results["dev"].wrong)):
            print(f"\ndev, {label} ({len(rows)}):")
            for conv_id, (s, p, o, current) in rows:
                print(f"  {conv_id}: {s} {p} {o} ({'now' if current else 'past'})")
    if args.no_write:
        print("\n(docs/ and outputs/ not written: --no-write)")
        return
    save_result("extraction_quality", {name: s.as_dict() for name, s in results.items()})
    path = write_section("extraction_quality", "Fact-extraction quality", COMMAND, text)
    print(f"written: {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
