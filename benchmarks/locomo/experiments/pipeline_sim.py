"""Phase-2 prototype: the product pipeline simulated on cached embeddings, candidate-restricted.

Like the product: lexical = the memory subsystem's BM25 (text.tokenize: stemmed, stop words
dropped); dense = cosine to the turn vector; only the top-`depth` of each list are candidates;
neighbours = adjacent turns of the same session (the FOLLOWS chain), fetched for candidates.
Variants: fusion (rrf | minmax), query rewrite, context vector (stored embedding of the
preceding turns + the turn, or a query-time sum of neighbour vectors), neighbour smoothing
(weight, radius, expansion of non-candidate neighbours). Per-conversation figures and
leave-one-conversation-out choice of the smoothing parameters check over-fitting.
Run: .venv/bin/python benchmarks/locomo/experiments/pipeline_sim.py
"""

from __future__ import annotations

import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from benchmarks.locomo.baselines import embed_cached
from benchmarks.locomo.data import Conversation, load_conversations
from benchmarks.locomo.metrics import RecallTable
from DeepResearch.src.memory.ranking.candidates import rewrite_query
from DeepResearch.src.memory.text import fts_query, token_string


class Lexical:
    """The memory's lexical search: FTS5 bm25() over the project's tokens, in memory."""

    def __init__(self, texts: list[str]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE fts USING fts5 (tokens)")
        self.db.executemany("INSERT INTO fts (rowid, tokens) VALUES (?, ?)",
                            [(i, token_string(t)) for i, t in enumerate(texts)])

    def search(self, text: str, k: int) -> tuple[list[int], list[float]]:
        match = fts_query(text)
        rows = [] if match is None else self.db.execute(
            "SELECT rowid, -bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?",
            (match, k)).fetchall()
        return [r for r, _ in rows], [s for _, s in rows]


@dataclass
class Conv:
    conv: Conversation
    vecs: np.ndarray
    qvecs: np.ndarray
    ctx_prev: np.ndarray  # embedding of "previous turn\nturn" (same session)
    sessions: np.ndarray
    bm25: Lexical


def prev_texts(conv: Conversation, before: int) -> list[str]:
    turns = conv.turns
    out = []
    for i, t in enumerate(turns):
        parts = [u.content for u in turns[max(0, i - before) : i + 1] if u.session == t.session]
        out.append("\n".join(parts))
    return out


def load() -> list[Conv]:
    convs = []
    for conv in load_conversations():
        texts = [t.content for t in conv.turns]
        index = Lexical(texts)
        convs.append(
            Conv(
                conv,
                embed_cached(texts),
                embed_cached([q.question for q in conv.questions]),
                embed_cached(prev_texts(conv, 1)),
                np.array([t.session for t in conv.turns]),
                index,
            )
        )
    return convs


def minmax(values: np.ndarray) -> np.ndarray:
    span = values.max() - values.min() if len(values) else 0.0
    return (values - values.min()) / span if span > 0 else np.zeros_like(values)


def neighbours(c: Conv, i: int, radius: int) -> list[int]:
    n = len(c.sessions)
    return [
        j
        for j in range(max(0, i - radius), min(n, i + radius + 1))
        if j != i and c.sessions[j] == c.sessions[i]
    ]


def rank(c: Conv, qi: int, v: dict) -> list[int]:
    q = c.qvecs[qi]
    text = c.conv.questions[qi].question
    if v.get("rewrite"):
        text = rewrite_query(text)
    depth = v.get("depth", 80)
    dense_all = c.vecs @ q
    dense_top = np.argsort(-dense_all, kind="stable")[:depth]
    rows, scores = c.bm25.search(text, depth)
    lex = {int(i): float(s) for i, s in zip(rows, scores, strict=True)}
    cand = set(int(i) for i in dense_top) | set(lex)
    ctx = v.get("context")
    radius, beta = v.get("radius", 0), v.get("beta", 0.0)
    cand_before = set(cand)
    if beta > 0 and v.get("expand", True):
        for i in list(cand):
            cand.update(neighbours(c, i, radius))
    ids = np.array(sorted(cand))

    def dense_of(idx: np.ndarray) -> np.ndarray:
        d = dense_all[idx]
        if ctx == "prev_embed":
            d = d + c.ctx_prev[idx] @ q
        elif ctx == "prev_sum":
            out = []
            for i, di in zip(idx, d, strict=True):
                nb = [j for j in neighbours(c, int(i), 1) if j < i]
                vec = c.vecs[i] + sum((c.vecs[j] for j in nb), np.zeros_like(q))
                out.append(di + float(vec @ q) / np.linalg.norm(vec))
            d = np.array(out)
        return d

    dense = dense_of(ids)
    lexical = np.array([lex.get(int(i), 0.0) for i in ids])
    if v.get("fusion", "minmax") == "rrf":
        dr = {int(i): r for r, i in enumerate(ids[np.argsort(-dense, kind="stable")], 1)}
        lr = {i: r for r, i in enumerate(sorted(lex, key=lambda i: -lex[i]), 1)}
        fused = np.array(
            [1 / (60 + dr[int(i)]) + (1 / (60 + lr[int(i)]) if int(i) in lr else 0) for i in ids]
        )
    else:
        w = v.get("lex_weight", 1.0)
        fused = minmax(dense) + w * (lexical / lexical.max() if lexical.max() > 0 else lexical)
    if beta > 0:
        pos = {int(i): k for k, i in enumerate(ids)}
        focus = v.get("focus")  # only the neighbourhoods of the best `focus` candidates
        if focus:
            in_cand = [k for k, i in enumerate(ids) if int(i) in cand_before]
            top = {int(ids[k]) for k in sorted(in_cand, key=lambda k: -fused[k])[:focus]}
            links = {i: set() for i in pos}
            for i in top:
                for j in neighbours(c, i, radius):
                    if j in pos:
                        links[i].add(j)
                        links[j].add(i)
            keep = [k for k, i in enumerate(ids) if int(i) in cand_before or links[int(i)]]
        best = np.zeros_like(fused)
        for k, i in enumerate(ids):
            near = links[int(i)] if focus else [j for j in neighbours(c, int(i), radius) if j in pos]
            best[k] = max((fused[pos[j]] for j in near), default=0.0)
        fused = fused + beta * best
        if focus:
            ids, fused = ids[keep], fused[keep]
    order = np.argsort(-fused, kind="stable")
    return [int(ids[k]) for k in order[:20]]


def evaluate(convs: list[Conv], v: dict) -> tuple[RecallTable, list[RecallTable]]:
    total, per = RecallTable(), []
    for c in convs:
        t = RecallTable()
        ids = [u.dia_id for u in c.conv.turns]
        for qi, q in enumerate(c.conv.questions):
            ranked = [ids[i] for i in rank(c, qi, v)]
            total.add(q.category, ranked, q.evidence)
            t.add(q.category, ranked, q.evidence)
        per.append(t)
    return total, per


def fmt(t: RecallTable) -> str:
    return " ".join(f"{x:.3f}" for x in t.mean().values())


VARIANTS = {
    "rrf (current)": {"fusion": "rrf", "depth": 20},
    "minmax": {},
    "minmax rewrite": {"rewrite": True},
    "minmax rewrite prev_embed": {"rewrite": True, "context": "prev_embed"},
    "minmax rewrite prev_sum": {"rewrite": True, "context": "prev_sum"},
    "mm rw prev_embed smooth.5 r2": {"rewrite": True, "context": "prev_embed", "beta": 0.5, "radius": 2},
    "mm rw prev_sum smooth.5 r2": {"rewrite": True, "context": "prev_sum", "beta": 0.5, "radius": 2},
    "mm rw smooth.5 r2": {"rewrite": True, "beta": 0.5, "radius": 2},
    "mm rw prev_embed smooth.5 r2 noexp": {
        "rewrite": True, "context": "prev_embed", "beta": 0.5, "radius": 2, "expand": False
    },
}


def main() -> None:
    convs = load()
    only = sys.argv[1] if len(sys.argv) > 1 else ""
    for name, v in VARIANTS.items():
        if only not in name:
            continue
        total, per = evaluate(convs, v)
        print(f"{name:40s} {fmt(total)} | " + " ".join(f"{p.mean()[10]:.3f}" for p in per))


if __name__ == "__main__":
    main()
