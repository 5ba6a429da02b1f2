"""Embedding runtimes for all-MiniLM-L6-v2, compared in one process on LoCoMo turns.

Runtimes: sentence-transformers (torch, the raw library: the base of the ratios), ONNX Runtime
fp32 (`onnx-fp32`, what `auto` runs), ONNX Runtime int8 (`onnx`). Interleaved (each repeat runs every runtime in turn, the
order rotating), medians over the repeats:
- batched throughput: all texts encoded at batch 32 and at 128, texts/s;
- one query: process CPU time (time.process_time, every thread) over single-text calls, ms;
- cosine of each runtime's vectors to sentence-transformers' (min and mean);
- with --recall: LoCoMo recall@10 of each ONNX runtime, dense alone (exact inner product over
  the turns) and through the whole retrieve pipeline (make bench-locomo's protocol, the client
  configured with that `embedding_runtime`), each with a paired bootstrap 95% interval of the
  int8 - fp32 difference. The goal for int8 is on the whole pipeline: within 0.005 of fp32.

    python -m benchmarks.bench_embedding [--texts 2000] [--repeats 3] [--queries 200] [--recall]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.locomo.data import load_conversations
from benchmarks.report import write_section
from benchmarks.results import save_result
from DeepResearch.src.memory.embeddings import (
    DEFAULT_MODEL,
    OnnxRuntime,
    SentenceTransformersRuntime,
    resolve_model_path,
)

RUNTIMES = ("sentence-transformers", "onnx fp32", "onnx int8")
BASE = "sentence-transformers"
BATCHES = (32, 128)


def load(name: str, path: str):
    if name == "sentence-transformers":
        return SentenceTransformersRuntime(path, "cpu")
    return OnnxRuntime(path, quantized=name == "onnx int8")


def query_cpu_ms(runtime, queries: list[str]) -> float:
    started = time.process_time()
    for text in queries:
        runtime.encode([text], 1)
    return (time.process_time() - started) / len(queries) * 1000


def dense_recall(runtimes: dict, conversations) -> dict[str, np.ndarray]:
    """Per question recall@10 of exact dense search, per runtime."""
    from benchmarks.locomo.metrics import recall_at_k

    out: dict[str, list[float]] = {name: [] for name in runtimes}
    for conv in conversations:
        ids = [t.dia_id for t in conv.turns]
        for name, runtime in runtimes.items():
            turns = runtime.encode([t.content for t in conv.turns], 64)
            questions = runtime.encode([q.question for q in conv.questions], 64)
            scores = questions @ turns.T
            for q, row in zip(conv.questions, scores, strict=True):
                top = np.argsort(-row, kind="stable")[:10]
                out[name].append(recall_at_k([ids[i] for i in top], q.evidence, 10))
    return {name: np.array(values) for name, values in out.items()}


def pipeline_recall(conversations) -> dict[str, np.ndarray]:
    """Per question recall@10 of the client's whole retrieve (the LoCoMo protocol), per ONNX
    runtime."""
    import asyncio

    from benchmarks.locomo.project import run_project_async

    out = {}
    for name, setting in (("onnx fp32", "onnx-fp32"), ("onnx int8", "onnx")):
        table = asyncio.run(run_project_async(conversations, embedding_runtime=setting)).table
        out[name] = np.array([recalls[table.ks.index(10)] for _, recalls in table.rows])
    return out


def bootstrap_ci(diff: np.ndarray, rounds: int = 2000) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    means = [diff[rng.integers(0, len(diff), len(diff))].mean() for _ in range(rounds)]
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--recall", action="store_true", help="also LoCoMo recall@10, dense and whole retrieve")
    args = parser.parse_args(argv)

    conversations = load_conversations()
    turns = [t.content for c in conversations for t in c.turns]
    texts = (turns * (1 + args.texts // len(turns)))[:args.texts]
    queries = [q.question for c in conversations for q in c.questions][:args.queries]
    path = resolve_model_path(DEFAULT_MODEL)
    runtimes = {name: load(name, path) for name in RUNTIMES}
    for runtime in runtimes.values():
        runtime.encode(["warm-up"], 1)
        runtime.encode(texts[:64], 32)

    rates: dict[tuple[str, int], list[float]] = {(n, b): [] for n in RUNTIMES for b in BATCHES}
    cpu: dict[str, list[float]] = {n: [] for n in RUNTIMES}
    vectors: dict[str, np.ndarray] = {}
    for repeat in range(args.repeats):
        order = RUNTIMES[repeat % len(RUNTIMES):] + RUNTIMES[:repeat % len(RUNTIMES)]
        for batch in BATCHES:
            for name in order:
                started = time.perf_counter()
                vectors[name] = runtimes[name].encode(texts, batch)
                rates[name, batch].append(len(texts) / (time.perf_counter() - started))
        for name in order:
            cpu[name].append(query_cpu_ms(runtimes[name], queries))
        print(f"repeat {repeat + 1}/{args.repeats}: " + ", ".join(
            f"{n} {rates[n, 32][-1]:.0f}/s {cpu[n][-1]:.1f} ms" for n in RUNTIMES), flush=True)

    reference = vectors["sentence-transformers"]
    result: dict[str, dict] = {}
    for name in RUNTIMES:
        cosine = (vectors[name] * reference).sum(axis=1)
        result[name] = {
            "b32": statistics.median(rates[name, 32]), "b128": statistics.median(rates[name, 128]),
            "query_cpu_ms": statistics.median(cpu[name]),
            "cos_min": float(cosine.min()), "cos_mean": float(cosine.mean()),
        }
    base = result[BASE]
    for values in result.values():
        values["b32_ratio"] = values["b32"] / base["b32"]
        values["b128_ratio"] = values["b128"] / base["b128"]
        values["query_ratio"] = values["query_cpu_ms"] / base["query_cpu_ms"]

    recall_lines: list[str] = []
    if args.recall:
        names = ("onnx fp32", "onnx int8")
        per_question = dense_recall({n: runtimes[n] for n in names}, conversations)
        low, high = bootstrap_ci(per_question["onnx int8"] - per_question["onnx fp32"])
        for name in names:
            result[name]["dense_r10"] = float(per_question[name].mean())
        result["onnx int8"]["dense_r10_diff_ci"] = [low, high]
        diff = result["onnx int8"]["dense_r10"] - result["onnx fp32"]["dense_r10"]
        pipeline = pipeline_recall(conversations)
        p_low, p_high = bootstrap_ci(pipeline["onnx int8"] - pipeline["onnx fp32"])
        for name in names:
            result[name]["pipeline_r10"] = float(pipeline[name].mean())
        result["onnx int8"]["pipeline_r10_diff_ci"] = [p_low, p_high]
        p_diff = result["onnx int8"]["pipeline_r10"] - result["onnx fp32"]["pipeline_r10"]
        recall_lines = [
            "",
            f"LoCoMo dev recall@10, {len(per_question['onnx fp32'])} questions, int8 - fp32 "
            "with its paired bootstrap 95% interval:",
            "",
            "| recall@10 | onnx fp32 | onnx int8 | int8 - fp32 |",
            "|---|---|---|---|",
            f"| dense alone (exact inner product over each conversation's turns) | "
            f"{result['onnx fp32']['dense_r10']:.3f} | {result['onnx int8']['dense_r10']:.3f} | "
            f"{diff:+.3f} ({low:+.3f}..{high:+.3f}) |",
            f"| the whole retrieve (`make bench-locomo`'s protocol) | "
            f"{result['onnx fp32']['pipeline_r10']:.3f} | "
            f"{result['onnx int8']['pipeline_r10']:.3f} | {p_diff:+.3f} "
            f"({p_low:+.3f}..{p_high:+.3f}) |",
        ]
    save_result("embedding", result)

    rows = [
        f"| {name} | {v['b32']:.0f} ({v['b32_ratio']:.2f}x) | {v['b128']:.0f} "
        f"({v['b128_ratio']:.2f}x) | {v['query_cpu_ms']:.1f} ({v['query_ratio']:.2f}x) "
        f"| {v['cos_min']:.4f} / {v['cos_mean']:.4f} |"
        for name, v in result.items()
    ]
    int8 = result["onnx int8"]
    met = (min(int8["b32_ratio"], int8["b128_ratio"]) >= 2 and int8["query_ratio"] <= 0.4
           and int8["cos_mean"] >= 0.99)
    recall_met = (args.recall
                  and int8["pipeline_r10"] - result["onnx fp32"]["pipeline_r10"] >= -0.005)
    body = "\n".join([
        f"all-MiniLM-L6-v2 on {len(texts)} LoCoMo turns, every runtime in one process, "
        f"interleaved, medians of {args.repeats} repeats; ratios against sentence-transformers "
        "(the raw library) in the same run. "
        f"One query: process CPU time per single-text call over {len(queries)} LoCoMo "
        "questions (the ONNX runtimes run one text on one thread).",
        "",
        "| runtime | texts/s, batch 32 | texts/s, batch 128 | one query, ms of CPU "
        "| cosine to sentence-transformers (min / mean) |",
        "|---|---|---|---|---|",
        *rows,
        *recall_lines,
        "",
        "Goals for the int8 runtime: batched >= 2x the raw library, one query's CPU <= 0.4x, "
        f"mean cosine >= 0.99: {'met' if met else 'not met'} in this run"
        + (f"; recall@10 of the whole retrieve within 0.005 of fp32: "
           f"{'met' if recall_met else 'not met'}."
           if args.recall else "."),
        "`embedding_runtime=auto` runs onnx fp32 (sentence-transformers' vectors); `onnx` is the "
        "int8 runtime.",
    ])
    print(body)
    command = " ".join(["python -m benchmarks.bench_embedding", *(argv or [])])
    written = write_section("embedding", "Embedding runtimes", command, body)
    print(f"written: {written}")


if __name__ == "__main__":
    main(sys.argv[1:])
