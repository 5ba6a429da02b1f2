"""Errors a user fixes by changing the command line or the config (exit code 2)."""

from __future__ import annotations


class ConfigurationError(ValueError):
    """A config value is wrong; the message names the key, the value and what is allowed."""


class WorkflowError(RuntimeError):
    """The workflow cannot go on (e.g. the planner failed); the message says why."""


class CheckpointWriteError(WorkflowError):
    """A file of the run folder (the checkpoint, a draft, a note) could not be written; the run
    stops, resumable from the last checkpoint written."""
