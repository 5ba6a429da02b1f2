"""The numpy runtime against sentence-transformers, on the real all-MiniLM-L6-v2 weights."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from DeepResearch.src.memory.bert_numpy import NumpyBertEncoder, UnsupportedModel
from DeepResearch.src.memory.embeddings import (
    DEFAULT_MODEL,
    Embedder,
    load_runtime,
    load_sentence_transformer,
    resolve_model_path,
)
from DeepResearch.src.memory.errors import EmbeddingModelError

pytestmark = pytest.mark.integration

MODEL_DIR = Path(resolve_model_path(DEFAULT_MODEL))
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


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    model = load_sentence_transformer(str(MODEL_DIR))
    return model.encode(TEXTS * 12, batch_size=64, normalize_embeddings=True)


@pytest.fixture(scope="module")
def encoder() -> NumpyBertEncoder:
    return NumpyBertEncoder(MODEL_DIR)


def test_same_vectors_as_sentence_transformers(encoder, reference) -> None:
    ours = encoder.encode(TEXTS)
    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(ours * reference[: len(TEXTS)], axis=1)
    assert cosines.min() > 0.99999, cosines


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


def test_auto_uses_numpy_only_for_verified_models_and_matches_on_varied_texts(encoder) -> None:
    texts = varied_texts()
    reference = load_sentence_transformer(str(MODEL_DIR)).encode(
        texts, batch_size=32, normalize_embeddings=True
    )
    cosines = np.sum(encoder.encode(texts) * reference, axis=1)
    assert cosines.min() > 0.99999, np.sort(cosines)[:5]
    assert load_runtime(DEFAULT_MODEL).name == "numpy"
    # The same weights under another name are not "verified": auto leaves them to
    # sentence-transformers (numpy only when asked for by name).
    assert load_runtime(str(MODEL_DIR)).name == "sentence-transformers"
    assert load_runtime(str(MODEL_DIR), "numpy").name == "numpy"


def test_large_batches_run_in_parallel_and_keep_the_input_order(encoder, reference) -> None:
    texts = TEXTS * 12  # enough tokens to be split over the worker threads
    ours = encoder.encode(texts)
    assert np.sum(ours * reference, axis=1).min() > 0.99999
    # each text's vector does not depend on what it was batched (and padded) with
    np.testing.assert_allclose(ours[: len(TEXTS)], encoder.encode(TEXTS), atol=2e-6)
    assert encoder.encode([]).shape == (0, 384)


def test_concurrent_large_batches_agree_and_leave_blas_threads_as_found(encoder) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_info

    def blas_threads() -> list[int]:
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    batches = [TEXTS * 10, list(reversed(TEXTS)) * 10, TEXTS[2:] * 12]
    alone = [encoder.encode(b) for b in batches]
    with ThreadPoolExecutor(3) as pool:
        together = list(pool.map(encoder.encode, batches))
    for a, b in zip(alone, together, strict=True):
        np.testing.assert_allclose(a, b, atol=2e-6)
    assert blas_threads() == before


WORKER_THREAD_PROBE = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
import numpy as np
from threadpoolctl import threadpool_limits
from DeepResearch.src.memory.bert_numpy import NumpyBertEncoder
from tests.test_memory.test_blas_threads import pool_threads
from tests.test_memory.test_bert_numpy import MODEL_DIR, TEXTS

encoder = NumpyBertEncoder(MODEL_DIR)
before = pool_threads()
seen = []
forward = encoder._forward
def spying(texts):
    seen.append(pool_threads())
    return forward(texts)
encoder._forward = spying
batch = TEXTS * 10 if sys.argv[1] == "large" else TEXTS[:1]
with threadpool_limits(limits=max(before or [1]), user_api="blas"), ThreadPoolExecutor(1) as pool:
    vectors = pool.submit(encoder.encode, batch).result()
del encoder._forward
error = float(np.abs(vectors - encoder.encode(batch)).max())
print(json.dumps({"threads": encoder._threads, "before": before, "seen": seen,
                  "after": pool_threads(), "error": error}))
"""


