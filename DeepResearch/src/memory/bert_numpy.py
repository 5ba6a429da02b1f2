"""A BERT sentence encoder (mean pooling, unit norm) run with numpy alone.

Why not sentence-transformers: importing it pulls in torch, transformers, scikit-learn and
triton -- ~5 s at start and ~1 s of interpreter shutdown per process, more than a whole
`deepresearch` run. This module reads the same model folder (config.json,
model.safetensors, tokenizer.json, the pooling config) and computes the same vectors
(cosine >= 0.99999 against sentence-transformers; see tests/test_memory/test_bert_numpy.py)
with the Rust `tokenizers` and numpy/OpenBLAS; the weights file is memory-mapped.

Only what all-MiniLM-L6-v2 and its kin use is supported: a BERT encoder, mean pooling,
absolute positions, GELU; anything else raises UnsupportedModel and the caller falls back to
sentence-transformers.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from DeepResearch.src.memory.blas_threads import BlasThreadLimit

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# A batch of at least this many (padded) tokens runs as sub-batches of _SUB_BATCH_TEXTS
# texts spread over the cores, one BLAS thread each: numpy's element-wise work is
# single-threaded, so one batch on a 2-thread BLAS leaves a core idle between matmuls
# (~1.1x sentence-transformers' speed on 512 texts this way, ~0.8x without).
_PARALLEL_FROM_TOKENS = 1024
_SUB_BATCH_TEXTS = 32
_FORWARD_TEXTS = 64  # texts per forward pass otherwise (bounds the attention grid's memory)
# GELU runs ~20 element-wise passes; over a whole batch's (tokens, 1536) activations each pass
# streams megabytes from memory, over blocks of this many rows (~400 KB) it stays in cache:
# 12 -> 6.6 ms per layer for a 32-text batch (same values).
_GELU_ROWS = 64


# The parallel sub-batches' BLAS limit: process-wide, as numpy's BLAS pool is, so shared by
# every encoder of the process.
_ONE_BLAS_THREAD = BlasThreadLimit(1)


class UnsupportedModel(ValueError):
    """The model folder is not a mean-pooled BERT sentence encoder."""


@dataclass(frozen=True)
class _Layer:
    qkv_w: np.ndarray  # (hidden, 3*hidden): query, key, value projections side by side
    qkv_b: np.ndarray
    attn_out_w: np.ndarray
    attn_out_b: np.ndarray
    norm1_g: np.ndarray
    norm1_b: np.ndarray
    inter_w: np.ndarray
    inter_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    norm2_g: np.ndarray
    norm2_b: np.ndarray


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
    batch, to its longest text), and that maximum length. Shared by every runtime that is
    not sentence-transformers itself."""
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


_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16}


def read_safetensors(path: Path) -> tuple[mmap.mmap, dict[str, np.ndarray]]:
    """The file's memory map and its tensors as read-only views of it: nothing is read until
    used, and nothing is freed at exit (the format: an 8-byte little-endian header length, a
    JSON header of dtype/shape/byte offsets, then the raw data)."""
    with path.open("rb") as handle:
        size = int.from_bytes(handle.read(8), "little")
        try:
            header = json.loads(handle.read(size))
        except ValueError as exc:
            raise UnsupportedModel(f"{path.name}: not a safetensors file ({exc})") from exc
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)  # outlives the handle
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS_DTYPES.get(spec["dtype"])
        if dtype is None:
            if spec["dtype"] in ("I64", "I32"):  # e.g. position_ids buffers: not weights
                continue
            raise UnsupportedModel(f"{path.name}: tensor {name} has dtype {spec['dtype']}")
        start, end = spec["data_offsets"]
        count = (end - start) // np.dtype(dtype).itemsize
        tensors[name] = np.frombuffer(data, dtype, count, 8 + size + start).reshape(spec["shape"])
    return data, tensors


_HUGE_PAGE = 2 << 20
_ALIGN = 16  # floats: every weight starts on a 64-byte boundary


