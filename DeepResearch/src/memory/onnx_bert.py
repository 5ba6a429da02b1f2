"""A BERT sentence encoder (mean pooling, unit norm) run by ONNX Runtime.

The ONNX graph is exported once per user from the model folder's own weights (torch and
transformers read them; nothing is downloaded), optionally quantised to int8, and cached under
`$XDG_CACHE_HOME/deepresearch/onnx/` (else `~/.cache/...`), in a folder named after the model
and a hash of everything the file depends on (the weights file, the library versions, this
module's recipe). A cached file is written to a temporary name and renamed into place, under a
file lock: processes starting together export once and never read half a file. A cached file
ONNX Runtime cannot load is exported again, with one warning.

The model folder is read here too (config.json, modules.json, the pooling config, the Rust
`tokenizers` tokenizer.json): only what all-MiniLM-L6-v2 and its kin use is supported (a BERT
encoder, mean pooling, absolute positions, GELU); anything else raises UnsupportedModel and
the caller falls back to sentence-transformers. Tokenising, mean pooling and normalisation
run in Python/numpy, the transformer in ONNX Runtime.

Quantisation: dynamic int8 with per-channel weights on every MatMul but the six feed-forward
output projections (`QUANTIZE_SKIP`), the ones whose inputs (after GELU) int8 serves worst.
Measured per choice on LoCoMo turns (worst / mean cosine to sentence-transformers) and dev
questions (dense recall@10 against fp32's 0.501, 760 questions): every MatMul int8 0.977 /
0.992; the first two projections fp32 0.989 / 0.994, recall -0.010; all six fp32 0.989 /
0.996, recall -0.002 (within the 0.005 allowed); six plus all of layer 0, recall +0.002.
Activations are quantised per batch, so a text's int8 vector depends slightly (cosine
>= 0.99) on the texts it is encoded with.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Tokenizer

log = logging.getLogger("DeepResearch.embeddings")

RECIPE = "bert-last-hidden-state/opset17/v1"  # change when the export or quantisation changes
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# MatMuls quantisation leaves fp32 (a regular expression on the exported node names).
QUANTIZE_SKIP = r"/encoder/layer\.\d+/output/dense/MatMul$"
# Texts per forward pass at most, whatever the caller's batch: sub-batches of texts of similar
# length pad little and spread evenly over the threads (batch 128 ran at ~0.45x batch 32's
# texts/s when passed whole).
_FORWARD_TEXTS = 32

EXPORTS = 0  # graphs exported (or quantised) by this process: the cache's public counter


class UnsupportedModel(ValueError):
    """The model folder is not a mean-pooled BERT sentence encoder."""


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UnsupportedModel(f"{path.name} missing in {path.parent}") from exc


def check_supported(folder: Path, config: dict) -> None:
    if config.get("model_type") != "bert":
        raise UnsupportedModel(f"model_type {config.get('model_type')!r} is not 'bert'")
    if config.get("hidden_act", "gelu") != "gelu":
        raise UnsupportedModel(f"hidden_act {config.get('hidden_act')!r} is not 'gelu'")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise UnsupportedModel("only absolute position embeddings are supported")
    modules = read_json(folder / "modules.json")
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
        raise UnsupportedModel(f"modules {kinds} are not Transformer, Pooling[, Normalize]")
    pooling = read_json(folder / modules[1].get("path", "1_Pooling") / "config.json")
    modes = [k for k, v in pooling.items() if k.startswith("pooling_mode") and v]
    if modes != ["pooling_mode_mean_tokens"]:
        raise UnsupportedModel(f"pooling {modes} is not mean pooling")
    for name in ("model.safetensors", "tokenizer.json"):
        if not (folder / name).is_file():
            raise UnsupportedModel(f"{name} missing in {folder}")


def load_tokenizer(folder: Path, config: dict | None = None) -> tuple[Tokenizer, int]:
    """The model folder's tokenizer as sentence-transformers applies it (truncation at the
    model's max_seq_length, [CLS]/[SEP] added by encode), without padding (callers pad per
    batch, to its longest text), and that maximum length."""
    from tokenizers import Tokenizer

    if config is None:
        config = read_json(folder / "config.json")
    st_config = folder / "sentence_bert_config.json"
    max_length = read_json(st_config).get("max_seq_length") if st_config.is_file() else None
    max_length = int(max_length or config.get("max_position_embeddings", 512))
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length)
    return tokenizer, max_length


class OnnxModelError(RuntimeError):
    """The ONNX graph cannot be made or loaded (onnxruntime or torch missing, export failed)."""


def cache_root() -> Path:
    """Where exported graphs are kept: $XDG_CACHE_HOME/deepresearch/onnx, else
    ~/.cache/deepresearch/onnx."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "deepresearch" / "onnx"


