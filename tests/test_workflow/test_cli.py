"""End to end: the `deepresearch` command in a subprocess, offline model, real files."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def deepresearch(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("OPENAI_API_KEY", None)
    command = [
        sys.executable,
        "-m",
        "DeepResearch.app",
        f"outputs_dir={tmp_path / 'out'}",
        "memory.enabled=false",
        *args,
    ]
    return subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


def only_run_dir(tmp_path: Path) -> Path:
    [run_dir] = list((tmp_path / "out").iterdir())
    return run_dir


def test_question_gives_a_cited_report_and_all_outputs(tmp_path: Path) -> None:
    done = deepresearch(tmp_path, "question='Which aligner suits RNA-seq reads?'")
    assert done.returncode == 0, done.stderr
    run_dir = only_run_dir(tmp_path)
    assert run_dir.name.startswith("run_") and run_dir.name.endswith(
        "_which-aligner-suits-rna-seq-reads"
    )
    assert f"Outputs: {run_dir}" in done.stdout
    assert "offline model" in done.stdout
    report = (run_dir / "report.md").read_text()
    assert "STAR" in report and "HISAT2" in report
    assert "## Sources cited" in report and "[rna_seq_aligners.md]" in report
    for name in (
        "WORKFLOW_SUMMARY.md",
        "execution_history.json",
        "config.yaml",
        "drafts/planning.md",
        "drafts/research.md",
        "drafts/writing.md",
    ):
        assert (run_dir / name).is_file(), name
    summary = (run_dir / "WORKFLOW_SUMMARY.md").read_text()
    assert (
        "| plan |" in summary
        and "search_documents: 1" in summary
        and "Status: completed" in summary
    )
    history = json.loads((run_dir / "execution_history.json").read_text())
    assert next(item["tool"] for item in history["items"]) == "search_documents"
    # Hydra leaves nothing behind in the working folder.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_quoted_question_with_a_comma(tmp_path: Path) -> None:
    done = deepresearch(tmp_path, "question='BWA, Bowtie2: which DNA aligner for short reads?'")
    assert done.returncode == 0, done.stderr
    assert "[dna_aligners.md]" in (only_run_dir(tmp_path) / "report.md").read_text()


def test_no_question_is_a_usage_error(tmp_path: Path) -> None:
    done = deepresearch(tmp_path)
    assert done.returncode == 2
    assert "usage: deepresearch" in done.stderr and "Traceback" not in done.stderr


def test_unknown_flow_is_named(tmp_path: Path) -> None:
    done = deepresearch(tmp_path, "question=x", "flow=magic")
    assert done.returncode == 2
    assert "flow='magic' is unknown" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("override", "key", "nearest"),
    [
        ("flows.prime.enabled=true", "flows.prime.enabled", "flows.rag.enabled"),
        ("+flows.prime.enabled=true", "flows.prime.enabled", "flows.rag.enabled"),
        ("flows.default.max_iteration=3", "flows.default.max_iteration",
         "flows.default.max_iterations"),
        ("+flows.default.memory.retrival.min_similarity=0.5",
         "flows.default.memory.retrival.min_similarity",
         "flows.default.memory.retrieval.min_similarity"),
        ("~memory.sesion_ttl", "memory.sesion_ttl", "memory.session_ttl"),
        # keys nothing reads are not offered (the search tool's top_k is the agent's choice)
        ("flows.rag.top_k=3", "flows.rag.top_k", "flows.rag.memory.top_k"),
        ("flows.rag.score_threshold=0.5", "flows.rag.score_threshold", "flows.rag"),
    ],
)
def test_an_unknown_key_is_one_line_naming_the_nearest_keys(
    tmp_path: Path, override: str, key: str, nearest: str
) -> None:
    done = deepresearch(tmp_path, "question='x'", override, "--cfg", "job")  # not a parse error
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert f"unknown configuration key {key!r}" in line and nearest in line, line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("override", "fragments"),
    [
        # `~` is no character of Hydra's grammar: the shell does not expand it after `key=`
        ("rag.documents_dir=~/notes", ["'~' at character 19", "\"rag.documents_dir='~/notes'\""]),
        # a comma outside quotes is a sweep, which a single run refuses
        ("question=what is faiss, really?", ["a comma outside quotes",
                                             "\"question='what is faiss, really?'\""]),
        ("question='x", ["question='x", "check its quotes"]),
        # an apostrophe in a quoted question: the escaped form is shown
        ("question='What's new?'", ["a ' inside a quoted value is written \\'",
                                    "\"question='What\\'s new?'\""]),
        ("llm=gpt", ["llm='gpt': no such option", "offline"]),
        ("memory=redis", ["memory='redis': no such option", "in_memory"]),
        # the question without its key: the most common first try
        ("Which aligner suits RNA-seq reads?",
         ["is not a key=value setting", "\"question='Which aligner suits RNA-seq reads?'\""]),
        ("question", ["'question' is not a key=value setting"]),
        ("hydra.searchpath=[no_such_folder]", ["hydra.searchpath: no folder 'no_such_folder'"]),
        # a mapping given whole where Hydra wants it added: its own advice, in one line
        ("memory.service.api_keys={key789abcdefghijklmnop:alice}",
         ["Could not override 'memory.service.api_keys'",
          "+memory.service.api_keys={key789abcdefghijklmnop:alice}"]),
    ],
)
def test_an_override_hydra_cannot_use_is_one_line(
    tmp_path: Path, override: str, fragments: list[str]
) -> None:
    done = deepresearch(tmp_path, "question='x'", override)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    for fragment in fragments:
        assert fragment in line, line
    assert not (tmp_path / "out").exists()


def test_a_users_config_option_is_found_with_other_overrides(tmp_path: Path) -> None:
    """`llm=local` from the user's `hydra.searchpath` folder, beside a question and a key."""
    (tmp_path / "myconf" / "llm").mkdir(parents=True)
    (tmp_path / "myconf" / "llm" / "local.yaml").write_text(
        "defaults:\n  - offline\n  - _self_\nsentences_per_answer: 2\n")
    done = deepresearch(tmp_path, "question='x'", "llm=local", "hydra.searchpath=[myconf]",
                        "flows.default.max_iterations=2", "--cfg", "job", "--package", "llm")
    assert done.returncode == 0, done.stderr
    assert "sentences_per_answer: 2" in done.stdout


