"""`MemoryConfig`: the validated, typed form of the `memory` Hydra group
(DeepResearch/conf/memory/).

Every section accepts a plain dict, and every key has the default written in
DeepResearch/conf/memory/default.yaml (backend sections: conf/memory/backend/), so
`MemoryConfig(backend="faiss", faiss={"path": "..."})` works.
Invalid values raise `MemoryConfigError` naming the dotted key, the value and what is allowed.

Also here: the start-up check of the embedded store's folder (`check_store_folder`: a
`memory.faiss.path` nothing can be written to is a configuration error, exit 2, not a run that
quietly stores nothing), and how a command line chooses the backend (`as_group_choice`).
`memory.backend=X` on a command line means the config group option `memory/backend=X`: each
option of conf/memory/backend/ composes `backend` and its own section only. Hydra reads
`memory.backend=neo4j` as a plain value, which would keep the faiss section and reject
`memory.neo4j.uri=...` beside it. Both commands (`deepresearch`, `deepresearch-memory`) pass
their arguments through `as_group_choice` so the two spellings choose the backend the same way,
and a name that is no backend gets one line naming the choices. The same holds for the
`memory/recall` group (ready-made retrieval settings, conf/memory/recall/).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import Field, ValidationError, field_validator, model_validator

from DeepResearch.src.memory.config_base import LEXICAL_MAX_POSTINGS, MAX_TOP_K, Id, Section
from DeepResearch.src.memory.config_consolidation import (
    ConsolidationConfig,
    ObservationsConfig,
    PruningConfig,
    SummariesConfig,
)
from DeepResearch.src.memory.config_service import (  # noqa: F401  (re-exported)
    RateLimitConfig,
    ServiceConfig,
    check_api_keys,
)
from DeepResearch.src.memory.errors import MemoryConfigError
from DeepResearch.src.memory.facts.model import ENTITY_TYPES, PREDICATES, SINGLE_VALUED

BackendName = Literal["in_memory", "faiss", "neo4j"]
Codec = Literal["lz4", "gzip", "zstd"]
IndexType = Literal["cosine", "euclidean", "dot_product"]


def _home(path: str | None) -> str | None:
    """A folder setting with `~` (`"memory.faiss.path='~/memory'"`: the shell leaves a quoted
    or `key=`-prefixed `~` alone) means the user's home, as it does for `documents_dir`."""
    return None if path is None else os.path.expanduser(path)


class NestedConfig(Section):
    include_ancestors: bool = True


class CompressionConfig(Section):
    enabled: bool = True
    algorithm: Codec = "zstd"
    min_size_bytes: int = Field(default=4096, ge=1)
    searchable_prefix_chars: int = Field(default=2000, ge=0)


class NeighbourSmoothingConfig(Section):
    """score += weight * best fused score among the memories within `radius` steps of it in
    its session (the FOLLOWS chain); with `expand`, those neighbours join as candidates."""

    enabled: bool = True
    weight: float = Field(default=0.5, ge=0.0, le=10.0)
    radius: int = Field(default=2, ge=1, le=10)
    expand: bool = True


class SessionCoverageConfig(Section):
    """The final list balances relevance with coverage of distinct episodes (the memories of
    one session on one day of their event time): picked greedily, each memory's score is
    reduced by `penalty` x the best score x the number of memories already picked from its
    episode beyond the first `quota`. Off by default: on LoCoMo it cost single-hop recall more
    than it gave multi-hop questions (docs/retrieval.md)."""

    enabled: bool = False
    penalty: float = Field(default=0.1, ge=0.0, le=10.0)
    quota: int = Field(default=2, ge=1, le=1000)


class TimeQueryConfig(Section):
    """Time expressions in the query ("last month", "in May", "on 8 May 2023"), resolved
    against the retrieve's as_of: memories whose event time falls in the range gain
    `weight` x the best score."""

    enabled: bool = True
    weight: float = Field(default=0.3, ge=0.0, le=10.0)


