"""Recall across sessions and time, on SYNTHESISED long conversations (benchmarks/
sessions_data.py: a fixed seed, nothing downloaded; not real data).

Six users, forty dated sessions each, every turn stored as one memory of the user's session
with the session's date as `event_at` (the in_memory backend, default retrieval otherwise;
turn vectors embedded once and cached under outputs/bench-cache/). Reports:
- multi-session questions (the answer is in 2-6 sessions): session-level recall@10 (the share
  of the answer's sessions among the sessions of the top 10) and turn recall@10, with the
  session coverage step (penalty and quota at their defaults) and without it (the default);
- time-anchored questions ("What did I buy two weeks ago?", yesterday, last week, on <date>):
  recall@1 / @5 of the answer turn, asked `as_of` the question's day and without it (asked
  now, years later, so a relative expression names another time).

    python -m benchmarks.bench_sessions
"""

from __future__ import annotations

import asyncio
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_memory import cached_vectors  # noqa: E402
from benchmarks.report import write_section  # noqa: E402
from benchmarks.results import save_result  # noqa: E402
from benchmarks.sessions_data import Question, User, make_users  # noqa: E402
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient  # noqa: E402

TOP_K = 10
COMMAND = "python -m benchmarks.bench_sessions"


async def _client(users: list[User], vectors: np.ndarray, retrieval: dict[str, Any]) -> MemorySystemClient:
    client = MemorySystemClient(MemoryConfig(backend="in_memory", retrieval=retrieval))
    row = 0
    for user in users:
        items = []
        for turn in user.turns:
            items.append({"content": turn.content, "event_at": turn.when, "vector": vectors[row],
                          "metadata": {"turn": turn.tid, "session_no": turn.session}})
            row += 1
        await client.store_many(items, session_id=user.name)
    return client


async def _ask(client: MemorySystemClient, user: User, q: Question, with_as_of: bool) -> list[Any]:
    return await client.retrieve(q.text, top_k=TOP_K, session_id=user.name,
                                 as_of=q.as_of if with_as_of else None)


async def measure(users: list[User], vectors: np.ndarray) -> dict[str, Any]:
    out: dict[str, Any] = {}
    variants = (("coverage", {"session_coverage": {"enabled": True}}), ("no coverage", {}))
    for label, retrieval in variants:
        client = await _client(users, vectors, retrieval)
        try:
            session_recall, turn_recall, spread = [], [], []
            for user in users:
                for q in (q for q in user.questions if q.kind == "multi-session"):
                    hits = await _ask(client, user, q, False)
                    sessions = {h.metadata["session_no"] for h in hits}
                    turns = {h.metadata["turn"] for h in hits}
                    session_recall.append(len(q.sessions & sessions) / len(q.sessions))
                    turn_recall.append(len(q.evidence & turns) / len(q.evidence))
                    spread.append(len(sessions))
            out[label] = {"session_r10": float(np.mean(session_recall)),
                          "turn_r10": float(np.mean(turn_recall)),
                          "sessions_in_top10": float(np.mean(spread)),
                          "questions": len(session_recall)}
            if label == "no coverage":  # the defaults
                out["time"] = await _time_questions(client, users)
        finally:
            await client.close()
    return out


async def _time_questions(client: MemorySystemClient, users: list[User]) -> dict[str, Any]:
    found: dict[str, dict[str, list[tuple[float, float]]]] = {"as_of": defaultdict(list),
                                                             "no as_of": defaultdict(list)}
    for user in users:
        for q in (q for q in user.questions if q.kind.startswith("time")):
            for label, with_as_of in (("as_of", True), ("no as_of", False)):
                ranked = [h.metadata["turn"] for h in await _ask(client, user, q, with_as_of)]
                hit = next(iter(q.evidence))
                for key in (q.kind, "all"):
                    found[label][key].append((float(hit in ranked[:1]), float(hit in ranked[:5])))
    return {label: {kind: {"r1": float(np.mean([r[0] for r in rows])),
                           "r5": float(np.mean([r[1] for r in rows])), "questions": len(rows)}
                    for kind, rows in kinds.items()}
            for label, kinds in found.items()}


def render(result: dict[str, Any], n_users: int, n_turns: int) -> str:
    lines = [
        f"Data: SYNTHESISED conversations (benchmarks/sessions_data.py, fixed seed): {n_users} "
        f"users, {n_turns} turns, one memory each (in_memory backend, session dates as "
        "`event_at`).",
        "",
        "### Multi-session questions (answer in 2-6 sessions), top 10",
        "",
        "| variant | questions | session recall@10 | turn recall@10 | sessions in top 10 |",
        "|---|---:|---:|---:|---:|",
    ]
    for label in ("coverage", "no coverage"):
        r = result[label]
        lines.append(f"| {label} | {r['questions']} | {r['session_r10']:.3f} | {r['turn_r10']:.3f} "
                     f"| {r['sessions_in_top10']:.2f} |")
    lines += ["", "### Time-anchored questions (\"What did I buy two weeks ago?\")", "",
              "| question | questions | R@1 with as_of | R@5 with as_of | R@1 without | R@5 without |",
              "|---|---:|---:|---:|---:|---:|"]
    with_t, without = result["time"]["as_of"], result["time"]["no as_of"]
    for kind in sorted(with_t, key=lambda k: (k == "all", k)):
        a, b = with_t[kind], without[kind]
        lines.append(f"| {kind} | {a['questions']} | {a['r1']:.3f} | {a['r5']:.3f} | "
                     f"{b['r1']:.3f} | {b['r5']:.3f} |")
    return "\n".join(lines)


def main() -> None:
    users = make_users()
    texts = [t.content for u in users for t in u.turns]
    vectors = cached_vectors(texts, "sessions")
    result = asyncio.run(measure(users, vectors))
    save_result("sessions", result)
    body = render(result, len(users), len(texts))
    print(body)
    write_section("sessions", "Recall across sessions and time (synthesised)", COMMAND, body)


if __name__ == "__main__":
    main()
