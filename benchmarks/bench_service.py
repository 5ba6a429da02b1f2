"""The memory service under load: `deepresearch-memory serve` (embedded store) in its own
process on 127.0.0.1, driven by N concurrent sessions (asyncio + httpx), every phase bounded
in count and time.

- **concurrency**: N sessions at once (default 1,000), each storing `--stores` memories one
  by one, then searching and reading one back. Goal: 0 errors, 0 lost.
- **latency at 100**: 100 concurrent sessions searching (distinct queries) over the store.
  Goal: plain search p95 <= 100 ms.
- **growth**: 10 sessions grow to 10, 100, 1,000 memories each; once the service has filled
  their vectors (the stores return before, `storage.vectors=auto`; until then a search waits
  for them, read-your-writes), search p95 (one session's memories) at each size. Goal: flat
  within 1.5x from the smallest to the largest.
- **fault**: writes under load while another process holds the database's write lock for a
  few seconds: 503 with a clear error, /health 503 saying why, then recovery.
- **lost**: after a graceful stop (SIGTERM) the database is opened and every acknowledged id
  (a 200 answer) is looked up: none may be missing.

    .venv/bin/python -m benchmarks.bench_service [--sessions 1000] [--stores 3] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from benchmarks.neo4j_server import neo4j_server
from benchmarks.report import write_section
from benchmarks.results import save_result
from benchmarks.service_harness import (
    Clients,
    Recorder,
    Service,
    bounded,
    client,
    vectors_filled,
)
from benchmarks.service_neo4j import missing_in_neo4j, serve_args
from benchmarks.service_report import report

TOPICS = ["aligner", "variant caller", "cluster quota", "GPU nodes", "RNA-seq", "reference genome",
          "batch effect", "sample sheet", "QC report", "peak calling", "assembly", "primer design",
          "p-value threshold", "conda environment", "SLURM queue", "storage bucket"]
VERBS = ["needs", "failed with", "was replaced by", "runs faster with", "is documented in",
         "was approved for", "depends on", "conflicts with"]
PHASE_SECONDS = 600.0  # no phase runs longer than this
PHASES = ("concurrency", "latency", "growth", "fault")


def sentence(rng: random.Random, session: int, i: int) -> str:
    a, b = rng.sample(TOPICS, 2)
    return (f"Session {session} step {i}: the {a} {rng.choice(VERBS)} the {b} "
            f"(run {rng.randrange(10_000)}, {rng.choice(['ok', 'retry', 'failed', 'done'])})")


# -- phases ---------------------------------------------------------------------------------
async def concurrency(url: str, sessions: int, stores: int, rec: Recorder) -> float:
    rng = random.Random(1)
    texts = {(s, i): sentence(rng, s, i) for s in range(sessions) for i in range(stores)}
    start = asyncio.Event()

    async def session(http: httpx.AsyncClient, s: int) -> None:
        await start.wait()
        ids = []
        for i in range(stores):
            r = await rec.call(http, "POST /api/memory/memories", "POST",
                               f"{url}/api/memory/memories",
                               json={"content": texts[s, i], "session_id": f"c{s}"})
            if r is not None and r.status_code == 200:
                ids += r.json()["ids"]
                rec.acked += r.json()["ids"]
        await rec.call(http, "POST /api/memory/search", "POST", f"{url}/api/memory/search",
                       json={"query": f"what did session {s} learn about the {TOPICS[s % 16]}",
                             "session_id": f"c{s}", "top_k": 5})
        if ids:
            await rec.call(http, "GET /api/memory/memories/{id}", "GET",
                           f"{url}/api/memory/memories/{ids[0]}")

    async with Clients(sessions) as http:
        started = time.perf_counter()
        work = [session(http[s], s) for s in range(sessions)]
        start.set()
        await bounded(work, PHASE_SECONDS)
        return time.perf_counter() - started


async def search_load(url: str, concurrent: int, per_session: int, rec: Recorder,
                      endpoint: str, session_of: Any = None, think: float = 0.0) -> float:
    """Each session searches `per_session` times: back to back (a closed loop: `concurrent`
    requests always in flight), or with `think` > 0, after a pause of `think` seconds on
    average (exponential, so sessions do not march in step), as an agent between its
    model calls."""
    rng = random.Random(2)

    async def session(http: httpx.AsyncClient, s: int) -> None:
        for i in range(per_session):
            if think > 0:
                await asyncio.sleep(rng.expovariate(1 / think))
            a, b = rng.sample(TOPICS, 2)
            body: dict[str, Any] = {"query": f"why the {a} {i} {s} {rng.choice(VERBS)} {b}",
                                    "top_k": 5}
            if session_of is not None:
                body["session_id"] = session_of(s)
            await rec.call(http, endpoint, "POST", f"{url}/api/memory/search", json=body)

    async with client(concurrent) as http:
        started = time.perf_counter()
        await bounded([session(http, s) for s in range(concurrent)], PHASE_SECONDS)
        return time.perf_counter() - started


async def grow(url: str, sessions: int, to: int, have: int, rec: Recorder) -> None:
    """Store memories (batches of 100) until each of `sessions` holds `to`."""
    rng = random.Random(3 + to)
    async with client(sessions) as http:
        async def fill(s: int) -> None:
            for start in range(have, to, 100):
                items = [{"content": sentence(rng, s, i), "session_id": f"g{s}"}
                         for i in range(start, min(to, start + 100))]
                r = await rec.call(http, "POST /api/memory/memories (batch)", "POST",
                                   f"{url}/api/memory/memories", json={"memories": items})
                if r is not None and r.status_code == 200:
                    rec.acked += r.json()["ids"]
        await bounded([fill(s) for s in range(sessions)], PHASE_SECONDS)


async def fault(url: str, db: Path, rec: Recorder, lock_seconds: float) -> dict[str, Any]:
    """Stores from 20 sessions for a while; another process holds the database's write lock
    in the middle. Reports what the clients and /health saw."""
    rng = random.Random(4)
    seen: dict[str, Any] = {"health_during": None, "health_after": None, "statuses": defaultdict(int)}
    stop = asyncio.Event()

    async def writer(http: httpx.AsyncClient, s: int) -> None:
        i = 0
        while not stop.is_set():
            r = await rec.call(http, "POST /api/memory/memories (fault run)", "POST",
                               f"{url}/api/memory/memories",
                               json={"content": sentence(rng, s, i), "session_id": f"f{s}"})
            i += 1
            if r is not None:
                seen["statuses"][r.status_code] += 1
                if r.status_code == 200:
                    rec.acked += r.json()["ids"]
            await asyncio.sleep(0.05)

    async with client(40) as http:
        tasks = [asyncio.ensure_future(writer(http, s)) for s in range(20)]
        await asyncio.sleep(3)
        locker = subprocess.Popen([sys.executable, "-c", (
            "import sqlite3, time\n"
            f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
            "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True)\n"
            f"time.sleep({lock_seconds}); c.execute('ROLLBACK')\n")],
            stdout=subprocess.PIPE, text=True)
        assert locker.stdout is not None
        await asyncio.to_thread(locker.stdout.readline)
        locked_at = time.monotonic()
        while time.monotonic() - locked_at < lock_seconds - 1:  # health while locked
            h = await http.get(f"{url}/health")
            seen["health_during"] = {"status": h.status_code, **h.json()}
            if h.status_code != 200:
                break
            await asyncio.sleep(0.5)
        await asyncio.to_thread(locker.wait)
        released = time.monotonic()
        seen["locked_seconds"] = released - locked_at
        recovered = None
        while time.monotonic() - released < 60:
            h = await http.get(f"{url}/health")
            if h.status_code == 200:
                recovered = time.monotonic() - released
                break
            await asyncio.sleep(0.5)
        seen["recovered_after_s"] = recovered
        seen["health_after"] = {"status": h.status_code, **h.json()}
        await asyncio.sleep(2)
        stop.set()
        await asyncio.gather(*tasks)
    seen["statuses"] = dict(seen["statuses"])
    seen["error_503"] = rec.messages.get(503, "")
    return seen


def missing_ids(db: Path, ids: list[str]) -> int:
    with sqlite3.connect(db) as conn:
        table = "records" if conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name='records'").fetchone() else "memories"
        found = 0
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            found += conn.execute(f"SELECT COUNT(*) FROM {table} WHERE id IN ({marks})",
                                  chunk).fetchone()[0]
    return len(set(ids)) - found


# -- the run --------------------------------------------------------------------------------
def run(args: argparse.Namespace, tmp: Path, neo4j_uri: str | None = None) -> dict[str, Any]:
    from DeepResearch.src.memory.backends.embedded import DB_FILE

    store = tmp / "store"
    service = Service(store, tmp / "service.log",
                      f"memory.service.tool_timeout_seconds={args.service_timeout}",
                      backend_args=neo4j_uri and serve_args(neo4j_uri, args.workers, store))
    service.start()
    out: dict[str, Any] = {"backend": "neo4j" if neo4j_uri else "faiss",
                           "workers": args.workers if neo4j_uri else 1,
                           "sessions": args.sessions, "stores_per_session": args.stores,
                           "service_timeout": args.service_timeout,
                           "load_average_before": os.getloadavg()[0]}
    rec = Recorder()
    if "concurrency" in args.phases:
        print(f"concurrency: {args.sessions} sessions x {args.stores} stores", flush=True)
        seconds = asyncio.run(concurrency(service.url, args.sessions, args.stores, rec))
        requests = sum(len(v) for v in rec.ms.values())
        out["concurrency"] = {"seconds": seconds, "requests": requests,
                              "throughput_rps": requests / seconds, "errors": dict(rec.errors),
                              "endpoints": rec.summary(), "acked": len(rec.acked)}
        print(f"  {requests} requests in {seconds:.1f} s, errors {dict(rec.errors)}", flush=True)

    if "latency" in args.phases:
        lat = Recorder()
        print(f"latency: {args.concurrent} concurrent sessions searching", flush=True)
        seconds = asyncio.run(search_load(service.url, args.concurrent, args.searches, lat,
                                          "POST /api/memory/search"))
        n = len(lat.ms["POST /api/memory/search"])
        out["latency"] = {"concurrent": args.concurrent, "seconds": seconds,
                          "throughput_rps": n / seconds, "errors": dict(lat.errors),
                          "endpoints": lat.summary()}
        if args.think_seconds > 0:  # beside the closed loop, never instead of it
            think = Recorder()
            print(f"latency: {args.concurrent} sessions searching, {args.think_seconds:g} s "
                  "think time", flush=True)
            seconds = asyncio.run(search_load(service.url, args.concurrent, args.searches,
                                              think, "POST /api/memory/search",
                                              think=args.think_seconds))
            n = len(think.ms["POST /api/memory/search"])
            out["latency_think"] = {"concurrent": args.concurrent, "think_seconds":
                                    args.think_seconds, "seconds": seconds,
                                    "throughput_rps": n / seconds,
                                    "errors": dict(think.errors), "endpoints": think.summary()}

    growth: dict[str, Any] = {}
    have = 0
    gro = Recorder()
    for size in args.sizes if "growth" in args.phases else []:
        print(f"growth: {args.grow_sessions} sessions x {size} memories", flush=True)
        asyncio.run(grow(service.url, args.grow_sessions, size, have, gro))
        have = size
        filled = asyncio.run(vectors_filled(service.url, PHASE_SECONDS))
        probe = Recorder()
        asyncio.run(search_load(service.url, args.grow_sessions, args.growth_searches, probe,
                                "search", session_of=lambda s: f"g{s}"))
        growth[str(size)] = probe.summary().get("search", {})
        growth[str(size)]["errors"] = sum(probe.errors.values())
        growth[str(size)]["vectors_filled_s"] = filled
    if growth:
        out["growth"] = growth
        out["growth_store_errors"] = dict(gro.errors)
        first, last = growth[str(args.sizes[0])]["p95"], growth[str(args.sizes[-1])]["p95"]
        out["growth_ratio"] = last / first

    fault_rec = Recorder()
    if args.fault and "fault" in args.phases and not neo4j_uri:  # Neo4j stopped: a test
        print(f"fault: the database locked by another process for {args.lock_seconds:.0f} s",
              flush=True)
        out["fault"] = asyncio.run(fault(service.url, store / DB_FILE, fault_rec,
                                         args.lock_seconds))
    out["load_average_after"] = os.getloadavg()[0]
    code = service.stop()
    out["graceful_stop"] = "Application shutdown complete" in service.log.read_text(errors="replace")
    acked = rec.acked + gro.acked + fault_rec.acked
    out["stop_exit_code"] = code
    out["acked_total"] = len(set(acked))
    out["lost"] = (missing_in_neo4j(neo4j_uri, acked) if neo4j_uri
                   else missing_ids(store / DB_FILE, acked))
    out["fault_acked"] = len(fault_rec.acked)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=1000)
    p.add_argument("--stores", type=int, default=3)
    p.add_argument("--concurrent", type=int, default=100)
    p.add_argument("--searches", type=int, default=10, help="searches per session (latency)")
    p.add_argument("--think-seconds", type=float, default=5.0,
                   help="a second latency measurement: the same sessions with this mean pause "
                   "before each search (0: none); the closed loop runs regardless")
    p.add_argument("--grow-sessions", type=int, default=10)
    p.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    p.add_argument("--growth-searches", type=int, default=30)
    p.add_argument("--lock-seconds", type=float, default=8.0)
    p.add_argument("--no-fault", dest="fault", action="store_false")
    p.add_argument("--service-timeout", type=float, default=300.0,
                   help="memory.service.tool_timeout_seconds of the served process (each call's "
                   "limit once admitted; bench_service_open runs at the default 30 s)")
    p.add_argument("--phases", nargs="+", choices=PHASES, default=list(PHASES),
                   help="run only these phases (in their usual order); a partial run leaves "
                   "docs/benchmarks.md alone. Without concurrency the store lacks its 3,000 rows")
    p.add_argument("--backend", choices=["faiss", "neo4j"], default="faiss",
                   help="neo4j: the test suite's Neo4j (or NEO4J_URI), several workers; saved "
                   "as service_neo4j, without the lock fault (Neo4j stopping is a test)")
    p.add_argument("--workers", type=int, default=2, help="service workers on neo4j")
    p.add_argument("--quick", action="store_true", help="small figures (a smoke run)")
    p.add_argument("--tag", default="", help="save as service_TAG, leave docs/benchmarks.md alone")
    args = p.parse_args(argv if argv is not None else [])
    if args.quick:
        args.sessions, args.concurrent, args.searches = 50, 10, 3
        args.grow_sessions, args.sizes, args.growth_searches, args.lock_seconds = 3, [10, 50], 5, 6
    command = "python -m benchmarks.bench_service " + " ".join(argv or [])
    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
        if args.backend == "neo4j":
            with neo4j_server() as uri:
                out = run(args, Path(tmp), uri)
        else:
            out = run(args, Path(tmp))
    body = report(out, command)
    print(body)
    complete = args.phases == list(PHASES)
    tag = args.tag or ("" if complete else "partial")
    name = "service" if args.backend == "faiss" else "service_neo4j"
    save_result(f"{name}_{tag}" if tag else name, out)
    if not args.quick and not tag:
        title = "Memory service under load" + (" (Neo4j)" if args.backend == "neo4j" else "")
        write_section(name, title, command.strip(), body)


if __name__ == "__main__":
    main(sys.argv[1:])
