"""The retrieval agent served: `POST /api/memory/retrieve` (the offline planner) with 10
concurrent clients against `deepresearch-memory serve` (embedded store, one worker) on
127.0.0.1. The namespace first receives a team's chat through `POST /api/memory/ingest`
(bench_facts' synthetic messages: people saying where they work and live, what they know
and like), so the agent has facts and episodes to search. Every client asks its questions
one after another (a closed loop: the next request leaves when the answer arrives); the phase
is bounded in count and time; it starts once the service has filled the ingested messages'
vectors (ingest returns before). Goal: p95 <= 250 ms at 10 concurrent.

    .venv/bin/python -m benchmarks.bench_agent_service [--people 200] [--messages 1000]
        [--concurrent 10] [--requests 20] [--quick] [--tag T]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_facts import city, messages, n_orgs, org, person_name, skill, topic
from benchmarks.report import write_section
from benchmarks.results import save_result
from benchmarks.service_harness import Recorder, Service, bounded, client, vectors_filled

ENDPOINT = "POST /api/memory/retrieve"
PHASE_SECONDS = 600.0
QUESTIONS = ["Who should I ask about {s}?", "Who works at {o}?", "Where does {p} work these days?",
             "Who lives in {c}?", "Who is interested in {t}?", "What does {p} know?"]


def question(rng: random.Random, people: int) -> str:
    return rng.choice(QUESTIONS).format(
        s=skill(rng.randrange(200)), o=org(rng.randrange(n_orgs(people))),
        p=person_name(rng.randrange(people)), c=city(rng.randrange(200)),
        t=topic(rng.randrange(300)))


async def ingest(url: str, n: int, people: int, rec: Recorder) -> int:
    """The team's chat in batches of 100 messages; returns the facts the service extracted."""
    msgs = messages(n, people)
    facts = 0
    async with client(4) as http:
        for start in range(0, n, 100):
            batch = [{k: m[k] for k in ("message_id", "author_id", "author_name", "content",
                                        "timestamp")} for m in msgs[start:start + 100]]
            r = await rec.call(http, "POST /api/memory/ingest", "POST", f"{url}/api/memory/ingest",
                               json={"messages": batch, "channel_id": "team"})
            if r is not None and r.status_code == 200:
                facts += r.json()["facts_added"]
    return facts


async def ask(url: str, concurrent: int, per_client: int, people: int, rec: Recorder,
              answers: list[dict[str, Any]]) -> float:
    async def one_client(c: int, http: Any) -> None:
        rng = random.Random(c)
        for _ in range(per_client):
            body = {"messages": [{"author_id": f"asker-{c}", "author_name": "Sam Asker",
                                  "content": question(rng, people), "timestamp": time.time()}],
                    "channel_id": "team"}
            r = await rec.call(http, ENDPOINT, "POST", f"{url}/api/memory/retrieve", json=body)
            if r is not None and r.status_code == 200:
                answers.append(r.json())

    started = time.perf_counter()
    async with client(concurrent) as http:
        await bounded([one_client(c, http) for c in range(concurrent)], PHASE_SECONDS)
    return time.perf_counter() - started


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    service = Service(tmp / "store", tmp / "service.log")
    service.start()
    out: dict[str, Any] = {"people": args.people, "messages": args.messages,
                           "concurrent": args.concurrent, "requests_per_client": args.requests,
                           "load_average_before": os.getloadavg()[0]}
    try:
        seeding = Recorder()
        print(f"ingest: {args.messages} messages of {args.people} people", flush=True)
        started = time.perf_counter()
        out["facts"] = asyncio.run(ingest(service.url, args.messages, args.people, seeding))
        out["ingest_seconds"] = time.perf_counter() - started
        out["ingest_errors"] = dict(seeding.errors)
        # ingest returns before the episodes' vectors are filled; a retrieve would wait for
        # them (read-your-writes), so the questions start once they are
        out["vectors_filled_seconds"] = asyncio.run(vectors_filled(service.url, PHASE_SECONDS))
        rec, answers = Recorder(), []
        print(f"retrieve: {args.concurrent} concurrent clients x {args.requests}", flush=True)
        seconds = asyncio.run(ask(service.url, args.concurrent, args.requests, args.people, rec,
                                  answers))
    finally:
        service.stop()
    n = len(rec.ms[ENDPOINT])
    out.update({"seconds": seconds, "throughput_rps": n / seconds, "errors": dict(rec.errors),
                "endpoint": rec.summary().get(ENDPOINT, {}),
                "mean_facts": sum(len(a["facts"]) for a in answers) / max(1, len(answers)),
                "mean_iterations": sum(a["metadata"]["iterations_used"] for a in answers)
                / max(1, len(answers)),
                "answered_with_facts": sum(1 for a in answers if a["facts"]),
                "load_average_after": os.getloadavg()[0]})
    return out


def report(out: dict[str, Any]) -> str:
    e = out["endpoint"]
    return "\n".join([
        "`deepresearch-memory serve` (embedded store, one worker, offline planner) in its own "
        "process; the clients in one asyncio + httpx process on the same machine. Times in "
        "milliseconds.",
        "",
        f"- Seeded through `POST /api/memory/ingest`: {out['messages']} messages of "
        f"{out['people']} people -> {out['facts']} facts in {out['ingest_seconds']:.1f} s "
        f"(errors: {out['ingest_errors'] or 0}); their vectors filled "
        f"{out.get('vectors_filled_seconds', float('nan')):.1f} s later, before the questions.",
        f"- **{out['concurrent']} concurrent clients**, {out['requests_per_client']} questions "
        f"each (closed loop): p50 {e.get('p50', float('nan')):.1f}, **p95 "
        f"{e.get('p95', float('nan')):.1f}**, p99 {e.get('p99', float('nan')):.1f} "
        f"({out['throughput_rps']:.1f} requests/s, errors: {out['errors'] or 0}); goal p95 <= 250.",
        f"- Answers: {out['answered_with_facts']} of {e.get('n', 0)} with facts, "
        f"{out['mean_facts']:.1f} facts and {out['mean_iterations']:.1f} agent iterations on "
        "average.",
        *([f"- Other jobs shared the machine's cores during this run (load average "
            f"{out['load_average_before']:.1f} before it): its times are pessimistic."]
          if out["load_average_before"] > 2 else []),
    ])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--people", type=int, default=200)
    p.add_argument("--messages", type=int, default=1000)
    p.add_argument("--concurrent", type=int, default=10)
    p.add_argument("--requests", type=int, default=20, help="questions per client")
    p.add_argument("--quick", action="store_true", help="small figures (a smoke run)")
    p.add_argument("--tag", default="", help="save as agent_service_TAG; docs left alone")
    args = p.parse_args(argv if argv is not None else [])
    if args.quick:
        args.people, args.messages, args.concurrent, args.requests = 30, 100, 3, 3
    command = "python -m benchmarks.bench_agent_service " + " ".join(argv or [])
    with tempfile.TemporaryDirectory(prefix="bench-agent-service-") as tmp:
        out = run(args, Path(tmp))
    body = report(out)
    print(body)
    save_result(f"agent_service_{args.tag}" if args.tag else "agent_service", out)
    if not args.quick and not args.tag:
        write_section("agent_service", "Retrieval agent served under load", command.strip(), body)


if __name__ == "__main__":
    main(sys.argv[1:])
