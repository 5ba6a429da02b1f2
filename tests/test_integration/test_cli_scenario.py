"""The acceptance scenario through the `deepresearch` command, one subprocess per run: faiss
memory in a fresh folder, offline model. Run 1 reads a document its question names, which does
not exist (a real not_found failure of read_document). Run 2 asks a related question: it
recalls run 1 (which memories, with scores) on the console and in report.md, its plan reads
the document run 1's answer cited, and the failing call is flagged to the Executor before it
is made. Run 3, with memory.enabled=false, recalls nothing and runs the Foundation workflow."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]
Q1 = "Which aligner suits RNA-seq reads, as compared in lab_aligner_notes.md?"
Q2 = "What does lab_aligner_notes.md say about splice-aware aligners for RNA-seq reads?"
SCORED = r"\[score \d+\.\d{3}, similarity \d\.\d{3}\]"


def deepresearch(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    command = [
        sys.executable,
        "-m",
        "DeepResearch.app",
        "outputs_dir=out",
        "memory.backend=faiss",
        f"memory.faiss.path={cwd / 'memory'}",
        *args,
    ]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def run_dir_of(done: subprocess.CompletedProcess[str]) -> Path:
    match = re.search(r"^Outputs: (.+)$", done.stdout, re.MULTILINE)
    assert match, done.stdout
    return Path(match.group(1))


def test_second_run_benefits_from_the_first_and_disabled_memory_recalls_nothing(
    tmp_path: Path,
) -> None:
    first = deepresearch(tmp_path, f"question='{Q1}'")
    session = re.search(r"memory: faiss backend, session (\w+)", first.stdout)
    assert session, first.stdout
    run1 = session.group(1)[:8]
    opened = re.search(
        r"opened in (\d+\.\d{3}) s \(of which importing its libraries (\d+\.\d{3}) s\)", first.stdout
    )
    assert opened and float(opened.group(2)) <= float(opened.group(1)), first.stdout
    history = (run_dir_of(first) / "execution_history.json").read_text()
    assert '"error_category": "not_found"' in history

    second = deepresearch(tmp_path, f"question='{Q2}'")
    out = second.stdout
    # Console: which memories were recalled from run 1, with scores.
    assert re.search(r"memory: loop root plan recalled \d+ \(earlier plans", out)
    assert re.search(rf"{SCORED} answer \(session {run1}\)", out)
    assert re.search(rf"{SCORED} plan \(session {run1}\): Plan for '{re.escape(Q1)}'", out)
    # The failing tool of run 1 is flagged to the executor before the call.
    flagged = out.index("memory: flagged to the executor before the call")
    assert 'FAILED BEFORE: read_document {"source": "lab_aligner_notes.md"} -> not_found' in out
    assert flagged < out.index("memory: stored")
    run2 = run_dir_of(second)
    report = (run2 / "report.md").read_text()
    assert re.search(rf"{SCORED} answer \(session {run1}\)", report)
    assert "### Flagged to the executor before the call" in report
    research = (run2 / "drafts/research.md").read_text()
    assert research.index("memory flags before calling `read_document`") < research.index(
        "read_document: lab_aligner_notes.md\n\nTool calls"
    )
    assert "! skipped read_document({'source': 'lab_aligner_notes.md'})" in research
    # Its plan uses the memories: it reads what run 1's answer cited, and says why.
    planning = (run2 / "drafts/planning.md").read_text()
    assert "read_document: rna_seq_aligners.md" in planning
    assert f"# memory: the earlier answer to '{Q1}'" in planning
    assert "## Memory" in (run2 / "WORKFLOW_SUMMARY.md").read_text()

    third = deepresearch(tmp_path, f"question='{Q2}'", "memory.enabled=false")
    assert "memory:" not in third.stdout and "recalled" not in third.stdout
    run3 = run_dir_of(third)
    assert "## Memory" not in (run3 / "report.md").read_text()
    planning = (run3 / "drafts/planning.md").read_text()
    assert "# memory" not in planning and "rna_seq_aligners.md\n" not in planning
    # The Foundation behaviour: the missing document is read (and fails) again.
    assert '"error_category": "not_found"' in (run3 / "execution_history.json").read_text()
