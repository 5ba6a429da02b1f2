"""A checkpoint that cannot be written (a real full disk: a small tmpfs) stops the run with an
error naming the file; the checkpoint on disk stays whole and resumes once there is room."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from DeepResearch.src.workflow.checkpoint import CHECKPOINT_NAME, CheckpointWriteError
from DeepResearch.src.workflow.hooks import NodeHook
from DeepResearch.src.workflow.resume import resume_research
from DeepResearch.src.workflow.run import create_run_services, run_research
from tests.test_memory.fault_support import small_disk as tmpfs

pytestmark = pytest.mark.integration
MakeConfig = Callable[..., DictConfig]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 512 KiB tmpfs: a disk that really fills up."""
    with tmpfs(tmp_path / "disk", "512k") as disk:
        yield disk


class FillDiskAfterPlan(NodeHook):
    """Fills the disk once the plan's checkpoint is on it: the next one finds no room."""

    def __init__(self, disk: Path) -> None:
        self.filler = disk / "filler.bin"

    async def after_node(self, node: Any, ctx: Any, result: Any) -> None:
        if node.phase != "plan" or ctx.state.loop_id != "root":
            return
        checkpointer = next(h for h in ctx.deps.run_hooks if hasattr(h, "wait"))
        checkpointer.wait()
        with self.filler.open("wb", buffering=0) as handle:
            try:
                while True:
                    handle.write(b"\0" * 4096)
            except OSError:  # full: from now on every write fails
                pass


def test_full_disk_stops_the_run_and_the_checkpoint_stays_resumable(
    make_config: MakeConfig, small_disk: Path
) -> None:
    cfg = make_config(f"outputs_dir={small_disk / 'out'}")
    services = create_run_services(cfg)
    filler = FillDiskAfterPlan(small_disk)
    services.node_hooks.append(filler)
    with pytest.raises(BaseException) as caught:
        asyncio.run(run_research("Which aligner suits RNA-seq reads?", cfg, services))
    chain, error = [], caught.value
    while error is not None:
        chain.append(error)
        error = error.__context__
    [write_error] = [e for e in chain if isinstance(e, CheckpointWriteError)]
    [run_dir] = list((small_disk / "out").iterdir())
    assert str(run_dir) in str(write_error)  # the checkpoint, or the drafts beside it
    assert "No space left on device" in str(write_error)
    saved = json.loads((run_dir / CHECKPOINT_NAME).read_text())  # whole, not torn
    assert saved["next_node"] == "Route" and saved["phases"][-1]["phase"] == "plan"
    assert not list(run_dir.glob(".*.tmp"))  # no temporary file left behind

    filler.filler.unlink()
    result = asyncio.run(resume_research(run_dir))
    assert result.outcome is not None and "STAR" in result.outcome.answer
    assert json.loads((run_dir / CHECKPOINT_NAME).read_text())["status"] == "completed"
