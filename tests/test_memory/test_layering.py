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


THIRD_PARTY_PROBE = """
import json, subprocess, sys
bare = set(json.loads(subprocess.run(
    [sys.executable, "-c", "import sys, json; print(json.dumps(list(sys.modules)))"],
    capture_output=True, text=True, check=True).stdout))
import DeepResearch.src.memory.errors
print(json.dumps(sorted(
    m for m in set(sys.modules) - bare
    if m.split(".")[0] not in sys.stdlib_module_names and not m.startswith("DeepResearch")
)))
"""


def test_importing_the_errors_loads_no_third_party_package() -> None:
    """`memory/__init__` names its exports lazily: a small module costs only itself."""
    done = subprocess.run(
        [sys.executable, "-c", THIRD_PARTY_PROBE],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_package_still_exports_its_names() -> None:
    assert memory.MemoryConfig().backend
    assert memory.memory_toolset.__name__ == "memory_toolset"
    for name in memory.__all__:
        assert getattr(memory, name) is not None, name


RUN_PROBE = """
import atexit, json, sys
atexit.register(lambda: print("MODULES " + json.dumps(sorted(sys.modules))))
sys.argv = ["deepresearch", *sys.argv[1:]]
from DeepResearch.app import main
main()
"""


def test_an_in_memory_run_loads_neither_faiss_nor_the_embedded_backend(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN_PROBE, "question=Which aligner suits RNA-seq reads?",
         "memory.backend=in_memory", f"outputs_dir={tmp_path}", f"hydra.run.dir={tmp_path}"],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("MODULES "))
    loaded = json.loads(line.removeprefix("MODULES "))
    assert "DeepResearch.src.memory.backends.in_memory" in loaded  # the probe saw the run
    assert [m for m in loaded if m.split(".")[0] == "faiss" or ".backends.embedded" in m] == []


def test_help_loads_neither_the_agents_nor_the_workflow(tmp_path) -> None:
    """`deepresearch --help` answers without importing pydantic-ai and the workflow (most of
    the ~2 s a run's imports take)."""
    done = subprocess.run(
        [sys.executable, "-c", RUN_PROBE, "--help"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )
    assert done.returncode == 0 and "question" in done.stdout, done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("MODULES "))
    loaded = json.loads(line.removeprefix("MODULES "))
    assert "hydra" in loaded  # the probe saw the start
    assert [m for m in loaded if m.split(".")[0] == "pydantic_ai"
            or m.startswith("DeepResearch.src.workflow.run")] == []


# -- import cycles, counting every import: module level, under TYPE_CHECKING, in functions ----
KNOWN_CYCLES: list[set[str]] = []  # none: keep it so


def _import_graph() -> dict[str, set[str]]:
    import ast
    from pathlib import Path

    root = Path(memory.__file__).parent
    names = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        names[name] = path

    def home(dotted: str) -> str | None:
        while dotted and dotted not in names:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    prefix = memory.__name__ + "."
    edges: dict[str, set[str]] = {name: set() for name in names}
    for name, path in names.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                if target.startswith(prefix):
                    found = home(target.removeprefix(prefix))
                    if found and found != name and not name.startswith(found + "."):
                        edges[name].add(found)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle() -> None:
    cycles = _cycles(_import_graph())
    assert [c for c in cycles if c not in KNOWN_CYCLES] == []


def test_the_cycle_check_sees_a_type_checking_import() -> None:
    edges = _import_graph()
    edges["errors"] = edges["errors"] | {"text"}
    edges["text"] = edges["text"] | {"errors"}  # as if text imported errors under TYPE_CHECKING
    assert {"errors", "text"} in _cycles(edges)
    assert "writes" in edges["client_parts"]  # client_parts imports it under TYPE_CHECKING only


# -- the layers of the memory package, lowest first: a module imports only from its own layer
# and the ones below (docs/architecture.md). A new module must be placed in one.
LAYERS = [
    ("foundation", ["errors", "text", "config_base", "config", "config_service", "models",
                    "compression", "blas_threads", "facts.model",
                    "config_consolidation"]),
    ("embedding", ["embeddings", "faiss_pool", "onnx_bert"]),
    ("storage contract", ["backends.record", "backends.base", "backends.decoding",
                          "facts.store", "facts.rules", "facts.forgetting"]),
    ("backends", ["backends"]),
    ("ranking", ["ranking"]),
    ("client", ["client", "client_parts", "reads", "writes", "sessions", "maintenance", "archive", "access",
                "hot_tier", "health", "inputs", "records_io", "sync", "vector_fill"]),
    ("facts", ["facts"]),
    ("maintenance jobs", ["consolidation", "summaries"]),
    ("agent", ["agent", "toolset"]),
    ("service and CLI", ["service", "cli", "cli_transfer", "cli_consolidate"]),
]


def _layer(module: str) -> int | None:
    """The index of the longest LAYERS prefix naming `module` (None: in no layer)."""
    found = [(len(p), i) for i, (_, prefixes) in enumerate(LAYERS) for p in prefixes
             if module == p or module.startswith(p + ".")]
    return max(found)[1] if found else None


def _upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, targets in edges.items() for b in targets
                  if _layer(a) is not None and _layer(b) is not None and _layer(b) > _layer(a))


def test_every_module_has_a_layer_and_imports_only_downward() -> None:
    edges = _import_graph()
    assert [m for m in edges if m and _layer(m) is None] == []
    assert _upward(edges) == []


def test_the_layer_check_sees_an_upward_import() -> None:
    edges = _import_graph()
    edges["backends.in_memory"] = edges["backends.in_memory"] | {"facts.graph"}
    assert _upward(edges) == [("backends.in_memory", "facts.graph")]
