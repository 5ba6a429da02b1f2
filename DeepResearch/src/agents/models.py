"""Build the pydantic-ai model of an agent role from the `llm` config group.

`offline` (default), `openai`, `anthropic`, `openai_compatible`. Errors name what to fix
(the provider choices, the environment variable holding the key) and are never swallowed.
"""

from __future__ import annotations

import os
from typing import Any

from omegaconf import DictConfig
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from DeepResearch.src.agents.offline_model import OfflineModel
from DeepResearch.src.datatypes.agents import AgentType

PROVIDERS = ("offline", "openai", "anthropic", "openai_compatible")


class ModelConfigError(ValueError):
    """The `llm` config cannot make a model (unknown provider, missing key, ...)."""


def _api_key(llm: DictConfig, required: bool = True) -> str | None:
    env = llm.get("api_key_env")
    if not env:
        raise ModelConfigError(f"llm.api_key_env is empty for provider {llm.provider!r}")
    key = os.environ.get(str(env))
    if not key and required:
        raise ModelConfigError(
            f"llm={llm.provider} needs an API key: set the environment variable {env} "
            f"(or choose llm=offline, which needs none)"
        )
    return key or None


def _require(llm: DictConfig, key: str) -> str:
    value = llm.get(key)
    if not value:
        raise ModelConfigError(f"llm.{key} must be set for provider {llm.provider!r}")
    return str(value)


def _base_url(llm: DictConfig, required: bool) -> str | None:
    """`llm.base_url`, an http(s) address: without its scheme the client cannot connect and
    says only 'Connection error'."""
    value = _require(llm, "base_url") if required else (llm.get("base_url") or None)
    if value is not None and not str(value).startswith(("http://", "https://")):
        raise ModelConfigError(f"llm.base_url={value!r}: give an http:// or https:// address, "
                               "e.g. http://localhost:8000/v1")
    return None if value is None else str(value)


def build_model(llm: DictConfig, role: AgentType) -> Model:
    provider = llm.get("provider")
    if provider == "offline":
        sentences = _number(llm, "sentences_per_answer", int, 1, "a whole number >= 1")
        return OfflineModel(4 if sentences is None else sentences).for_role(role)
    if provider == "openai":
        from pydantic_ai.models.openai import OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider_obj = OpenAIProvider(api_key=_api_key(llm), base_url=_base_url(llm, False))
        return OpenAIResponsesModel(_require(llm, "model"), provider=provider_obj)
    if provider == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel(
            _require(llm, "model"), provider=AnthropicProvider(api_key=_api_key(llm))
        )
    if provider == "openai_compatible":
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        key = _api_key(llm, required=bool(llm.get("api_key_required", False)))
        provider_obj = OpenAIProvider(base_url=_base_url(llm, True), api_key=key or "unused")
        return OpenAIChatModel(_require(llm, "model"), provider=provider_obj)
    raise ModelConfigError(f"llm.provider {provider!r} is unknown; choose one of {PROVIDERS}")


def _number(llm: DictConfig, key: str, kind: type, least: float, what: str) -> Any:
    """`llm.<key>` as `kind` (None when unset); ModelConfigError naming it when it is not
    one, or below `least`."""
    value = llm.get(key)
    if value is None:
        return None
    try:
        if isinstance(value, bool) or (kind is int and isinstance(value, float)):
            raise ValueError
        number = kind(value)
    except (TypeError, ValueError):
        number = None
    if number is None or number < least:
        raise ModelConfigError(f"llm.{key}={value!r}: give {what}")
    return number


def model_settings(llm: DictConfig) -> ModelSettings | None:
    settings: dict[str, Any] = {
        "temperature": _number(llm, "temperature", float, 0, "a number >= 0, or null"),
        "max_tokens": _number(llm, "max_tokens", int, 1, "a whole number >= 1, or null"),
    }
    settings = {key: value for key, value in settings.items() if value is not None}
    return ModelSettings(**settings) if settings else None
