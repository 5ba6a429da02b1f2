"""bench_service_open's pieces against a small real HTTP server on 127.0.0.1 that refuses every
other request the way the service's admission control does: the recorder retries a refusal
after Retry-After, the open-loop generator sends on schedule and tells refusals from errors,
and the report says which goals are met."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from benchmarks.bench_service_open import Queries, open_loop
from benchmarks.service_harness import Recorder
from benchmarks.service_open_report import report

pytestmark = pytest.mark.unit


class Handler(BaseHTTPRequestHandler):
    count = 0
    lock = threading.Lock()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with Handler.lock:
            Handler.count += 1
            refuse = Handler.count % 2 == 1
        body = json.dumps({"error": "overloaded", "reason": "queue_full"} if refuse
                          else {"results": []}).encode()
        self.send_response(503 if refuse else 200)
        if refuse:
            self.send_header("Retry-After", "0")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Handler.count = 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_the_recorder_sends_a_refused_request_again(server: str) -> None:
    async def run() -> tuple[Recorder, int]:
        rec = Recorder()
        async with httpx.AsyncClient() as http:
            r = await rec.call(http, "search", "POST", f"{server}/api/memory/search", json={})
        assert r is not None
        return rec, r.status_code
    rec, status = asyncio.run(run())
    assert status == 200 and rec.refused == 1 and not rec.errors and len(rec.ms["search"]) == 1


def test_the_open_loop_counts_refusals_apart_from_errors(server: str) -> None:
    out = asyncio.run(open_loop(server, 40.0, 0.5, Queries(1), warm=0.0))
    assert out["sent"] == 20 and out["ok"] == 10 and out["refused"] == 10
    assert out["reasons"] == {"queue_full": 10} and out["errors"] == {}


def test_report_says_which_goals_are_met() -> None:
    run = {"rate": 10.0, "sent": 100, "ok": 100, "refused": 0, "errors": {}, "goodput": 10.0,
           "p50": 40.0, "p95": 90.0, "refusal_p50": math.nan, "refusal_p95": math.nan,
           "refusal_max": math.nan, "refusals_over_goal": 0, "refusal_sent_p95": math.nan,
           "refusal_sent_max": math.nan, "refusals_sent_over_goal": 0, "generator_lag_ms": 3.0}
    out = {"goals": {"p95_ratio": 4.0, "goodput": 0.9, "refusal_ms": 50.0}, "seeded": 1000,
           "unloaded": {"p50": 30.0}, "pilot_rps": 20.0, "saturation_rps": 25.0,
           "steps": [run], "at_80": {**run, "rate": 20.0, "p95": 150.0},
           "at_2x": {**run, "rate": 50.0, "goodput": 20.0, "refused": 60, "refusal_p50": 5.0,
                     "refusal_p95": 30.0, "refusal_max": 70.0, "refusals_over_goal": 2,
                     "refusal_sent_p95": 20.0, "refusal_sent_max": 40.0,
                     "refusals_sent_over_goal": 0, "generator_lag_ms": 30.0},
           "sessions": {"n": 1000, "seconds": 60.0, "refused": 900, "refusal_p95": 9.0,
                        "refusal_max": 20.0, "timeouts": 0, "errors": {}, "acked": 1000},
           "lost": 0, "query_embedding": {"queries": 900.0, "passes": 700.0},
           "load_average_before": 1.5, "load_average_after": 2.5}
    text = report(out)
    assert "p95 150 = 5.0x the unloaded p50 (goal <= 4: **not met**)" in text
    assert "= 80% of saturation (goal >= 90%: **not met**)" in text
    assert "2 over 50 ms (goal 0: **not met**)" in text
    assert "timeouts 0 (goal 0: met)" in text and "**lost** 0 of 1000" in text
    assert "from the moment the client sent them: p95 20.0, max 40.0, 0 over 50 ms" in text
    assert "900 queries embedded in 700 forward passes" in text
    assert "1.5 at the start, 2.5 at the end" in text
