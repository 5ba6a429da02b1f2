"""`deepresearch-memory serve` as a real process: it says it is local, answers over HTTP,
and after SIGTERM every acknowledged memory is in the store."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from benchmarks.bench_service import missing_ids
from DeepResearch.src.memory.backends.embedded import DB_FILE

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def test_serve_sigterm_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("DEEPRESEARCH_MEMORY_API_KEYS", None)
    err = tmp_path / "serve.err"
    proc = subprocess.Popen(
        [sys.executable, "-m", "DeepResearch.src.memory.cli", "serve",
         f"memory.service.port={port}", f"memory.faiss.path={tmp_path / 'store'}"],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err.open("wb"))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, err.read_text()
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the service did not start"
            time.sleep(0.2)
        ids = []
        for i in range(20):
            r = httpx.post(f"{url}/api/memory/memories", timeout=60,
                           json={"content": f"note {i} about the aligner", "session_id": "s"})
            assert r.status_code == 200, r.text
            ids += r.json()["ids"]
        r = httpx.post(f"{url}/api/memory/memories", timeout=60,
                       json={"memories": [{"content": f"batch {i}"} for i in range(30)]})
        ids += r.json()["ids"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    log = err.read_text()
    assert "local single-user" in log and "127.0.0.1 only" in log
    assert "Application shutdown complete" in log
    assert missing_ids(tmp_path / "store" / DB_FILE, ids) == 0 and len(ids) == 50
