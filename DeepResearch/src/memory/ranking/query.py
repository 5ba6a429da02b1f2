"""Query rewriting for the lexical candidate query: drop the words that shape a question
(interrogatives, auxiliaries, vague nouns and hedges) so BM25 weighs the content words. The
dense query is left as written: the embedding model reads whole questions well."""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)

# General English question scaffolding, beyond text.py's stop words (which already drop
# what/when/where/who/why/how/did/does/...). Nothing here names a data set or a topic.
QUESTION_WORDS = frozenset(
    """what when where which who whom whose why how whatever whenever wherever however
    is are was were be been being am do does did done doing has have had having
    can could would should shall will may might must ought
    ever also else likely probably possibly perhaps maybe
    kind kinds type types sort sorts way ways thing things something anything everything
    one ones much many often
    a an the of to in on at for with by from about as into""".split()
)


def rewrite_query(query: str, words: frozenset[str] = QUESTION_WORDS) -> str:
    """The query's words minus question scaffolding, in order; the query unchanged if nothing
    would be left."""
    kept = [w for w in _WORD.findall(query) if w.lower() not in words]
    return " ".join(kept) if kept else query