class FeedbackConfig(Section):
    """Pseudo-relevance feedback from the `top` best candidates (ranking/feedback.py): the
    `terms` words most of them share (not the query's) are one more lexical search, whose
    matches gain `lexical_weight` x the best score x their normalised lexical score; with
    `dense_weight` > 0, a vector search for q + beta x their mean vector, every candidate
    gaining `dense_weight` x the best score x its normalised cosine to it. `depth` results
    per search (0 = candidate_pool)."""

    # Off: +0.01 LoCoMo R@10 for about +20 ms per retrieve at 10k memories (docs/retrieval.md)
    enabled: bool = False
    top: int = Field(default=3, ge=1, le=100)
    terms: int = Field(default=10, ge=0, le=200)
    lexical_weight: float = Field(default=0.2, ge=0.0, le=10.0)
    dense_weight: float = Field(default=0.0, ge=0.0, le=10.0)
    beta: float = Field(default=1.0, ge=0.0, le=100.0)
    depth: int = Field(default=0, ge=0, le=10_000)


class GraphRetrievalConfig(Section):
    """The graph path (ranking/graph.py): entities the query names, resolved against the
    knowledge graph by their names and aliases, bring the evidence memories of their facts
    (current and past, as subject or object; facts with at most `max_fact_evidence` evidence
    memories) as candidates. Each gains `weight` x the best
    score; one the candidate stage missed joins with its cosine on the stage's scale. On by
    default: with no entity named in the query (or no facts), it costs one name lookup."""

    enabled: bool = True
    max_entities: int = Field(default=3, ge=1, le=100)
    max_facts: int = Field(default=200, ge=1, le=10_000)  # facts read per retrieve
    max_evidence: int = Field(default=200, ge=1, le=10_000)  # evidence memories fetched
    # A fact learnt from more memories than this says the entity is around (a channel's
    # member, a name said in many messages), not what about it: its evidence is left out.
    max_fact_evidence: int = Field(default=20, ge=1, le=100_000)
    weight: float = Field(default=0.05, ge=0.0, le=10.0)


class RetrievalConfig(Section):
    top_k: int = Field(default=5, ge=1, le=MAX_TOP_K)
    min_similarity: float = Field(default=0.0, ge=-1.0, le=1.0)
    max_age_seconds: float | None = Field(default=None, gt=0)
    hybrid: bool = True
    fusion: Literal["rrf", "minmax"] = "minmax"
    lexical_weight: float = Field(default=1.0, ge=0.0, le=100.0)
    query_rewrite: bool = False
    # what the dense search embeds: the query as written, or without the names it holds
    # (capitalised words not starting a sentence; ranking/candidates.dense_query_text)
    # ("both": the query as written, plus a second vector search for the name-free one,
    # whose cosine, min-max normalised over the candidates, adds dense_query_weight x it)
    dense_query: Literal["as_written", "without_names", "both"] = "as_written"
    dense_query_weight: float = Field(default=0.5, ge=0.0, le=10.0)
    rrf_k: int = Field(default=60, ge=1)
    # candidates per list (dense, lexical), whatever top_k (a larger top_k fetches top_k):
    # retrieve(top_k=10) is then the first 10 of retrieve(top_k=50) for any top_k <= this
    candidate_pool: int = Field(default=50, ge=1, le=10_000)
    # the lexical search matches the query's rarest terms while the rows holding them add
    # up to at most this (backends/lexical.py: FTS5 scores every row holding a matched term)
    lexical_max_postings: int = Field(default=LEXICAL_MAX_POSTINGS, ge=1, le=1_000_000_000)
    temporal_half_life_seconds: float = Field(default=604_800.0, gt=0)
    importance_weight: float = Field(default=0.1, ge=0.0, le=10.0)
    mmr_enabled: bool = False
    mmr_lambda: float = Field(default=0.7, ge=0.0, le=1.0)
    dedup_threshold: float = Field(default=0.95, ge=0.0, le=1.0)
    neighbour_smoothing: NeighbourSmoothingConfig = Field(default_factory=NeighbourSmoothingConfig)
    session_coverage: SessionCoverageConfig = Field(default_factory=SessionCoverageConfig)
    time_query: TimeQueryConfig = Field(default_factory=TimeQueryConfig)
    feedback: FeedbackConfig = Field(default_factory=FeedbackConfig)
    graph: GraphRetrievalConfig = Field(default_factory=GraphRetrievalConfig)
    observations: ObservationsConfig = Field(default_factory=ObservationsConfig)


