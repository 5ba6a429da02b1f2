"""`deepresearch-memory` and `deepresearch` on users' mistakes and failing stores, through the
real commands: one line on stderr, exit status 2 (input/config) or 1 (backend), never a
traceback; import checks every line like `store`; forget refuses unknown filter keys and asks
before deleting many."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from DeepResearch.src.memory.backends.embedded import DB_FILE
from test_memory.fault_support import env_without_keys, small_disk, write_lock_held

pytestmark = [pytest.mark.slow, pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]
DIM = 384


def memory_cli(store: Path | str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "DeepResearch.src.memory.cli", *args, "memory.backend=faiss",
         f"memory.faiss.path={store}"],
        cwd=cwd or ROOT, env=env_without_keys(), capture_output=True, text=True, timeout=300,
    )


def one_error_line(done: subprocess.CompletedProcess[str], status: int, *fragments: str) -> str:
    """The command failed with `status` and exactly one line on stderr holding `fragments`."""
    assert done.returncode == status, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def b64(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def line(i: int, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "id": f"m{i}", "session_id": "s1" if i % 2 else "s2", "content": f"memory {i} on STAR",
        "created_at": 1_700_000_000.0 + i, "importance": 0.5, "vector": b64(unit(i)),
    }
    data.update(changes)
    return data


def write_lines(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def filled_store(tmp_path: Path, n: int = 4) -> Path:
    store = tmp_path / "memory"
    done = memory_cli(store, "import", str(write_lines(tmp_path / "good.jsonl", [line(i) for i in range(n)])))
    assert done.returncode == 0, done.stderr
    return store


def exported(store: Path, tmp_path: Path) -> dict[str, dict]:
    out = tmp_path / "export.jsonl"
    assert memory_cli(store, "export", str(out)).returncode == 0
    return {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}


# -- import ---------------------------------------------------------------------------------
def test_import_skips_and_reports_bad_lines_and_imports_the_rest(tmp_path: Path) -> None:
    nan = np.full(DIM, np.nan, dtype=np.float32)
    rows: list[object] = [
        line(0),
        line(1, importance=5.0),
        line(2, vector=b64(nan)),
        line(3, vector=b64(unit(3) * 1e6)),  # accepted, normalised
        line(4, content="   "),
        line(5, expires_at="tomorrow"),
        "this is not json",
        line(7, colour="red"),
        line(8, created_at="yesterday"),
        line(9, relations=5),
        line(10, memory_type=""),  # refused, not made a note
        line(0, content="memory 0 again"),  # the same id: replaces m0, counted once
    ]
    store = tmp_path / "memory"
    done = memory_cli(store, "import", str(write_lines(tmp_path / "mixed.jsonl", rows)))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "imported 2 memories" in done.stdout and "skipped 9 bad lines" in done.stdout
    skipped = [ln for ln in done.stderr.splitlines() if "skipped" in ln]
    for lineno, fragment in [(2, "importance=5.0"), (3, "non-finite"), (5, "content is empty"),
                             (6, "'tomorrow'"), (7, "not a JSON line"), (8, "'colour'"),
                             (9, "'yesterday'"), (10, "relations"), (11, "memory_type")]:
        assert any(f"mixed.jsonl:{lineno}:" in s and fragment in s for s in skipped), (lineno, skipped)
    rows_back = exported(store, tmp_path)
    assert set(rows_back) == {"m0", "m3"} and rows_back["m0"]["content"] == "memory 0 again"
    vector = np.frombuffer(base64.b64decode(rows_back["m3"]["vector"]), dtype="<f4")
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    assert json.loads(memory_cli(store, "stats").stdout)["total"] == 2  # later runs still work


def test_import_of_a_file_without_any_valid_line_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "memory"
    done = memory_cli(store, "import", str(write_lines(tmp_path / "bad.jsonl", [line(0, importance=2)])))
    assert done.returncode == 2 and "nothing imported" in done.stderr and "bad.jsonl:1:" in done.stderr
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(bytes(range(256)) * 4)
    done = memory_cli(store, "import", str(binary))
    assert done.returncode == 2 and "nothing imported" in done.stderr
    assert "Traceback" not in done.stderr


def test_import_of_a_missing_file_is_one_error(tmp_path: Path) -> None:
    one_error_line(memory_cli(tmp_path / "memory", "import", str(tmp_path / "nope.jsonl")), 2,
                   "cannot read", "nope.jsonl", "No such file")


def test_import_into_a_locked_store_is_a_backend_error_and_safe_to_repeat(tmp_path: Path) -> None:
    store = filled_store(tmp_path, 2)
    more = write_lines(tmp_path / "more.jsonl", [line(i) for i in range(2, 5)])
    with write_lock_held(store / DB_FILE):
        done = memory_cli(store, "import", str(more))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "database is locked by another process" in done.stderr and "again is safe" in done.stderr
    assert memory_cli(store, "import", str(more)).returncode == 0
    assert memory_cli(store, "import", str(more)).returncode == 0  # again: replaced by id
    assert set(exported(store, tmp_path)) == {f"m{i}" for i in range(5)}


# -- other commands ----------------------------------------------------------------------------
def test_search_with_a_huge_top_k_is_one_error(tmp_path: Path) -> None:
    one_error_line(memory_cli(tmp_path / "memory", "search", "aligner", "--top-k", "1000000000"), 2,
                   "--top-k 1000000000", "1 to 1000")


@pytest.mark.parametrize("target", ["/proc/nowhere/out.jsonl", "folder-missing/out.jsonl", "ro"])
def test_export_to_an_unwritable_path_is_one_error(tmp_path: Path, target: str) -> None:
    store = filled_store(tmp_path, 1)
    if target == "ro":
        with small_disk(tmp_path / "ro", read_only=True) as ro:
            done = memory_cli(store, "export", str(ro / "out.jsonl"))
        one_error_line(done, 2, "cannot write", "Read-only file system")
    else:
        one_error_line(memory_cli(store, "export", str(tmp_path / target)), 2, "cannot write", target)


def test_a_reader_that_closes_the_pipe_early_is_a_normal_end(tmp_path: Path) -> None:
    """`deepresearch-memory list | head -1`: far more output than a pipe holds (64 KiB), the
    reader takes one line and closes its end; the command ends with 0 and a silent stderr."""
    store = filled_store(tmp_path, 1500)
    proc = subprocess.Popen(
        [sys.executable, "-m", "DeepResearch.src.memory.cli", "list", "--limit", "3000",
         "memory.backend=faiss", f"memory.faiss.path={store}"],
        cwd=ROOT, env=env_without_keys(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0, err
    assert first.startswith(b"m") and err == ""


def test_an_export_into_a_pipe_whose_reader_stops_is_a_normal_end(tmp_path: Path) -> None:
    """`export` into a named pipe (as into /dev/stdout): the reader takes one line and goes;
    exit 0, nothing on stderr, and the pipe's name is left in place (it is no partial file)."""
    store = filled_store(tmp_path, 1500)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "DeepResearch.src.memory.cli", "export", str(fifo),
         "memory.backend=faiss", f"memory.faiss.path={store}"],
        cwd=ROOT, env=env_without_keys(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    with fifo.open("rb") as reader:  # opens when the command opens its end
        first = json.loads(reader.readline())
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert first["id"].startswith("m") and err == b"" and fifo.exists()


def test_bad_overrides_and_filters_are_one_error(tmp_path: Path) -> None:
    one_error_line(memory_cli(tmp_path / "m", "stats", "memory.faiss.paht=x"), 2,
                   "unknown configuration key 'memory.faiss.paht'", "memory.faiss.path")
    one_error_line(memory_cli(tmp_path / "m", "stats", "+memory.retreival.top_k=3"), 2,
                   "'memory.retreival.top_k'", "memory.retrieval.top_k")
    one_error_line(memory_cli(tmp_path / "m", "forget", "--filter", "novalue"), 2, "KEY=VALUE")
    line = one_error_line(memory_cli(tmp_path / "m", "search", " "), 2, "query is empty")
    assert "store" not in line  # a search is told to give a query, not to store text
    one_error_line(memory_cli(tmp_path / "m", "stats", "memory.recall=multihop"), 2,
                   "memory.recall='multihop'", "'multi_session'")
    # memory_cli chooses faiss: the neo4j section is not composed, and the line says which
    # choice would compose it
    one_error_line(memory_cli(tmp_path / "m", "stats", "memory.neo4j.uri=bolt://db:7687"), 2,
                   "'memory.neo4j.uri'", "add memory.backend=neo4j")
    one_error_line(memory_cli(tmp_path / "m", "stats", "llm=gpt"), 2,
                   "llm='gpt': no such option", "offline")
    one_error_line(memory_cli(tmp_path / "m", "stats", "memory.namespace=~me"), 2,
                   "'~' at character 18", "\"memory.namespace='~me'\"")


def test_a_users_config_option_is_found_with_other_overrides(tmp_path: Path) -> None:
    (tmp_path / "myconf" / "llm").mkdir(parents=True)
    (tmp_path / "myconf" / "llm" / "local.yaml").write_text("defaults:\n  - offline\n")
    done = memory_cli(tmp_path / "m", "stats", "llm=local", "hydra.searchpath=[myconf]",
                      "memory.retrieval.top_k=3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_forget_refuses_unknown_filter_keys_and_asks_before_deleting_many(tmp_path: Path) -> None:
    """A misspelt key (with null: "missing", which every memory is) is refused naming it and
    the known keys; key=null selects the memories without a key others have; more than
    memory.forget.confirm_above memories need --yes, and the count is shown."""
    store = tmp_path / "memory"
    rows = [line(i, metadata={"kind": "note"}) if i < 2 else line(i) for i in range(6)]
    assert memory_cli(store, "import", str(write_lines(tmp_path / "in.jsonl", rows))).returncode == 0
    one_error_line(memory_cli(store, "forget", "--session", "s1", "--filter", "kidn=null"), 2,
                   "'kidn'", "'kind'")
    one_error_line(memory_cli(store, "forget", "--filter", "kidn=note"), 2, "'kidn'")
    one_error_line(memory_cli(store, "forget"), 2, "--all")
    assert len(exported(store, tmp_path)) == 6  # nothing deleted
    done = memory_cli(store, "forget", "--session", "s1", "--filter", "kind=null")
    assert done.returncode == 0 and "forgot 2" in done.stdout  # m3, m5: s1 without a kind
    few = "memory.forget.confirm_above=2"
    one_error_line(memory_cli(store, "forget", "--all", few), 2, "would delete 4 memories",
                   "confirm_above=2", "--yes")
    assert sorted(exported(store, tmp_path)) == ["m0", "m1", "m2", "m4"]
    done = memory_cli(store, "forget", "--session", "s2", few)  # m0, m2, m4: 3 > 2
    assert done.returncode == 2 and "would delete 3" in done.stderr
    done = memory_cli(store, "forget", "--session", "s2", few, "--yes")
    assert done.returncode == 0 and "forgot 3" in done.stdout
    one_error_line(memory_cli(store, "forget", "--all", "memory.forget.confirm_above=-1"), 2,
                   "memory.forget.confirm_above")
    assert sorted(exported(store, tmp_path)) == ["m1"]


# -- health ---------------------------------------------------------------------------------
def test_health_of_a_sound_store_and_of_a_missing_server(tmp_path: Path) -> None:
    store = filled_store(tmp_path, 3)
    done = memory_cli(store, "health")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["problems"] == []
    assert {t: report["tiers"][t]["reachable"] for t in ("hot", "warm", "graph")} == {
        "hot": True, "warm": True, "graph": True}
    assert (report["index"]["records"], report["index"]["vectors"], report["index"]["agree"]) == (3, 3, True)
    assert report["growth"]["total"] == 3 and report["outbox"] == {"pending": 0, "outbox": 0, "spill_files": 0}
    assert report["consolidation"]["state"] == "never"
    down = subprocess.run(
        [sys.executable, "-m", "DeepResearch.src.memory.cli", "health", "memory/backend=neo4j",
         "memory.neo4j.uri=bolt://127.0.0.1:1", "memory.neo4j.connection_timeout=1",
         "memory.neo4j.retry_attempts=0", f"memory.storage.spill_dir={tmp_path / 'spill'}"],
        cwd=ROOT, env=env_without_keys(), capture_output=True, text=True, timeout=120,
    )
    # said once, on one line: the client's "running without memory" warning is not the CLI's
    one_error_line(down, 1, "memory backend 'neo4j' is unavailable", "bolt://127.0.0.1:1")


def test_health_runs_the_backends_full_check_on_a_damaged_store(tmp_path: Path) -> None:
    store = filled_store(tmp_path, 200)
    db = store / DB_FILE
    data = bytearray(db.read_bytes())
    middle = len(data) // 2 // 4096 * 4096
    data[middle + 100 : middle + 4000] = b"\xff" * 3900
    db.write_bytes(bytes(data))
    done = memory_cli(store, "health")
    assert done.returncode == 1 and "Traceback" not in done.stderr, (done.stdout, done.stderr)


# -- an unusable memory.faiss.path stops both commands at start --------------------------------
def unusable_paths(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    a_file = tmp_path / "a-file"
    a_file.write_text("in the way")
    return {
        "proc": (Path("/proc/deepresearch-memory"), "No such file or directory"),
        "file": (a_file, "is a file, not a folder"),
        "under-a-file": (a_file / "memory", "Not a directory"),
    }


@pytest.mark.parametrize("case", ["proc", "file", "under-a-file", "read-only"])
def test_an_unusable_store_folder_is_refused_at_start(tmp_path: Path, case: str) -> None:
    if case == "read-only":
        with small_disk(tmp_path / "ro", read_only=True) as ro:
            check_refused(tmp_path, ro / "memory", "Read-only file system")
            check_refused(tmp_path, ro, "Read-only file system")
        return
    path, reason = unusable_paths(tmp_path)[case]
    check_refused(tmp_path, path, reason)


def check_refused(tmp_path: Path, path: Path, reason: str) -> None:
    one_error_line(memory_cli(path, "stats"), 2, f"memory.faiss.path={path}", reason)
    done = subprocess.run(
        [sys.executable, "-m", "DeepResearch.app", "question='Which aligner suits RNA-seq reads?'",
         f"outputs_dir={tmp_path / 'out'}", f"memory.faiss.path={path}"],
        cwd=tmp_path, env=env_without_keys(), capture_output=True, text=True, timeout=300,
    )
    line = one_error_line(done, 2, f"memory.faiss.path={path}", reason)
    assert line.startswith("deepresearch: error:") and "memory: stored" not in done.stdout


def test_a_store_folder_under_home_is_the_users_home(tmp_path: Path) -> None:
    """`~` in memory.faiss.path (quoted, as Hydra needs it) is the home folder, not a folder
    named `~` in the working folder."""
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "DeepResearch.src.memory.cli", "stats",
         "memory.faiss.path='~/store'"],
        cwd=work, env={**env_without_keys(), "HOME": str(tmp_path)}, capture_output=True,
        text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "store" / DB_FILE).is_file()
    assert list(work.iterdir()) == []


def test_an_empty_answer_says_where_it_looked(tmp_path: Path) -> None:
    """list and search on an empty store print nothing on stdout and, on stderr, the namespace
    and the store they read (a store made in another folder is a common surprise); exit 0."""
    store = tmp_path / "m"
    for args in (("list",), ("search", "aligner")):
        done = memory_cli(store, *args)
        assert done.returncode == 0 and done.stdout == "", done.stderr
        assert "namespace 'default'" in done.stderr and str(store) in done.stderr, done.stderr


def test_a_neo4j_uri_that_is_no_server_address_is_refused_at_start(tmp_path: Path) -> None:
    """Checked with the other settings (exit 2, one line), not by the driver when the store
    opens (a traceback)."""
    done = subprocess.run(
        [sys.executable, "-m", "DeepResearch.src.memory.cli", "stats", "memory.backend=neo4j",
         "memory.neo4j.uri=localhost:7687"],
        cwd=tmp_path, env=env_without_keys(), capture_output=True, text=True, timeout=120)
    one_error_line(done, 2, "memory.neo4j.uri='localhost:7687': give a server address such as "
                   "bolt://localhost:7687")
    # an address the driver refuses when the store opens (a bolt:// one with a routing query)
    done = subprocess.run(
        [sys.executable, "-m", "DeepResearch.src.memory.cli", "stats", "memory.backend=neo4j",
         "memory.neo4j.uri='bolt://127.0.0.1:1/?region=x'"],
        cwd=tmp_path, env=env_without_keys(), capture_output=True, text=True, timeout=120)
    one_error_line(done, 2, "memory.neo4j.uri='bolt://127.0.0.1:1/?region=x'", "Routing context")


def test_a_store_built_with_other_settings_is_one_line_saying_how_to_rebuild(
    tmp_path: Path,
) -> None:
    store = filled_store(tmp_path, 3)
    done = memory_cli(store, "list", "memory.vector_store.index_type=dot_product")
    line = one_error_line(done, 1, "is unavailable: memory store", "built with other settings",
                          "deepresearch-memory rebuild", "<the new settings>")
    assert "unavailable: backend unavailable" not in line
