"""Real faults for the write-path tests: a small tmpfs filled to the last byte, and a second
process holding the SQLite write lock of a store."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(600)
"""


@contextlib.contextmanager
def small_disk(path: Path, size: str = "2m", *, read_only: bool = False) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `path` (needs root; the test is skipped when refused)."""
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs for a real full disk: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path) -> Path:
    """Write a file on `disk` until the device is full (ENOSPC); returns it."""
    filler = disk / "filler.bin"
    block = b"\0" * 4096
    with filler.open("wb", buffering=0) as fh:
        try:
            while True:
                fh.write(block)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


@contextlib.contextmanager
def write_lock_held(db: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding `BEGIN EXCLUSIVE` on the database `db` until the block ends."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(db)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def spill_files(*folders: Path) -> list[Path]:
    return sorted(p for folder in folders if folder.is_dir() for p in folder.glob("unwritten-*.jsonl"))


def env_without_keys() -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("OPENAI_API_KEY", None)
    return env
