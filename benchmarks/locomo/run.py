"""`make bench-locomo`: retrieval quality on LoCoMo, the project against three baselines.

Follows ../shared/bench/locomo/README.md: one memory per turn, one session per conversation,
recall@1/5/10/20 of the evidence dia_ids per question (categories 1-4), overall and per
category, and the p50/p95 latency of the project's retrieve calls. Writes its section of
docs/benchmarks.md and docs/locomo_recall.png. LOCOMO_DIR names another data folder.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from benchmarks.locomo.baselines import RRF_DEPTH, RRF_K, run_baselines
from benchmarks.locomo.data import (
    DEFAULT_DIR,
    REPO_ROOT,
    LocomoDataError,
    data_dir,
    load_conversations,
)
from benchmarks.locomo.metrics import RecallTable, percentile_ms
from benchmarks.locomo.project import client_available, run_project
from benchmarks.locomo.render import (
    category_table,
    overall_table,
    plot_recall,
    reference_check,
)
from benchmarks.report import write_section
from benchmarks.results import save_result

PLOT_PATH = REPO_ROOT / "docs" / "locomo_recall.png"
PROJECT = "project (MemorySystemClient, defaults)"


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only-baselines", action="store_true", help="skip the project run")
    parser.add_argument(
        "--limit-conversations", type=int, metavar="N", help="first N conversations (quick check)"
    )
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/ untouched")
    return parser.parse_args(argv)


def _command(argv: list[str]) -> str:
    env = os.environ.get("LOCOMO_DIR")
    if not argv and not env:
        return "make bench-locomo"
    prefix = f"LOCOMO_DIR={shlex.quote(env)} " if env else ""
    return prefix + "python benchmarks/locomo/run.py " + " ".join(map(shlex.quote, argv))


def main(argv: list[str] | None = None) -> int:
    raw_argv = sys.argv[1:] if argv is None else argv
    args = _parse(raw_argv)
    folder = data_dir()
    try:
        conversations = load_conversations(folder, args.limit_conversations)
    except LocomoDataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    n_turns = sum(len(c.turns) for c in conversations)
    n_questions = sum(len(c.questions) for c in conversations)
    print(
        f"LoCoMo: {folder} — {len(conversations)} conversations, {n_turns} turns, "
        f"{n_questions} scored questions"
    )

    tables: dict[str, RecallTable] = {}
    latency_line = "project not run (--only-baselines)"
    if not args.only_baselines:
        if client_available():
            result = run_project(conversations)
            tables[PROJECT] = result.table
            latency_line = (
                f"project retrieve latency (top_k=20, incl. query embedding): "
                f"p50 {percentile_ms(result.latencies, 50):.1f} ms, "
                f"p95 {percentile_ms(result.latencies, 95):.1f} ms over "
                f"{len(result.latencies)} calls; store_many of all turns "
                f"{result.store_seconds:.1f} s"
            )
        else:
            print(
                "error: DeepResearch.src.memory.MemorySystemClient is not importable; "
                "use --only-baselines to measure the baselines alone",
                file=sys.stderr,
            )
            return 1
    tables.update(run_baselines(conversations))

    overall, by_category = overall_table(tables), category_table(tables)
    if PROJECT in tables and not args.limit_conversations:
        mean = tables[PROJECT].mean()
        save_result("locomo", {
            "r5": mean[5], "r10": mean[10],
            "multi_hop_r10": tables[PROJECT].mean(1)[10],
            "sessions_in_top10": tables[PROJECT].mean_sessions(),
        })
    print("\n" + overall + "\n\n" + by_category + "\n\n" + latency_line)
    is_default = folder == DEFAULT_DIR.resolve() and not args.limit_conversations
    if is_default:
        print(reference_check(tables))

    if args.no_write or args.limit_conversations:
        print("\n(docs/ not written: --no-write or a partial run)")
        return 0
    plot_recall(tables, PLOT_PATH, f"LoCoMo recall@k ({folder.name}, {n_questions} questions)")
    body = "\n\n".join(
        [
            f"Data: `{folder}` — {len(conversations)} conversations, {n_turns} turns (one memory "
            f"each, its session's date as `event_at`; questions asked `as_of` the "
            f"conversation's last session), {n_questions} questions of categories 1-4 with "
            "evidence. Protocol: "
            "../shared/bench/locomo/README.md. Baselines in the same run: bm25s (Lucene BM25, "
            "English stop words, no stemming), all-MiniLM-L6-v2 with exact inner product "
            f"(FAISS IndexFlatIP), RRF (k={RRF_K}) over the top {RRF_DEPTH} of each.",
            "### Recall@k, all questions\n\n" + overall,
            latency_line + ".",
            *([reference_check(tables) + " (README reference)."] if is_default else []),
            "![recall@k](locomo_recall.png)",
            "### Recall@k by category\n\n" + by_category,
        ]
    )
    path = write_section("locomo", "Retrieval quality: LoCoMo", _command(raw_argv), body)
    print(f"\nwrote {path} and {PLOT_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
