"""Spilling into shared places: a fallback spill folder (the working folder's
`memory-unwritten`, the temp folder's `deepresearch-memory-unwritten`) is used only when it is
this user's alone (mode 0700; created so), and spill files are 0600. Real folders, a real
unreachable Neo4j (a closed port on 127.0.0.1) so the writes really fail, a real chown to
another uid (the tests run as root)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from neo4j_support import free_port

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.writes import UnwrittenMemoriesError

OTHER_UID = 65534  # nobody


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The store's folder and the working folder cannot take a spill (a file is where their
    folders would be); the temp folder is tmp_path/tmp. Returns the temp spill folder."""
    (tmp_path / "blocked").write_text("a file, not a folder")
    work = tmp_path / "work"
    work.mkdir()
    (work / "memory-unwritten").write_text("a file, not a folder")
    monkeypatch.chdir(work)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp / "deepresearch-memory-unwritten"


async def spill_one(tmp_path: Path, embedder: Embedder) -> MemorySystemClient:
    config = MemoryConfig(backend="neo4j", storage={"spill_dir": str(tmp_path / "blocked" / "x")},
                          neo4j={"uri": f"bolt://127.0.0.1:{free_port()}", "password": None,
                                 "connection_timeout": 1.0, "retry_attempts": 0})
    client = MemorySystemClient(config, session_id="s", embedder=embedder)
    await client.store(content="kept while the server is down")
    await client.close()
    return client


async def test_the_temp_spill_folder_is_created_private_with_private_files(
    places: Path, tmp_path: Path, embedder: Embedder
) -> None:
    client = await spill_one(tmp_path, embedder)
    spilled = Path(client.writes.spilled_file or "")
    assert spilled.parent == places
    assert places.stat().st_mode & 0o777 == 0o700
    assert spilled.stat().st_mode & 0o777 == 0o600
    assert json.loads(spilled.read_text())["content"] == "kept while the server is down"


@pytest.mark.parametrize("owner, mode, says", [
    (None, 0o777, "has mode 0777, not 0700"),
    (None, 0o755, "has mode 0755, not 0700"),
    (OTHER_UID, 0o700, f"belongs to uid {OTHER_UID}"),
    (OTHER_UID, 0o777, f"belongs to uid {OTHER_UID}"),
])
async def test_a_temp_spill_folder_not_ours_alone_is_refused(
    places: Path, tmp_path: Path, embedder: Embedder, owner: int | None, mode: int, says: str
) -> None:
    places.mkdir()
    places.chmod(mode)
    if owner is not None:
        os.chown(places, owner, owner)
    with pytest.raises(UnwrittenMemoriesError, match=f"{places}: refused: it {says}"):
        await spill_one(tmp_path, embedder)
    assert list(places.iterdir()) == []  # nothing written into someone else's folder


async def test_a_link_in_place_of_the_temp_spill_folder_is_refused(
    places: Path, tmp_path: Path, embedder: Embedder
) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    places.symlink_to(target)
    with pytest.raises(UnwrittenMemoriesError, match="is not a folder"):
        await spill_one(tmp_path, embedder)
    assert list(target.iterdir()) == []
