"""Load a folder of .md/.txt files as Documents (one per file)."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from DeepResearch.src.datatypes.documents import Document

DEFAULT_EXTENSIONS = (".md", ".txt")


class DocumentsFolderError(ValueError):
    """The documents folder is missing, not a folder, or holds no readable documents."""


def sample_documents_dir() -> Path:
    """The sample bioinformatics documents shipped inside the package."""
    return Path(str(resources.files("DeepResearch") / "data" / "sample_docs"))


def resolve_documents_dir(value: str | None) -> Path:
    """The configured folder (None = the shipped samples), checked to exist."""
    folder = sample_documents_dir() if value in (None, "") else Path(str(value)).expanduser()
    if not folder.exists():
        raise DocumentsFolderError(
            f"documents folder {str(folder)!r} does not exist; set documents_dir (or "
            f"rag.documents_dir for the rag flow) to a folder of .md/.txt files"
        )
    if not folder.is_dir():
        raise DocumentsFolderError(f"documents folder {str(folder)!r} is a file, not a folder")
    return folder.resolve()


def _title(path: Path, text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            return stripped.lstrip("#").strip()
        if stripped:
            return stripped[:80]
    return path.stem


def load_documents(folder: Path, extensions: Sequence[str] = DEFAULT_EXTENSIONS) -> list[Document]:
    """Every file below `folder` with one of `extensions`, sorted by path; at least one."""
    wanted = {ext.lower() for ext in extensions}
    documents: list[Document] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix.lower() not in wanted:
            continue
        text = path.read_text(encoding="utf-8", errors="replace").strip()
        if not text:
            continue
        source = path.relative_to(folder).as_posix()
        documents.append(
            Document(
                id=source,
                content=text,
                metadata={"source": source, "title": _title(path, text), "path": str(path)},
            )
        )
    if not documents:
        raise DocumentsFolderError(
            f"documents folder {str(folder)!r} holds no non-empty files with extensions "
            f"{sorted(wanted)}"
        )
    return documents
