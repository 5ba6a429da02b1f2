"""Texts for large-store benchmarks whose words are distributed like a real language's.

The words are the whole-word entries of the embedding model's own WordPiece vocabulary
(`vocab.txt` in the installed model folder: ~21,700 lower-case words), in the file's order,
which follows the frequency of the corpus the vocabulary was built from ("the", "of", "and"
first). A text draws its words independently from a Zipf-Mandelbrot law over that order,
p(rank r) ~ 1 / (r + 2.7) ** 1.07, so a few words are in most texts and most words in few, as
in English: a query word's share of the rows (what a lexical search pays for) is realistic,
unlike a template corpus of a hundred words where every word is in a large share of rows.

`texts(n, seed)`: n texts of 8-40 words. `queries(n, seed)`: n held-out questions of 2-6
words drawn the same way (another seed: no query is a stored text), every fifth one made of
very common words only (the 40 most frequent content words).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np

from DeepResearch.src.memory.embeddings import DEFAULT_MODEL, resolve_model_path
from DeepResearch.src.memory.text import STOP_WORDS

EXPONENT = 1.07
SHIFT = 2.7
TEXT_WORDS = (8, 40)
QUERY_WORDS = (2, 6)
COMMON = 40  # a common-words-only query draws from this many most frequent content words


@functools.cache
def vocabulary() -> tuple[str, ...]:
    """The model vocabulary's whole words (two or more letters, no sub-word pieces), in
    its order."""
    path = Path(resolve_model_path(DEFAULT_MODEL)) / "vocab.txt"
    words = re.findall(r"^[a-z]{2,}$", path.read_text(encoding="utf-8"), re.MULTILINE)
    return tuple(dict.fromkeys(words))


@functools.cache
def _cdf() -> np.ndarray:
    ranks = np.arange(1, len(vocabulary()) + 1, dtype=np.float64)
    weights = 1.0 / (ranks + SHIFT) ** EXPONENT
    return np.cumsum(weights / weights.sum())


def _draw(rng: np.random.Generator, n: int, words: tuple[int, int]) -> list[str]:
    vocab = vocabulary()
    lengths = rng.integers(words[0], words[1] + 1, size=n)
    picks = np.minimum(np.searchsorted(_cdf(), rng.random(int(lengths.sum()))), len(vocab) - 1)
    out, start = [], 0
    for length in lengths.tolist():
        out.append(" ".join(vocab[i] for i in picks[start:start + length].tolist()))
        start += length
    return out


def texts(n: int, seed: int) -> list[str]:
    """n texts, each a capitalised run of words ending with a full stop."""
    return [t.capitalize() + "." for t in _draw(np.random.default_rng(seed), n, TEXT_WORDS)]


def common_words() -> list[str]:
    """The most frequent content words (stop words left out: the tokenizer drops them)."""
    return [w for w in vocabulary() if w not in STOP_WORDS][:COMMON]


def queries(n: int, seed: int) -> list[str]:
    """n questions; every fifth of common words only."""
    rng = np.random.default_rng(seed + 1_000_003)
    drawn = _draw(rng, n, QUERY_WORDS)
    common = common_words()
    out = []
    for i, text in enumerate(drawn):
        if i % 5 == 4:
            size = int(rng.integers(QUERY_WORDS[0], QUERY_WORDS[1] + 1))
            text = " ".join(rng.choice(common, size=size, replace=False).tolist())
        out.append(f"what about {text}?")
    return out
