"""`deepresearch-memory`: inspect and maintain the memory store on the project's Hydra config.

    deepresearch-memory COMMAND [options] [hydra overrides...]
    e.g. deepresearch-memory search "rna-seq aligner" --top-k 3 memory.faiss.path=outputs/memory

Commands: search, list, show ID, stats, export FILE, import FILE, forget, expire, rebuild.
Only `search`, and `import`/`rebuild` when vectors must be computed, load the embedding model
(torch); the others start fast.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from DeepResearch.src.memory.backends.base import DEFAULT_NAMESPACE, MemoryFilter, MemoryRecord
from DeepResearch.src.memory.client import MemorySystemClient
from DeepResearch.src.memory.compression import compress_content
from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.errors import MemorySubsystemError
from DeepResearch.src.memory.inputs import clean_metadata, clean_relations, parse_filters
from DeepResearch.src.memory.records_io import check_json_line, json_vector, record_to_json

CONFIG_DIR = Path(__file__).resolve().parents[3] / "configs"
PAGE = 1000


def load_config(overrides: Sequence[str], config_dir: Path = CONFIG_DIR) -> MemoryConfig:
    """Compose the project's Hydra config with `overrides`; validate its `memory` node."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    if (config_dir / "config.yaml").exists():
        with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
            cfg = compose(config_name="config", overrides=list(overrides))
        return MemoryConfig.from_omegaconf(cfg.memory)
    group = "default"
    local = []
    for item in overrides:
        if item.startswith("memory="):
            group = item.split("=", 1)[1]
        else:
            local.append(item.removeprefix("memory."))
    with initialize_config_dir(config_dir=str(config_dir / "memory"), version_base="1.3"):
        cfg = compose(config_name=group, overrides=local)
    return MemoryConfig.from_omegaconf(cfg)


