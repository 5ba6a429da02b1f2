"""`deepresearch-memory`: inspect and maintain the memory store on the project's Hydra config.

    deepresearch-memory COMMAND [options] [hydra overrides...]
    e.g. deepresearch-memory search "rna-seq aligner" --top-k 3 memory.faiss.path=outputs/memory

Commands: search, list, show ID, stats, health, export FILE, import FILE, forget, expire,
archive ID..., restore ID..., pin ID..., unpin ID..., consolidate (cli_consolidate.py), summarize,
rebuild, `facts ...` (entities and time-aware facts: facts/cli.py); serve (the HTTP + MCP
service, docs/service.md) and mcp (the MCP server on stdio). Only `search`, `summarize`, and
`import`/`rebuild` when vectors must be computed, load the
embedding model (torch); the others start fast.

Exit status: 0 done; 1 the backend failed, also part-way through the command (or `import`
skipped bad lines, `health` found problems: damaged records among them); 2 a mistake in the
command, its input or the configuration. Errors are one line on stderr, never a traceback.
Output piped into a reader that stops early (`| head`) ends with 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from DeepResearch.src.commandline import (
    OverrideError,
    UnknownConfigKeyError,
    check_override_keys,
    closed_pipe_ends_quietly,
    compose,
    hydra_reason,
)
from DeepResearch.src.memory.backends.base import MemoryFilter, MemoryRecord, archive_namespace
from DeepResearch.src.memory.cli_consolidate import add_parser as add_consolidate_parser
from DeepResearch.src.memory.cli_transfer import export_jsonl, import_jsonl
from DeepResearch.src.memory.client import MemorySystemClient
from DeepResearch.src.memory.config import MemoryConfig, as_group_choice, check_store_folder
from DeepResearch.src.memory.config_base import MAX_TOP_K
from DeepResearch.src.memory.errors import (
    ConfirmationRequired,
    MemoryBackendError,
    MemoryInputError,
    MemorySubsystemError,
)
from DeepResearch.src.memory.inputs import parse_filters
from DeepResearch.src.memory.records_io import record_to_json
from DeepResearch.src.memory.writes import failure_cause


def compose_config(overrides: Sequence[str]) -> Any:
    """The project's Hydra config (a DictConfig) composed with `overrides` (the same
    configuration `deepresearch` composes); an unknown key raises UnknownConfigKeyError."""
    overrides = as_group_choice(overrides)
    check_override_keys(overrides)
    return compose(overrides)


def load_config(overrides: Sequence[str]) -> MemoryConfig:
    """Compose the project's Hydra config with `overrides`; validate its `memory` node."""
    return MemoryConfig.from_omegaconf(compose_config(overrides).memory)


