"""bench_service_open's figures as the Markdown section of docs/service.md."""

from __future__ import annotations

from typing import Any


def _met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def report(out: dict[str, Any]) -> str:
    from DeepResearch.src.memory.config_service import ServiceConfig

    svc = ServiceConfig()
    adm = svc.admission
    goals = out["goals"]
    base = out["unloaded"]["p50"]
    sat = out["saturation_rps"]
    a, b, s = out["at_80"], out["at_2x"], out["sessions"]
    ratio = a["p95"] / base
    errors_80 = sum(a["errors"].values()) + a["refused"]
    share = b["goodput"] / sat
    other = {k: v for k, v in s["errors"].items() if "Timeout" not in k and
             not k.endswith(" timeout")}
    lines = [
        "`deepresearch-memory serve` (embedded store, one worker, default settings: admission "
        f"{adm.max_in_flight} in flight / {adm.max_queued} queued / {adm.max_wait_seconds:g} s "
        f"wait, {svc.tool_timeout_seconds:g} s time limit) in its own process; searches over "
        f"{out['seeded']} memories sent from one asyncio + httpx process on the same machine at "
        "a fixed rate whatever the answers (open loop). Latency counts from each request's "
        "scheduled send time, in milliseconds. Machine load (1-minute load average): "
        f"{out['load_average_before']:.1f} at the start, {out['load_average_after']:.1f} at "
        "the end.",
        "",
        f"- **unloaded** (one search at a time): p50 {base:.1f}.",
        f"- **saturation**: {sat:.1f} searches/s, the median goodput of the steps below that "
        "saturated (a refusal, an error or goodput under 90% of the rate): what the service "
        f"keeps up when offered more (a closed-loop pilot, 8 in flight: {out['pilot_rps']:.1f}/s).",
        f"- **at 80% ({a['rate']:.1f}/s)**: p50 {a['p50']:.0f}, p95 {a['p95']:.0f} = "
        f"{ratio:.1f}x the unloaded p50 (goal <= {goals['p95_ratio']:g}: {_met(ratio <= goals['p95_ratio'])}); "
        f"errors and refusals {errors_80} (goal 0: {_met(errors_80 == 0)}).",
        f"- **at 2x ({b['rate']:.1f}/s)**: goodput {b['goodput']:.1f}/s = {share:.0%} of "
        f"saturation (goal >= {goals['goodput']:.0%}: {_met(share >= goals['goodput'])}); "
        f"{b['refused']} refusals (503 overloaded), p50 {b['refusal_p50']:.1f}, p95 "
        f"{b['refusal_p95']:.1f}, max {b['refusal_max']:.1f}; {b['refusals_over_goal']} over "
        f"{goals['refusal_ms']:g} ms (goal 0: {_met(b['refusals_over_goal'] == 0)}); admitted "
        f"searches p95 {b['p95']:.0f}; other errors {sum(b['errors'].values())}. The same "
        f"refusals from the moment the client sent them: p95 {b['refusal_sent_p95']:.1f}, max "
        f"{b['refusal_sent_max']:.1f}, {b['refusals_sent_over_goal']} over "
        f"{goals['refusal_ms']:g} ms; the load generator ran up to "
        f"{b['generator_lag_ms']:.0f} ms behind its schedule.",
        f"- **{s['n']:,} sessions at once** (each stores a memory, then searches; a refused "
        "request is sent again after Retry-After plus jitter): done in "
        f"{s['seconds']:.0f} s; {s['refused']} refusals (p95 {s['refusal_p95']:.1f}, max "
        f"{s['refusal_max']:.1f}), timeouts {s['timeouts']} (goal 0: {_met(s['timeouts'] == 0)}), "
        f"other errors {sum(other.values())}; **lost** {out['lost']} of {s['acked']} "
        f"acknowledged memories after SIGTERM (goal 0: {_met(out['lost'] == 0)}).",
        *([f"- **query embedding**: {q['queries']:.0f} queries embedded in {q['passes']:.0f} "
           "forward passes over the run (concurrent searches share one)."]
          if (q := out.get("query_embedding")) else []),
        "- **steps** (offered/s: goodput/s, p95, refusals): " + "; ".join(
            f"{st['rate']:.1f}: {st['goodput']:.1f}, {st['p95']:.0f}, {st['refused']}"
            for st in out["steps"]) + ".",
    ]
    return "\n".join(lines)
