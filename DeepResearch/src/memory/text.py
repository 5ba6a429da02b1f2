"""The one tokeniser of the memory subsystem.

Every lexical step -- the FTS5 tables of in_memory and faiss and Neo4j's full-text index
(each indexes `token_string` of a memory's text, and a query's tokens), the ranking steps that
compare words -- goes through `tokenize`, so a word matches the same way everywhere:
lower-cased word characters, English stop words dropped, Snowball stems.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import Stemmer

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves""".split()
)
STOP_WORDS = _STOP_WORDS  # also the common words the consolidation guard ignores
_stemmer = Stemmer.Stemmer("english")


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    return _stemmer.stemWord(word)


def tokenize(text: str) -> list[str]:
    """Stemmed, lower-cased content words of `text`, in order (duplicates kept)."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP_WORDS]


def token_string(text: str) -> str:
    """The tokens joined by spaces: what the full-text indexes store."""
    return " ".join(tokenize(text))


def fts_query(query: str | Sequence[str]) -> str | None:
    """`query` (a text, or its tokens) as FTS5 syntax: each of its tokens (the project's
    tokenizer) quoted, OR-ed; nothing the user typed is read as FTS5 syntax. None when it has
    no token."""
    tokens = dict.fromkeys(tokenize(query) if isinstance(query, str) else query)
    if not tokens:
        return None
    return " OR ".join('"' + token.replace('"', '""') + '"' for token in tokens)