def _parse_kv(items: Sequence[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep:
            raise MemoryInputError(f"--filter {item!r}: expected KEY=VALUE (VALUE is JSON or text)")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def _where(client: MemorySystemClient, session: str | None) -> str:
    """Where a read looked: namespace, session, store (an empty answer names them: a store
    made in another folder is a common surprise)."""
    config = client.config
    store = (f"the faiss store {Path(config.faiss.path).resolve()}" if config.backend == "faiss"
             else f"the {config.backend} backend")
    return (f"namespace {client.namespace!r}" + (f", session {session!r}" if session else "")
            + f" of {store}")


def _line(r: MemoryRecord, width: int = 80) -> str:
    from datetime import UTC, datetime

    text = r.content.replace("\n", " ")
    text = text if len(text) <= width else text[: width - 3] + "..."
    when = datetime.fromtimestamp(r.created_at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    return f"{r.id}  {when}  {r.session_id[:16]:16}  {r.memory_type:16}  {text}"


async def run(args: argparse.Namespace, config: MemoryConfig) -> int:
    check_store_folder(config)
    if args.command == "rebuild":
        return _rebuild(config, args.reembed)
    client = MemorySystemClient(config, namespace=getattr(args, "namespace", None) or None,
                                session_id=getattr(args, "session", None) or None)
    try:
        await client.open(warn_unavailable=False)  # said below, once
        if not client.available:
            cause = client.writes.cause().removeprefix("backend unavailable: ")
            print(f"deepresearch-memory: memory backend {config.backend!r} is unavailable: "
                  f"{cause}", file=sys.stderr)
            return 1
        status = await _dispatch(args, client)
        if not client.available:  # lost part-way: what the command printed is incomplete
            print(f"deepresearch-memory: memory backend {config.backend!r} was lost during "
                  f"the command: {client.writes.cause()}", file=sys.stderr)
            return 1
        return status
    finally:
        await client.close()


def _done(verb: str, count: int, ids: list[str], where: str) -> int:
    """Print what an archive / restore / pin changed; exit status 1 when some ids were not
    found (the others are done)."""
    asked = len(set(ids))
    print(f"{verb} {count} of {asked} memories")
    if count < asked:
        print(f"{asked - count} of the ids given are not {where}", file=sys.stderr)
        return 1
    return 0


async def _dispatch(args: argparse.Namespace, client: MemorySystemClient) -> int:
    cmd = args.command
    # list / export / forget read one namespace, as import writes one: the configured one,
    # or its archive with --archived
    namespace = (archive_namespace(client.namespace) if getattr(args, "archived", False)
                 else client.namespace)
    session = getattr(args, "session", None)
    scope = MemoryFilter(namespaces=(namespace,), session_ids=(session,) if session else None)
    if cmd == "search":
        if args.top_k is not None and not 1 <= args.top_k <= MAX_TOP_K:
            raise MemoryInputError(f"--top-k {args.top_k}: give a number from 1 to {MAX_TOP_K}")
        results = await client.retrieve(
            args.query, top_k=args.top_k, filters=_parse_kv(args.filter) or None,
            session_id=args.session, profile=args.profile, all_sessions=not args.session,
        )
        for m in results:
            print(f"{m.rank:>3}  {m.score:.4f}  {m.id}  {m.content[:100]!r}")
        if not results:
            print(f"deepresearch-memory: nothing found in {_where(client, args.session)}",
                  file=sys.stderr)
        return 0
    if cmd == "list":
        if args.limit < 0 or args.offset < 0:
            raise MemoryInputError(f"--limit {args.limit} --offset {args.offset}: give numbers >= 0")
        rows = await client.backend.scan(scope, limit=args.limit, offset=args.offset)
        for r in rows:
            print(_line(r))
        if not rows and args.offset == 0:  # not silence: say where it looked
            print(f"deepresearch-memory: no {'archived ' if args.archived else ''}memories in "
                  f"{_where(client, session)}", file=sys.stderr)
        return 0
    if cmd == "show":
        found = (await client.backend.get([args.id], client.namespace)
                 or await client.backend.get([args.id], archive_namespace(client.namespace)))
        if not found:
            print(f"deepresearch-memory: no memory with id {args.id!r}", file=sys.stderr)
            return 1
        shown = record_to_json(found[0], include_vector=False)
        shown["archived"] = found[0].namespace != client.namespace
        stats = (await client.backend.access_stats([args.id], found[0].namespace)).get(args.id)
        if stats is not None:
            shown["access_count"], shown["last_accessed"] = stats.count, stats.last_accessed
        print(json.dumps(shown, indent=2, ensure_ascii=False))
        return 0
    if cmd == "archive":
        return _done("archived", await client.archive(args.ids, reason=args.reason), args.ids,
                     f"live in namespace {client.namespace!r}")
    if cmd in ("pin", "unpin"):
        found = await (client.pin if cmd == "pin" else client.unpin)(args.ids)
        return _done(f"{cmd}ned", found, args.ids, f"live in namespace {client.namespace!r}")
    if cmd == "restore":
        return _done("restored", await client.restore(args.ids), args.ids,
                     f"in the archive of namespace {client.namespace!r}")
    if cmd == "stats":
        stats = (await client.stats()).as_dict()
        stats.pop("session_id")
        stats.pop("in_session")
        print(json.dumps({**stats, "health": (await client.backend.health()).detail}, indent=2))
        return 0
    if cmd == "health":
        return await _health(client)
    if cmd == "export":
        return await export_jsonl(client, scope, Path(args.file))
    if cmd == "import":
        return await import_jsonl(client, Path(args.file))
    if cmd == "forget":
        return await _forget(client, args)
    if cmd == "facts":
        from DeepResearch.src.memory.facts.cli import dispatch

        return await dispatch(args, client)
    if cmd == "expire":
        print(f"expired {await client.expire()} memories")
        return 0
    if cmd == "consolidate":
        from DeepResearch.src.memory.cli_consolidate import run_consolidate

        return await run_consolidate(args, client)
    if cmd == "summarize":
        from DeepResearch.src.memory.summaries import summarize

        report = await summarize(client, session=args.session, dry_run=args.dry_run)
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False) if args.json
              else report.summary())
        return 0
    raise MemoryInputError(f"unknown command {cmd!r}")


async def _health(client: MemorySystemClient) -> int:
    """The backend's health, its full check (`verify()`, where the backend has one), the
    tiers, index, growth, outbox and consolidation detail (health.py); exit status 1 when
    anything is wrong."""
    health = await client.health()
    if not health.available:
        problems = [f"backend unavailable: {health.detail}"]
    else:
        problems = [] if health.ok or health.outbox else [health.detail]
        verify = getattr(client.backend, "verify", None)  # the full check, where there is one
        if verify is not None:
            problems += [p for p in await verify() if p not in problems]
    if health.outbox:
        problems.append(f"{health.outbox} writes wait in the outbox")
    detail = await client.health_detail() if health.available else {}
    problems += [p for p in detail.pop("problems", []) if p not in problems]
    report = {"ok": not problems, "backend": health.backend, "detail": health.detail,
              **detail, "problems": problems}
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 1 if problems else 0


async def _forget(client: MemorySystemClient, args: argparse.Namespace) -> int:
    """Delete by ids / session / filters, inside the configured namespace (the client's
    rules: a filter key no memory has is refused; more than memory.forget.confirm_above
    memories need --yes, and the count is shown)."""
    filters = _parse_kv(args.filter)
    if not (args.ids or filters or args.session or args.all):
        raise MemoryInputError("forget: give ids, --session, --filter, or --all to delete everything")
    try:
        removed = await client.forget(args.ids or None, filters=filters or None,
                                      session_id=args.session, everything=args.all,
                                      confirm=args.yes, archived=args.archived)
    except ConfirmationRequired as exc:
        print(f"deepresearch-memory: forget would delete {exc.count} memories (more than "
              f"memory.forget.confirm_above={client.config.forget.confirm_above}); nothing "
              "deleted: run it again with --yes to delete them", file=sys.stderr)
        return 2
    print(f"forgot {removed} memories")
    return 0


def _rebuild(config: MemoryConfig, reembed: bool) -> int:
    if config.backend != "faiss":
        print(f"rebuild applies to the faiss backend (memory.backend={config.backend!r})", file=sys.stderr)
        return 2
    import sqlite3

    from DeepResearch.src.memory.backends.embedded import DB_FILE, EmbeddedBackend
    from DeepResearch.src.memory.embeddings import get_embedder, vector_identity

    store = config.vector_store
    embedder = get_embedder(store.embedding_model, store.embedding_runtime)
    identity = vector_identity(store.embedding_model, store.embedding_runtime)
    backend = EmbeddedBackend(
        config.faiss, dimension=embedder.dimension,
        metric=config.vector_store.index_type, model=identity,
    )
    db_path = Path(config.faiss.path) / DB_FILE
    stored: dict[str, str] = {}
    if db_path.exists():
        with sqlite3.connect(db_path) as conn:
            stored = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    changed = (stored.get("model", identity) != identity
               or stored.get("dimension", str(embedder.dimension)) != str(embedder.dimension))
    embed = embedder.embed if (reembed or changed) else None
    n = backend.rebuild(reembed=embed)
    how = "re-embedded and re-indexed" if embed else "re-indexed"
    print(f"{how} {n} memories in {config.faiss.path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="deepresearch-memory",
        description="Inspect and maintain DeepResearch memory. Extra KEY=VALUE arguments are "
        "Hydra overrides, e.g. memory.faiss.path=outputs/memory or memory/backend=neo4j.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("search", help="ranked memories for a query (loads the model)")
    s.add_argument("query")
    s.add_argument("--top-k", type=int, default=None)
    s.add_argument("--session", default=None, help="search one session (default: all)")
    s.add_argument("--profile", default=None)
    s.add_argument("--filter", action="append", metavar="KEY=VALUE")
    s = sub.add_parser("list", help="memories of the namespace, oldest first")
    s.add_argument("--session", default=None)
    s.add_argument("--archived", action="store_true", help="list the archived memories")
    s.add_argument("--limit", type=int, default=50)
    s.add_argument("--offset", type=int, default=0)
    s = sub.add_parser("show", help="one memory as JSON")
    s.add_argument("id")
    sub.add_parser("stats", help="counts and health")
    sub.add_parser("health", help="full check of the store; exit status 1 on any problem")
    s = sub.add_parser("export", help="write memories to JSONL (ids, times, vectors kept)")
    s.add_argument("file")
    s.add_argument("--session", default=None)
    s = sub.add_parser("import", help="load a JSONL export (or a spill file)")
    s.add_argument("file")
    s = sub.add_parser("forget", help="delete memories by id / session / filter")
    s.add_argument("ids", nargs="*")
    s.add_argument("--all", action="store_true",
                   help="select every memory of the namespace (with no ids, session or filter)")
    s.add_argument("--yes", action="store_true",
                   help="confirm a forget of more than memory.forget.confirm_above memories")
    s.add_argument("--session", default=None)
    s.add_argument("--filter", action="append", metavar="KEY=VALUE")
    s.add_argument("--archived", action="store_true", help="delete from the archive")
    sub.add_parser("expire", help="delete memories whose TTL has passed (and archived ones "
                   "past memory.archive.retention_days)")
    s = sub.add_parser("archive", help="move memories to the archive (out of retrieval)")
    s.add_argument("ids", nargs="+")
    s.add_argument("--reason", default="manual", help="why (kept as archive_reason)")
    s = sub.add_parser("restore", help="move archived memories back")
    s.add_argument("ids", nargs="+")
    s = sub.add_parser("pin", help="pin memories: pruning and consolidation keep them")
    s.add_argument("ids", nargs="+")
    s = sub.add_parser("unpin", help="remove the pin of memories")
    s.add_argument("ids", nargs="+")
    add_consolidate_parser(sub)
    s = sub.add_parser("summarize", help="per-entity observation memories (memory.summaries; "
                       "retrieval.observations follows them)")
    s.add_argument("--dry-run", action="store_true", help="report what would be written")
    s.add_argument("--session", default=None, help="only this session's memories")
    s.add_argument("--json", action="store_true", help="print the report as JSON")
    sub.add_parser("facts", help="entities and time-aware facts (deepresearch-memory facts -h)")
    sub.add_parser("serve", help="the memory service: HTTP API (/docs) and MCP (/mcp); "
                   "memory.service.host=... port=... workers=...")
    sub.add_parser("mcp", help="the MCP server on stdio, for one local user")
    s = sub.add_parser("rebuild", help="rebuild the vector index from the records")
    s.add_argument("--reembed", action="store_true", help="recompute every vector")
    return p


_OVERRIDE = re.compile(r"^[+~]?[A-Za-z_][\w./@]*=")  # key=value, group/option=name, pkg@group=x


def split_overrides(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(Hydra overrides, the rest): KEY=VALUE arguments, except values of --filter."""
    overrides: list[str] = []
    rest: list[str] = []
    for i, arg in enumerate(argv):
        if _OVERRIDE.match(arg) and (i == 0 or argv[i - 1] != "--filter"):
            overrides.append(arg)
        else:
            rest.append(arg)
    return overrides, rest


def main(argv: Sequence[str] | None = None) -> int:
    """The console script; its output piped into a reader that stops early (`| head`) is a
    normal end: exit status 0, nothing on stderr."""
    return closed_pipe_ends_quietly(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not _OVERRIDE.match(a)), None)
    if command == "facts":  # its KEY=VALUE arguments are its own (facts/cli.py)
        from DeepResearch.src.memory.facts import cli as facts_cli

        rest = list(argv)
        rest.remove("facts")
        args, overrides = facts_cli.parse(rest)
        args.command = "facts"
    else:
        overrides, rest = split_overrides(argv)
        args = build_parser().parse_args(rest)
    try:
        config = load_config(overrides)
        if args.command == "forget" and args.filter:
            parse_filters(_parse_kv(args.filter))
        if args.command in ("serve", "mcp"):
            from DeepResearch.src.memory.service import run as service

            return service.serve(config) if args.command == "serve" else service.mcp_stdio(config)
        return asyncio.run(run(args, config))
    except (UnknownConfigKeyError, OverrideError) as exc:
        print(f"deepresearch-memory: error: {exc}", file=sys.stderr)
        return 2
    except (HydraException, OmegaConfBaseException) as exc:
        print(f"deepresearch-memory: error in the overrides {overrides}: {hydra_reason(exc)}",
              file=sys.stderr)
        return 2
    except MemoryBackendError as exc:
        print(f"deepresearch-memory: backend error: {exc}", file=sys.stderr)
        return 1
    except MemorySubsystemError as exc:  # input and configuration mistakes
        print(f"deepresearch-memory: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of the output is gone: closed_pipe_ends_quietly
        raise
    except (sqlite3.Error, OSError) as exc:  # the store's files: full disk, lock, damage
        print(f"deepresearch-memory: backend error: {failure_cause(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
