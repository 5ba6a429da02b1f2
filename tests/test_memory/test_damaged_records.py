"""A damaged record (its row edited in the real SQLite file) is never fatal and never served:
every read skips it with one warning naming it, `health` counts it and fails, `forget ID`
removes it; a command whose backend is lost part-way exits non-zero. Through the real
`deepresearch-memory` commands."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from DeepResearch.src.memory.backends.embedded import DB_FILE, INDEX_FILE
from test_memory.test_cli_errors import b64, line, memory_cli, unit, write_lines

pytestmark = [pytest.mark.slow, pytest.mark.integration]
LONG = "a long memory on the STAR aligner. " * 200  # compressed (over 4 KiB)


def store_with(tmp_path: Path, n: int = 8, name: str = "memory", seed: int = 0) -> Path:
    store = tmp_path / name
    rows = [line(i, content=(LONG if i == 3 else f"memory {i} on the STAR aligner"),
                 metadata={"topic": "rna"}, vector=b64(unit(seed + i))) for i in range(n)]
    done = memory_cli(store, "import", str(write_lines(tmp_path / f"{name}.jsonl", rows)))
    assert done.returncode == 0, done.stderr
    return store


def edit(store: Path, sql: str, *params: object) -> None:
    with sqlite3.connect(store / DB_FILE) as conn:
        assert conn.execute(sql, params).rowcount == 1


def found_ids(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [row.split()[2] for row in done.stdout.splitlines()]


def warned_once(done: subprocess.CompletedProcess[str], rid: str) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    warnings = [w for w in done.stderr.splitlines() if f"skipping stored memory '{rid}'" in w]
    assert len(warnings) == 1, done.stderr


DAMAGE = {
    "metadata JSON": ("UPDATE records SET metadata = '{\"topic\": \"rna\"' WHERE id = 'm3'",
                      "metadata is not valid JSON"),
    "content blob": ("UPDATE records SET content_blob = CAST(substr(content_blob, 1, 40) || "
                     "zeroblob(30) AS BLOB) WHERE id = 'm3'", "cannot decompress"),
    "vector length": ("UPDATE records SET vector = substr(vector, 1, 1000) WHERE id = 'm3'",
                      "stored vector has 250 values"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_record_is_skipped_named_counted_by_health_and_forgettable(
    tmp_path: Path, damage: str
) -> None:
    store = store_with(tmp_path)
    sql, why = DAMAGE[damage]
    edit(store, sql)

    done = memory_cli(store, "search", "STAR aligner", "--top-k", "20")
    assert done.returncode == 0, done.stderr
    assert sorted(found_ids(done)) == [f"m{i}" for i in range(8) if i != 3]
    warned_once(done, "m3")
    done = memory_cli(store, "search", "STAR aligner", "--filter", "topic=rna")
    assert done.returncode == 0 and "m3" not in found_ids(done) and found_ids(done), done.stderr

    done = memory_cli(store, "show", "m3")
    assert done.returncode == 1 and "m3" in done.stderr and "Traceback" not in done.stderr
    assert memory_cli(store, "show", "m4").returncode == 0

    done = memory_cli(store, "health")
    report = json.loads(done.stdout)
    assert done.returncode == 1 and not report["ok"], done.stdout
    assert any("1 damaged records" in p and "'m3'" in p and why in p for p in report["problems"])

    done = memory_cli(store, "forget", "m3")
    assert done.returncode == 0 and "forgot 1" in done.stdout, done.stderr
    done = memory_cli(store, "health")
    assert done.returncode == 0 and json.loads(done.stdout)["problems"] == [], done.stdout


def test_a_stored_session_id_store_refuses_is_skipped_with_the_documented_warning(
    tmp_path: Path,
) -> None:
    """docs/memory.md: a record with values `store` would refuse is skipped by every read
    with one warning naming it."""
    store = store_with(tmp_path)
    edit(store, "UPDATE records SET session_id = '../../x' WHERE id = 'm5'")
    done = memory_cli(store, "search", "STAR aligner", "--top-k", "20")
    assert done.returncode == 0 and "m5" not in found_ids(done) and found_ids(done)
    warned_once(done, "m5")
    assert "session_id='../../x'" in done.stderr


def test_a_search_whose_backend_is_lost_part_way_exits_non_zero(tmp_path: Path) -> None:
    """The full-text table damaged: the store opens (quick_check reads no FTS5 content) and
    the search's lexical half fails with the damage."""
    store = store_with(tmp_path)
    with sqlite3.connect(store / DB_FILE) as conn:
        conn.execute("UPDATE fts_data SET block = randomblob(length(block)) WHERE id > 10")
    done = memory_cli(store, "search", "STAR aligner")
    assert done.returncode == 1 and "Traceback" not in done.stderr, (done.stdout, done.stderr)
    assert "lost during the command" in done.stderr and "damaged" in done.stderr


def test_an_index_copied_from_another_store_is_rebuilt_with_one_warning_and_health_is_ok(
    tmp_path: Path,
) -> None:
    ours = store_with(tmp_path, name="ours")
    theirs = store_with(tmp_path, name="theirs", seed=1000)  # same size, other vectors
    (ours / INDEX_FILE).write_bytes((theirs / INDEX_FILE).read_bytes())
    done = memory_cli(ours, "health")
    assert done.returncode == 0 and json.loads(done.stdout)["ok"], (done.stdout, done.stderr)
    warnings = [w for w in done.stderr.splitlines() if INDEX_FILE in w]
    assert len(warnings) == 1 and "another store" in warnings[0] and "rebuilding" in warnings[0]
    done = memory_cli(ours, "health")
    assert done.returncode == 0 and INDEX_FILE not in done.stderr