@pytest.mark.parametrize("batch", ["large", "one query"])
def test_a_batch_from_a_worker_thread_runs_on_one_blas_thread(batch: str) -> None:
    """As store_many (a large batch: sub-batches side by side) and a search (one query) encode
    from asyncio's worker thread, even while another thread holds threadpoolctl's control of
    the BLAS pool (which made the limit a silent no-op there). In a fresh interpreter: the
    BLAS pools are process-wide, and other tests change them."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", WORKER_THREAD_PROBE, batch.split()[0]],
                          capture_output=True, text=True, check=True, cwd=root)
    out = json.loads(done.stdout.splitlines()[-1])
    before = out["before"]
    if out["threads"] < 2 or not before or min(before) < 2:
        pytest.skip(f"{out['threads']} encoder threads, BLAS pools at {before}: no limit to see")
    assert len(out["seen"]) >= (2 if batch == "large" else 1), out
    assert all(t == [1] * len(before) for t in out["seen"]), out
    assert out["after"] == before and out["error"] < 2e-6, out


def test_layer_weights_share_one_arena_and_the_file_pages_are_let_go() -> None:
    # A fresh interpreter: sentence-transformers in this one maps the same weights file.
    code = f"""
import numpy as np
from pathlib import Path
from DeepResearch.src.memory.bert_numpy import NumpyBertEncoder
encoder = NumpyBertEncoder({str(MODEL_DIR)!r})
arrays = [getattr(layer, f) for layer in encoder._layers for f in vars(layer)]
starts = [a.ctypes.data for a in arrays]
span = max(s + a.nbytes for s, a in zip(starts, arrays, strict=True)) - min(starts)
print("packed", span <= sum(a.nbytes for a in arrays) + 64 * len(arrays))
print("aligned", all(a.flags.c_contiguous and a.ctypes.data % 64 == 0 for a in arrays))
resident, inside = 0, False
for line in Path("/proc/self/smaps").read_text().splitlines():
    if "-" in line.split(" ", 1)[0]:
        inside = "model.safetensors" in line
    elif inside and line.startswith("Rss:"):
        resident += int(line.split()[1])
print("file resident KiB", resident)
print("vector", np.round(encoder.encode(["Which aligner suits RNA-seq reads?"])[0][:4], 5).tolist())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    # One buffer, side by side (it asks for 2 MiB pages: a cheap teardown at process exit).
    assert lines["packed"] == "True" and lines["aligned"] == "True"
    # The copies were read from the mapped file; its ~90 MB are no longer resident in the
    # process (they stay in the page cache)...
    assert int(done.stdout.split("file resident KiB ")[1].split()[0]) < 1024
    # ... and the embedding tables, still read through the mapping, give the same vectors.
    here = np.round(NumpyBertEncoder(MODEL_DIR).encode(["Which aligner suits RNA-seq reads?"])[0][:4], 5)
    assert lines["vector"] == str(here.tolist())


def test_other_architectures_are_refused_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(MODEL_DIR, folder, ignore=shutil.ignore_patterns("model.safetensors"))
    with pytest.raises(UnsupportedModel, match=r"model\.safetensors missing"):
        NumpyBertEncoder(folder)
    (folder / "model.safetensors").write_bytes((12).to_bytes(8, "little") + b"not a header")
    with pytest.raises(UnsupportedModel, match="not a safetensors file"):
        NumpyBertEncoder(folder)
    bf16 = b'{"w":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}'
    (folder / "model.safetensors").write_bytes(len(bf16).to_bytes(8, "little") + bf16 + b"\0" * 4)
    with pytest.raises(UnsupportedModel, match="tensor w has dtype BF16"):
        NumpyBertEncoder(folder)
    pooling = folder / "1_Pooling" / "config.json"
    settings = json.loads(pooling.read_text())
    settings.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(settings))
    with pytest.raises(UnsupportedModel, match="pooling_mode_cls_token"):
        NumpyBertEncoder(folder)
    config = folder / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "model_type": "roberta"}))
    with pytest.raises(UnsupportedModel, match="'roberta' is not 'bert'"):
        NumpyBertEncoder(folder)
    with pytest.raises(EmbeddingModelError, match="embedding_runtime='numpy' cannot run"):
        load_runtime(str(folder), "numpy")
    with pytest.raises(ValueError, match="runtime 'tensorrt' is not one of"):
        Embedder(runtime="tensorrt")  # type: ignore[arg-type]


def test_auto_runtime_never_imports_torch() -> None:
    """The reason for the numpy runtime: a memory run must not pay torch's import and exit."""
    probe = (
        "import sys\n"
        "from DeepResearch.src.memory.embeddings import Embedder\n"
        "e = Embedder()\n"
        "v = e.embed(['Which aligner suits RNA-seq reads?'])\n"
        "print(e.model.name, v.shape, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.split() == ["numpy", "(1,", "384)", "False", "False"]
