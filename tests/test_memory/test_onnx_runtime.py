"""The ONNX runtimes (fp32, the default; int8): their vectors against sentence-transformers'
on the real all-MiniLM-L6-v2 weights, which models `auto` runs on them, and the per-user
cache of the exported graph (written once, reused, mended when damaged, safe when two
processes start together)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig, onnx_bert
from DeepResearch.src.memory.backends import create_backend
from DeepResearch.src.memory.embeddings import (
    DEFAULT_MODEL,
    Embedder,
    load_runtime,
    load_sentence_transformer,
    resolve_model_path,
    vector_identity,
)
from DeepResearch.src.memory.errors import EmbeddingModelError, IndexMismatchError
from DeepResearch.src.memory.onnx_bert import OnnxBertEncoder, UnsupportedModel, cache_folder

pytestmark = pytest.mark.integration

MODEL_DIR = Path(resolve_model_path(DEFAULT_MODEL))
REPO = Path(__file__).resolve().parents[2]
TEXTS = [
    "Which aligner suits RNA-seq reads?",
    "x",
    "",
    'Tool read_document with {"source": "rna_seq_aligners.md"} succeeded',
    "Ünïcödé accents, 中文字符 and an emoji 🎉 in one line",
    # longer than the model's 256-token limit: both must truncate at the same place
    "STAR maps spliced reads quickly but needs 30 GB of RAM; HISAT2 needs far less. " * 30,
    "Plan for 'how are variants called?' failed: read_document raised FileNotFoundError",
]


def varied_texts(n: int = 300) -> list[str]:
    """Texts of every length and kind a memory holds: words, numbers, code, JSON, other
    scripts, punctuation runs, repeated and truncated (over 256 tokens) ones."""
    import random

    rng = random.Random(7)
    words = ("aligner STAR HISAT2 reads genome variant GATK 32GB failed succeeded plan step the of "
             "Ünïcödé 中文 emoji 🎉 naïve café {\"k\": [1, 2]} x=3.14 -- ... !!! C++ a_b snake-case").split()
    out = []
    for _ in range(n):
        length = rng.choice([1, 2, 5, 12, 40, 120, 400])
        out.append(" ".join(rng.choice(words) for _ in range(length)) + rng.choice(["", ".", "?", "\n"]))
    return out


@pytest.fixture(scope="module")
def cache_home(tmp_path_factory) -> Path:
    """One XDG cache for the module: the graph is exported (~10-30 s) once here."""
    home = tmp_path_factory.mktemp("xdg-cache")
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(home)
    OnnxBertEncoder(MODEL_DIR, quantized=False)
    OnnxBertEncoder(MODEL_DIR, quantized=True)
    yield home
    if saved is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = saved


@pytest.fixture
def fresh_home(cache_home, tmp_path, monkeypatch) -> Path:
    """An empty XDG cache holding only a copy of the exported fp32 graph (quantising from it
    takes a second; exporting again would take ~20)."""
    fp32 = cache_folder(MODEL_DIR) / "model-fp32.onnx"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    target = cache_folder(MODEL_DIR)
    target.mkdir(parents=True)
    shutil.copy(fp32, target / fp32.name)
    return tmp_path


def test_vectors_match_sentence_transformers(cache_home) -> None:
    texts = TEXTS + varied_texts(200)
    reference = load_sentence_transformer(str(MODEL_DIR)).encode(
        texts, batch_size=32, normalize_embeddings=True)
    fp32 = OnnxBertEncoder(MODEL_DIR, quantized=False).encode(texts, 32)
    assert fp32.shape == (len(texts), 384) and fp32.dtype == np.float32
    assert np.sum(fp32 * reference, axis=1).min() >= 0.99999
    int8 = OnnxBertEncoder(MODEL_DIR).encode(texts, 32)
    np.testing.assert_allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(int8 * reference, axis=1)
    assert cosines.mean() >= 0.99 and cosines.min() >= 0.97, np.sort(cosines)[:5]
    # one text alone (the one-thread query path): int8 activations are scaled per batch, so
    # a text's vector depends slightly on its batch-mates, within the same bound
    single = OnnxBertEncoder(MODEL_DIR).encode([texts[0]])
    assert float(single[0] @ int8[0]) >= 0.99


def test_auto_runs_fp32_for_verified_models_only(cache_home) -> None:
    assert load_runtime(DEFAULT_MODEL).name == "onnx-fp32"
    assert load_runtime(DEFAULT_MODEL, "onnx").name == "onnx"
    # The same weights under another name are not "verified": auto leaves them to
    # sentence-transformers (ONNX only when asked for by name).
    assert load_runtime(str(MODEL_DIR)).name == "sentence-transformers"
    assert load_runtime(str(MODEL_DIR), "onnx-fp32").name == "onnx-fp32"
    # int8 vectors differ slightly: a store built with them records another model
    assert vector_identity(DEFAULT_MODEL, "onnx") != vector_identity(DEFAULT_MODEL, "onnx-fp32")
    assert vector_identity(DEFAULT_MODEL, "auto") == vector_identity(DEFAULT_MODEL, "onnx-fp32") == DEFAULT_MODEL


def test_fp32_batches_keep_order_and_do_not_depend_on_their_batch_mates(cache_home) -> None:
    encoder = OnnxBertEncoder(MODEL_DIR, quantized=False)
    texts = TEXTS * 12  # several sub-batches, run side by side
    together = encoder.encode(texts, 32)
    np.testing.assert_allclose(together[: len(TEXTS)], encoder.encode(TEXTS), atol=2e-5)
    np.testing.assert_allclose(together[0], encoder.encode([TEXTS[0]])[0], atol=2e-5)
    assert encoder.encode([]).shape == (0, 384)


def test_other_architectures_are_refused_by_name(cache_home, tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(MODEL_DIR, folder, ignore=shutil.ignore_patterns("model.safetensors"))
    with pytest.raises(UnsupportedModel, match=r"model\.safetensors missing"):
        OnnxBertEncoder(folder)
    (folder / "model.safetensors").write_bytes((MODEL_DIR / "model.safetensors").read_bytes())
    pooling = folder / "1_Pooling" / "config.json"
    settings = json.loads(pooling.read_text())
    settings.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(settings))
    with pytest.raises(UnsupportedModel, match="pooling_mode_cls_token"):
        OnnxBertEncoder(folder)
    config = folder / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "model_type": "roberta"}))
    with pytest.raises(UnsupportedModel, match="'roberta' is not 'bert'"):
        OnnxBertEncoder(folder)
    with pytest.raises(EmbeddingModelError, match="embedding_runtime='onnx-fp32' cannot run"):
        load_runtime(str(folder), "onnx-fp32")
    with pytest.raises(ValueError, match="runtime 'tensorrt' is not one of"):
        Embedder(runtime="tensorrt")  # type: ignore[arg-type]


def test_auto_runtime_never_imports_torch_once_the_graph_is_cached(cache_home) -> None:
    """Why ONNX and not sentence-transformers by default: a memory run must not pay torch's
    import (~5 s) and exit (~1 s); only the one-off export imports it."""
    probe = (
        "import sys\n"
        "from DeepResearch.src.memory.embeddings import Embedder\n"
        "e = Embedder()\n"
        "v = e.embed(['Which aligner suits RNA-seq reads?'])\n"
        "print(e.model.name, v.shape, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(cache_home)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=REPO, env=env)
    assert done.stdout.split() == ["onnx-fp32", "(1,", "384)", "False", "False"]


def test_store_built_on_onnx_refuses_the_fp32_runtimes(tmp_path) -> None:
    def open_close(runtime: str) -> None:
        config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path)},
                              vector_store={"embedding_runtime": runtime})
        backend = create_backend(config, 384)

        async def cycle() -> None:
            await backend.open()
            await backend.close()

        asyncio.run(cycle())

    open_close("onnx")
    open_close("onnx")
    with pytest.raises(IndexMismatchError, match="onnx-int8"):
        open_close("onnx-fp32")


def test_cache_is_written_once_and_reused(cache_home) -> None:
    graph = cache_folder(MODEL_DIR) / "model-int8.onnx"
    before = graph.stat()
    exports = onnx_bert.EXPORTS
    encoder = OnnxBertEncoder(MODEL_DIR)
    assert encoder.path == graph and onnx_bert.EXPORTS == exports
    after = graph.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_damaged_cache_file_is_made_again_with_one_warning(fresh_home, caplog) -> None:
    OnnxBertEncoder(MODEL_DIR)
    graph = cache_folder(MODEL_DIR) / "model-int8.onnx"
    good = graph.read_bytes()
    graph.write_bytes(good[: len(good) // 3])  # a truncated file
    with caplog.at_level(logging.WARNING, logger="DeepResearch.embeddings"):
        encoder = OnnxBertEncoder(MODEL_DIR)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING
                and r.name == "DeepResearch.embeddings"]
    assert len(warnings) == 1 and "cannot be loaded" in warnings[0].getMessage()
    assert graph.stat().st_size == len(good)
    assert encoder.encode(["Which aligner suits RNA-seq reads?"]).shape == (1, 384)


def test_two_processes_starting_together_make_one_valid_file(fresh_home) -> None:
    script = (
        "from DeepResearch.src.memory import onnx_bert\n"
        f"e = onnx_bert.OnnxBertEncoder({str(MODEL_DIR)!r})\n"
        "print(onnx_bert.EXPORTS, e.encode(['hello there']).shape)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(fresh_home)}
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outputs]
    exports = sorted(int(out.split()[0]) for out, _ in outputs)
    assert exports == [0, 1], outputs  # one process quantised, the other used its file
    folder = cache_folder(MODEL_DIR)
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == [
        "model-fp32.onnx", "model-int8.onnx"]  # no temporary file left behind
    assert OnnxBertEncoder(MODEL_DIR).encode(["hello"]).shape == (1, 384)


def test_the_export_keeps_torch_out_of_the_process_that_asked(tmp_path) -> None:
    """The one export runs in a child process: the process that needs the graph never
    imports torch, so it exits without the hundreds of lines torch's extensions print."""
    script = (
        "import sys\n"
        "from DeepResearch.src.memory import onnx_bert\n"
        f"e = onnx_bert.OnnxBertEncoder({str(MODEL_DIR)!r}, quantized=False)\n"
        "print(onnx_bert.EXPORTS, 'torch' in sys.modules, e.encode(['hello']).shape[1])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, text=True,
                          capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "False", "384"]  # exported once, torch never here
    assert "nanobind" not in done.stderr and "Traceback" not in done.stderr


def test_a_failed_export_says_why_in_one_line(tmp_path, monkeypatch) -> None:
    """Damaged weights: the child's last error line comes back as the reason."""
    folder = tmp_path / "model"
    shutil.copytree(MODEL_DIR, folder)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:4096])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(onnx_bert.OnnxModelError, match=r"child process and failed: .+") as err:
        OnnxBertEncoder(folder, quantized=False)
    assert "\n" not in str(err.value)
