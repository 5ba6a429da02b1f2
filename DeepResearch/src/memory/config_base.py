"""The base of every `memory` config section: an unknown key is an error, assignments are
validated (config.py, config_service.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
