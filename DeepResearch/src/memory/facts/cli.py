"""`deepresearch-memory facts ...`: the knowledge-graph tier from the command line.

    deepresearch-memory facts ingest messages.json [--channel general]
    deepresearch-memory facts add Alice WORKS_AT Google role=Engineer valid_at=2022-01
    deepresearch-memory facts list [--person Alice] [--predicate WORKS_AT] [--history]
    deepresearch-memory facts tool find_experts query=Python limit=3      (JSON out)
    deepresearch-memory facts export facts.jsonl | facts import facts.jsonl

KEY=VALUE arguments are the command's (VALUE read as JSON when it parses: limit=3,
current_only=false), except Hydra overrides of the config groups (memory.faiss.path=...,
memory/backend=neo4j). `add` takes confidence (default 1.0), evidence (default "cli": the command is
the source), valid_at, invalid_at, subject_type, object_type; other keys become attributes.
Exit status and errors as for the other commands: 0 done, 1 backend, 2 a mistake in the
command or its input (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from DeepResearch.src.memory.client import MemorySystemClient
from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.facts.graph import FactGraph

# Hydra overrides among the facts commands' KEY=VALUE arguments: only the config groups'.
OVERRIDE = re.compile(r"^[+~]?(memory|llm|flows|hydra)([./=])")
ADD_FIELDS = ("confidence", "evidence", "valid_at", "invalid_at", "subject_type", "object_type")


def split_overrides(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    overrides = [a for a in argv if OVERRIDE.match(a)]
    return overrides, [a for a in argv if not OVERRIDE.match(a)]


def parse_pairs(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise MemoryInputError(f"{item!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="deepresearch-memory facts",
                                description="Entities and time-aware facts (docs/facts.md).")
    sub = p.add_subparsers(dest="facts_command", required=True)
    s = sub.add_parser("ingest", help="messages (a JSON list) -> episodes + facts")
    s.add_argument("file")
    s.add_argument("--channel", default=None, help="channel of messages that name none")
    s = sub.add_parser("add", help="add one fact: SUBJECT PREDICATE OBJECT [KEY=VALUE ...]")
    s.add_argument("subject")
    s.add_argument("predicate")
    s.add_argument("object")
    s.add_argument("pairs", nargs="*", metavar="KEY=VALUE")
    s = sub.add_parser("list", help="facts, current ones unless --history")
    s.add_argument("--person", default=None)
    s.add_argument("--predicate", default=None)
    s.add_argument("--history", action="store_true")
    s.add_argument("--limit", type=int, default=100)
    s = sub.add_parser("tool", help="run a fact tool: NAME KEY=VALUE ... (JSON out)")
    s.add_argument("name")
    s.add_argument("pairs", nargs="*", metavar="KEY=VALUE")
    s = sub.add_parser("export", help="entities and facts to JSONL")
    s.add_argument("file")
    s = sub.add_parser("import", help="entities and facts from JSONL")
    s.add_argument("file")
    return p


def _messages(path: Path) -> tuple[list[Any], str | None]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise MemoryInputError(f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise MemoryInputError(f"{path} is not JSON ({exc})") from None
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return data["messages"], data.get("channel_id")
    if not isinstance(data, list):
        raise MemoryInputError(f"{path}: expected a JSON list of messages (or an object with "
                               "\"messages\")")
    return data, None


def _fact_line(f: Any) -> str:
    when = (f.valid_at or "?")[:10] + ".." + ((f.invalid_at or "")[:10] or "now")
    return (f"{f.subject} {f.predicate} {f.object}  conf={f.confidence:.2f}  {when}  "
            f"evidence={','.join(f.evidence[:3])}{'...' if len(f.evidence) > 3 else ''}"
            f"{'' if f.current else '  (closed)'}")


async def dispatch(args: argparse.Namespace, client: MemorySystemClient) -> int:
    from DeepResearch.src.memory.facts.io import export_jsonl, import_jsonl
    from DeepResearch.src.memory.facts.tools import TOOLS

    graph = FactGraph(client)
    cmd = args.facts_command
    if cmd == "ingest":
        messages, channel = _messages(Path(args.file))
        report = await graph.ingest(messages, channel_id=args.channel or channel)
        print(json.dumps({"messages": report.messages, "episodes": len(report.episodes),
                          "facts": len(report.facts), "problems": report.problems}, indent=2))
        return 0
    if cmd == "add":
        pairs = parse_pairs(args.pairs)
        fields = {k: pairs.pop(k) for k in ADD_FIELDS if k in pairs}
        fields.setdefault("confidence", 1.0)
        fields.setdefault("evidence", "cli")
        fact = await graph.add_fact(args.subject, args.predicate, args.object,
                                    attributes=pairs, **fields)
        print(_fact_line(fact))
        return 0
    if cmd == "list":
        facts = await graph.facts(subject=args.person, predicate=args.predicate,
                                  include_history=args.history, limit=args.limit)
        for fact in facts:
            print(_fact_line(fact))
        if not facts:  # on stderr: stdout stays the list (empty) for scripts
            about = f" about {args.person!r}" if args.person else ""
            kind = "" if args.history else " current"
            print(f"no{kind} facts{about}" + ("" if args.history else " (--history: all)"),
                  file=sys.stderr)
        return 0
    if cmd == "tool":
        if args.name not in TOOLS:
            raise MemoryInputError(f"no fact tool {args.name!r}; tools: {sorted(TOOLS)}")
        tool, kwargs = TOOLS[args.name], parse_pairs(args.pairs)
        try:
            inspect.signature(tool).bind(graph, **kwargs)
        except TypeError as exc:  # a missing or unknown argument
            params = list(inspect.signature(tool).parameters)[1:]
            raise MemoryInputError(f"tool {args.name}: {exc}; arguments: {params}") from None
        answer = await tool(graph, **kwargs)
        print(json.dumps(answer.model_dump(mode="json"), indent=2, ensure_ascii=False))
        return 0
    if cmd == "export":
        print(f"exported {await export_jsonl(graph, Path(args.file))} lines to {args.file}")
        return 0
    if cmd == "import":
        counts = await import_jsonl(graph, Path(args.file))
        print(f"imported {counts['entities']} entities and {counts['facts']} facts")
        return 0
    raise MemoryInputError(f"unknown facts command {cmd!r}")


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """(arguments, Hydra overrides) of `facts ...` (argv without the word `facts`)."""
    overrides, rest = split_overrides(argv)
    return build_parser().parse_args(rest), overrides
