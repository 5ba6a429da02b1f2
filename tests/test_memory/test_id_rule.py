"""One id rule (config_base.ID_RULE) for the config, the client and the service: a namespace
or session id with '..' is refused at start by both CLIs (one line naming it, exit 2) and
by the service's request bodies (422)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from DeepResearch.src.memory import MemoryConfig, MemoryConfigError, MemoryInputError
from DeepResearch.src.memory.inputs import clean_id

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "NEO4J"))}
    env.pop("DEEPRESEARCH_MEMORY_API_KEYS", None)
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-m", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("setting", ["memory.session_id=a..b", "memory.namespace=team..x"])
@pytest.mark.parametrize("command", [
    ("DeepResearch.app", "question=what is FAISS?"),
    ("DeepResearch.src.memory.cli", "serve"),
    ("DeepResearch.src.memory.cli", "list"),
])
def test_both_clis_refuse_a_double_dot_id_at_start(
    tmp_path: Path, setting: str, command: tuple[str, str]
) -> None:
    done = run(tmp_path, *command, setting, f"memory.faiss.path={tmp_path / 'store'}",
               f"outputs_dir={tmp_path / 'out'}" if command[0] == "DeepResearch.app"
               else "memory.service.port=1")
    value = setting.split("=", 1)[1]
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{setting.split('=')[0]}={value!r}" in lines[0], done.stderr
    assert "no '..'" in lines[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "store").exists()


def test_config_and_client_share_the_rule() -> None:
    for bad in ("a..b", "..", "x/y", "-a", ""):
        with pytest.raises(MemoryConfigError, match="session_id"):
            MemoryConfig(session_id=bad)
        with pytest.raises(MemoryInputError, match="session_id"):
            clean_id(bad, "session_id")
    assert MemoryConfig(namespace="team.alice:1", session_id="run-2.b").namespace == "team.alice:1"
