"""Writes one benchmark's section into its page of docs/, leaving the other sections alone.

Each benchmark owns the text between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`. The core's
figures and the table of every target live in docs/benchmarks.md; a feature's load and
quality figures live on the feature's own page (SECTION_PAGES), next to what they measure.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"
BENCHMARKS_MD = DOCS / "benchmarks.md"
SECTION_PAGES = {"service": "service.md", "service_open": "service.md", "service_neo4j": "service.md",
                 "agent_service": "service.md", "facts": "facts.md", "facts_neo4j": "facts.md", "sessions": "retrieval.md",
                 "extraction_quality": "fact_extraction.md", "hot_tier": "tiers.md",
                 "consolidation": "tiers.md", "full_context": "tiers.md",
                 "locomo_consolidation": "tiers.md", "million": "tiers.md"}
_HEADER = (
    "# Benchmarks\n\n"
    "Made by `make bench` (memory core, workflow overhead, large stores, Neo4j) and `make bench-locomo`\n"
    "(retrieval quality). Each section names the command that wrote it and the machine.\n"
    "Machines are noisy: compare the ratios, which are measured against the raw libraries\n"
    "in the same run, and read medians.\n"
)


def machine_line() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        model = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
        cpu = model
    except (OSError, StopIteration):
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        rev = ""
    return (
        f"{os.cpu_count()} cores ({cpu}), {mem_gib:.0f} GiB, Python {platform.python_version()}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC" + (f", commit {rev}" if rev else "")
    )


def write_section(name: str, title: str, command: str, body: str) -> Path:
    """Replace (or append) the section NAME of its page (docs/benchmarks.md by default)."""
    page = DOCS / SECTION_PAGES.get(name, BENCHMARKS_MD.name)
    text = page.read_text() if page.exists() else _HEADER
    section = (
        f"<!-- bench:{name} -->\n## {title}\n\n"
        f"Command: `{command}`  \nMachine: {machine_line()}\n\n{body.strip()}\n"
        f"<!-- /bench:{name} -->"
    )
    pattern = re.compile(rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _m: section, text)
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text if text.endswith("\n") else text + "\n")
    return page