def cache_folder(folder: Path) -> Path:
    """The cache folder of one model: its name plus a hash of the weights file's identity,
    the libraries' versions and RECIPE (any change gives a new folder)."""
    import onnx
    import onnxruntime

    weights = folder / "model.safetensors"
    stat = weights.stat()
    key = "\n".join([
        str(weights.resolve()), str(stat.st_size), str(stat.st_mtime_ns),
        (folder / "config.json").read_text(encoding="utf-8"),
        onnxruntime.__version__, onnx.__version__, RECIPE, QUANTIZE_SKIP,
    ])
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", folder.name) or "model"
    return cache_root() / f"{name}-{digest}"


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock between processes (POSIX flock; elsewhere none: the rename into
    place still keeps readers from half-written files)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with path.open("a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_atomically(target: Path, make: Any) -> None:
    """`make(temporary_path)` writes the file; it then replaces `target` in one rename."""
    global EXPORTS
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        make(tmp)
        os.replace(tmp, target)
        EXPORTS += 1
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _export_fp32(folder: Path, out: str) -> None:
    """`export_fp32_here` in a child process: torch is imported there and never in this one,
    whose memory, start-up and exit stay free of it (torch's compiled extensions print
    hundreds of "nanobind: leaked function" lines when a process that imported them exits).
    The child's output is kept only to say why it failed."""
    code = ("import sys; from pathlib import Path; "
            "from DeepResearch.src.memory.onnx_bert import export_fp32_here; "
            "export_fp32_here(Path(sys.argv[1]), sys.argv[2])")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", code, str(folder), out], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()
                 and "nanobind" not in line and "leaked" not in line]
        raise OnnxModelError(f"the export ran in a child process and failed: "
                             f"{lines[-1].strip() if lines else f'exit {done.returncode}'}")


def export_fp32_here(folder: Path, out: str) -> None:
    """The model's transformer as an ONNX graph: inputs INPUTS (batch and sequence axes
    dynamic), output last_hidden_state."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # a local folder: its bar is only noise
    model = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    sample = torch.ones((2, 8), dtype=torch.int64)
    axes = {"batch": 0, "sequence": 1}
    # The tracer's warnings concern control flow on shapes that the dynamic axes cover.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            LastHiddenState(), (sample, sample, torch.zeros_like(sample)), out,
            input_names=list(INPUTS), output_names=["last_hidden_state"],
            dynamic_axes={n: {i: a for a, i in axes.items()} for n in (*INPUTS, "last_hidden_state")},
            opset_version=17, do_constant_folding=True, dynamo=False,
        )


def quantize_skip_nodes(fp32_path: str | Path, pattern: str = QUANTIZE_SKIP) -> list[str]:
    """Names of the MatMul nodes of the graph that quantisation leaves fp32."""
    import onnx

    graph = onnx.load(str(fp32_path), load_external_data=False).graph
    return [n.name for n in graph.node if n.op_type == "MatMul" and re.search(pattern, n.name)]


class _NoPreprocessingAdvice(logging.Filter):
    """quantize_dynamic advises, on the root logger, a pre-processing pass that dynamic
    quantisation of this graph does not need (the cosine is measured without it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def _quantize(fp32_path: Path, out: str, skip: list[str]) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    advice = _NoPreprocessingAdvice()
    logging.getLogger().addFilter(advice)
    try:
        quantize_dynamic(str(fp32_path), out, per_channel=True, weight_type=QuantType.QInt8,
                         op_types_to_quantize=["MatMul"], nodes_to_exclude=skip)
    finally:
        logging.getLogger().removeFilter(advice)


def _session(path: Path, threads: int) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads  # 0: ONNX Runtime's default (the physical cores)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def cached_graph(folder: Path, quantized: bool, skip_pattern: str = QUANTIZE_SKIP,
                 *, check: bool = False) -> Path:
    """The cached ONNX file of the model in `folder` (fp32, or int8 but `skip_pattern`),
    exported (and quantised) first if missing; with `check`, also if ONNX Runtime cannot
    load it (the caller could not)."""
    target_dir = cache_folder(folder)
    if skip_pattern != QUANTIZE_SKIP:  # a benchmark's variant: its own file
        digest = hashlib.sha256(skip_pattern.encode("utf-8")).hexdigest()[:8]
        target_dir = target_dir.with_name(f"{target_dir.name}-skip{digest}")
    target_dir.mkdir(parents=True, exist_ok=True)
    fp32 = target_dir / "model-fp32.onnx"
    target = target_dir / ("model-int8.onnx" if quantized else fp32.name)
    if target.is_file() and not check:
        return target
    with _file_lock(target_dir / ".lock"):
        if _loads(target):  # another process made (or mended) it while this one waited
            return target
        if target.exists():
            log.warning("cached ONNX graph %s cannot be loaded: exporting it again", target)
        if not _loads(fp32):
            log.info("exporting %s to ONNX (once; cached in %s)", folder.name, target_dir)
            _write_atomically(fp32, lambda out: _export_fp32(folder, out))
        if quantized:
            _write_atomically(target, lambda out: _quantize(fp32, out, quantize_skip_nodes(
                fp32, skip_pattern)))
    return target


def _loads(path: Path) -> bool:
    """Whether ONNX Runtime can load the file (a missing, truncated or damaged one: no)."""
    if not path.is_file():
        return False
    try:
        _session(path, 1)
    except Exception:  # onnxruntime raises its own Fail / InvalidProtobuf / InvalidGraph
        return False
    return True


class OnnxBertEncoder:
    """`encode(texts)` -> (n, hidden) float32 unit vectors, as SentenceTransformer.encode with
    normalize_embeddings=True gives them for the same folder (to ~1e-6 in fp32; int8: cosine
    ~0.99)."""

    def __init__(self, folder: str | Path, *, quantized: bool = True,
                 skip_pattern: str = QUANTIZE_SKIP) -> None:
        folder = Path(folder)
        config = read_json(folder / "config.json")
        check_supported(folder, config)
        try:
            import onnxruntime  # noqa: F401
        except ImportError as exc:
            raise OnnxModelError("the onnx runtime needs the package 'onnxruntime'") from exc
        self.dimension = int(config["hidden_size"])
        self.quantized = quantized
        self._tokenizer, self.max_length = load_tokenizer(folder, config)
        try:
            self.path = cached_graph(folder, quantized, skip_pattern)
        except UnsupportedModel:
            raise
        except Exception as exc:
            raise OnnxModelError(f"cannot export {folder} to ONNX: {exc}") from exc
        # One text (a query) runs on one thread: a second gains little on so small a graph
        # and spins a core another request could use. Batches use ONNX Runtime's default.
        # One session on one thread: a query runs on it alone (a second thread gains little
        # on so small a graph and spins a core another request could use); a batch runs as
        # sub-batches on it from a few threads at once (ONNX Runtime releases the GIL), which
        # on a busy 2-core machine gave ~1.6x the texts/s of ONNX Runtime's own 2 threads
        # (whose workers spin while waiting for a core).
        try:
            self._session = _session(self.path, 1)
        except Exception:  # damaged on disk: export again, once
            self.path = cached_graph(folder, quantized, skip_pattern, check=True)
            self._session = _session(self.path, 1)
        self._threads = max(1, min(os.cpu_count() or 1, 4))
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def _workers(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="onnx-bert")
            return self._pool

    def encode(self, texts: list[str], batch_size: int = _FORWARD_TEXTS) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        ids = [e.ids for e in self._tokenizer.encode_batch(texts, add_special_tokens=True)]
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))  # little padding
        per = max(1, min(batch_size, _FORWARD_TEXTS))
        chunks = [order[start:start + per] for start in range(0, len(order), per)]

        def run(rows: list[int]) -> None:
            out[rows] = self._forward(self._session, [ids[i] for i in rows])

        if len(chunks) == 1 or self._threads == 1:
            for rows in chunks:
                run(rows)
        else:
            list(self._workers().map(run, chunks))
        return out

    @staticmethod
    def _forward(session: Any, texts: list[list[int]]) -> np.ndarray:
        width = max(len(t) for t in texts)
        input_ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, tokens in enumerate(texts):
            input_ids[row, :len(tokens)] = tokens
            mask[row, :len(tokens)] = 1
        (hidden,) = session.run(None, {
            "input_ids": input_ids, "attention_mask": mask,
            "token_type_ids": np.zeros_like(input_ids),
        })
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled.astype(np.float32, copy=False)
