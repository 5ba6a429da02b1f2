"""FAISSVectorStore on the real embedding model, and the document library/loader/chunker."""

from __future__ import annotations

from pathlib import Path

import pytest

from DeepResearch.src.datatypes.documents import Document
from DeepResearch.src.memory.embeddings import Embedder, get_embedder
from DeepResearch.src.rag.chunking import chunk_text
from DeepResearch.src.rag.faiss_store import FAISSVectorStore
from DeepResearch.src.rag.library import DocumentLibrary
from DeepResearch.src.rag.loader import DocumentsFolderError, load_documents, resolve_documents_dir

DOCS = [
    Document(
        id="star",
        content="STAR is a splice-aware aligner for RNA-seq reads.",
        metadata={"topic": "rna"},
    ),
    Document(
        id="bwa",
        content="BWA-MEM aligns short DNA reads to a reference genome.",
        metadata={"topic": "dna"},
    ),
    Document(
        id="cake",
        content="Bake the sponge cake at 180 degrees for forty minutes.",
        metadata={"topic": "food"},
    ),
]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return get_embedder()


@pytest.mark.integration
async def test_add_search_filter_delete(embedder: Embedder) -> None:
    store = FAISSVectorStore(embedder, chunk_size=200, chunk_overlap=20)
    assert await store.add_documents(DOCS) == ["star", "bwa", "cake"]
    assert len(store) == 3

    hits = await store.search("which tool maps spliced transcripts?", top_k=2)
    assert next(h.document.metadata["document_id"] for h in hits) == "star"
    assert [h.rank for h in hits] == [1, 2]
    assert hits[0].score > hits[1].score

    filtered = await store.search("aligner for reads", top_k=3, filters={"topic": ["dna", "food"]})
    assert {h.document.metadata["topic"] for h in filtered} <= {"dna", "food"}
    assert filtered[0].document.metadata["document_id"] == "bwa"

    every = await store.search("aligner for RNA-seq reads", top_k=3)
    assert every[0].document.metadata["document_id"] == "star"
    threshold = (every[0].score + every[1].score) / 2
    strict = await store.search("aligner for RNA-seq reads", top_k=3, score_threshold=threshold)
    assert [h.document.metadata["document_id"] for h in strict] == ["star"]

    keyword = await store.search("sponge", search_type="keyword", top_k=3)
    assert [h.document.metadata["document_id"] for h in keyword] == ["cake"]

    assert await store.delete_documents(["star"]) == 1
    after = await store.search("splice-aware RNA-seq aligner", top_k=3)
    assert "star" not in {h.document.metadata["document_id"] for h in after}
    assert store.document_ids == ["bwa", "cake"]


@pytest.mark.integration
async def test_readding_a_document_replaces_it(embedder: Embedder) -> None:
    store = FAISSVectorStore(embedder)
    await store.add_documents(DOCS[:1])
    await store.add_documents(
        [Document(id="star", content="Completely different text about cheese.")]
    )
    assert len(store) == 1
    [hit] = await store.search("cheese", top_k=1)
    assert "cheese" in hit.document.content


@pytest.mark.unit
async def test_bad_search_arguments_name_the_choices(embedder: Embedder) -> None:
    store = FAISSVectorStore(embedder)
    with pytest.raises(
        ValueError,
        match=r"search_type 'fuzzy' is not supported; use one of \('similarity', 'keyword'\)",
    ):
        await store.search("x", search_type="fuzzy")
    with pytest.raises(ValueError, match="top_k must be > 0, got 0"):
        await store.search("x", top_k=0)


@pytest.mark.unit
def test_chunking_respects_size_and_overlap() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(60))
    chunks = chunk_text(text, chunk_size=120, overlap=30)
    assert all(len(chunk) <= 120 for chunk in chunks)
    assert len(chunks) > 10
    assert chunks[1].split()[0] in chunks[0]  # neighbours share text
    with pytest.raises(ValueError, match="chunk_overlap must be in"):
        chunk_text(text, chunk_size=100, overlap=100)


@pytest.mark.unit
def test_loader_and_folder_errors(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title A\n\nBody about STAR.")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("plain text about BWA")
    (tmp_path / "c.pdf").write_text("ignored")
    docs = load_documents(tmp_path)
    assert [(d.id, d.metadata["title"]) for d in docs] == [
        ("a.md", "Title A"),
        ("sub/b.txt", "plain text about BWA"),
    ]
    with pytest.raises(DocumentsFolderError, match="does not exist"):
        resolve_documents_dir(str(tmp_path / "missing"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DocumentsFolderError, match="holds no non-empty files"):
        load_documents(empty)


@pytest.mark.unit
async def test_library_lexical_search_and_lookup(tmp_path: Path) -> None:
    library = DocumentLibrary.from_folder(resolve_documents_dir(None))
    assert len(library.documents) >= 6
    hits = await library.search("splice-aware aligners for RNA-seq", top_k=2)
    assert hits[0]["source"] == "rna_seq_aligners.md" and hits[0]["search"] == "lexical"
    assert library.get("rna_seq_aligners") is library.get("rna_seq_aligners.md")
