"""The memory service at and past its limit, open loop: `deepresearch-memory serve` (embedded
store, default settings: admission control, 30 s time limit) in its own process on
127.0.0.1; searches sent at a fixed arrival rate whatever the answers (each phase bounded in
count and time), latency counted from each request's scheduled send time.

- **unloaded**: searches one at a time; their p50 is the reference.
- **saturation**: a short closed-loop pilot estimates the capacity, then the rate steps up
  from 0.6x the pilot by 1.25x a step until one step past the first that saturates (a
  refusal, an error, or goodput under 90% of the rate); the saturation throughput is the
  median goodput (2xx searches per second in a step's steady window) of the saturated steps:
  what the service keeps up when offered more.
- **80%**: at 0.8x saturation. Goal: p95 <= 4x the unloaded p50, 0 errors.
- **2x**: at twice saturation. Goals: goodput >= 90% of saturation; every refusal
  (503 overloaded) answered within 50 ms.
- **1,000 sessions**: 1,000 sessions at once, each storing a memory, then searching; a
  refused request is sent again after Retry-After (plus jitter), as docs/service.md asks of
  clients. Goals: 0 timeouts, 0 acknowledged writes lost (looked up in the database after
  SIGTERM).

    .venv/bin/python -m benchmarks.bench_service_open [--quick] [--set KEY=VALUE --tag NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from benchmarks.bench_service import TOPICS, VERBS, missing_ids, sentence
from benchmarks.report import write_section
from benchmarks.results import save_result
from benchmarks.service_harness import (
    Clients,
    Recorder,
    Service,
    bounded,
    client,
    error_kind,
    percentile,
    refused,
)
from benchmarks.service_open_report import report

SEARCH = "/api/memory/search"
CLIENT_TIMEOUT = 60.0  # past the service's 30 s limit: a client timeout would be a finding
GOAL_P95_RATIO, GOAL_GOODPUT, GOAL_REFUSAL_MS = 4.0, 0.90, 50.0


class Queries:
    """Distinct search bodies (no two alike: no cache helps)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.n = 0

    def __call__(self) -> dict[str, Any]:
        self.n += 1
        a, b = self.rng.sample(TOPICS, 2)
        return {"query": f"why the {a} {self.rng.choice(VERBS)} the {b} in run {self.n}",
                "top_k": 5}


async def seed(url: str, sessions: int, per_session: int) -> int:
    rng = random.Random(7)
    rec = Recorder()
    async with client(sessions) as http:
        async def fill(s: int) -> None:
            for start in range(0, per_session, 100):
                items = [{"content": sentence(rng, s, i), "session_id": f"seed{s}"}
                         for i in range(start, min(per_session, start + 100))]
                await rec.call(http, "seed", "POST", f"{url}/api/memory/memories",
                               json={"memories": items})
        await bounded([fill(s) for s in range(sessions)], 300)
    return sessions * per_session - sum(rec.errors.values())


async def unloaded(url: str, n: int, queries: Queries) -> list[float]:
    ms = []
    async with client(1) as http:
        for i in range(n + 5):
            started = time.perf_counter()
            r = await http.post(f"{url}{SEARCH}", json=queries())
            r.raise_for_status()
            if i >= 5:  # the first ones warm caches and connections
                ms.append((time.perf_counter() - started) * 1000)
    return ms


async def pilot(url: str, concurrent: int, seconds: float, queries: Queries) -> float:
    """Closed loop, `concurrent` searches always in flight: answers per second."""
    done = 0
    stop = time.perf_counter() + seconds

    async with client(concurrent) as http:
        async def loop() -> None:
            nonlocal done
            while time.perf_counter() < stop:
                r = await http.post(f"{url}{SEARCH}", json=queries())
                if r.status_code == 200:
                    done += 1
        started = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(concurrent)))
    return done / (time.perf_counter() - started)


