"""The lexical search of the backends that keep their text in SQLite FTS5 (faiss's database,
in_memory's in-memory table): which of a query's terms it matches.

FTS5's bm25() scores every row that holds a query term, so a search costs about one
microsecond per posting (row holding a term) of the terms it matches: a query word held by a
tenth of a million rows costs 100 ms. Two rules keep that bounded, reading how many rows hold
each term from the table's fts5vocab view (a count costs ~1/40 of scoring those rows):

- in a store of COMMON_TERM_MIN_ROWS rows or more, terms held by more than COMMON_TERM_SHARE
  of the rows are left out unless all are: their BM25 weight is about zero;
- the terms matched hold at most `max_postings` rows together (memory.retrieval.
  lexical_max_postings): taken rarest first, as many as fit. The rare terms carry the BM25
  weight, so the best matches rarely change; a query whose every term is in more rows than
  that gets no lexical candidates (its dense candidates answer it). A store smaller than the
  budget never drops a term by it unless the query's terms together hold more rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

from DeepResearch.src.memory.text import fts_query, tokenize

COMMON_TERM_SHARE = 0.5
COMMON_TERM_MIN_ROWS = 1000


def chosen_terms(
    terms: Sequence[str], rows: Mapping[str, int], total: int, max_postings: int
) -> list[str]:
    """The terms of `terms` (distinct, in query order) a search matches, given `rows`
    (term -> rows holding it; a term missing is in none) in a store of `total` rows."""
    if total >= COMMON_TERM_MIN_ROWS:
        terms = [t for t in terms if rows.get(t, 0) <= COMMON_TERM_SHARE * total] or list(terms)
    kept, spent = set(), 0
    for term in sorted(terms, key=lambda t: rows.get(t, 0)):
        if spent + rows.get(term, 0) > max_postings:
            break
        kept.add(term)
        spent += rows.get(term, 0)
    return [t for t in terms if t in kept]


class TermRows:
    """How many rows hold each term. The fts5vocab view counts them by reading the term's
    postings (~1 ms per 40,000 rows: 9 ms for a common word at a million), so a count is
    remembered while fewer than `slack` rows were written or deleted since it was read (it
    is then within `slack` of the truth; a budget needs no more). `changes` is any counter
    of the table's writes and deletions that only grows."""

    LIMIT = 100_000  # terms remembered before all are forgotten

    def __init__(self, vocab: str = "fts_vocab") -> None:
        self.vocab = vocab
        self._rows: dict[str, int] = {}
        self._since = 0  # `changes` when the remembered counts were read

    def rows(self, conn: sqlite3.Connection, terms: Sequence[str], changes: int, slack: int
             ) -> dict[str, int]:
        if not 0 <= changes - self._since < slack or len(self._rows) > self.LIMIT:
            self._rows, self._since = {}, changes
        missing = [t for t in terms if t not in self._rows]
        if missing:
            found = dict(conn.execute(
                f"SELECT term, doc FROM {self.vocab} WHERE term IN "
                f"({','.join('?' * len(missing))})", missing).fetchall())
            self._rows.update((t, int(found.get(t, 0))) for t in missing)
        return {t: self._rows[t] for t in terms}


def match_expression(
    conn: sqlite3.Connection, query: str, total: int, max_postings: int,
    term_rows: TermRows, changes: int,
) -> str | None:
    """The FTS5 MATCH expression for `query` over a table of `total` rows (`term_rows`
    counts its terms; `changes` counts its writes, see TermRows); None when no term is left
    to match. Counts the terms' rows only when a rule could drop one."""
    terms = list(dict.fromkeys(tokenize(query)))
    if not terms:
        return None
    if total >= COMMON_TERM_MIN_ROWS or len(terms) * total > max_postings:
        slack = max(1, max_postings // 100)
        terms = chosen_terms(terms, term_rows.rows(conn, terms, changes, slack), total,
                             max_postings)
    return fts_query(terms)