class _WeightArena:
    """The layer weights' float32 copies, side by side in one anonymous mapping that asks for
    2 MiB pages (transparent huge pages, where the kernel offers them on request), as numpy
    does for any array of 4 MB or more: ~40 MB then spans ~20 pages instead of ~10k, which the
    kernel tears down at process exit in ~1 ms instead of ~5 ms (measured). The price: now and
    then the request waits while the kernel compacts memory (one load in 20 took 183 ms
    instead of ~70 ms here); the median load got shorter (85 -> 67 ms)."""

    def __init__(self, floats: int) -> None:
        size = -(-floats * 4 // _HUGE_PAGE) * _HUGE_PAGE
        if hasattr(mmap, "MADV_HUGEPAGE") and hasattr(mmap, "MAP_PRIVATE"):
            region = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)  # anonymous: fileno -1
            region.madvise(mmap.MADV_HUGEPAGE)
            self._buffer = np.frombuffer(region, np.float32)
        else:
            self._buffer = np.empty(size // 4, np.float32)
        self._used = 0

    @staticmethod
    def floats_for(arrays: list[np.ndarray]) -> int:
        return sum(a.size + _ALIGN for a in arrays)

    def take(self, shape: tuple[int, ...]) -> np.ndarray:
        start = -(-self._used // _ALIGN) * _ALIGN
        count = math.prod(shape)
        if start + count > len(self._buffer):
            raise ValueError(f"weight arena of {len(self._buffer)} floats is full")
        self._used = start + count
        return self._buffer[start:start + count].reshape(shape)

    def put(self, array: np.ndarray) -> np.ndarray:
        view = self.take(array.shape)
        view[...] = array
        return view


def _layer_norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    x -= x.mean(axis=-1, keepdims=True)
    variance = np.mean(np.square(x), axis=-1, keepdims=True)
    x *= 1.0 / np.sqrt(variance + eps)
    x *= gain
    x += bias
    return x


def _gelu(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, in place. numpy has no erf; Abramowitz & Stegun 7.1.26 gives it to
    1.5e-7, far below float32 noise in the model, with ufuncs that never leave float32."""
    a = np.abs(x)
    a *= np.float32(1.0 / math.sqrt(2.0))
    t = a * np.float32(0.3275911)
    t += 1.0
    np.reciprocal(t, out=t)
    p = t * np.float32(1.061405429)
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        p += coefficient
        p *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    p *= a  # 1 - erf(|x| / sqrt 2)
    np.subtract(1.0, p, out=p)
    np.copysign(p, x, out=p)  # erf(x / sqrt 2)
    p += 1.0
    x *= p
    x *= 0.5
    return x


class NumpyBertEncoder:
    """`encode(texts)` -> (n, hidden) float32 unit vectors, as SentenceTransformer.encode
    with normalize_embeddings=True gives them for the same folder."""

    def __init__(self, folder: str | Path) -> None:
        folder = Path(folder)
        config = read_json(folder / "config.json")
        check_supported(folder, config)
        self.dimension = int(config["hidden_size"])
        self._heads = int(config["num_attention_heads"])
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        self._tokenizer, self.max_length = load_tokenizer(folder, config)

        mapped, weights = read_safetensors(folder / "model.safetensors")
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""
        # The embedding tables stay views of the file (a text reads a few of their rows); the
        # layers' weights are copied, transposed, into one arena.
        arena = _WeightArena(_WeightArena.floats_for(
            [v for k, v in weights.items() if k.startswith(prefix + "encoder.")]))

        def w(name: str) -> np.ndarray:
            return np.ascontiguousarray(weights[prefix + name], dtype=np.float32)

        def b(name: str) -> np.ndarray:  # a layer's vector, in the arena
            return arena.put(weights[prefix + name])

        def t(name: str) -> np.ndarray:  # (out, in) -> (in, out) for x @ W, in the arena
            return arena.put(weights[prefix + name].T)

        def side_by_side(names: list[str]) -> np.ndarray:  # (in, out) blocks as one matrix
            blocks = [weights[prefix + n].T for n in names]
            out = arena.take((blocks[0].shape[0], sum(x.shape[1] for x in blocks)))
            col = 0
            for block in blocks:
                out[:, col:col + block.shape[1]] = block
                col += block.shape[1]
            return out

        e = "embeddings."
        self._word = w(e + "word_embeddings.weight")
        self._position = w(e + "position_embeddings.weight")
        self._token_type = w(e + "token_type_embeddings.weight")[0]
        self._embed_norm = (w(e + "LayerNorm.weight"), w(e + "LayerNorm.bias"))
        self._layers = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            a = p + "attention."
            qkv = [f"{a}self.{k}" for k in ("query", "key", "value")]
            self._layers.append(_Layer(
                qkv_w=side_by_side([f"{n}.weight" for n in qkv]),
                qkv_b=arena.put(np.concatenate([weights[prefix + f"{n}.bias"] for n in qkv])),
                attn_out_w=t(a + "output.dense.weight"), attn_out_b=b(a + "output.dense.bias"),
                norm1_g=b(a + "output.LayerNorm.weight"), norm1_b=b(a + "output.LayerNorm.bias"),
                inter_w=t(p + "intermediate.dense.weight"), inter_b=b(p + "intermediate.dense.bias"),
                out_w=t(p + "output.dense.weight"), out_b=b(p + "output.dense.bias"),
                norm2_g=b(p + "output.LayerNorm.weight"), norm2_b=b(p + "output.LayerNorm.bias"),
            ))
        # The copies are made: let go of the file pages they were read from (they stay in the
        # page cache; a later read of the tables faults its page back in). Otherwise the exit
        # unmaps them page by page (~2 ms, measured).
        if hasattr(mapped, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
            mapped.madvise(mmap.MADV_DONTNEED)
        self._threads = max(1, min(os.cpu_count() or 1, 4))
        self._pool: ThreadPoolExecutor | None = None
        self._parallel = threading.Lock()  # one parallel encode at a time: it takes every core

    # -- public ------------------------------------------------------------------------
    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        ids = [e.ids for e in self._tokenizer.encode_batch(texts, add_special_tokens=True)]
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))  # little padding in attention
        padded_tokens = len(ids) * len(ids[order[0]])
        if self._threads == 1 or padded_tokens < _PARALLEL_FROM_TOKENS:
            # One BLAS thread here too: a small batch (a query) gains nothing from a second
            # one, and when the other core is busy (a service: the event loop, SQLite, other
            # encodes) OpenBLAS's helper spins waiting for it. Measured on a loaded 2-core
            # machine, one query: 192 -> 28 ms of CPU, 538 -> 75 ms wall.
            with _ONE_BLAS_THREAD:
                self._encode_into(out, ids, order)
            return out
        per = min(_SUB_BATCH_TEXTS, -(-len(order) // self._threads))
        chunks = [order[i:i + per] for i in range(0, len(order), per)]
        with self._parallel, _ONE_BLAS_THREAD:
            list(self._workers().map(lambda chunk: self._encode_into(out, ids, chunk), chunks))
        return out

    # -- internals ---------------------------------------------------------------------
    def _workers(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="bert-numpy")
        return self._pool

    def _encode_into(self, out: np.ndarray, ids: list[list[int]], order: list[int]) -> None:
        for start in range(0, len(order), _FORWARD_TEXTS):
            rows = order[start:start + _FORWARD_TEXTS]
            out[rows] = self._forward([ids[i] for i in rows])

    def _forward(self, texts: list[list[int]]) -> np.ndarray:
        """Texts packed without padding: every dense layer (most of the work) runs on the
        real tokens only; attention alone works on a padded (text, position) view, since a
        token attends only within its text. Texts come longest first."""
        lengths = np.array([len(t) for t in texts])
        n, width, total = len(texts), int(lengths[0]), int(lengths.sum())
        hidden, heads = self.dimension, self._heads
        head_dim = hidden // heads
        positions = np.arange(width)
        valid = positions[None, :] < lengths[:, None]  # (text, position): a real token?
        # Row of each (text, position) in the packed rows; padding points at row 0, masked.
        packed_row = np.zeros((n, width), dtype=np.int64)
        packed_row[valid] = np.arange(total)
        x = self._word[np.concatenate(texts)]
        x += self._position[np.concatenate([positions[:k] for k in lengths])]
        x += self._token_type
        x = _layer_norm(x, *self._embed_norm, self._eps)
        # Padding keys get a large negative score: after softmax they weigh exactly 0.
        key_bias = np.where(valid, np.float32(0.0), np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1.0 / math.sqrt(head_dim))
        for layer in self._layers:
            qkv = x @ layer.qkv_w
            qkv += layer.qkv_b
            grid = qkv[packed_row]  # (text, position, 3 * hidden)
            q, k, v = grid.reshape(n, width, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= scale
            scores += key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            attended = (scores @ v).transpose(0, 2, 1, 3)[valid].reshape(total, hidden)
            y = attended @ layer.attn_out_w
            y += layer.attn_out_b
            y += x
            x = _layer_norm(y, layer.norm1_g, layer.norm1_b, self._eps)
            h = x @ layer.inter_w
            for start in range(0, total, _GELU_ROWS):  # ~20 passes each: in cache-sized blocks
                block = h[start:start + _GELU_ROWS]
                block += layer.inter_b
                _gelu(block)
            y = h @ layer.out_w
            y += layer.out_b
            y += x
            x = _layer_norm(y, layer.norm2_g, layer.norm2_b, self._eps)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        pooled = np.add.reduceat(x, starts, axis=0) / lengths[:, None].astype(np.float32)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled
