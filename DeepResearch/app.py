"""The `deepresearch` command: Hydra configuration in, a researched answer and a run folder out.

deepresearch "question='Which aligner suits RNA-seq reads?'"
deepresearch question="..." flows.rag.enabled=true rag.documents_dir=PATH
"""

from __future__ import annotations

import gc
import importlib
import logging
import sys
from typing import TYPE_CHECKING

import hydra
from omegaconf import DictConfig

from DeepResearch.src.commandline import (
    OverrideError,
    UnknownConfigKeyError,
    check_override_keys,
    closed_pipe_ends_quietly,
)
from DeepResearch.src.memory.config import as_group_choice
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryConfigError
from DeepResearch.src.workflow.errors import ConfigurationError, WorkflowError

if TYPE_CHECKING:
    from DeepResearch.src.workflow.run import RunOutcome, run_graph, run_research
    from DeepResearch.src.workflow.state import ResearchState

__all__ = ["ResearchState", "RunOutcome", "main", "run_graph", "run_research"]
# The workflow (pydantic-ai, the agents, the memory client) is imported when a run starts, not
# with this module: `--help` and a refused key answer in ~0.5 s instead of ~2 s.
_WORKFLOW = {"RunOutcome": "run", "run_graph": "run", "run_research": "run",
             "ResearchState": "state"}


def __getattr__(name: str) -> object:
    if name not in _WORKFLOW:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"DeepResearch.src.workflow.{_WORKFLOW[name]}"), name)

USAGE = """usage: deepresearch "question='<your question>'" [key=value ...]

No question was given. Examples:
  deepresearch "question='Which aligner suits RNA-seq reads?'"
  deepresearch "question='How are variants called?'" flows.rag.enabled=true rag.documents_dir=./docs
  deepresearch --help        (all options; --cfg job shows the composed config)"""


# Relative to this module: Hydra reads pkg://DeepResearch.conf, inside the installed package.
@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def _main(cfg: DictConfig) -> None:
    from DeepResearch.src.agents.models import ModelConfigError
    from DeepResearch.src.rag.loader import DocumentsFolderError
    from DeepResearch.src.workflow.resume import resume_command
    from DeepResearch.src.workflow.run import run_sync

    user_errors = (ConfigurationError, DocumentsFolderError, ModelConfigError, MemoryConfigError)
    # Everything imported so far (pydantic-ai, Hydra, ...) lives as long as the process: frozen,
    # it is left out of the collector's work. Otherwise a full collection during the run walks
    # all of it (~50 ms, measured), for nothing.
    gc.freeze()
    if cfg.get("resume"):  # deepresearch resume=outputs/run_<...>
        sys.exit(resume_command(str(cfg.resume)))
    question = cfg.get("question")
    if question is None or not str(question).strip():
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    try:
        outcome = run_sync(str(question), cfg)
    except user_errors as exc:
        print(f"deepresearch: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except MemoryBackendError as exc:  # only with memory.on_unavailable=fail
        print(f"deepresearch: memory backend error: {exc}", file=sys.stderr)
        sys.exit(1)
    except WorkflowError as exc:  # a phase without its input, a checkpoint the disk refused
        print(f"deepresearch: error: {exc} (the run's checkpoint stays resumable: "
              "deepresearch resume=<its run folder>)", file=sys.stderr)
        sys.exit(1)
    # `deepresearch ... | head`: a reader that stops early ends the output, not the run (its
    # folder is written by now), exit status 0 (commandline.py)
    closed_pipe_ends_quietly(lambda: _print_outcome(outcome))
    if outcome.unsaved_memories:
        print(
            f"deepresearch: error: {outcome.unsaved_memories} memories of this run could be "
            "neither stored nor saved to a spill file (see the error above)", file=sys.stderr
        )
        sys.exit(1)
    # The run is over: outputs written, the memory client closed and flushed. Interpreter
    # shutdown's garbage collections would walk every object the libraries made (~0.15-0.2 s,
    # measured) and free nothing that still matters; frozen objects are skipped. Reference
    # counting still frees the rest, and atexit handlers (logging's flush) still run.
    gc.freeze()


# Hydra's options that take a value (`--cfg job`, `-cn NAME`); `--info` may take one of its own.
_VALUED = {"--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name", "-cn",
           "--config-dir", "-cd", "--experimental-rerun"}
_INFO = {"all", "config", "defaults", "defaults-tree", "plugins", "searchpath"}


def check_no_bare_words(args: list[str]) -> None:
    """Every argument is a `key=value` setting or an option: a bare question
    (`deepresearch "Which aligner?"`), Hydra would report as an override missing its `=`."""
    for before, arg in zip(["", *args], args, strict=False):
        if arg.startswith(("-", "~")) or "=" in arg or before in _VALUED or (
                before == "--info" and arg in _INFO):
            continue
        raise OverrideError(f"{arg!r} is not a key=value setting; a question is given as "
                            f"\"question='{arg}'\"" if " " in arg or arg.endswith("?") else
                            f"{arg!r} is not a key=value setting (e.g. question='...', "
                            "llm=openai); deepresearch --help lists them")


def warn_resume_ignores(overrides: list[str]) -> None:
    """`resume=` continues a run with the configuration it was started with (its checkpoint):
    say which other settings of the command line it does not apply, rather than drop them
    without a word."""
    if not any(o.startswith("resume=") for o in overrides):
        return
    others = [o for o in overrides if not o.startswith(("resume=", "hydra.", "hydra/"))]
    if others:
        print(f"deepresearch: resume= continues the run with its own configuration; not "
              f"applied: {' '.join(others)}", file=sys.stderr)


def _print_outcome(outcome: RunOutcome) -> int:
    print(outcome.answer)
    print()
    print(f"Outputs: {outcome.run_dir.resolve()}")
    print(f"  report:  {(outcome.run_dir / 'report.md').resolve()}")
    print(f"  summary: {(outcome.run_dir / 'WORKFLOW_SUMMARY.md').resolve()}")
    notes = outcome.run_dir / "notes"
    if (notes / "final_synthesis.json").is_file():
        print(f"  notes:   {notes.resolve()}/ (final synthesis: final_synthesis.json)")
    return 0


def main() -> None:
    """The console script: Hydra parses sys.argv (`memory.backend=X` read as the group choice);
    an override naming no key of the configuration, one Hydra cannot read or a group option
    that does not exist is refused first, in one line."""
    try:
        check_no_bare_words(sys.argv[1:])
        sys.argv[1:] = as_group_choice(sys.argv[1:])
        overrides = [a for a in sys.argv[1:] if (not a.startswith("-") and "=" in a)
                     or a.startswith("~")]
        check_override_keys(overrides,
                            multirun=any(a in ("-m", "--multirun") for a in sys.argv[1:]))
        warn_resume_ignores(overrides)
    except (MemoryConfigError, UnknownConfigKeyError, OverrideError) as exc:
        print(f"deepresearch: error: {exc}", file=sys.stderr)
        sys.exit(2)
    # The run's log lines go to stdout too: once its reader is gone they are dropped, instead
    # of a "--- Logging error ---" report with a traceback on stderr per line.
    logging.raiseExceptions = False
    sys.exit(closed_pipe_ends_quietly(lambda: _main() or 0))  # --help, --cfg job | head


if __name__ == "__main__":
    main()
