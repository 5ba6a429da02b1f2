"""The base of every `memory` config section: an unknown key is an error, assignments are
validated (config.py, config_service.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

# The most results one retrieval returns, wherever it is asked for: retrieve(top_k=...),
# memory.retrieval.top_k, `deepresearch-memory search --top-k`, the HTTP service's top_k.
MAX_TOP_K = 1000


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
