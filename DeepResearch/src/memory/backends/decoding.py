"""Stored records decoded for reading, one rule for every backend: a record whose stored form
cannot be decoded (metadata or relations that are not valid JSON, a compressed content blob
that does not decompress, a vector of the wrong length) is damaged. Reads skip it with one
warning per process naming it; `health` counts it (`stored_problem`); `forget ID` removes it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from DeepResearch.src.memory.compression import content_problem, full_content

log = logging.getLogger(__name__)
T = TypeVar("T")
_reported: set[str] = set()  # records already warned about in this process


class DamagedRecord(Exception):
    """A stored record that cannot be decoded: `rid` names it, `problem` says why."""

    def __init__(self, rid: str, problem: str) -> None:
        super().__init__(f"memory {rid!r}: {problem}")
        self.rid = rid
        self.problem = problem


def readable_content(rid: str, content: str, codec: str | None, blob: bytes | None) -> str | None:
    """A record's full (decompressed) content, what its vector is computed from; None, with
    one warning naming the record, when its blob does not decompress."""
    problem = content_problem(codec, blob)
    if problem is not None:
        report_skipped(rid, problem)
        return None
    return full_content(content, codec, blob)


def decode_json(text: Any, what: str, rid: str, default: str) -> Any:
    """`text` (a stored JSON column; None or empty = `default`) decoded; DamagedRecord naming
    the record and the column when it is not JSON."""
    try:
        return json.loads(text or default)
    except (TypeError, ValueError, RecursionError) as exc:
        raise DamagedRecord(rid, f"stored {what} is not valid JSON ({exc})") from None


def report_skipped(rid: str, problem: str) -> None:
    """One warning per record and process: reads skip it."""
    if rid in _reported:
        return
    _reported.add(rid)
    log.warning(
        "memory: skipping stored memory %r (%s); fix or forget it "
        "(`deepresearch-memory forget %s`)", rid, problem, rid,
    )


def decoded(items: Iterable[T], decode: Callable[[T], Any]) -> list[Any]:
    """`decode` of each item, the damaged ones left out (each reported once)."""
    out = []
    for item in items:
        try:
            out.append(decode(item))
        except DamagedRecord as exc:
            report_skipped(exc.rid, exc.problem)
    return out


def stored_problem(
    metadata: Any, relations: Any, codec: str | None, blob: bytes | None
) -> str | None:
    """Why a stored record's columns cannot be decoded (None: they can): what `health` counts.
    `relations` is its JSON text (Neo4j) or None (kept in a table: nothing to decode)."""
    try:
        decode_json(metadata, "metadata", "", "{}")
        if relations is not None:
            decode_json(relations, "relations", "", "[]")
    except DamagedRecord as exc:
        return exc.problem
    return content_problem(codec, blob)


def damaged_summary(damaged: dict[str, str]) -> list[str]:
    """The `health` problem line for damaged records ({id: problem}); none when there are none."""
    if not damaged:
        return []
    shown = "; ".join(f"{rid!r}: {problem}" for rid, problem in list(damaged.items())[:5])
    more = f" and {len(damaged) - 5} more" if len(damaged) > 5 else ""
    return [f"{len(damaged)} damaged records that reads skip ({shown}{more}): remove them with "
            f"`deepresearch-memory forget ID`"]