class StorageConfig(Section):
    batch_size: int = Field(default=64, ge=1, le=100_000)
    flush_interval: float = Field(default=1.0, gt=0)
    enable_async_writes: bool = False
    max_retry_backoff: float = Field(default=30.0, gt=0)
    spill_dir: str | None = None  # None: memory.faiss.path (its default on the other backends)
    _spill_home = field_validator("spill_dir")(_home)
    # "behind": on a backend that can (faiss, neo4j), a store returns once its rows are
    # committed and their vectors are filled in the background (vector_fill.py); "inline":
    # embedded before the write; "auto": behind on faiss, inline on neo4j (where the second
    # write per memory costs more sustained throughput than it saves).
    vectors: Literal["auto", "inline", "behind"] = "auto"
    # Past this many of a client's memories awaiting vectors, a store embeds inline: the
    # lag of dense search stays bounded when writes outrun the filler.
    max_pending_vectors: int = Field(default=1024, ge=0, le=10_000_000)


class ForgetConfig(Section):
    # A forget that would delete more memories than this needs confirmation (confirm=True,
    # CLI --yes); the count is shown.
    confirm_above: int = Field(default=100, ge=0, le=1_000_000_000)


class ArchiveConfig(Section):
    # Archived memories older than this many days (by their "archived_at") are deleted by
    # expire(); None keeps them until a forget.
    retention_days: float | None = Field(default=None, gt=0, le=1_000_000)


class HotConfig(Section):
    """The hot tier (hot_tier.py): each client's in-process cache of the memories its session
    stored or recalled and of its repeated retrieves."""

    enabled: bool = True
    ttl_seconds: float = Field(default=3600.0, gt=0)
    max_items: int = Field(default=2048, ge=1, le=10_000_000)
    max_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)  # per client (service: per namespace)


class VectorStoreConfig(Section):
    embedding_model: str = "all-MiniLM-L6-v2"
    # auto: onnx-fp32 (sentence-transformers' vectors, no torch per process) whenever the model
    # allows (see embeddings.py); onnx: int8, faster, slightly different vectors (a store
    # records it).
    embedding_runtime: Literal["auto", "onnx-fp32", "onnx", "sentence-transformers"] = "auto"
    index_type: IndexType = "cosine"


class FaissConfig(Section):
    path: str = "outputs/memory"
    _path_home = field_validator("path")(_home)
    # auto: flat (exact) below `hnsw_above` memories, HNSW (approximate) from there; decided
    # when the store opens (a store that grows past it switches at its next open).
    index_kind: Literal["auto", "flat", "hnsw"] = "auto"
    hnsw_above: int = Field(default=200_000, ge=1)
    hnsw_m: int = Field(default=32, ge=2, le=512)
    hnsw_ef_construction: int = Field(default=200, ge=1)
    # 256: recall@10 0.96 against exact search at a million memories (128: 0.90), at the same
    # retrieve p95 (docs/tiers.md)
    hnsw_ef_search: int = Field(default=256, ge=1)
    synchronous: Literal["full", "normal"] = "full"
    busy_timeout: float = Field(default=5.0, ge=0)  # seconds a write waits for another process's lock


def _env(name: str, default: str | None) -> Any:
    return Field(default_factory=lambda: os.environ.get(name, default))


NEO4J_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")


