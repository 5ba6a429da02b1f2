"""Command-line plumbing both commands share (`deepresearch`, `deepresearch-memory`); it imports
nothing of the framework or the memory package, so either may use it.

**Overrides checked against the configuration's keys.** Hydra refuses
`flows.prime.enabled=true` with a multi-line error and accepts `+flows.prime.enabled=true`
silently (the key is added, nothing reads it). Both commands check their overrides here first:
a key the configuration does not have gets one line naming it and the nearest known keys.
An override Hydra cannot read (`rag.documents_dir=~/notes`: `~` needs quotes; a comma outside
quotes, which Hydra reads as a sweep) or a group option no config folder has (`llm=gpt`) is
refused in one line too (OverrideError), instead of Hydra's multi-line report or traceback. The
group options are looked up with the user's `hydra.searchpath`, so `llm=local` from
`myconf/llm/local.yaml` is found.
A `+` key is accepted where the configuration is an open mapping (OPEN_KEYS: a new memory
profile, a new agent's profile choice, ...) and, under `flows.<flow>.memory.`, where it names
a `memory.` key (a flow's own memory settings: docs/configuration.md).

**A reader that closes the pipe early** (`deepresearch-memory list | head`) ends the output:
writing to a pipe whose reader is gone raises BrokenPipeError, at a print or at the final
flush. That is the normal end of a command piped into `head`: exit status 0, nothing on
stderr. Standard output is pointed at /dev/null so the interpreter's own flush at exit does
not raise again ("Exception ignored ... BrokenPipeError", exit status 120).
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from fnmatch import fnmatchcase
from importlib.resources import files
from typing import Any

CONFIG_MODULE = "DeepResearch.conf"

# Mappings whose keys are the user's to choose: `+memory.profiles.mine.max_items=5`.
OPEN_KEYS = (
    "memory.profiles.*",
    "memory.service.api_keys.*",
    "memory.facts.object_types.*",
    "flows.*.memory.agent_profiles.*",
)


class OverrideError(ValueError):
    """An override Hydra cannot parse, or a config group option that does not exist."""


class UnknownConfigKeyError(ValueError):
    """An override names a key the composed configuration does not have."""

    def __init__(self, key: str, nearest: Sequence[str], hint: str = "") -> None:
        self.key = key
        self.nearest = list(nearest)
        hint = hint or (f"nearest known keys: {', '.join(self.nearest)}" if nearest else (
            "no known key is close; `--cfg job` shows them all"))
        super().__init__(f"unknown configuration key {key!r}; {hint}")


def backend_section_hint(key: str, known: set[str]) -> str:
    """For `memory.neo4j.uri` while another backend is chosen: the backend option whose
    section it is (each option of conf/memory/backend/ composes only its own section)."""
    parts = key.split(".")
    if len(parts) < 3 or parts[0] != "memory" or f"memory.{parts[1]}" in known:
        return ""
    if not files(CONFIG_MODULE).joinpath("memory", "backend", f"{parts[1]}.yaml").is_file():
        return ""
    return (f"memory.{parts[1]}.* is the section of the {parts[1]} backend, which is not the "
            f"one chosen: add memory.backend={parts[1]}")


def dotted_keys(node: Any, prefix: str = "") -> set[str]:
    """Every key of a (Dict/List)Config or plain mapping, dotted: `flows`, `flows.rag`, ..."""
    from omegaconf import DictConfig, OmegaConf

    if isinstance(node, DictConfig):
        node = OmegaConf.to_container(node, resolve=False)
    out: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            full = f"{prefix}{key}"
            out.add(full)
            out |= dotted_keys(value, full + ".")
    return out


def nearest_keys(key: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known keys closest to `key` (difflib ratio), best first; leaf-name matches help."""
    known = sorted(known)
    close = difflib.get_close_matches(key, known, n=n, cutoff=0.6)
    if len(close) < n:  # `flows.default.max_iteration` vs a deep key: compare the last parts too
        leaf = key.rsplit(".", 1)[-1]
        by_leaf = [k for k in known if k not in close and difflib.SequenceMatcher(
            None, leaf, k.rsplit(".", 1)[-1]).ratio() >= 0.8 and k.split(".")[0] == key.split(".")[0]]
        close += difflib.get_close_matches(key, by_leaf, n=n - len(close), cutoff=0.0)
    return close


