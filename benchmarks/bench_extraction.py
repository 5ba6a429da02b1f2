"""Offline fact extraction alone: messages per second over synthetic chat messages (1-3
sentences each, a mix of fact-bearing and small-talk sentences). Ingest needs >= 200
messages/s overall, so extraction has to be a small part of that.

    .venv/bin/python -m benchmarks.bench_extraction [--messages N]

Standalone (not in run_all): it prints its figure and writes nothing.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from DeepResearch.src.memory.facts.extraction import OfflineExtractor
from DeepResearch.src.memory.facts.model import Message

TEMPLATES = (
    "I work at {org} as a {role}.", "{p} worked there from 2015 to 2019.",
    "I've been coding in {skill} for {n} years.", "We moved to {city} last year.",
    "I studied at {school}.", "I'm really into {topic} these days.",
    "{p} and I collaborate weekly on the roadmap.", "I joined the {team} team in March 2022.",
    "I think {p} knows {skill}.", "Maybe {p} lives in {city}, not sure.",
    "Lunch was great today, see you tomorrow!", "Did anyone look at the PR {p} opened?",
    "ok", "The deploy failed again because the cache was stale, {p} is on it.",
    "Honestly the meeting could have been an email. Anyway, back to work.",
)
VALUES = {
    "org": ("Google", "Acme Corp", "Stripe", "Netflix"), "p": ("Bob", "Charlie", "Dana"),
    "role": ("data scientist", "software engineer", "PM"), "n": ("2", "five", "10"),
    "skill": ("Python", "Rust", "Go", "Kubernetes"), "city": ("Berlin", "Paris", "New York"),
    "school": ("MIT", "Stanford University"), "topic": ("machine learning", "climbing"),
    "team": ("data", "platform"),
}


def messages(count: int, seed: int = 7) -> list[Message]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        text = " ".join(rng.choice(TEMPLATES).format(**{k: rng.choice(v) for k, v in
                                                         VALUES.items()})
                        for _ in range(rng.randint(1, 3)))
        out.append(Message(f"m{i}", f"u{i % 5}", f"User{i % 5}", text, 1.7e9 + 60 * i, "c1"))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3000)
    args = parser.parse_args(argv)
    batch = messages(args.messages)
    started, cpu = time.perf_counter(), time.process_time()
    result = OfflineExtractor().extract(batch)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    chars = sum(len(m.content) for m in batch) / len(batch)
    print(f"offline extraction: {len(batch)} messages ({chars:.0f} chars on average), "
          f"{len(result.facts)} facts in {seconds:.2f} s = {len(batch) / seconds:.0f} "
          f"messages/s ({cpu:.2f} s of CPU = {len(batch) / cpu:.0f} messages per CPU second; "
          "the two differ when the cores are shared)")


if __name__ == "__main__":
    main()