def _parse_kv(items: Sequence[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep:
            raise SystemExit(f"--filter {item!r}: expected KEY=VALUE (VALUE is JSON or text)")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def _line(r: MemoryRecord, width: int = 80) -> str:
    from datetime import UTC, datetime

    text = r.content.replace("\n", " ")
    text = text if len(text) <= width else text[: width - 3] + "..."
    when = datetime.fromtimestamp(r.created_at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    return f"{r.id}  {when}  {r.session_id[:16]:16}  {r.memory_type:16}  {text}"


async def _scan_all(client: MemorySystemClient, flt: MemoryFilter) -> AsyncIterator[MemoryRecord]:
    offset = 0
    while True:
        page = await client.backend.scan(flt, limit=PAGE, offset=offset)
        for record in page:
            yield record
        if len(page) < PAGE:
            return
        offset += PAGE


async def run(args: argparse.Namespace, config: MemoryConfig) -> int:
    if args.command == "rebuild":
        return _rebuild(config, args.reembed)
    client = MemorySystemClient(config, session_id=getattr(args, "session", None) or None)
    await client.open()
    if not client.available:
        print(f"memory backend {config.backend!r} is unavailable", file=sys.stderr)
        return 2
    try:
        return await _dispatch(args, client)
    finally:
        await client.close()


async def _dispatch(args: argparse.Namespace, client: MemorySystemClient) -> int:
    cmd = args.command
    scope = MemoryFilter(session_ids=(args.session,)) if getattr(args, "session", None) else MemoryFilter()
    if cmd == "search":
        results = await client.retrieve(
            args.query, top_k=args.top_k, filters=_parse_kv(args.filter) or None,
            session_id=args.session, profile=args.profile, all_sessions=not args.session,
        )
        for m in results:
            print(f"{m.rank:>3}  {m.score:.4f}  {m.id}  {m.content[:100]!r}")
        return 0
    if cmd == "list":
        for r in await client.backend.scan(scope, limit=args.limit, offset=args.offset):
            print(_line(r))
        return 0
    if cmd == "show":
        found = await client.backend.get([args.id])
        if not found:
            print(f"no memory with id {args.id!r}", file=sys.stderr)
            return 1
        print(json.dumps(record_to_json(found[0], include_vector=False), indent=2, ensure_ascii=False))
        return 0
    if cmd == "stats":
        stats = (await client.stats()).as_dict()
        stats.pop("session_id")
        stats.pop("in_session")
        print(json.dumps({**stats, "health": (await client.backend.health()).detail}, indent=2))
        return 0
    if cmd == "export":
        n = 0
        with open(args.file, "w", encoding="utf-8") as fh:
            async for record in _scan_all(client, scope):
                fh.write(json.dumps(record_to_json(record), ensure_ascii=False) + "\n")
                n += 1
        print(f"exported {n} memories to {args.file}")
        return 0
    if cmd == "import":
        n = await _import(client, Path(args.file))
        print(f"imported {n} memories from {args.file}")
        return 0
    if cmd == "forget":
        removed = await client.forget(
            args.ids or None, filters=_parse_kv(args.filter) or None, session_id=args.session
        )
        print(f"forgot {removed} memories")
        return 0
    if cmd == "expire":
        print(f"expired {await client.expire()} memories")
        return 0
    raise SystemExit(f"unknown command {cmd!r}")


async def _import(client: MemorySystemClient, path: Path) -> int:
    from tqdm import tqdm

    cfg = client.config
    total = sum(1 for _ in path.open(encoding="utf-8"))
    batch: list[MemoryRecord] = []
    written = 0
    with path.open(encoding="utf-8") as fh, tqdm(total=total, unit="mem", desc="import") as bar:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                bar.update(1)
                continue
            where = f"{path}:{lineno}"
            data = check_json_line(json.loads(line), where)
            content, codec, blob = compress_content(data["content"], cfg.compression)
            batch.append(
                MemoryRecord(
                    id=data["id"], session_id=data["session_id"],
                    namespace=data.get("namespace") or DEFAULT_NAMESPACE,
                    memory_type=data.get("memory_type") or "note", agent_type=data.get("agent_type"),
                    content=content, created_at=float(data["created_at"]),
                    importance=float(data.get("importance", 0.5)),
                    temporal_weight=float(data.get("temporal_weight", 1.0)),
                    expires_at=data.get("expires_at"), content_codec=codec, content_blob=blob,
                    metadata=clean_metadata(data.get("metadata")),
                    relations=clean_relations(data.get("relations")),
                    vector=json_vector(data, where),
                )
            )
            if len(batch) >= cfg.storage.batch_size:
                written += await _write_batch(client, batch)
                bar.update(len(batch))
                batch = []
        if batch:
            written += await _write_batch(client, batch)
            bar.update(len(batch))
    return written


async def _write_batch(client: MemorySystemClient, batch: list[MemoryRecord]) -> int:
    dim = client.config.vector_store.embedding_dimension
    todo = [r for r in batch if r.vector is None or r.vector.shape != (dim,)]
    if todo:
        from DeepResearch.src.memory.compression import full_content

        vectors = client.embedder.embed([full_content(r.content, r.content_codec, r.content_blob) for r in todo])
        for record, vector in zip(todo, vectors, strict=True):
            record.vector = vector
    return await client.import_records(batch)


def _rebuild(config: MemoryConfig, reembed: bool) -> int:
    if config.backend != "faiss":
        print(f"rebuild applies to the faiss backend (memory.backend={config.backend!r})", file=sys.stderr)
        return 2
    import sqlite3

    from DeepResearch.src.memory.backends.embedded import DB_FILE, EmbeddedBackend
    from DeepResearch.src.memory.embeddings import get_embedder

    backend = EmbeddedBackend(
        config.faiss, dimension=config.vector_store.embedding_dimension,
        metric=config.vector_store.index_type, model=config.vector_store.embedding_model,
    )
    db_path = Path(config.faiss.path) / DB_FILE
    stored: dict[str, str] = {}
    if db_path.exists():
        with sqlite3.connect(db_path) as conn:
            stored = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    changed = stored.get("model", config.vector_store.embedding_model) != config.vector_store.embedding_model or stored.get(
        "dimension", str(config.vector_store.embedding_dimension)
    ) != str(config.vector_store.embedding_dimension)
    store = config.vector_store
    embed = get_embedder(store.embedding_model, store.embedding_runtime).embed if (reembed or changed) else None
    n = backend.rebuild(reembed=embed)
    how = "re-embedded and re-indexed" if embed else "re-indexed"
    print(f"{how} {n} memories in {config.faiss.path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="deepresearch-memory",
        description="Inspect and maintain DeepResearch memory. Extra KEY=VALUE arguments are "
        "Hydra overrides, e.g. memory.faiss.path=outputs/memory or memory=neo4j.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("search", help="ranked memories for a query (loads the model)")
    s.add_argument("query")
    s.add_argument("--top-k", type=int, default=None)
    s.add_argument("--session", default=None, help="search one session (default: all)")
    s.add_argument("--profile", default=None)
    s.add_argument("--filter", action="append", metavar="KEY=VALUE")
    s = sub.add_parser("list", help="memories, oldest first")
    s.add_argument("--session", default=None)
    s.add_argument("--limit", type=int, default=50)
    s.add_argument("--offset", type=int, default=0)
    s = sub.add_parser("show", help="one memory as JSON")
    s.add_argument("id")
    sub.add_parser("stats", help="counts and health")
    s = sub.add_parser("export", help="write memories to JSONL (ids, times, vectors kept)")
    s.add_argument("file")
    s.add_argument("--session", default=None)
    s = sub.add_parser("import", help="load a JSONL export (or a spill file)")
    s.add_argument("file")
    s = sub.add_parser("forget", help="delete memories by id / session / filter")
    s.add_argument("ids", nargs="*")
    s.add_argument("--session", default=None)
    s.add_argument("--filter", action="append", metavar="KEY=VALUE")
    sub.add_parser("expire", help="delete memories whose TTL has passed")
    s = sub.add_parser("rebuild", help="rebuild the vector index from the records")
    s.add_argument("--reembed", action="store_true", help="recompute every vector")
    return p


_OVERRIDE = re.compile(r"^[+~]?[A-Za-z_][\w.]*=")


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
    argv = list(sys.argv[1:] if argv is None else argv)
    overrides, rest = split_overrides(argv)
    args = build_parser().parse_args(rest)
    try:
        config = load_config(overrides)
        if args.command in ("forget",) and args.filter:
            parse_filters(_parse_kv(args.filter))
        return asyncio.run(run(args, config))
    except MemorySubsystemError as exc:
        print(f"deepresearch-memory: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
