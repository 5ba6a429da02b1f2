"""The run folder: outputs_dir/run_<timestamp>_<slug>/ and everything written into it."""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import OmegaConf

from DeepResearch.src.agents.prompts import cited_sources

if TYPE_CHECKING:
    from DeepResearch.src.workflow.state import ResearchState

DRAFT_PHASES = ("planning", "research", "writing", "review")
# Settings that hold secrets: never written into a run folder (config.yaml, checkpoint.json).
SECRET_KEYS = ("memory.neo4j.password", "memory.service.api_keys")


def saved_config(cfg: Any) -> dict[str, Any]:
    """`cfg` resolved, as a run folder keeps it, except its secrets: one read from the
    environment stays the reference (`${oc.env:NEO4J_PASSWORD,null}`, resolved again by a
    resume), one given literally is left out (null; the Neo4j backend then reads
    NEO4J_PASSWORD)."""
    data = OmegaConf.to_container(cfg, resolve=True)
    raw = OmegaConf.to_container(cfg, resolve=False)
    for key in SECRET_KEYS:
        *parents, leaf = key.split(".")
        node, source = data, raw
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
            source = source.get(part) if isinstance(source, dict) else None
        if not isinstance(node, dict) or node.get(leaf) in (None, {}):
            continue
        given = source.get(leaf) if isinstance(source, dict) else None
        node[leaf] = given if isinstance(given, str) and given.startswith("${oc.env:") else None
    return data  # type: ignore[return-value]


def slugify(text: str, max_length: int = 40) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:max_length].rstrip("-") or "question"


def make_run_dir(outputs_dir: str | Path, question: str, now: datetime | None = None) -> Path:
    """A new, empty run folder (a suffix is added if two runs start in the same second)."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    base = Path(outputs_dir).expanduser() / f"run_{stamp}_{slugify(question)}"
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}_{n}")
    (candidate / "drafts").mkdir(parents=True)
    return candidate


def render_report(state: ResearchState) -> str:
    answer = (
        state.final_answer
        or "_No answer: the run failed before synthesis (see WORKFLOW_SUMMARY.md)._"
    )
    cited = cited_sources(answer)
    consulted = [s for s in state.sources if s not in cited]
    lines = [f"# {state.question}", "", answer, "", "## Sources cited", ""]
    lines += [f"- [{s}]({_link(state, s)})" for s in cited] or ["- (none)"]
    if consulted:
        lines += ["", "## Also consulted", "", *(f"- [{s}]({_link(state, s)})" for s in consulted)]
    if state.sub_loops:
        lines += ["", "## Sub-questions (nested loops)", ""]
        lines += [
            f"- `{sub.loop_id}` {sub.question} ({'ok' if sub.success else 'failed'})"
            for sub in state.sub_loops
        ]
    model = f"{state.config.llm.provider}:{state.config.llm.model}"
    lines += [
        "",
        "---",
        f"Flow `{state.flow}`, model `{model}`, documents `{state.documents_dir}`.",
    ]
    return "\n".join(lines) + "\n"


def _link(state: ResearchState, source: str) -> str:
    if state.documents_dir is None:
        return source
    return (
        (Path(state.documents_dir) / source).as_uri()
        if Path(state.documents_dir).is_absolute()
        else source
    )


def render_summary(state: ResearchState, status: str) -> str:
    history = state.execution_history
    summary = history.summary()
    lines = [
        "# Workflow summary",
        "",
        f"- Question: {state.question}",
        f"- Status: {status}",
        f"- Flow: {state.flow}; model: {state.config.llm.provider}:{state.config.llm.model}",
        f"- Iterations (root loop): {state.iteration}/{state.max_iterations}",
        f"- Nested loops: {len(state.sub_loops)}",
        "",
        "## Phases",
        "",
        "| phase | seconds |",
        "|---|---|",
        *(f"| {phase} | {seconds:.3f} |" for phase, seconds in state.timings.items()),
        "",
        "## Node runs",
        "",
        "| loop | node | phase | seconds | ok |",
        "|---|---|---|---|---|",
        *(
            f"| {r.loop_id} | {r.node} | {r.phase} | {r.duration:.3f} | {'yes' if r.ok else 'no'} |"
            for r in state.phase_log
        ),
        "",
        "## Plan",
        "",
        *(f"- [{step.status}] {step.line()}" for step in state.plan),
        "",
        "## Tools used",
        "",
    ]
    tools = Counter(item.tool for item in history.items)
    lines += [f"- {tool}: {count}" for tool, count in tools.items()] or ["- (none)"]
    lines += [
        "",
        f"Tool runs: {summary['total']} ({summary['successful']} ok, {summary['failed']} failed, "
        f"{summary['skipped']} skipped).",
        "",
        "## Errors",
        "",
    ]
    lines += [f"- {error}" for error in state.errors] or ["- (none)"]
    lines += ["", *review_section(state)]
    if summary["failure_patterns"]:
        lines += ["", "## Failure patterns", ""]
        lines += [
            f"- {p['category']}: {p['count']} ({', '.join(p['tools'])})"
            for p in summary["failure_patterns"]
        ]
    return "\n".join(lines) + "\n"


def review_section(state: ResearchState) -> list[str]:
    """The Review lines of WORKFLOW_SUMMARY.md: each round, the version it reviewed, what the
    reviewer found and whether a revision followed (drafts/4_review/ holds each round)."""
    lines = ["## Review", ""]
    if not state.review_rounds:
        return [*lines, "- no review rounds (flows.<flow>.review.max_rounds=0, or the run "
                "ended before its review)"]
    lines += ["| round | draft version | problems | outcome |", "|---|---|---|---|"]
    for r in state.review_rounds:
        kinds = Counter(p["kind"] for p in r.problems)
        found = ", ".join(f"{n} {kind}" for kind, n in kinds.items()) or "none"
        outcome = f"revised into version {r.version + 1}" if r.revised else (
            "accepted" if not r.problems else "not revised")
        lines.append(f"| {r.round} | {r.version} | {found} | {outcome} |")
    final = state.review_rounds[-1]
    lines += ["", f"The report is draft version {final.version + int(final.revised)}; each "
              "round's draft and the reviewer's notes are in drafts/4_review/."]
    return lines


def write_run_outputs(state: ResearchState, status: str) -> dict[str, Path]:
    """Write every output of the root loop into `state.run_dir`; the paths written."""
    if state.run_dir is None:
        raise ValueError("state.run_dir is None: only a root loop with a run folder writes outputs")
    run_dir = Path(state.run_dir)
    written = {
        "report": run_dir / "report.md",
        "summary": run_dir / "WORKFLOW_SUMMARY.md",
        "history": run_dir / "execution_history.json",
        "config": run_dir / "config.yaml",
    }
    written["report"].write_text(render_report(state), encoding="utf-8")
    written["summary"].write_text(render_summary(state, status), encoding="utf-8")
    state.execution_history.save_to_file(written["history"])
    written["config"].write_text(OmegaConf.to_yaml(saved_config(state.config)), encoding="utf-8")
    for phase in DRAFT_PHASES:
        path = run_dir / "drafts" / f"{phase}.md"
        body = "\n".join(state.drafts.get(phase, [])) or "_(nothing in this phase)_\n"
        path.write_text(f"# {phase.capitalize()} draft\n\n{body}", encoding="utf-8")
        written[f"draft_{phase}"] = path
    return written
