"""Rows the faiss backend has read, kept by seq, so a run's recalls do not read them again.

A workflow run makes ~8 recalls for related questions and they meet the same memories: a
compound question decoded ~500 records of ~120 different ones (dense and lexical candidates,
session neighbours, cross-references). SQLite still decides which rows a read returns (its
filter, TTL included, is evaluated in SQL on every read, and a deleted row is never
returned); this cache only spares fetching the row and its relations again.

Why it can be kept by seq: a seq's row never changes. A write of an existing id deletes its
row and inserts a new one under a new seq (AUTOINCREMENT, never reused), and the relations a
record has are written with it. The one exception, `set_vectors` (re-embedding), drops its
seqs here; a commit by another connection (another process) clears everything, as this
connection's `PRAGMA data_version` tells.

What is kept is the row as SQLite returned it and the relations as a tuple: immutable, and
every read builds new records from them, so no caller can change what another one reads.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

Row = tuple[Any, ...]  # the records columns, seq first (sqlite_records.COLUMNS)
Relations = tuple[tuple[str, str], ...]  # (relation type, target id), in stored order

CAPACITY = 4096  # rows; ~3 KB each with a 384-d vector: ~12 MB at most


class RowCache:
    """Least recently used rows by seq. Not thread-safe: SQLiteRecords holds its lock."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._rows: OrderedDict[int, tuple[Row, Relations]] = OrderedDict()
        self._data_version: int | None = None

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, seq: int) -> bool:
        return seq in self._rows

    def valid_for(self, data_version: int) -> None:
        """Forget everything when another connection committed since the last read."""
        if data_version != self._data_version:
            self._rows.clear()
            self._data_version = data_version

    def get(self, seq: int) -> tuple[Row, Relations] | None:
        entry = self._rows.get(seq)
        if entry is not None:
            self._rows.move_to_end(seq)
        return entry

    def put(self, rows: Sequence[Row], relations: Sequence[Relations]) -> None:
        for row, rels in zip(rows, relations, strict=True):
            self._rows[row[0]] = (row, rels)
            self._rows.move_to_end(row[0])
        while len(self._rows) > self.capacity:
            self._rows.popitem(last=False)

    def drop(self, seqs: Iterable[int]) -> None:
        for seq in seqs:
            self._rows.pop(seq, None)
