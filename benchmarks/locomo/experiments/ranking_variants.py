"""Recall of candidate ranking-pipeline steps on the development split (no LLM).

Steps tried, each general: stemming for BM25, stripping stop/question words from the query,
neighbour-context embeddings (a turn embedded with the turns around it in its session),
fusion variants (RRF depth, weighted score fusion), and neighbour score smoothing.
Run: .venv/bin/python benchmarks/locomo/experiments/ranking_variants.py [--limit N]
"""

from __future__ import annotations

import argparse
from functools import cache

import numpy as np
from common import (
    Features,
    Ranker,
    embed_cached,
    evaluate,
    load_features,
    print_results,
    stop_words,
    strip_query,
    window_texts,
)

WORDS = stop_words()


@cache
def _window_vecs(feat_id: int, before: int, after: int) -> np.ndarray:
    return embed_cached(window_texts(FEATS[feat_id].conv, before, after))


@cache
def _stripped_vecs(feat_id: int) -> np.ndarray:
    return embed_cached([strip_query(q.question, WORDS) for q in FEATS[feat_id].conv.questions])


FEATS: list[Features] = []


def _fid(feat: Features) -> int:
    return next(i for i, f in enumerate(FEATS) if f is feat)


def dense(
    feat: Features, qi: int, strip: bool = False, window: tuple[int, int] | None = None
) -> np.ndarray:
    fid = _fid(feat)
    q = _stripped_vecs(fid)[qi] if strip else feat.query_vecs[qi]
    vecs = _window_vecs(fid, *window) if window else feat.turn_vecs
    return vecs @ q


def bm25(feat: Features, qi: int, stem: bool = False, strip: bool = False) -> np.ndarray:
    query = feat.conv.questions[qi].question
    if strip:
        query = strip_query(query, WORDS)
    return (feat.bm25_stem if stem else feat.bm25).scores(query)


def order(scores: np.ndarray) -> list[int]:
    return [int(i) for i in np.argsort(-scores, kind="stable")]


def rrf_scores(
    score_lists: list[np.ndarray], depth: int = 50, c: int = 60, weights: list[float] | None = None
) -> np.ndarray:
    fused = np.zeros(len(score_lists[0]))
    for w, scores in zip(weights or [1.0] * len(score_lists), score_lists, strict=True):
        ranked = np.argsort(-scores, kind="stable")[:depth]
        fused[ranked] += w / (c + np.arange(1, len(ranked) + 1))
    return fused


def minmax_sum(score_lists: list[np.ndarray], weights: list[float] | None = None) -> np.ndarray:
    fused = np.zeros(len(score_lists[0]))
    for w, s in zip(weights or [1.0] * len(score_lists), score_lists, strict=True):
        span = s.max() - s.min()
        fused += w * ((s - s.min()) / span if span > 0 else 0.0)
    return fused


def smooth(feat: Features, scores: np.ndarray, beta: float, radius: int = 1) -> np.ndarray:
    """Add BETA times the best same-session neighbour's score (within RADIUS) to each score."""
    best = np.zeros_like(scores)
    for shift in range(1, radius + 1):
        for a, b in (
            (slice(shift, None), slice(None, -shift)),
            (slice(None, -shift), slice(shift, None)),
        ):
            same = feat.sessions[a] == feat.sessions[b]
            best[a] = np.maximum(best[a], np.where(same, scores[b], 0.0))
    return scores + beta * best


def rankers() -> dict[str, Ranker]:
    r = {
        "bm25": lambda f, q: order(bm25(f, q)),
        "bm25 stem": lambda f, q: order(bm25(f, q, stem=True)),
        "bm25 stem strip": lambda f, q: order(bm25(f, q, stem=True, strip=True)),
        "dense": lambda f, q: order(dense(f, q)),
        "dense strip": lambda f, q: order(dense(f, q, strip=True)),
        "dense win(1,1)": lambda f, q: order(dense(f, q, window=(1, 1))),
        "dense win(0,1)": lambda f, q: order(dense(f, q, window=(0, 1))),
        "dense win(1,0)": lambda f, q: order(dense(f, q, window=(1, 0))),
        "dense turn+win(1,1)": lambda f, q: order(dense(f, q) + dense(f, q, window=(1, 1))),
        "rrf bm25+dense (baseline)": lambda f, q: order(rrf_scores([bm25(f, q), dense(f, q)])),
        "rrf bm25stem+dense": lambda f, q: order(rrf_scores([bm25(f, q, True), dense(f, q)])),
        "rrf bm25stem+dense, full depth": lambda f, q: order(
            rrf_scores([bm25(f, q, True), dense(f, q)], depth=10_000)
        ),
        "rrf bm25stem+dense+win": lambda f, q: order(
            rrf_scores([bm25(f, q, True), dense(f, q), dense(f, q, window=(1, 1))])
        ),
        "rrf bm25stem+turn+win dense sum": lambda f, q: order(
            rrf_scores([bm25(f, q, True), dense(f, q) + dense(f, q, window=(1, 1))])
        ),
        "minmax bm25stem+dense": lambda f, q: order(minmax_sum([bm25(f, q, True), dense(f, q)])),
        "minmax bm25stem+turn+win": lambda f, q: order(
            minmax_sum([bm25(f, q, True), dense(f, q), dense(f, q, window=(1, 1))])
        ),
    }

    def bm(f: Features, q: int) -> np.ndarray:
        return bm25(f, q, stem=True, strip=True)

    r["minmax bm25stemstrip+turn+win"] = lambda f, q: order(
        minmax_sum([bm(f, q), dense(f, q), dense(f, q, window=(1, 1))])
    )
    r["minmax bm25stemstrip+turn+win(0,1)"] = lambda f, q: order(
        minmax_sum([bm(f, q), dense(f, q), dense(f, q, window=(0, 1))])
    )
    r["minmax bm25stemstrip+turn+win11+win01"] = lambda f, q: order(
        minmax_sum([bm(f, q), dense(f, q), dense(f, q, window=(1, 1)), dense(f, q, window=(0, 1))])
    )
    for w in (0.5, 1.5, 2.0):
        r[f"minmax bm25stemstrip*{w}+turn+win"] = lambda f, q, w=w: order(
            minmax_sum([bm(f, q), dense(f, q), dense(f, q, window=(1, 1))], [w, 1.0, 1.0])
        )
    for beta in (0.1, 0.25, 0.5):
        for rad in (1, 2):
            r[f"minmax bm25stemstrip+turn+win, smooth {beta} r{rad}"] = (
                lambda f, q, b=beta, rad=rad: order(
                    smooth(
                        f, minmax_sum([bm(f, q), dense(f, q), dense(f, q, window=(1, 1))]), b, rad
                    )
                )
            )
    r["minmax bm25stemstrip+turn, smooth 0.25 r1"] = lambda f, q: order(
        smooth(f, minmax_sum([bm(f, q), dense(f, q)]), 0.25)
    )
    for beta in (0.25, 0.5):
        r[f"rrf bm25stem+dense+win, smooth {beta}"] = lambda f, q, b=beta: order(
            smooth(f, rrf_scores([bm25(f, q, True), dense(f, q), dense(f, q, window=(1, 1))]), b)
        )
    return r


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int)
    parser.add_argument("--only", default="", help="rankers whose name contains this")
    args = parser.parse_args()
    FEATS.extend(load_features(args.limit))
    chosen = {n: r for n, r in rankers().items() if args.only in n}
    print_results(evaluate(chosen, FEATS))


if __name__ == "__main__":
    main()
