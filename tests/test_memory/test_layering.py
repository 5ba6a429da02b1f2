"""The dependency points one way, workflow -> memory: no module of the memory package imports
the workflow, the agents, the tools, the framework's datatypes or utils. Each check runs in a
fresh interpreter, so what the rest of the suite imported cannot hide an import."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import DeepResearch.src.memory as memory

FRAMEWORK = tuple(
    f"DeepResearch.src.{part}" for part in ("workflow", "agents", "tools", "datatypes", "utils")
)
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
    assert len(MODULES) > 30, MODULES  # the walk found the package's modules
    assert _framework_modules_imported_by(*MODULES) == []


def test_the_probe_sees_a_framework_import() -> None:
    """The check itself can fail: the workflow's memory wiring imports the workflow."""
    assert "DeepResearch.src.workflow.hooks" in _framework_modules_imported_by(
        "DeepResearch.src.workflow.memory.integration"
    )