def test_added_keys_where_the_config_is_open_are_accepted(tmp_path: Path) -> None:
    done = deepresearch(
        tmp_path, "question='x'", "llm=offline", "+memory.profiles.mine.max_items=3",
        "+memory.service.api_keys.key789abcdefghijklmnop=alice",
        "+flows.default.memory.retrieval.min_similarity=0.5",
    )
    assert done.returncode == 0, done.stderr


def test_bad_memory_value_is_named(tmp_path: Path) -> None:
    done = deepresearch(tmp_path, "question=x", "memory.retrieval.top_k=-3")
    assert done.returncode == 2
    assert "memory.retrieval.top_k=-3" in done.stderr and "Traceback" not in done.stderr
    done = deepresearch(tmp_path, "question=x", "memory.backend=redis")
    assert done.returncode == 2
    assert "memory.backend='redis'" in done.stderr or "memory.backend=redis" in done.stderr
    assert "faiss" in done.stderr and "Traceback" not in done.stderr  # the choices are named


def test_the_backend_is_chosen_with_its_section_in_either_spelling(tmp_path: Path) -> None:
    for choice in ("memory.backend", "memory/backend"):
        done = subprocess.run(
            [sys.executable, "-m", "DeepResearch.app", "--cfg", "job", f"{choice}=neo4j",
             "memory.neo4j.uri=bolt://db.example.org:7687"],
            cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "uri: bolt://db.example.org:7687" in done.stdout
        assert "\n  faiss:" not in done.stdout  # the faiss option's section is not composed


def test_an_embedding_model_that_cannot_load_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "no-model"
    done = deepresearch(tmp_path, "question=x", "memory.enabled=true",
                        f"memory.faiss.path={tmp_path / 'memory'}",
                        f"memory.vector_store.embedding_model={missing}",
                        "memory.vector_store.embedding_runtime=onnx-fp32")
    assert done.returncode == 2, done.stderr
    assert "embedding_runtime='onnx-fp32' cannot run" in done.stderr and str(missing) in done.stderr
    assert "Traceback" not in done.stderr


def test_the_rag_flows_embedding_model_is_named_by_its_own_key(tmp_path: Path) -> None:
    missing = tmp_path / "no-model"
    done = deepresearch(tmp_path, "question=x", "flow=rag",
                        f"flows.rag.embedding_model={missing}")
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()  # no library warning before it
    assert f"flows.rag.embedding_model='{missing}' cannot be loaded: no such folder" in line, line
    assert "memory.vector_store" not in line


def test_the_stored_line_counts_what_the_store_holds(tmp_path: Path) -> None:
    """`memory: stored ...` (and the report's Stored line) counts every memory of the run,
    the research notes too."""
    store = tmp_path / "memory"
    done = deepresearch(tmp_path, "question='Which aligner suits RNA-seq reads?'",
                        "memory.enabled=true", f"memory.faiss.path={store}")
    assert done.returncode == 0, done.stderr
    line = re.search(r"memory: stored (.+) in session (\w+); (\d+) facts in the knowledge graph",
                     done.stdout + done.stderr)
    assert line, done.stdout
    said = {kind: int(n) for n, kind in (part.split() for part in line.group(1).split(", "))}
    said["fact"] = int(line.group(3))  # the facts' sentences: listed too, in session "facts"
    listed = subprocess.run(
        [sys.executable, "-m", "DeepResearch.src.memory.cli", "list", "--limit", "1000",
         f"memory.faiss.path={store}"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr
    held = Counter(row.split()[4] for row in listed.stdout.splitlines())  # id, date, time, session, type
    assert said == dict(held) and said.get("note", 0) > 0, (said, held)


def test_a_run_whose_backend_is_down_names_only_the_real_cause(tmp_path: Path) -> None:
    """Neo4j down: the run answers without memory and spills what it could not write; the
    cause it prints is the server's, with nothing of how the run was started ("no running
    event loop", the context every error of the run used to carry)."""
    done = deepresearch(tmp_path, "question='Which aligner suits RNA-seq reads?'",
                        "memory.enabled=true", "memory.backend=neo4j",
                        "memory.neo4j.uri=bolt://127.0.0.1:1", "memory.neo4j.connection_timeout=1",
                        "memory.neo4j.retry_attempts=0", f"memory.storage.spill_dir={tmp_path}")
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "were saved to" in said and "bolt://127.0.0.1:1" in said, said
    assert "no running event loop" not in said, said
    # the line that says the backend opened says it is unavailable
    assert re.search(r"memory: neo4j backend UNAVAILABLE .*, session \w+", done.stdout), said


def test_secrets_stay_out_of_the_run_folder(tmp_path: Path) -> None:
    """The Neo4j password (from NEO4J_PASSWORD, or given on the command line) and service API
    keys are in no file of the run folder: config.yaml and checkpoint.json keep the
    environment reference, or nothing."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NEO4J_PASSWORD": "pw-from-env-123"}
    for extra in ([], ["memory.neo4j.password=pw-on-command-line-456",
                       "+memory.service.api_keys={key789abcdefghijklmnop:alice}"]):
        done = subprocess.run(
            [sys.executable, "-m", "DeepResearch.app", f"outputs_dir={tmp_path / 'out'}",
             "question=x", "memory.backend=neo4j", "memory.neo4j.uri=bolt://127.0.0.1:1",
             "memory.neo4j.connection_timeout=1", "memory.neo4j.retry_attempts=0",
             f"memory.storage.spill_dir={tmp_path / 'spill'}", *extra],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    runs = list((tmp_path / "out").iterdir())
    assert len(runs) == 2
    for path in (p for run in runs for p in run.rglob("*") if p.is_file()):
        text = path.read_text(errors="replace")
        for secret in ("pw-from-env-123", "pw-on-command-line-456", "key789abcdefghijklmnop"):
            assert secret not in text, (path, secret)
    assert any("${oc.env:NEO4J_PASSWORD,null}" in (run / "config.yaml").read_text()
               for run in runs)


def test_missing_rag_folder_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "no_such_folder"
    done = deepresearch(
        tmp_path, "question=x", "flows.rag.enabled=true", f"rag.documents_dir={missing}"
    )
    assert done.returncode == 2
    assert f"documents folder '{missing}' does not exist" in done.stderr


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ("tools.max_retries=-1", "tools.max_retries=-1: give a whole number >= 0"),
        ("tools.max_retries=abc", "tools.max_retries='abc': give a whole number >= 0"),
        ("llm.temperature=hot", "llm.temperature='hot': give a number >= 0"),
        ("llm.max_tokens=0", "llm.max_tokens=0: give a whole number >= 1"),
        ("llm.sentences_per_answer=0", "llm.sentences_per_answer=0: give a whole number >= 1"),
        ("llm=openai_compatible llm.base_url=localhost:8000/v1",
         "llm.base_url='localhost:8000/v1': give an http:// or https:// address"),
        ("flows.default.max_iterations=abc", "flows.default.max_iterations='abc'"),
        ("flows.default.nested_loops.max_depth=abc", "flows.default.nested_loops.max_depth='abc'"),
        ("flows.default.nested_loops.enabled=maybe", "flows.default.nested_loops.enabled='maybe'"),
        ("flow=rag flows.rag.chunk_size=0", "flows.rag.chunk_size=0"),
        ("flow=rag flows.rag.chunk_overlap=5000", "flows.rag.chunk_overlap=5000: give a number "
                                                  "below flows.rag.chunk_size (700)"),
        ("flow=rag rag.extensions=.md", "rag.extensions='.md': give a list of extensions"),
        ("memory.enabled=true flows.default.memory.agent_profiles.planner=nope",
         "flows.default.memory.agent_profiles.planner='nope': no such profile"),
    ],
)
def test_a_bad_run_setting_is_one_line_naming_it(
    tmp_path: Path, override: str, fragment: str
) -> None:
    done = deepresearch(tmp_path, "question=x", *override.split())
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert fragment in line, line


def test_an_outputs_folder_that_cannot_be_made_is_named(tmp_path: Path) -> None:
    (tmp_path / "a_file").write_text("")
    done = deepresearch(tmp_path, "question=x", f"outputs_dir={tmp_path / 'a_file' / 'out'}")
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert f"outputs_dir={tmp_path / 'a_file' / 'out'} cannot be used" in line, line


def test_a_model_server_that_does_not_answer_is_named(tmp_path: Path) -> None:
    """llm=openai_compatible at a port nothing listens on: the error names the URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    done = deepresearch(tmp_path, "question=x", "llm=openai_compatible", f"llm.base_url={url}",
                        "llm.model=local-model")
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "planner agent failed" in last and f"'local-model' at {url}" in last, last


def test_resume_says_which_settings_it_does_not_apply(tmp_path: Path) -> None:
    """resume= uses the run's own configuration: a question or setting beside it is named as
    not applied, not dropped without a word."""
    done = deepresearch(tmp_path, f"resume={tmp_path}", "question='another question'")
    assert done.returncode == 2, done.stderr  # tmp_path is no run folder
    note, error = done.stderr.strip().splitlines()
    assert "resume= continues the run with its own configuration; not applied:" in note, note
    assert "question='another question'" in note and "memory.enabled=false" in note, note
    assert "not a run folder" in error, error


def test_missing_api_key_is_named(tmp_path: Path) -> None:
    done = deepresearch(tmp_path, "question=x", "llm=openai")
    assert done.returncode == 2
    assert "set the environment variable OPENAI_API_KEY" in done.stderr


@pytest.mark.slow
def test_rag_flow_answers_from_the_given_folder(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "faiss.md").write_text(
        "# FAISS\n\nFAISS is a library for efficient similarity search over dense vectors. "
        "It offers exact flat indexes and approximate IVF and HNSW indexes.\n"
    )
    (docs / "baking.txt").write_text("Sourdough bread needs a starter, flour, water and salt.\n")
    done = deepresearch(
        tmp_path,
        "question='What is faiss, really?'",
        "flows.rag.enabled=true",
        f"rag.documents_dir={docs}",
    )
    assert done.returncode == 0, done.stderr
    run_dir = only_run_dir(tmp_path)
    report = (run_dir / "report.md").read_text()
    assert "[faiss.md]" in report and "Flow `rag`" in report
    assert "baking.txt" not in report.split("## Sources cited")[1].split("##")[0]
    history = json.loads((run_dir / "execution_history.json").read_text())
    assert history["items"][0]["result"][0]["search"] == "faiss"


@pytest.mark.parametrize("memory", ["memory.enabled=false", "memory.enabled=true"])
def test_a_reader_that_stops_early_is_a_normal_end(tmp_path: Path, memory: str) -> None:
    """`deepresearch ... | head`: the run finishes and writes its folder, exit 0, nothing on
    stderr (its log lines and answer are dropped once the reader is gone)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "DeepResearch.app", f"outputs_dir={tmp_path / 'out'}", memory,
         f"memory.faiss.path={tmp_path / 'memory'}", "question='Which aligner suits RNA-seq?'"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # gone before the command writes (it starts in ~0.5 s)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0, err
    assert err == ""
    assert (only_run_dir(tmp_path) / "report.md").is_file()


def test_help_into_a_pipe_whose_reader_stops_is_a_normal_end(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "DeepResearch.app", "--help"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # gone before the help is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and err == "", err


def test_help_works_as_in_any_hydra_app(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "DeepResearch.app", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "deepresearch" in done.stdout and "question" in done.stdout
