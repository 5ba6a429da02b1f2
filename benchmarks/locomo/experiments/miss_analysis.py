"""Where the baselines miss on the development split, measured (no LLM).

For each baseline and k=10: the rank of each missed evidence turn, how often it sits next to
(same session, ±1/±2 turns) a turn that was retrieved, how lexically far it is from the
question, how many questions ask about time, and the recall of questions with several
evidence turns. Run: .venv/bin/python benchmarks/locomo/experiments/miss_analysis.py
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
from common import Features, load_features, stop_words

K = 10
TIME_WORDS = re.compile(r"\b(when|how long|what (year|month|day|date|time)|since|ago)\b", re.I)


def full_rankings(feat: Features, qi: int) -> dict[str, list[int]]:
    question = feat.conv.questions[qi].question
    bm = np.argsort(-feat.bm25.scores(question), kind="stable")
    dn = np.argsort(-(feat.turn_vecs @ feat.query_vecs[qi]), kind="stable")
    fused = np.zeros(len(feat.ids))
    for ranked in (bm[:50], dn[:50]):
        fused[ranked] += 1.0 / (60 + np.arange(1, len(ranked) + 1))
    rrf = np.argsort(-fused, kind="stable")
    return {"BM25": list(bm), "dense": list(dn), "RRF": list(rrf)}


def content_words(text: str, words: frozenset[str]) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if w not in words and len(w) > 2}


def main() -> None:
    words = stop_words()
    feats = load_features()
    stats: dict[str, Counter] = {m: Counter() for m in ("BM25", "dense", "RRF")}
    questions = Counter()
    for feat in feats:
        index = {d: i for i, d in enumerate(feat.ids)}
        for qi, q in enumerate(feat.conv.questions):
            questions["all"] += 1
            questions["time-worded"] += bool(TIME_WORDS.search(q.question))
            questions["multi-evidence"] += len(set(q.evidence)) > 1
            qwords = content_words(q.question, words)
            for method, ranking in full_rankings(feat, qi).items():
                s = stats[method]
                top = set(ranking[:K])
                position = {t: r for r, t in enumerate(ranking)}
                for ev in set(q.evidence):
                    s["evidence"] += 1
                    i = index.get(ev)
                    if i is None:
                        s["evidence id not in the conversation"] += 1
                        continue
                    if i in top:
                        continue
                    s["missed"] += 1
                    rank = position[i] + 1
                    s["missed, rank 11-20"] += 11 <= rank <= 20
                    s["missed, rank 21-50"] += 21 <= rank <= 50
                    s["missed, rank > 50"] += rank > 50
                    for radius in (1, 2):
                        near = feat.neighbours(i, radius)
                        s[f"missed, a ±{radius} neighbour retrieved"] += any(j in top for j in near)
                    turn_words = content_words(feat.conv.turns[i].content, words)
                    s["missed, no content word shared with the question"] += not (
                        qwords & turn_words
                    )
                    s["missed, turn has a photo caption"] += bool(feat.conv.turns[i].blip_caption)
    print(
        f"questions {questions['all']}, time-worded {questions['time-worded']}, "
        f"several evidence turns {questions['multi-evidence']}"
    )
    for method, s in stats.items():
        print(f"\n{method} @ {K}: {s['missed']} of {s['evidence']} evidence turns missed")
        for key, value in s.items():
            if key.startswith("missed,") or key.startswith("evidence id"):
                print(f"  {key:52s} {value:5d}  ({value / max(s['missed'], 1):.0%} of missed)")


if __name__ == "__main__":
    main()