def compose(overrides: Sequence[str]) -> Any:
    """The package's Hydra configuration (a DictConfig) composed with `overrides`."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
            return hydra_compose(config_name="config", overrides=list(overrides))
    finally:
        GlobalHydra.instance().clear()


def config_groups() -> set[str]:
    """The config groups of the package's configuration: llm, flows, memory, memory/backend."""
    groups: set[str] = set()

    def walk(folder: Any, prefix: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir() and not entry.name.startswith("__"):
                groups.add(prefix + entry.name)
                walk(entry, f"{prefix}{entry.name}/")

    walk(files(CONFIG_MODULE), "")
    return groups


def is_known(key: str, known: set[str]) -> bool:
    """`key` is in the configuration, under an open mapping, or a flow's memory setting."""
    if key in known or any(fnmatchcase(key, pattern) for pattern in OPEN_KEYS):
        return True
    parts = key.split(".")
    if len(parts) > 3 and parts[0] == "flows" and parts[2] == "memory":
        return f"flows.{parts[1]}" in known and "memory." + ".".join(parts[3:]) in known
    return False


def hydra_reason(exc: BaseException) -> str:
    """Hydra's message in one line, without the search path and the documentation link."""
    text = str(exc).split("Config search path")[0]
    lines = [line.strip().rstrip(".") for line in text.splitlines()
             if line.strip() and not line.strip().startswith(("See https://", "^"))]
    return "; ".join(lines)


def _syntax_reason(exc: BaseException, line: str) -> str:
    """What Hydra's parser refused: the character its caret points at, else its message."""
    text = str(exc)
    lexer = "LexerNoViableAltException: "
    carets = [row for row in text.splitlines() if row.strip() == "^"]
    if text.startswith(lexer) and carets:
        at = len(carets[0]) - 1 - len(lexer)
        if 0 <= at < len(line):
            return f"{line[at]!r} at character {at + 1} is not allowed outside quotes"
    return hydra_reason(exc)


def parse_overrides(overrides: Sequence[str], *, multirun: bool = False) -> list[Any]:
    """Hydra's parsed overrides; OverrideError, in one line, for the first it cannot read."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    parsed = []
    for line in overrides:
        try:
            [override] = parser.parse_overrides([line])
        except HydraException as exc:
            raise OverrideError(f"cannot read the override {line!r} ({_syntax_reason(exc, line)}"
                                f"); {_quoting_hint(line)}") from None
        if override.is_sweep_override() and not multirun:
            raise OverrideError(f"{line!r}: a comma outside quotes makes a list of values; "
                                f"{_quoting_hint(line)}")
        parsed.append(override)
    return parsed


def _quoting_hint(line: str) -> str:
    """How to quote the value of an override Hydra could not read as meant."""
    key, _, value = line.partition("=")
    if not {"'", '"'} & set(value):
        return f"quote the value inside the argument, e.g. \"{key}='{value}'\""
    inner = value.strip("'")  # the text, without the quotes around it
    if "'" in inner and '"' not in value:
        escaped = inner.replace("\\'", "'").replace("'", "\\'")
        return f"a ' inside a quoted value is written \\', e.g. \"{key}='{escaped}'\""
    return "check its quotes"


def check_search_path(parsed: Sequence[Any]) -> None:
    """Each folder of `hydra.searchpath=[...]` exists: Hydra only warns about a missing one
    (a Python UserWarning naming its own source file) and composes without it."""
    for override in parsed:
        if override.key_or_group != "hydra.searchpath" or override.is_sweep_override():
            continue
        value = override.value()
        for entry in value if isinstance(value, list) else [value]:
            entry = str(entry)
            if "://" in entry and not entry.startswith("file://"):
                continue  # pkg://...: a package's config, Hydra's to find
            folder = entry.removeprefix("file://")
            if not os.path.isdir(os.path.expanduser(folder)):
                raise OverrideError(
                    f"hydra.searchpath: no folder {folder!r} (from {os.getcwd()}); give the "
                    "folder holding your config groups, e.g. hydra.searchpath=[myconf]")


def compose_choices(choices: Sequence[str]) -> Any:
    """The configuration composed with the group choices; OverrideError for an option that
    no config folder (the package's, the user's `hydra.searchpath`) holds."""
    from hydra.errors import HydraException, MissingConfigException

    try:
        return compose(choices)
    except MissingConfigException as exc:
        group, _, option = (exc.missing_cfg_file or "").rpartition("/")
        if group and exc.options:
            raise OverrideError(f"{group}={option!r}: no such option; choices are "
                                f"{', '.join(exc.options)}") from None
        raise OverrideError(hydra_reason(exc)) from None
    except HydraException as exc:
        raise OverrideError(hydra_reason(exc)) from None


def check_override_keys(overrides: Sequence[str], *, multirun: bool = False) -> None:
    """Raise UnknownConfigKeyError for the first override naming an unknown key, OverrideError
    for one Hydra cannot read or a group option that does not exist.

    The known keys are those of the configuration composed with the group choices among
    `overrides` (llm=openai, memory/backend=neo4j: `memory.backend=X` already rewritten by
    memory/config.as_group_choice) and the user's `hydra.searchpath`. Hydra's other own
    overrides (hydra.*, hydra/...) are left to Hydra."""
    parsed = parse_overrides(overrides, multirun=multirun)
    check_search_path(parsed)
    groups = config_groups()
    # a sweep's choices (--multirun llm=offline,openai) are Hydra's to compose one by one
    choices = [o.input_line for o in parsed if o.input_line and not o.is_sweep_override() and (
        o.key_or_group in groups or o.key_or_group == "hydra.searchpath")]
    values = [o for o in parsed if o.key_or_group not in groups and not o.is_hydra_override()]
    if not values and not any(o.key_or_group in groups for o in parsed):
        return
    known = dotted_keys(compose_choices(choices))
    # A mapping or list given whole (`memory.service.api_keys={k: ns}`) can still fail where
    # Hydra merges it into the config ("not in struct"): composed here to say so in one line.
    if any(isinstance(o.value(), dict | list) for o in values if not o.is_sweep_override()):
        compose_choices([o.input_line for o in parsed if not o.is_hydra_override()
                         or o.key_or_group == "hydra.searchpath"])
    for o in values:
        key = o.key_or_group
        if not is_known(key, known):
            raise UnknownConfigKeyError(key, nearest_keys(key, known | flow_memory_keys(key, known)),
                                        backend_section_hint(key, known))


def flow_memory_keys(key: str, known: set[str]) -> set[str]:
    """For a key under `flows.<flow>.memory.`: the memory keys that flow may set, spelt so."""
    parts = key.split(".")
    if len(parts) < 4 or parts[0] != "flows" or parts[2] != "memory":
        return set()
    prefix = f"flows.{parts[1]}."
    return {prefix + k for k in known if k.startswith("memory.")}


def closed_pipe_ends_quietly(command: Callable[[], int]) -> int:
    """`command()`'s exit status, with its output flushed; 0 when the reader closed the pipe."""
    try:
        status = command()
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0
