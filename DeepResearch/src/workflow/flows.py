"""Which flow a run takes, and each flow's settings, checked against the config."""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import DictConfig

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


@dataclass(frozen=True)
class NestedLoopSettings:
    enabled: bool = False
    max_depth: int = 0
    max_sub_questions: int = 0
    max_iterations: int = 4


def nested_loop_settings(cfg: DictConfig, flow: str) -> NestedLoopSettings:
    section = cfg.flows[flow].get("nested_loops")
    if section is None:
        return NestedLoopSettings()
    settings = NestedLoopSettings(
        enabled=bool(section.enabled),
        max_depth=int(section.max_depth),
        max_sub_questions=int(section.max_sub_questions),
        max_iterations=int(section.max_iterations),
    )
    for key in ("max_depth", "max_sub_questions", "max_iterations"):
        if getattr(settings, key) < 0:
            raise ConfigurationError(
                f"flows.{flow}.nested_loops.{key} must be >= 0, got {getattr(settings, key)}"
            )
    return settings


def max_iterations(cfg: DictConfig, flow: str) -> int:
    value = int(cfg.flows[flow].max_iterations)
    if value < 1:
        raise ConfigurationError(f"flows.{flow}.max_iterations must be >= 1, got {value}")
    return value
