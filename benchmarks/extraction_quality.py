"""Extraction quality: the facts an extractor takes from the conversations of
benchmarks/extraction_eval/ against the facts a careful reader wrote for them (see its
README for the guidelines and the file format).

A fact is compared as (subject, predicate, object, current), within its conversation:

- names: case folded, runs of spaces made one, a leading article ("the platform team") and
  trailing punctuation dropped;
- employment follows the data model, where an ended job is a closed `WORKS_AT` or a
  `WORKED_AT`: `WORKS_AT` that is not current counts as `WORKED_AT`, and `WORKED_AT` is
  never current;
- `STUDIED_AT` is compared without `current`: the predicate holds for studies finished and
  under way alike, and the data model keeps no end for it unless told one;
- an extracted fact is current unless it ends (`invalid_at`) at or before its message;
- `KNOWS` and `CLOSE_TO` are symmetric: either direction matches;
- `CLOSE_TO` implies `KNOWS`: an extracted `KNOWS` where the reader wrote `CLOSE_TO` (now or
  in the past) for the same two people is neither right nor wrong (not counted);
- only the annotated predicates count (`MENTIONED`, `PARTICIPATED_IN` are structural).

Precision, recall and F1 per predicate and overall, per file.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from DeepResearch.src.memory.facts.extraction import extract, parse_messages
from DeepResearch.src.memory.facts.model import ExtractedFact, Message

DATA_DIR = Path(__file__).resolve().parent / "extraction_eval"
FILES = ("dev", "heldout")
PREDICATES = ("WORKS_AT", "WORKED_AT", "HAS_SKILL", "INTERESTED_IN", "LIVES_IN", "STUDIED_AT",
              "KNOWS", "CLOSE_TO", "MEMBER_OF")
SYMMETRIC = frozenset({"KNOWS", "CLOSE_TO"})

Key = tuple[str, str, str, bool]  # (subject, predicate, object, current), normalised


class EvalDataError(ValueError):
    """A data file that does not follow the format; the message names the file and value."""


@dataclass(frozen=True)
class Conversation:
    id: str
    channel: str
    messages: list[dict[str, str]]
    facts: list[dict[str, Any]]


# --- normalisation ----------------------------------------------------------------------

_ARTICLE = re.compile(r"^(the|a|an)\s+")


def norm_name(name: str) -> str:
    text = " ".join(name.casefold().split())
    text = _ARTICLE.sub("", text)
    return text.strip(" .,!?;:")


def key(subject: str, predicate: str, obj: str, current: bool) -> Key:
    """The comparable form of one fact (see the module's docstring)."""
    if predicate == "WORKS_AT" and not current:
        predicate = "WORKED_AT"
    if predicate in ("WORKED_AT", "STUDIED_AT"):
        current = predicate == "STUDIED_AT"  # one value: these compare without it
    s, o = norm_name(subject), norm_name(obj)
    if predicate in SYMMETRIC and o < s:
        s, o = o, s
    return (s, predicate, o, current)


# --- the data files -----------------------------------------------------------------------

def _need(value: Any, kind: type, where: str, name: str) -> Any:
    if not isinstance(value, kind) or (kind is str and not value.strip()):
        raise EvalDataError(f"{where}: {name} must be a non-empty {kind.__name__}, "
                            f"got {value!r}")
    return value


def parse_set(raw: Any, source: str = "<data>") -> list[Conversation]:
    """Validate one file's content: the schema, message ids unique and every fact's message
    among its conversation's, known predicates, `WORKS_AT` current and `WORKED_AT` past."""
    _need(raw, list, source, "the file")
    conversations, seen_conv, seen_msg = [], set(), set()
    for i, conv in enumerate(raw):
        where = f"{source}: conversation {i}"
        _need(conv, dict, where, "a conversation")
        cid = _need(conv.get("id"), str, where, "id")
        where = f"{source}: conversation {cid!r}"
        if cid in seen_conv:
            raise EvalDataError(f"{where}: repeated conversation id")
        seen_conv.add(cid)
        channel = _need(conv.get("channel"), str, where, "channel")
        ids = set()
        for m in _need(conv.get("messages"), list, where, "messages"):
            _need(m, dict, where, "a message")
            mid = _need(m.get("id"), str, where, "message id")
            for name in ("author", "timestamp", "text"):
                _need(m.get(name), str, f"{where}, message {mid!r}", name)
            try:
                datetime.fromisoformat(m["timestamp"].replace("Z", "+00:00"))
            except ValueError:
                raise EvalDataError(f"{where}, message {mid!r}: timestamp is not ISO 8601: "
                                    f"{m['timestamp']!r}") from None
            if mid in seen_msg:
                raise EvalDataError(f"{where}: repeated message id {mid!r}")
            seen_msg.add(mid)
            ids.add(mid)
        if not ids:
            raise EvalDataError(f"{where}: no messages")
        for j, f in enumerate(_need(conv.get("facts"), list, where, "facts")):
            at = f"{where}, fact {j}"
            _need(f, dict, at, "a fact")
            for name in ("message", "subject", "predicate", "object"):
                _need(f.get(name), str, at, name)
            if f["message"] not in ids:
                raise EvalDataError(f"{at}: message {f['message']!r} is not in the "
                                    "conversation")
            if f["predicate"] not in PREDICATES:
                raise EvalDataError(f"{at}: unknown predicate {f['predicate']!r} "
                                    f"(choices: {', '.join(PREDICATES)})")
            if not isinstance(f.get("current"), bool):
                raise EvalDataError(f"{at}: current must be true or false, got "
                                    f"{f.get('current')!r}")
            if (f["predicate"], f["current"]) in (("WORKS_AT", False), ("WORKED_AT", True)):
                raise EvalDataError(f"{at}: {f['predicate']} with current={f['current']} "
                                    "(a past job is WORKED_AT, a current one WORKS_AT)")
        conversations.append(Conversation(cid, channel, conv["messages"], conv["facts"]))
    return conversations


def load_set(name_or_path: str | Path) -> list[Conversation]:
    """`dev`, `heldout` or a path to a file of the same format."""
    path = DATA_DIR / f"{name_or_path}.json" if name_or_path in FILES else Path(name_or_path)
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise EvalDataError(f"{path}: {exc}") from None
    return parse_set(raw, str(path))


def gold_keys(conv: Conversation) -> set[Key]:
    return {key(f["subject"], f["predicate"], f["object"], f["current"]) for f in conv.facts}


# --- extraction -----------------------------------------------------------------------------

def messages_of(conv: Conversation) -> list[Message]:
    return parse_messages([{"message_id": m["id"], "author_id": m["author"],
                            "author_name": m["author"], "content": m["text"],
                            "timestamp": m["timestamp"]} for m in conv.messages],
                          channel_id=conv.channel)


def extracted_keys(facts: Iterable[ExtractedFact], messages: Sequence[Message]) -> set[Key]:
    """The comparable form of an extractor's facts (other predicates left out)."""
    sent = {m.message_id: m.timestamp for m in messages}
    out = set()
    for f in facts:
        if f.predicate not in PREDICATES:
            continue
        at = sent.get(f.evidence)
        current = f.invalid_at is None or (at is not None and f.invalid_at > at)
        out.add(key(f.subject, f.predicate, f.object, current))
    return out


async def extract_keys(conv: Conversation, model: Any = None) -> set[Key]:
    messages = messages_of(conv)
    result = await extract(messages, model=model)
    return extracted_keys(result.facts, messages)


# --- scores ---------------------------------------------------------------------------------

@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        if p is None or r is None:
            return None
        return 2 * p * r / (p + r) if p + r else 0.0

    def add(self, other: Counts) -> None:
        self.tp, self.fp, self.fn = self.tp + other.tp, self.fp + other.fp, self.fn + other.fn


@dataclass
class Scores:
    per_predicate: dict[str, Counts] = field(
        default_factory=lambda: {p: Counts() for p in PREDICATES})
    missed: list[tuple[str, Key]] = field(default_factory=list)  # (conversation id, fact)
    wrong: list[tuple[str, Key]] = field(default_factory=list)

    @property
    def overall(self) -> Counts:
        total = Counts()
        for counts in self.per_predicate.values():
            total.add(counts)
        return total

    def add(self, conv_id: str, gold: set[Key], predicted: set[Key]) -> None:
        implied = {(s, "KNOWS", o, now) for s, p, o, _ in gold if p == "CLOSE_TO"
                   for now in (True, False)}  # once close, they know each other
        predicted = predicted - (implied - gold)
        for k in gold & predicted:
            self.per_predicate[k[1]].tp += 1
        for k in sorted(gold - predicted):
            self.per_predicate[k[1]].fn += 1
            self.missed.append((conv_id, k))
        for k in sorted(predicted - gold):
            self.per_predicate[k[1]].fp += 1
            self.wrong.append((conv_id, k))

    def merged(self, other: Scores) -> Scores:
        out = Scores(missed=self.missed + other.missed, wrong=self.wrong + other.wrong)
        for p in PREDICATES:
            out.per_predicate[p].add(self.per_predicate[p])
            out.per_predicate[p].add(other.per_predicate[p])
        return out

    def as_dict(self) -> dict[str, Any]:
        def row(c: Counts) -> dict[str, Any]:
            return {"tp": c.tp, "fp": c.fp, "fn": c.fn, "precision": c.precision,
                    "recall": c.recall, "f1": c.f1}
        return {**row(self.overall),
                "per_predicate": {p: row(c) for p, c in self.per_predicate.items()}}


def score(gold: dict[str, set[Key]], predicted: dict[str, set[Key]]) -> Scores:
    """Compare, conversation by conversation, the facts read (`gold`) and extracted."""
    scores = Scores()
    for conv_id in gold.keys() | predicted.keys():
        scores.add(conv_id, gold.get(conv_id, set()), predicted.get(conv_id, set()))
    return scores


async def evaluate(conversations: Sequence[Conversation], model: Any = None) -> Scores:
    """Run the extractor (offline rules when `model` is None) over each conversation."""
    gold = {c.id: gold_keys(c) for c in conversations}
    predicted = {c.id: await extract_keys(c, model) for c in conversations}
    return score(gold, predicted)


def evaluate_files(names: Sequence[str] = FILES, model: Any = None) -> dict[str, Scores]:
    """Scores of each file and of all of them together (`both`)."""
    out = {name: asyncio.run(evaluate(load_set(name), model)) for name in names}
    both = Scores()
    for scores in out.values():
        both = both.merged(scores)
    out["both"] = both
    return out