class Neo4jConfig(Section):
    # As in conf/memory/backend/neo4j.yaml, for configs built in Python without Hydra.
    uri: str = _env("NEO4J_URI", "bolt://localhost:7687")

    @field_validator("uri")
    @classmethod
    def _a_server_address(cls, uri: str) -> str:
        """Checked at start-up, as every setting: the driver refuses anything else only when
        the store opens, with its own error."""
        scheme, sep, rest = uri.partition("://")
        if not sep or scheme not in NEO4J_SCHEMES or not rest.strip("/"):
            raise ValueError(f"give a server address such as bolt://localhost:7687 (schemes: "
                             f"{', '.join(NEO4J_SCHEMES)})")
        return uri
    username: str = _env("NEO4J_USERNAME", "neo4j")
    password: str | None = _env("NEO4J_PASSWORD", None)
    database: str = "neo4j"
    index_name: str = Field(default="memory_embedding", pattern=r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
    fulltext_index_name: str = Field(
        default="memory_content", pattern=r"^[A-Za-z][A-Za-z0-9_]{0,62}$"
    )
    node_label: str = Field(default="Memory", pattern=r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
    max_connection_pool_size: int = Field(default=50, ge=1)
    batch_size: int = Field(default=500, ge=1)
    similarity_to_threshold: float | None = Field(default=None, ge=-1.0, le=1.0)
    connection_timeout: float = Field(default=5.0, gt=0)
    # Ours are the only retries (the driver's are off): at most retry_backoff * (2**n - 1) s.
    retry_attempts: int = Field(default=3, ge=0, le=10)
    retry_backoff: float = Field(default=0.5, ge=0)


# The entity type each built-in predicate's object has (a predicate missing here takes a
# literal object, e.g. a number of years).
OBJECT_TYPES = {
    "WORKS_AT": "Organization", "WORKED_AT": "Organization", "HAS_SKILL": "Skill",
    "INTERESTED_IN": "Topic", "LIVES_IN": "Location", "STUDIED_AT": "Organization",
    "KNOWS": "Person", "CLOSE_TO": "Person", "MEMBER_OF": "Organization", "MENTIONED": "Topic",
    "PARTICIPATED_IN": "Channel",
}


class FactsConfig(Section):
    """The knowledge-graph tier (facts/): the vocabulary, the rules, entity resolution."""

    entity_types: list[str] = Field(default_factory=lambda: list(ENTITY_TYPES))
    predicates: list[str] = Field(default_factory=lambda: list(PREDICATES))
    object_types: dict[str, str] = Field(default_factory=lambda: dict(OBJECT_TYPES))
    single_valued: list[str] = Field(default_factory=lambda: list(SINGLE_VALUED))
    fuzzy_threshold: float = Field(default=90.0, ge=50.0, le=100.0)  # rapidfuzz ratio, 0..100
    fuzzy_min_length: int = Field(default=5, ge=1, le=100)  # shorter names: exact match only
    exact_types: list[str] = Field(default_factory=lambda: ["Channel"])  # ids: never fuzzy
    default_limit: int = Field(default=20, ge=1, le=10_000)
    max_limit: int = Field(default=1000, ge=1, le=100_000)
    # semantic_search_facts' default similarity_threshold (cosine): with all-MiniLM-L6-v2,
    # unrelated short sentences score about 0 to 0.25
    similarity_threshold: float = Field(default=0.3, ge=-1.0, le=1.0)

    @model_validator(mode="after")
    def _consistent(self) -> FactsConfig:
        for name in self.entity_types:
            if not re.fullmatch(r"[A-Z][A-Za-z0-9]{0,62}", name):
                raise ValueError(f"entity_types: {name!r} must be a CamelCase word (e.g. Project)")
        for name in self.predicates:
            if not re.fullmatch(r"[A-Z][A-Z0-9_]{0,62}", name):
                raise ValueError(f"predicates: {name!r} must be UPPER_SNAKE_CASE (e.g. LEADS)")
        for needed, pool, key in (("Person", self.entity_types, "entity_types"),
                                  ("Channel", self.entity_types, "entity_types"),
                                  ("PARTICIPATED_IN", self.predicates, "predicates")):
            if needed not in pool:
                raise ValueError(f"{key} must keep {needed!r} (ingest writes it)")
        unknown_types = sorted(set(self.exact_types) - set(self.entity_types))
        if unknown_types:
            raise ValueError(f"exact_types names unknown entity types {unknown_types}; "
                             f"choices: {self.entity_types}")
        unknown = sorted(set(self.single_valued) - set(self.predicates))
        if unknown:
            raise ValueError(f"single_valued names unknown predicates {unknown}; "
                             f"choices: {self.predicates}")
        for predicate, kind in self.object_types.items():
            if predicate not in self.predicates:
                raise ValueError(f"object_types.{predicate}: unknown predicate; "
                                 f"choices: {self.predicates}")
            if kind not in self.entity_types:
                raise ValueError(f"object_types.{predicate}={kind!r}: unknown entity type; "
                                 f"choices: {self.entity_types}")
        if self.default_limit > self.max_limit:
            raise ValueError(f"default_limit={self.default_limit} is above "
                             f"max_limit={self.max_limit}")
        return self


class ProfileConfig(Section):
    """How one agent type ranks memories (see ranking/)."""

    priorities: dict[str, float] = Field(default_factory=dict)
    max_items: int = Field(default=10, ge=1)
    relevance_threshold: float = Field(default=0.0, ge=-1.0, le=1.0)
    temporal_weighting: bool = True
    success_weighting: bool = False
    failure_pattern_matching: bool = False
    deduplication: bool = True
    cross_reference_expansion: bool = False
    # overrides memory.retrieval.session_coverage.penalty for this profile; 0 switches it off
    session_coverage_penalty: float | None = Field(default=None, ge=0.0, le=10.0)

    @model_validator(mode="after")
    def _weights_non_negative(self) -> ProfileConfig:
        for memory_type, weight in self.priorities.items():
            if weight < 0:
                raise ValueError(
                    f"priorities.{memory_type}={weight} is negative; weights must be >= 0"
                )
        return self


def _default_profiles() -> dict[str, ProfileConfig]:
    p = ProfileConfig
    return {
        "bioinformatics": p(
            priorities={"note": 1.0, "answer": 1.2, "tool_execution": 1.1, "execution_trace": 0.8},
            max_items=10, relevance_threshold=0.3, success_weighting=True,
            cross_reference_expansion=True,
        ),
        "prime": p(
            priorities={"tool_execution": 1.3, "failure_analysis": 1.2, "plan": 1.0},
            max_items=10, relevance_threshold=0.3, success_weighting=True,
            failure_pattern_matching=True,
        ),
        "planner": p(
            priorities={"plan": 1.4, "decision": 1.2, "answer": 1.1, "failure_analysis": 1.1},
            max_items=8, relevance_threshold=0.25, success_weighting=True,
            cross_reference_expansion=True,
        ),
        "executor": p(
            priorities={"tool_execution": 1.4, "failure_analysis": 1.3, "execution_trace": 1.1},
            max_items=8, relevance_threshold=0.25, success_weighting=True,
            failure_pattern_matching=True,
        ),
        "deepsearch": p(
            priorities={"answer": 1.3, "note": 1.1, "conversation": 1.0},
            max_items=12, relevance_threshold=0.2, cross_reference_expansion=True,
        ),
    }


class MemoryConfig(Section):
    enabled: bool = True
    backend: BackendName = "faiss"
    namespace: Id = "default"
    session_id: Id | None = None
    session_ttl: float | None = Field(default=None, gt=0)
    on_unavailable: Literal["warn", "fail"] = "warn"
    max_content_bytes: int = Field(default=1_000_000, ge=1)
    max_metadata_bytes: int = Field(default=65_536, ge=2, le=16_777_216)
    nested: NestedConfig = Field(default_factory=NestedConfig)
    compression: CompressionConfig = Field(default_factory=CompressionConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    forget: ForgetConfig = Field(default_factory=ForgetConfig)
    archive: ArchiveConfig = Field(default_factory=ArchiveConfig)
    hot: HotConfig = Field(default_factory=HotConfig)
    vector_store: VectorStoreConfig = Field(default_factory=VectorStoreConfig)
    faiss: FaissConfig = Field(default_factory=FaissConfig)
    neo4j: Neo4jConfig = Field(default_factory=Neo4jConfig)
    profiles: dict[str, ProfileConfig] = Field(default_factory=_default_profiles)
    facts: FactsConfig = Field(default_factory=FactsConfig)
    service: ServiceConfig = Field(default_factory=ServiceConfig)
    consolidation: ConsolidationConfig = Field(default_factory=ConsolidationConfig)
    pruning: PruningConfig = Field(default_factory=PruningConfig)
    summaries: SummariesConfig = Field(default_factory=SummariesConfig)

    @model_validator(mode="after")
    def _one_worker_on_embedded(self) -> MemoryConfig:
        if self.service.workers > 1 and self.backend != "neo4j":
            raise ValueError(
                f"service.workers={self.service.workers} with memory.backend={self.backend!r}: "
                "the embedded store is served by ONE worker process (its index lives in that "
                "process); set memory.service.workers=1, or use memory.backend=neo4j for "
                "several workers"
            )
        return self

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _config_error(exc, data) from None

    @classmethod
    def from_omegaconf(cls, node: Any) -> MemoryConfig:
        """Build from the `memory` node of a Hydra config (interpolations resolved)."""
        from omegaconf import DictConfig, OmegaConf

        if isinstance(node, DictConfig):
            data = OmegaConf.to_container(node, resolve=True)
        elif isinstance(node, dict):
            data = node
        else:
            raise MemoryConfigError(
                f"memory: expected a mapping (DictConfig or dict), got {type(node).__name__}"
            )
        if not isinstance(data, dict):
            raise MemoryConfigError(f"memory: expected a mapping, got {data!r}")
        return cls(**{str(k): v for k, v in data.items()})

    def profile(self, name: str | None) -> ProfileConfig | None:
        """The named profile; None for None; MemoryConfigError naming the choices otherwise."""
        if name is None:
            return None
        try:
            return self.profiles[name]
        except KeyError:
            raise MemoryConfigError(
                f"memory.profiles: no profile {name!r}; choices: {sorted(self.profiles)}"
            ) from None


def _lookup(data: Any, loc: tuple[Any, ...]) -> Any:
    for part in loc:
        if isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return "<missing>"
    return data


def _config_error(exc: ValidationError, data: dict[str, Any]) -> MemoryConfigError:
    lines = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        key = ".".join(["memory", *(str(p) for p in loc)])
        value = err.get("input", _lookup(data, loc))
        msg = err["msg"].removeprefix("Value error, ")  # a validator's own words
        if err["type"] == "value_error" and (not loc or isinstance(value, dict)):
            # a check across keys (or of a whole section): its message names the keys
            lines.append(f"{key}: {msg}")
            continue
        if err["type"] == "extra_forbidden":
            allowed = _allowed_keys(loc[:-1])
            msg = f"unknown key; allowed keys here: {allowed}"
        lines.append(f"{key}={value!r}: {msg}")
    return MemoryConfigError("invalid memory configuration: " + "; ".join(lines))


def _allowed_keys(parent: tuple[Any, ...]) -> list[str]:
    """The keys allowed in the section at `parent` (a pydantic error location)."""
    if len(parent) >= 2 and parent[0] == "profiles":
        return sorted(ProfileConfig.model_fields)
    model: Any = MemoryConfig
    for part in parent:
        field = model.model_fields.get(str(part))
        if field is None or not hasattr(field.annotation, "model_fields"):
            return []
        model = field.annotation
    return sorted(model.model_fields)


def check_store_folder(config: MemoryConfig) -> None:
    """For the faiss backend: create `memory.faiss.path` if missing and prove a file can be
    created in it; raise MemoryConfigError naming the path and the reason otherwise."""
    if config.backend != "faiss":
        return
    folder = Path(config.faiss.path)
    setting = f"memory.faiss.path={config.faiss.path}"
    if folder.exists() and not folder.is_dir():
        raise MemoryConfigError(f"{setting} is a file, not a folder; give the path of a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".write-check-", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(folder) else ""
        raise MemoryConfigError(
            f"{setting} cannot be used: {exc.strerror or exc}{where}; give a folder this "
            "process can create files in"
        ) from None


# The config groups under conf/memory/ and their options: `memory.<group>=X` on a command line
# is read as `memory/<group>=X` (recall's options are the files in conf/memory/recall/).
GROUPS: dict[str, tuple[str, ...]] = {
    "backend": get_args(BackendName),
    "recall": ("multi_session",),  # none chosen by default
}


def as_group_choice(overrides: Sequence[str]) -> list[str]:
    """`overrides` with every `memory.<group>=X` (backend, recall) written `memory/<group>=X`.

    Raises MemoryConfigError when X (or one of a sweep's X,Y) is not an option of the group."""
    out = []
    for arg in overrides:
        group = next((g for g in GROUPS
                      if arg.startswith((f"memory.{g}=", f"memory/{g}="))), None)
        if group is None:
            out.append(arg)
            continue
        value = arg[len(f"memory.{group}="):]
        choices = GROUPS[group]
        unknown = [v for v in value.split(",") if v.strip() not in choices]
        if unknown:
            raise MemoryConfigError(f"memory.{group}={unknown[0]!r}: choices are {list(choices)}")
        out.append(f"memory/{group}={value}")
    return out
