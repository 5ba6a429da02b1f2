"""Memory overhead on a run of the offline workflow: memory disabled vs enabled (faiss).

Model loading is excluded: the embedder is loaded and warmed first, in this process, and a
warm-up run of each kind is not timed; the embedder's query-vector cache is emptied before
every run, as it is at the start of a `deepresearch` process. Then runs of the two kinds alternate (so machine noise
hits both alike) and the medians are compared. The memory runs share one store that already
holds earlier runs, so their hooks really recall, flag and merge (the realistic case, not an
empty store).

    .venv/bin/python -m benchmarks.bench_workflow [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from benchmarks.report import write_section
from DeepResearch.src.memory.embeddings import Embedder, get_embedder
from DeepResearch.src.workflow.run import create_run_services, run_research

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
QUESTIONS = (
    "Which aligner suits RNA-seq reads, as compared in lab_aligner_notes.md?",
    "Which aligner suits RNA-seq reads and how are variants called?",
)
TARGET = 1.15


def config(work: Path, memory: bool) -> DictConfig:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose(
            config_name="config",
            overrides=[
                f"outputs_dir={work / 'outputs'}",
                f"memory.enabled={'true' if memory else 'false'}",
                "memory.backend=faiss",
                f"memory.faiss.path={work / 'memory'}",
            ],
        )


class ModelClock:
    """Time spent inside the embedding model during a run, and how many texts it embedded
    (wraps `Embedder.embed`, which every memory embedding goes through)."""

    def __init__(self, embedder: Embedder) -> None:
        self.seconds, self.texts, self.calls = 0.0, 0, 0
        inner = embedder.embed

        def embed(texts):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return inner(texts)
            finally:
                self.seconds += time.perf_counter() - started
                self.texts += len(texts)
                self.calls += 1

        embedder.embed = embed  # type: ignore[method-assign]

    def reset(self) -> None:
        self.seconds, self.texts, self.calls = 0.0, 0, 0


async def timed_run(question: str, cfg: DictConfig, clock: ModelClock | None = None) -> float:
    # A CLI run starts with no cached query vectors: drop the ones earlier runs left.
    get_embedder(str(cfg.memory.vector_store.embedding_model)).clear_cache()
    services = create_run_services(cfg)  # agents and hooks are part of a run's cost
    if clock is not None:
        clock.reset()
    started = time.perf_counter()
    await run_research(question, cfg, services)
    return time.perf_counter() - started


async def measure(runs: int) -> dict[str, dict[str, list[float]]]:
    with tempfile.TemporaryDirectory(prefix="bench_workflow_") as folder:
        work = Path(folder)
        off, on = config(work, memory=False), config(work, memory=True)
        embedder = get_embedder(str(on.memory.vector_store.embedding_model))
        embedder.embed(["warm up the model"])
        clock = ModelClock(embedder)
        times: dict[str, dict[str, list[float]]] = {}
        for question in QUESTIONS:
            await timed_run(question, off)  # warm-up, not timed
            await timed_run(question, on)  # warm-up; also fills the store
            times[question] = {"disabled": [], "enabled": [], "model": [], "texts": [], "calls": []}
            for _ in range(runs):
                times[question]["disabled"].append(await timed_run(question, off))
                times[question]["enabled"].append(await timed_run(question, on, clock))
                times[question]["model"].append(clock.seconds)
                times[question]["texts"].append(clock.texts)
                times[question]["calls"].append(clock.calls)
        return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7, help="timed runs of each kind")
    args = parser.parse_args(argv if argv is not None else [])
    times = asyncio.run(measure(args.runs))
    rows = []
    ratios = []
    for question, kinds in times.items():
        off, on = statistics.median(kinds["disabled"]), statistics.median(kinds["enabled"])
        model = statistics.median(kinds["model"])
        texts, calls = statistics.median(kinds["texts"]), statistics.median(kinds["calls"])
        ratios.append(on / off)
        rows.append(
            f"| {question} | {off * 1000:.0f} | {on * 1000:.0f} | +{(on - off) * 1000:.0f} "
            f"| {on / off:.2f}x | {model * 1000:.0f} ({texts:.0f} texts, {calls:.0f} calls) "
            f"| {(on - model) / off:.2f}x |"
        )
        print(
            f"{question}: disabled {off * 1000:.0f} ms, enabled {on * 1000:.0f} ms, {on / off:.2f}x"
        )
    overall = statistics.median(ratios)
    verdict = "meets" if overall < TARGET else "misses"
    body = "\n".join(
        [
            f"Median of {args.runs} alternating runs per kind, in one process; the embedding "
            "model was loaded and warmed before timing; each memory run opens the faiss store "
            "(which holds the earlier runs), recalls before Plan/Execute/Synthesize, stores "
            "tool runs, plans, answers and the history bridge, merges nested loops, and closes.",
            "",
            "| question | memory disabled (ms) | memory enabled, faiss (ms) | added (ms) | ratio "
            "| of which in the embedding model (ms) | ratio without the model time |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"Overall (median of the ratios): **{overall:.2f}x**, which {verdict} the target "
            f"of < {TARGET:.2f}x. The offline run does no inference of its own, while memory "
            "must embed every memory it stores (plans, answers, tool runs, traces) and each "
            "loop's question once: all-MiniLM-L6-v2 on this 2-core CPU needs ~10 ms a text, "
            "so the model time alone exceeds 15 % of the run. The last column takes the model "
            "time out (store, recall, ranking, open/close). Against a run with a real "
            "language model (seconds per agent call) the added time is a few per cent.",
        ]
    )
    path = write_section(
        "workflow",
        "Memory overhead on a workflow run (offline model)",
        ".venv/bin/python -m benchmarks.bench_workflow (or make bench)",
        body,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
