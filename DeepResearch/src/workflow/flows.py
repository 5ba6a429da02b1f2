"""Which flow a run takes, and each flow's settings, checked against the config."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from DeepResearch.src.workflow.errors import ConfigurationError

FLOWS = ("default", "rag")
FLOW_CHOICES = ("auto", *FLOWS)


def resolve_flow(cfg: DictConfig) -> str:
    """`flow` if given, else rag when flows.rag.enabled, else default."""
    flows = cfg.get("flows") or {}
    unknown = sorted(str(name) for name in flows if name not in FLOWS)
    if unknown:
        raise ConfigurationError(
            f"unknown flow(s) {unknown} under flows; known flows: {list(FLOWS)}"
        )
    choice = str(cfg.get("flow", "auto"))
    if choice not in FLOW_CHOICES:
        raise ConfigurationError(f"flow={choice!r} is unknown; choose one of {list(FLOW_CHOICES)}")
    if choice != "auto":
        return choice
    return "rag" if flows.get("rag", {}).get("enabled", False) else "default"


def documents_dir_setting(cfg: DictConfig, flow: str) -> str | None:
    value = cfg.rag.documents_dir if flow == "rag" else cfg.get("documents_dir")
    return None if value in (None, "") else str(value)


def invalid(prefix: str, exc: ValidationError) -> ConfigurationError:
    """One line naming each bad `prefix.<key>=value` and what is allowed."""
    problems = "; ".join(
        f"{'.'.join([prefix, *map(str, e['loc'])])}={e.get('input')!r}: {e['msg']}"
        if e["loc"] else f"{prefix}: {e['msg']}" for e in exc.errors())
    return ConfigurationError(problems)


class NestedLoopSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    max_depth: int = Field(default=0, ge=0)
    max_sub_questions: int = Field(default=0, ge=0)
    max_iterations: int = Field(default=4, ge=0)


class FlowSettings(BaseModel):
    """`flows.<flow>`'s own keys; its notes, review and memory sections are checked by their
    own modules (notes/models.py, review.py, memory/run_context.py)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    max_iterations: int = Field(default=6, ge=1)
    nested_loops: NestedLoopSettings = NestedLoopSettings()
    # the rag flow's index and search (flows.rag)
    chunk_size: int = Field(default=700, ge=1)
    chunk_overlap: int = Field(default=120, ge=0)
    embedding_model: str = Field(default="all-MiniLM-L6-v2", min_length=1)


def flow_settings(cfg: DictConfig, flow: str) -> FlowSettings:
    """`flows.<flow>` checked; ConfigurationError naming each bad key and value."""
    section = cfg.get("flows", {}).get(flow)
    data: Any = {} if section is None else OmegaConf.to_container(section, resolve=True)
    try:
        settings = FlowSettings.model_validate(data)
    except ValidationError as exc:
        raise invalid(f"flows.{flow}", exc) from None
    if settings.chunk_overlap >= settings.chunk_size:
        raise ConfigurationError(f"flows.{flow}.chunk_overlap={settings.chunk_overlap}: give a "
                                 f"number below flows.{flow}.chunk_size ({settings.chunk_size})")
    return settings


def document_extensions(cfg: DictConfig, flow: str) -> list[str]:
    """The file extensions the flow reads: `rag.extensions` (a list) for rag."""
    if flow != "rag":
        return [".md", ".txt"]
    value = cfg.rag.get("extensions")
    items = OmegaConf.to_container(value) if OmegaConf.is_list(value) else None
    if not items or not all(isinstance(e, str) and e.startswith(".") for e in items):
        raise ConfigurationError(f"rag.extensions={value!r}: give a list of extensions, e.g. "
                                 "\"rag.extensions=[.md,.txt]\"")
    return list(items)


def nested_loop_settings(cfg: DictConfig, flow: str) -> NestedLoopSettings:
    return flow_settings(cfg, flow).nested_loops


def max_iterations(cfg: DictConfig, flow: str) -> int:
    return flow_settings(cfg, flow).max_iterations