async def open_loop(url: str, rate: float, seconds: float, queries: Queries,
                    warm: float = 1.0) -> dict[str, Any]:
    """`rate` searches per second for `seconds`, sent on schedule whatever the answers."""
    n = max(1, round(rate * seconds))
    ok_ms: list[float] = []
    ok_at: list[float] = []
    refusal_ms: list[float] = []
    refusal_sent_ms: list[float] = []  # from the moment the client sent it
    errors: dict[str, int] = {}
    reasons: dict[str, int] = {}
    lag = 0.0

    async def one(http: httpx.AsyncClient, due: float, body: dict[str, Any]) -> None:
        sent = time.perf_counter()
        try:
            r = await http.post(f"{url}{SEARCH}", json=body)
        except httpx.HTTPError as exc:
            errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
            return
        now = time.perf_counter()
        if r.status_code == 200:
            ok_ms.append((now - due) * 1000)
            ok_at.append(now)
        elif refused(r):
            refusal_ms.append((now - due) * 1000)
            refusal_sent_ms.append((now - sent) * 1000)
            reason = r.json().get("reason", "rate_limited")
            reasons[reason] = reasons.get(reason, 0) + 1
        else:
            kind = f"{r.status_code} {error_kind(r)}".strip()
            errors[kind] = errors.get(kind, 0) + 1

    async with Clients(500) as http:
        bodies = [queries() for _ in range(n)]
        t0 = time.perf_counter() + 0.05
        tasks = []
        for i in range(n):
            due = t0 + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                lag = max(lag, -delay)
            tasks.append(asyncio.ensure_future(one(http[i], due, bodies[i])))
        _, pending = await asyncio.wait(tasks, timeout=CLIENT_TIMEOUT + 10)
        for t in pending:
            t.cancel()
        if pending:
            errors["cut at the phase bound"] = len(pending)
    window = (t0 + warm, t0 + seconds)
    in_window = sum(window[0] <= at <= window[1] for at in ok_at)
    return {"rate": rate, "seconds": seconds, "sent": n, "ok": len(ok_ms),
            "refused": len(refusal_ms), "reasons": reasons, "errors": errors,
            "goodput": in_window / (window[1] - window[0]),
            "p50": percentile(ok_ms, .5), "p95": percentile(ok_ms, .95),
            "p99": percentile(ok_ms, .99),
            "refusal_p50": percentile(refusal_ms, .5), "refusal_p95": percentile(refusal_ms, .95),
            "refusal_max": max(refusal_ms, default=float("nan")),
            "refusals_over_goal": sum(ms > GOAL_REFUSAL_MS for ms in refusal_ms),
            "refusal_sent_p95": percentile(refusal_sent_ms, .95),
            "refusal_sent_max": max(refusal_sent_ms, default=float("nan")),
            "refusals_sent_over_goal": sum(ms > GOAL_REFUSAL_MS for ms in refusal_sent_ms),
            "generator_lag_ms": lag * 1000}


async def sessions(url: str, n: int, rec: Recorder) -> float:
    """`n` sessions at once: store one memory, then search (refusals retried)."""
    rng = random.Random(11)
    texts = [sentence(rng, s, 0) for s in range(n)]
    start = asyncio.Event()

    async def session(http: httpx.AsyncClient, s: int) -> None:
        await start.wait()
        r = await rec.call(http, "POST /api/memory/memories", "POST",
                           f"{url}/api/memory/memories",
                           json={"content": texts[s], "session_id": f"c{s}"})
        ids = r.json()["ids"] if r is not None and r.status_code == 200 else []
        rec.acked += ids
        await rec.call(http, "POST /api/memory/search", "POST", f"{url}{SEARCH}",
                       json={"query": f"what did session {s} learn about the {TOPICS[s % 16]}",
                             "session_id": f"c{s}", "top_k": 5})

    async with Clients(n) as http:
        started = time.perf_counter()
        work = [session(http[s], s) for s in range(n)]
        start.set()
        await bounded(work, 240)
        return time.perf_counter() - started


def query_embedding(url: str) -> dict[str, float] | None:
    """The service's query embeddings and the forward passes they took (/metrics; None from
    a service that does not count them)."""
    text = httpx.get(f"{url}/metrics", timeout=30).text
    found = {}
    for key, name in (("queries", "memory_query_embeddings_total"),
                      ("passes", "memory_query_embedding_passes_total")):
        match = re.search(rf"^{name} (\S+)$", text, re.M)
        if match is None:
            return None
        found[key] = float(match.group(1))
    return found


