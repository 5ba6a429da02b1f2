"""The base of every `memory` config section: an unknown key is an error, assignments are
validated (config.py, config_service.py). And the one id rule (namespaces, sessions, memory,
message and channel ids) that the config, the client (inputs.clean_id) and the service's
request bodies (`Id`) all apply, with the other field types the client's and the fact graph's
input checks share (inputs.py, facts/validation.py)."""

from __future__ import annotations

import re
from functools import cache
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter

ID_REGEX = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,199}$"
ID_RULE = "1-200 characters of letters, digits and _ . : @ - (first a letter or digit; no '..')"
_ID = re.compile(ID_REGEX)


def is_valid_id(value: Any) -> bool:
    return isinstance(value, str) and bool(_ID.match(value)) and ".." not in value


def _checked_id(value: str) -> str:
    if not is_valid_id(value):
        raise ValueError(f"{value[:80]!r} is not a valid id: use {ID_RULE}")
    return value


# A pydantic field holding an id: the pattern for the schema, the full rule (no '..') checked.
Id = Annotated[str, Field(pattern=ID_REGEX), AfterValidator(_checked_id)]
TEXT = Annotated[str, StringConstraints(strict=True, pattern=r"\S")]  # a str, not only blanks


@cache
def number_in(low: float, high: float) -> TypeAdapter[float]:
    """A finite int or float (not a bool, not text) in [low, high], as a float."""
    return TypeAdapter(Annotated[float, Field(strict=True, ge=low, le=high, allow_inf_nan=False)])

# The most results one retrieval returns, wherever it is asked for: retrieve(top_k=...),
# memory.retrieval.top_k, `deepresearch-memory search --top-k`, the HTTP service's top_k.
MAX_TOP_K = 1000
# memory.retrieval.lexical_max_postings's default: the rows holding the terms a lexical
# search matches add up to at most this (backends/lexical.py), ~10 ms of FTS5 scoring.
LEXICAL_MAX_POSTINGS = 10_000


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
