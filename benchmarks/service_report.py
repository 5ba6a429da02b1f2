"""bench_service's figures as the Markdown section of docs/benchmarks.md (the phases run)."""

from __future__ import annotations

from typing import Any


def _endpoint_rows(phase: str, data: dict[str, Any]) -> list[str]:
    return [f"| {phase} | {ep} | {s['n']} | {s['p50']:.1f} | {s['p95']:.1f} | {s['p99']:.1f} |"
            for ep, s in data["endpoints"].items()]


def report(out: dict[str, Any], command: str) -> str:
    c, lat, g = out.get("concurrency"), out.get("latency"), out.get("growth")
    think = out.get("latency_think")
    served = ("Neo4j 5.26 (the test suite's embedded server) on the same machine, "
              f"{out['workers']} workers" if out.get("backend") == "neo4j"
              else "embedded store, one worker")
    lines = [
        f"`deepresearch-memory serve` ({served}) in its own process; the load "
        "from one asyncio + httpx process on the same machine. Times in milliseconds.",
        "",
        f"- Served with `memory.service.tool_timeout_seconds={out['service_timeout']:g}`.",
    ]
    errors = sum(sum(d["errors"].values()) for d in (c, lat) if d)
    if c:
        lines.append(
            f"- **{out['sessions']} concurrent sessions** ({out['stores_per_session']} stores, "
            f"one search, one read each): {c['requests']} requests in {c['seconds']:.1f} s "
            f"({c['throughput_rps']:.0f} requests/s), errors: {errors} {c['errors'] or ''}; "
            "goal 0.")
    lines.append(
        f"- **lost**: {out['lost']} of {out['acked_total']} acknowledged memories missing after "
        f"SIGTERM (graceful shutdown completed: {out['graceful_stop']}); goal 0.")
    if lat:
        p95 = lat["endpoints"]["POST /api/memory/search"]["p95"]
        lines.append(
            f"- **plain search at {lat['concurrent']} concurrent sessions**: p95 {p95:.1f} ms "
            f"({lat['throughput_rps']:.0f} searches/s). A closed loop: each "
            "session sends its next search as soon as the last is answered.")
    if think:
        p95 = think["endpoints"]["POST /api/memory/search"]["p95"]
        lines.append(
            f"- **the same {think['concurrent']} sessions with think time** (a pause of "
            f"{think['think_seconds']:g} s on average before each search, a second measurement "
            f"beside the closed loop): p95 {p95:.1f} ms ({think['throughput_rps']:.0f} "
            "searches/s).")
    if g:
        lines.append(
            f"- **growth** ({len(g)} sizes, per-session search): p95 at the largest / smallest = "
            f"{out['growth_ratio']:.2f}; goal <= 1.5.")
    lines += [
        "",
        *([f"- Other jobs shared the machine's cores during this run (load average "
            f"{out['load_average_before']:.1f} before it): its times are pessimistic."]
          if out["load_average_before"] > 2 else []),
    ]
    rows = [*(_endpoint_rows("concurrency", c) if c else []),
            *(_endpoint_rows("latency", lat) if lat else []),
            *(_endpoint_rows("latency, think time", think) if think else [])]
    if rows:
        lines += ["", "| phase | endpoint | n | p50 | p95 | p99 |", "|---|---|---|---|---|---|",
                  *rows]
    if g:
        lines += ["", "| memories per session | vectors filled after the stores (s) | searches "
                  "| p50 | p95 | errors |", "|---|---|---|---|---|---|",
                  *(f"| {size} | {s.get('vectors_filled_s', float('nan')):.1f} | {s['n']} "
                    f"| {s['p50']:.1f} | {s['p95']:.1f} | {s['errors']} |"
                    for size, s in g.items())]
    if "fault" in out:
        f = out["fault"]
        recovered = f["recovered_after_s"]
        lines += [
            "",
            f"**Fault run**: 20 sessions storing while another process held the database's "
            f"write lock for {f['locked_seconds']:.1f} s. Answers: {f['statuses']}. During it "
            f"`/health` answered {f['health_during']['status']} "
            f"(`{f['health_during'].get('detail', '')[:160]}`); a refused store said: "
            f"`{f['error_503'][:200]}`. Health was 200 again "
            f"{recovered if recovered is None else round(recovered, 1)} s "
            f"after the lock was released; {out['fault_acked']} stores of the fault run were "
            "acknowledged and are among those counted above.",
        ]
    return "\n".join(lines)