def timeouts(rec: Recorder) -> int:
    """Client timeouts and 503 `timeout` answers."""
    return sum(v for k, v in rec.errors.items() if "Timeout" in k or k.endswith(" timeout"))


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from DeepResearch.src.memory.backends.embedded import DB_FILE

    store = tmp / "store"
    service = Service(store, tmp / "service.log", *args.set)
    service.start()
    out: dict[str, Any] = {"load_average_before": os.getloadavg()[0]}
    queries = Queries(3)
    print(f"seed: {args.seed_sessions} sessions x {args.seed_per_session} memories", flush=True)
    out["seeded"] = asyncio.run(seed(service.url, args.seed_sessions, args.seed_per_session))
    base = asyncio.run(unloaded(service.url, args.unloaded, queries))
    out["unloaded"] = {"n": len(base), "p50": percentile(base, .5), "p95": percentile(base, .95)}
    print(f"unloaded: p50 {out['unloaded']['p50']:.1f} ms", flush=True)
    out["pilot_rps"] = asyncio.run(pilot(service.url, 8, args.pilot_seconds, queries))
    print(f"pilot (closed loop, 8 in flight): {out['pilot_rps']:.1f}/s", flush=True)
    steps: list[dict[str, Any]] = []
    rate, past = args.first_step * out["pilot_rps"], 0
    while len(steps) < args.max_steps and past < 2:  # up to one step past the first saturated
        step = asyncio.run(open_loop(service.url, rate, args.step_seconds, queries))
        steps.append(step)
        print(f"  {step['rate']:.1f}/s: goodput {step['goodput']:.1f}/s, p95 {step['p95']:.0f} "
              f"ms, refused {step['refused']}, errors {step['errors']}", flush=True)
        step["saturated"] = bool(step["refused"] or step["errors"]
                                 or step["goodput"] < 0.9 * rate)
        past += step["saturated"]
        rate *= args.step_factor
    out["steps"] = steps
    saturated = [s["goodput"] for s in steps if s["saturated"]]
    saturation = (percentile(saturated, .5) if saturated  # what it keeps up when offered more
                  else max(s["goodput"] for s in steps))
    out["saturation_rps"] = saturation
    print(f"saturation: {saturation:.1f}/s; 80%", flush=True)
    out["at_80"] = asyncio.run(open_loop(service.url, 0.8 * saturation, args.run_seconds, queries))
    print(f"  p95 {out['at_80']['p95']:.0f} ms, errors {out['at_80']['errors']}, refused "
          f"{out['at_80']['refused']}; 2x", flush=True)
    out["at_2x"] = asyncio.run(open_loop(service.url, 2 * saturation, args.run_seconds, queries))
    print(f"  goodput {out['at_2x']['goodput']:.1f}/s, refusal max "
          f"{out['at_2x']['refusal_max']:.0f} ms", flush=True)
    rec = Recorder()
    print(f"{args.sessions} sessions at once", flush=True)
    seconds = asyncio.run(sessions(service.url, args.sessions, rec))
    out["sessions"] = {"n": args.sessions, "seconds": seconds, "errors": dict(rec.errors),
                       "timeouts": timeouts(rec), "refused": rec.refused,
                       "refusal_p95": percentile(rec.refusal_ms, .95),
                       "refusal_max": max(rec.refusal_ms, default=float("nan")),
                       "endpoints": rec.summary(), "acked": len(rec.acked)}
    print(f"  {seconds:.1f} s, refused {rec.refused} (retried), errors {dict(rec.errors)}",
          flush=True)
    out["query_embedding"] = query_embedding(service.url)
    out["load_average_after"] = os.getloadavg()[0]
    out["stop_exit_code"] = service.stop()
    out["lost"] = missing_ids(store / DB_FILE, rec.acked)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed-sessions", type=int, default=10)
    p.add_argument("--seed-per-session", type=int, default=100)
    p.add_argument("--unloaded", type=int, default=30, help="searches one at a time")
    p.add_argument("--pilot-seconds", type=float, default=5.0)
    p.add_argument("--first-step", type=float, default=0.6,
                   help="the first step's rate, as a multiple of the pilot's throughput")
    p.add_argument("--step-factor", type=float, default=1.25, help="each step's rate over the last")
    p.add_argument("--max-steps", type=int, default=6)
    p.add_argument("--step-seconds", type=float, default=8.0)
    p.add_argument("--run-seconds", type=float, default=15.0, help="the 80%% and 2x runs")
    p.add_argument("--sessions", type=int, default=1000)
    p.add_argument("--quick", action="store_true", help="small figures (a smoke run)")
    p.add_argument("--tag", default="", help="save as service_open_TAG, leave the docs alone")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of the service, e.g. memory.service.work_niceness=0 (with "
                   "--tag: a comparison run)")
    args = p.parse_args(argv if argv is not None else [])
    if args.quick:
        args.seed_sessions, args.seed_per_session, args.unloaded = 2, 50, 10
        args.pilot_seconds, args.max_steps, args.step_seconds = 2.0, 3, 3.0
        args.run_seconds, args.sessions = 4.0, 50
    command = "python -m benchmarks.bench_service_open " + " ".join(argv or [])
    with tempfile.TemporaryDirectory(prefix="bench-service-open-") as tmp:
        out = run(args, Path(tmp))
    out["goals"] = {"p95_ratio": GOAL_P95_RATIO, "goodput": GOAL_GOODPUT,
                    "refusal_ms": GOAL_REFUSAL_MS}
    body = report(out)
    print(body)
    save_result(f"service_open_{args.tag}" if args.tag else "service_open", out)
    if not args.quick and not args.tag:
        write_section("service_open", "Memory service at and past its limit (open loop)",
                      command.strip(), body)


if __name__ == "__main__":
    main(sys.argv[1:])
