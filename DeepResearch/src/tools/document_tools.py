"""Built-in offline tools over the run's DocumentLibrary."""

from __future__ import annotations

from typing import Any

from DeepResearch.src.datatypes.execution import ToolNotFoundError
from DeepResearch.src.rag.library import DocumentLibrary
from DeepResearch.src.tools.registry import ToolContext, ToolRegistry
from DeepResearch.src.tools.spec import Tool, ToolSpec


class _LibraryTool(Tool):
    def __init__(self, context: ToolContext) -> None:
        if not isinstance(context.library, DocumentLibrary):
            raise ValueError(
                f"{self.spec.name} needs a DocumentLibrary in its ToolContext, "
                f"got {type(context.library).__name__}"
            )
        self.library: DocumentLibrary = context.library


class SearchDocuments(_LibraryTool):
    spec = ToolSpec(
        name="search_documents",
        description=(
            "Search the local document folder; returns the best matching documents with "
            "source, title, score and an excerpt. Cite documents by their source."
        ),
        inputs={"query": "str", "top_k": "int"},
        outputs={"results": "list"},
        defaults={"top_k": 3},
        input_descriptions={"query": "what to look for", "top_k": "how many documents (1-10)"},
    )

    async def execute(self, **params: Any) -> list[dict[str, Any]]:
        query, top_k = str(params["query"]).strip(), int(params["top_k"])
        if not query:
            raise ValueError("query is empty; give the words to search for")
        if not 1 <= top_k <= 10:
            raise ValueError(f"top_k must be between 1 and 10, got {top_k}")
        return await self.library.search(query, top_k=top_k)


class ReadDocument(_LibraryTool):
    spec = ToolSpec(
        name="read_document",
        description="Read one document of the local folder by its source (as search returns it).",
        inputs={"source": "str", "max_chars": "int"},
        outputs={"source": "str", "title": "str", "content": "str", "truncated": "bool"},
        defaults={"max_chars": 4000},
        input_descriptions={"source": "the document's source, e.g. rna_seq_aligners.md"},
    )

    async def execute(self, **params: Any) -> dict[str, Any]:
        source, max_chars = str(params["source"]), int(params["max_chars"])
        doc = self.library.get(source)
        if doc is None:
            known = ", ".join(sorted(self.library.documents)) or "(none)"
            raise ToolNotFoundError(f"no document {source!r}; known documents: {known}")
        return {
            "source": doc.id,
            "title": str(doc.metadata.get("title", doc.id)),
            "content": doc.content[:max_chars],
            "truncated": len(doc.content) > max_chars,
        }


class ListDocuments(_LibraryTool):
    spec = ToolSpec(
        name="list_documents",
        description="List the documents of the local folder (source and title).",
        outputs={"documents": "list"},
    )

    async def execute(self, **params: Any) -> list[dict[str, str]]:
        return self.library.listing()


BUILTIN_TOOLS: tuple[type[Tool], ...] = (SearchDocuments, ReadDocument, ListDocuments)


def default_registry() -> ToolRegistry:
    """A registry holding the built-in tools."""
    registry = ToolRegistry()
    for tool_class in BUILTIN_TOOLS:
        registry.register_tool(tool_class)
    return registry
