"""Checkpoints and resume: a `deepresearch` process killed with SIGKILL in its research phase
and resumed gives the report and the memories of a run that was never interrupted."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from DeepResearch.src.memory.backends.base import MemoryFilter
from DeepResearch.src.memory.client import MemorySystemClient
from DeepResearch.src.workflow.checkpoint import CHECKPOINT_NAME, load_checkpoint
from DeepResearch.src.workflow.checkpoint_memory import stamp_ids
from DeepResearch.src.workflow.requirements import StateValidationError
from DeepResearch.src.workflow.resume import resume_research
from DeepResearch.src.workflow.run import create_run_services, run_research

MakeConfig = Callable[..., DictConfig]
QUESTION = "Which aligner suits RNA-seq reads, and how are variants called?"


def command(tmp: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "DeepResearch.app", f"outputs_dir={tmp / 'out'}", *args]


def env() -> dict[str, str]:
    values = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    values.pop("OPENAI_API_KEY", None)
    return values


def memory_args(tmp: Path) -> list[str]:
    return [
        f"question='{QUESTION}'",
        "memory.backend=faiss",
        f"memory.faiss.path={tmp / 'memory'}",
        "memory.session_id=resume-test",
        "flows.default.notes.enabled=true",
        "flows.default.notes.chunk_size=1",
    ]


def stored_by_type(tmp: Path) -> Counter[str]:
    async def count() -> Counter[str]:
        client = MemorySystemClient(
            {"backend": "faiss", "faiss": {"path": str(tmp / "memory")}}
        )
        async with client:
            records = await client.backend.scan(MemoryFilter(namespaces=(client.namespace,)))
        return Counter(r.memory_type for r in records)

    return asyncio.run(count())


def report_parts(run_dir: Path) -> tuple[str, str]:
    """(the report up to its Memory section, the Memory section's Stored lines)."""
    report = (run_dir / "report.md").read_text()
    head, _, memory = report.partition("## Memory")
    stored = memory.split("### Stored", 1)[1].split("###", 1)[0]
    return head, stored


def notes_of(run_dir: Path) -> tuple[list[str], list[str], list[str]]:
    """(task note files, chunk files, the final synthesis' findings)."""
    folder = run_dir / "notes"
    final = json.loads((folder / "final_synthesis.json").read_text())
    return (sorted(p.name for p in (folder / "task_notes").iterdir()),
            sorted(p.name for p in (folder / "synthesis_notes").iterdir()),
            final["integrated_findings"])


def only_run(tmp: Path) -> Path:
    [run_dir] = list((tmp / "out").iterdir())
    return run_dir


def kill_after_first_step(tmp: Path) -> Path:
    """Start a run, SIGKILL it as soon as its checkpoint shows an executed step; the run
    folder. Retried when the run outran the kill (its second step's checkpoint was written)."""
    for _ in range(3):
        process = subprocess.Popen(
            command(tmp, *memory_args(tmp)), cwd=tmp, env=env(),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = list((tmp / "out").glob(f"*/{CHECKPOINT_NAME}"))
            try:
                phases = json.loads(found[0].read_text())["phases"] if found else []
            except json.JSONDecodeError:  # never a torn file: the write is atomic
                pytest.fail("a checkpoint was read half-written")
            if any("step" in phase for phase in phases):
                break
            time.sleep(0.003)
        process.send_signal(signal.SIGKILL)
        process.wait()
        run_dir = only_run(tmp)
        checkpoint = load_checkpoint(run_dir)
        steps = [p for p in checkpoint["phases"] if "step" in p]
        if len(steps) == 1 and not (run_dir / "report.md").exists():
            assert checkpoint["status"] == "running" and checkpoint["next_node"] == "ExecuteDefault"
            return run_dir
        # Too late: start over in a clean place.
        for path in sorted(tmp.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
    pytest.fail("the run always finished its second step before it could be killed")


@pytest.mark.slow
@pytest.mark.integration
def test_killed_run_resumed_equals_uninterrupted_run(tmp_path: Path) -> None:
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    straight.mkdir(), killed.mkdir()
    done = subprocess.run(command(straight, *memory_args(straight)), cwd=straight, env=env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr

    run_dir = kill_after_first_step(killed)
    before = stored_by_type(killed)
    assert before["plan"] >= 1  # the first nested loop's memories were written before the kill
    resumed = subprocess.run(command(killed, f"resume={run_dir}"), cwd=killed, env=env(),
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"Resumed: {run_dir}" in resumed.stdout

    assert report_parts(run_dir) == report_parts(only_run(straight))
    stored = stored_by_type(killed)
    assert stored == stored_by_type(straight) and stored["note"] >= 2
    assert notes_of(run_dir) == notes_of(only_run(straight))
    checkpoint = load_checkpoint(run_dir)
    assert checkpoint["status"] == "completed"
    events = [p.get("phase") or p.get("event") for p in checkpoint["phases"]]
    assert events == ["start", "plan", "route", "execute", "resumed", "execute", "synthesize",
                      "review", "report"]
    # Each executed step ran once: the first one's tool runs came from the checkpoint.
    history = json.loads((run_dir / "execution_history.json").read_text())["items"]
    straight_history = json.loads((only_run(straight) / "execution_history.json").read_text())
    assert [i["tool"] for i in history] == [i["tool"] for i in straight_history["items"]]

    again = subprocess.run(command(killed, f"resume={run_dir}"), cwd=killed, env=env(),
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "already complete" in again.stdout
    assert stored_by_type(killed) == stored_by_type(straight)


@pytest.mark.integration
def test_resume_of_a_folder_that_is_no_run_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    for target, expected in ((tmp_path / "plain", "not a run folder"),
                             (tmp_path / "missing", "no such folder")):
        done = subprocess.run(command(tmp_path, f"resume={target}"), cwd=tmp_path, env=env(),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2
        assert expected in done.stderr and "Traceback" not in done.stderr
        assert done.stderr.count("error") == 1


def test_finished_run_says_so(make_config: MakeConfig, tmp_path: Path) -> None:
    outcome = asyncio.run(run_research("Which aligner suits RNA-seq reads?", make_config()))
    checkpoint = load_checkpoint(outcome.run_dir)
    assert checkpoint["status"] == "completed"
    report = (outcome.run_dir / "report.md").read_text()
    result = asyncio.run(resume_research(outcome.run_dir))
    assert result.already_complete and result.outcome is None
    assert (outcome.run_dir / "report.md").read_text() == report


def test_resume_continues_from_the_checkpoint_without_redoing_phases(
    make_config: MakeConfig,
) -> None:
    outcome = asyncio.run(run_research("Which aligner suits RNA-seq reads?", make_config()))
    path = outcome.run_dir / CHECKPOINT_NAME
    done = json.loads(path.read_text())
    # Rewind to the checkpoint written after the plan: the status and next node of then.
    plan_phase = next(p for p in done["phases"] if p["phase"] == "route")
    assert plan_phase["next"] == "ExecuteDefault"
    rewound = {**done, "status": "running", "next_node": "ExecuteDefault"}
    rewound["state"] = {**done["state"], "final_answer": None, "answers": [],
                        "execution_results": [], "iteration": 0,
                        "execution_history": {**done["state"]["execution_history"], "items": []}}
    for step in rewound["state"]["plan"]:
        step["status"] = "pending"
    path.write_text(json.dumps(rewound))
    result = asyncio.run(resume_research(outcome.run_dir))
    assert result.outcome is not None
    assert result.outcome.answer == outcome.answer
    state = result.outcome.state
    ran = [record.node for record in state.phase_log]
    assert ran.count("Plan") == 1  # from the checkpoint, not run again
    assert load_checkpoint(outcome.run_dir)["status"] == "completed"


def test_a_phase_missing_its_input_stops_with_one_error_and_stays_resumable(
    make_config: MakeConfig,
) -> None:
    outcome = asyncio.run(run_research("Which aligner suits RNA-seq reads?", make_config()))
    path = outcome.run_dir / CHECKPOINT_NAME
    done = json.loads(path.read_text())
    broken = {**done, "status": "running", "next_node": "Synthesize"}
    broken["state"] = {**done["state"], "execution_results": []}
    path.write_text(json.dumps(broken))
    with pytest.raises(StateValidationError) as caught:
        asyncio.run(resume_research(outcome.run_dir))
    message = str(caught.value)
    assert "phase 'synthesize'" in message and "state.execution_results" in message
    after = load_checkpoint(outcome.run_dir)
    assert after["status"] == "failed" and after["next_node"] == "Synthesize"
    assert "state.execution_results" in after["error"]
    # Fixed (the results put back), the same folder resumes to the end.
    fixed = {**after, "state": done["state"]}
    path.write_text(json.dumps(fixed))
    result = asyncio.run(resume_research(outcome.run_dir))
    assert result.outcome is not None and result.outcome.answer == outcome.answer


def test_a_malformed_saved_field_is_named(make_config: MakeConfig) -> None:
    outcome = asyncio.run(run_research("Which aligner suits RNA-seq reads?", make_config()))
    path = outcome.run_dir / CHECKPOINT_NAME
    done = json.loads(path.read_text())
    broken = {**done, "status": "running", "next_node": "Synthesize"}
    broken["state"] = {**done["state"], "plan": [{"index": 1, "colour": "red"}]}
    path.write_text(json.dumps(broken))
    with pytest.raises(Exception, match=r"state\.plan\[0\] is not a PlanStep"):
        asyncio.run(resume_research(outcome.run_dir))


def test_a_write_repeated_after_a_crash_replaces_instead_of_adding(tmp_path: Path) -> None:
    async def store_twice() -> tuple[list[str], list[str], int | None]:
        config = {"backend": "faiss", "faiss": {"path": str(tmp_path / "memory")}}
        client = MemorySystemClient(config, session_id="run-session")
        async with client:
            stamp_ids(client, "run_1")
            item = {"content": "Tool search ran", "memory_type": "tool_execution",
                    "metadata": {"loop_id": "root", "step": "step_1"}}
            first = await client.store_many([item, item])  # two identical runs: two memories
            again = await client.store_many([item, item])  # the step redone after a crash
            total = (await client.stats()).total
        return first, again, total

    first, again, total = asyncio.run(store_twice())
    assert first == again and len(set(first)) == 2
    assert total == 2


def test_services_serving_two_runs_checkpoint_each_in_its_own_folder(
    make_config: MakeConfig,
) -> None:
    cfg = make_config("flows.default.notes.enabled=true")
    services = create_run_services(cfg)
    first = asyncio.run(run_research("Which aligner suits RNA-seq reads?", cfg, services))
    second = asyncio.run(run_research("How are variants called?", cfg, services))
    for outcome in (first, second):
        checkpoint = load_checkpoint(outcome.run_dir)
        assert checkpoint["run_id"] == outcome.run_dir.name
        assert checkpoint["phases"][0]["phase"] == "start"
        assert [p["phase"] for p in checkpoint["phases"]].count("plan") == 1
        meta = json.loads((outcome.run_dir / "notes" / "session_metadata.json").read_text())
        assert len(meta["decisions"]) == len(outcome.state.execution_results)
