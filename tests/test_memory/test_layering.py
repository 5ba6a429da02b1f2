"""The dependency points one way, workflow -> memory: no module of the memory package imports
the workflow, the agents, the tools, the framework's datatypes or utils. Each check runs in a
fresh interpreter, so what the rest of the suite imported cannot hide an import."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import DeepResearch.src.memory as memory

FRAMEWORK = tuple(
    f"DeepResearch.src.{part}" for part in ("workflow", "agents", "tools", "datatypes", "utils")
)
# Modules that still import the framework, each until its own rewrite; a strict xfail turns
# red once one no longer does, so the entry is removed with the import.
NOT_YET = {
    "DeepResearch.src.memory.backends.faiss_store": "imports utils.faiss_threads",
}
MODULES = sorted(i.name for i in pkgutil.walk_packages(memory.__path__, memory.__name__ + "."))

PROBE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(m for m in sys.modules if m.startswith(tuple(%r)))))
"""


def _framework_modules_imported_by(*modules: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE % (list(FRAMEWORK),), *modules],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_memory_package_imports_nothing_of_the_framework() -> None:
    clean = [m for m in MODULES if m not in NOT_YET]
    assert len(clean) > 30, clean  # the walk found the package's modules
    assert _framework_modules_imported_by(*clean) == []


@pytest.mark.parametrize(
    "module",
    [pytest.param(m, marks=pytest.mark.xfail(strict=True, reason=r)) for m, r in NOT_YET.items()],
)
def test_a_module_still_bound_to_the_framework(module: str) -> None:
    assert module in MODULES
    assert _framework_modules_imported_by(module) == []


def test_the_probe_sees_a_framework_import() -> None:
    """The check itself can fail: the workflow's memory wiring imports the workflow."""
    assert "DeepResearch.src.workflow.hooks" in _framework_modules_imported_by(
        "DeepResearch.src.workflow.memory.integration"
    )
