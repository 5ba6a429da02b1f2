"""Documents and search results shared by the vector stores, the RAG flow and memory."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from pydantic import BaseModel, Field


def utc_now() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return uuid4().hex


class Document(BaseModel):
    """A piece of text with metadata; `embedding` is filled by whoever embeds it."""

    id: str = Field(default_factory=new_id)
    content: str
    chunks: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    embedding: list[float] | None = None
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime | None = None


class SearchResult(BaseModel):
    document: Document
    score: float
    rank: int
