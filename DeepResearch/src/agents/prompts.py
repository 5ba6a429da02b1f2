"""The prompt and plan formats shared by the workflow nodes, the agents and the offline model.

Plain labelled lines, so that a real model can follow them and the offline model can read
them back: `QUESTION: ...`, plan lines `N. <tool>: <input>` / `N. subquestion: <question>`,
findings `- [source] text`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SUBQUESTION = "subquestion"
_PLAN_LINE = re.compile(r"^\s*(\d+)[.)]\s*([A-Za-z_][\w-]*)\s*:\s*(.+?)\s*$")
_FINDING = re.compile(r"^\s*-\s*\[([^\]]+)\]\s*(.+?)\s*$")
_CITATION = re.compile(r"\[([^\[\]\s]+\.(?:md|txt))\]")
_QUESTION_WORDS = r"(?:what|which|how|why|when|where|who|is|are|does|do|can|should)"


@dataclass
class PlanStep:
    """One step of a plan: a tool to call with an input, a sub-question, or free work."""

    index: int
    kind: str  # "tool" | "subquestion" | "note"
    text: str
    tool: str | None = None
    status: str = "pending"
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"step_{self.index}"

    def line(self) -> str:
        label = self.tool if self.kind == "tool" else self.kind
        return f"{self.index}. {label}: {self.text}"


@dataclass(frozen=True)
class Finding:
    source: str
    text: str

    def line(self) -> str:
        return f"- [{self.source}] {self.text}"


def parse_plan(text: str, known_tools: list[str]) -> list[PlanStep]:
    """Plan steps from numbered lines; a label that is no known tool becomes a note step."""
    steps: list[PlanStep] = []
    for raw in text.splitlines():
        match = _PLAN_LINE.match(raw)
        if not match:
            continue
        label, body = match.group(2), match.group(3)
        index = len(steps) + 1
        if label.lower() == SUBQUESTION:
            steps.append(PlanStep(index, SUBQUESTION, body))
        elif label in known_tools:
            steps.append(PlanStep(index, "tool", body, tool=label))
        else:
            steps.append(PlanStep(index, "note", f"{label}: {body}"))
    return steps


def parse_findings(text: str) -> list[Finding]:
    return [Finding(m.group(1), m.group(2)) for m in map(_FINDING.match, text.splitlines()) if m]


def cited_sources(text: str) -> list[str]:
    """Document sources cited as [name.md] / [dir/name.txt], in order of first citation."""
    return list(dict.fromkeys(_CITATION.findall(text)))


def split_question(question: str) -> list[str]:
    """A compound question's parts: by ';', else by sentences, else by ', and <question word>'."""
    parts = [p.strip() for p in question.split(";") if p.strip()]
    if len(parts) > 1:
        return parts
    sentences = [s.strip() for s in re.split(r"(?<=\?)\s+", question) if s.strip()]
    if len(sentences) > 1:
        return sentences
    clauses = re.split(rf",?\s+and\s+(?={_QUESTION_WORDS}\b)", question, flags=re.IGNORECASE)
    clauses = [c.strip() for c in clauses if c.strip()]
    return clauses if len(clauses) > 1 else [question.strip()]


def field_value(prompt: str, label: str) -> str | None:
    """The text after `LABEL:` on its line in `prompt`."""
    match = re.search(rf"^{re.escape(label)}:[ \t]*(.*)$", prompt, flags=re.MULTILINE)
    return match.group(1).strip() if match else None


def section(prompt: str, label: str) -> str:
    """The lines after a `LABEL:` header line up to the next ALL-CAPS header."""
    match = re.search(rf"^{re.escape(label)}:\s*$(.*?)(?=^[A-Z][A-Z -]+:|\Z)", prompt, re.M | re.S)
    return match.group(1).strip() if match else ""


def memory_section(memory: str) -> str:
    """The `MEMORY:` section of a prompt (what the workflow recalled), or "" when empty."""
    return f"MEMORY:\n{memory.strip()}\n" if memory.strip() else ""


def planner_prompt(
    question: str, tools: list[str], max_sub_questions: int, memory: str = ""
) -> str:
    allowed = f"allowed (at most {max_sub_questions})" if max_sub_questions > 0 else "not allowed"
    return (
        f"QUESTION: {question}\nTOOLS: {', '.join(tools)}\nSUBQUESTIONS: {allowed}\n"
        + memory_section(memory)
    )


def executor_prompt(
    question: str,
    step: PlanStep,
    total: int,
    sources: list[str],
    findings: list[Finding],
    memory: str = "",
) -> str:
    lines = [
        f"QUESTION: {question}",
        f"STEP {step.index}/{total}: {step.line().split('. ', 1)[1]}",
        f"SOURCES FOUND: {', '.join(sources) if sources else '(none yet)'}",
        "FINDINGS SO FAR:",
        *(finding.line() for finding in findings[-12:]),
    ]
    return "\n".join(lines) + "\n" + memory_section(memory)


def synthesizer_prompt(
    question: str, findings: list[Finding], sub_answers: list[tuple[str, str]], memory: str = ""
) -> str:
    lines = [f"QUESTION: {question}", "FINDINGS:", *(f.line() for f in findings)]
    if sub_answers:
        lines.append("SUB-QUESTION ANSWERS:")
        for sub_question, answer in sub_answers:
            lines += [f"### {sub_question}", answer.strip(), ""]
    return "\n".join(lines) + "\n" + memory_section(memory)
