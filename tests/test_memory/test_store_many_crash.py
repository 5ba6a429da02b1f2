"""`store_many` across a crash: with synchronous writes its records go to the embedded backend
in one transaction, so a process killed (SIGKILL) at any point leaves each call's records all
present or all absent; storing the same ids again never duplicates."""

from __future__ import annotations

import contextlib
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from DeepResearch.src.memory.backends.embedded import DB_FILE
from test_memory.fault_support import env_without_keys

pytestmark = [pytest.mark.slow, pytest.mark.integration]
ITEMS = 1000

STORE_FOREVER = """
import asyncio, sys
import numpy as np
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient

async def main(path: str, run: str) -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((1000, 384)).astype(np.float32)
    client = MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": path},
                                             storage={"batch_size": 64}))
    await client.open()
    print("ready", flush=True)
    attempt = 0
    while True:
        await client.store_many([
            {"id": f"{run}-{attempt}-{i}", "content": f"run {run} attempt {attempt} item {i}",
             "vector": vectors[i]} for i in range(1000)
        ])
        print(f"stored {attempt}", flush=True)
        attempt += 1

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def attempts_in(store: Path) -> Counter[str]:
    with contextlib.closing(sqlite3.connect(store / DB_FILE)) as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM records")]
    return Counter(i.rsplit("-", 1)[0] for i in ids)


def test_store_many_killed_at_random_points_leaves_all_or_none(tmp_path: Path) -> None:
    store = tmp_path / "memory"
    rng = random.Random(7)
    acknowledged = 0
    for run in range(6):
        child = subprocess.Popen([sys.executable, "-c", STORE_FOREVER, str(store), f"r{run}"],
                                 stdout=subprocess.PIPE, text=True, env=env_without_keys())
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 1.5))
        assert child.poll() is None  # killed while it works, not after
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate()
        acknowledged += out.count("stored ")
    counts = attempts_in(store)
    partial = {attempt: n for attempt, n in counts.items() if n != ITEMS}
    assert partial == {}, f"store_many calls left partly written: {partial}"
    assert sum(counts.values()) >= acknowledged * ITEMS  # every acknowledged call is there
    assert len(counts) >= 1


async def test_store_many_again_with_the_same_ids_replaces_not_duplicates(tmp_path: Path, embedder) -> None:
    from DeepResearch.src.memory import MemoryConfig, MemorySystemClient

    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "memory")})
    items = [{"id": f"same-{i}", "content": f"retried item {i}"} for i in range(50)]
    async with MemorySystemClient(config, embedder=embedder) as client:
        await client.store_many(items)
        await client.store_many(items)  # a retry after an unacknowledged call
        assert (await client.stats()).total == 50
