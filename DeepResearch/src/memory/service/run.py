"""`deepresearch-memory serve` (uvicorn) and `deepresearch-memory mcp` (stdio): the start-up
checks, the logging (JSON lines on stderr), and the processes."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import sys
from typing import Any

from DeepResearch.src.memory.config import MemoryConfig, check_store_folder
from DeepResearch.src.memory.errors import MemoryConfigError
from DeepResearch.src.memory.service.namespaces import check_binding, load_api_keys

CONFIG_ENV = "DEEPRESEARCH_MEMORY_SERVICE_CONFIG"  # the config handed to uvicorn's workers
GRACEFUL_SECONDS = 30


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        try:
            body: dict[str, Any] = json.loads(message) if message.startswith("{") else {"message": message}
        except json.JSONDecodeError:
            body = {"message": message}
        out = {"time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"), "level": record.levelname,
               "logger": record.name, **body}
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure_logging(level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # faiss.loader says at INFO that it fell back from AVX2, in words that read like a fault
    for noisy in ("uvicorn.access", "httpx", "mcp", "faiss.loader"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def checked_keys(config: MemoryConfig) -> dict[str, str]:
    keys = load_api_keys(config)
    check_binding(config, keys)
    check_store_folder(config)
    return keys


def check_port_free(host: str, port: int) -> None:
    """MemoryConfigError naming the address when another process listens on it, before
    the model and the store are loaded (uvicorn would say so after, in a log line, and exit 3).
    Port 0 (any free port) is always free."""
    if port == 0:
        return
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise MemoryConfigError(f"memory.service.host={host!r}: not an address: {exc}") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            raise MemoryConfigError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc} (another server "
                "there?); choose another port with memory.service.port=N"
            ) from None


def serve(config: MemoryConfig) -> int:
    import uvicorn

    from DeepResearch.src.memory.service.app import create_app

    keys = checked_keys(config)
    svc = config.service
    check_port_free(svc.host, svc.port)
    configure_logging()
    mode = ("local single-user: no API key configured, bound to 127.0.0.1 only, namespace "
            f"{config.namespace!r}" if not keys else
            f"{len(keys)} API keys, {len(set(keys.values()))} namespaces")
    print(f"deepresearch-memory: serving memory.backend={config.backend} on "
          f"http://{svc.host}:{svc.port} (API docs /docs, MCP /mcp, {svc.workers} worker(s)); "
          f"{mode}", file=sys.stderr, flush=True)
    common: dict[str, Any] = dict(host=svc.host, port=svc.port, log_config=None,
                                  timeout_graceful_shutdown=GRACEFUL_SECONDS,
                                  limit_concurrency=None, backlog=4096,
                                  # longer than clients keep idle connections: no reuse race
                                  timeout_keep_alive=75)
    set_switch_interval(svc.switch_interval_ms)
    if svc.workers == 1:
        uvicorn.run(create_app(config, keys=keys, settle=True), **common)
    else:  # neo4j only (MemoryConfig refuses more workers on the embedded store)
        os.environ[CONFIG_ENV] = config.model_dump_json()
        uvicorn.run("DeepResearch.src.memory.service.run:app_from_env", factory=True,
                    workers=svc.workers, **common)
    return 0


def set_switch_interval(ms: float) -> None:
    """memory.service.switch_interval_ms for this process (0: Python's default)."""
    if ms > 0:
        sys.setswitchinterval(ms / 1000)


def app_from_env() -> Any:
    """The app of one uvicorn worker process (several workers: neo4j)."""
    from DeepResearch.src.memory.service.app import create_app

    configure_logging()
    config = MemoryConfig(**json.loads(os.environ[CONFIG_ENV]))
    set_switch_interval(config.service.switch_interval_ms)
    return create_app(config, keys=load_api_keys(config), settle=True)


def mcp_stdio(config: MemoryConfig) -> int:
    """The MCP server on stdin/stdout for one local user (namespace memory.namespace)."""
    from DeepResearch.src.memory.service.mcp_server import build_mcp_server
    from DeepResearch.src.memory.service.namespaces import Namespaces
    from DeepResearch.src.memory.service.state import ServiceState

    check_store_folder(config)
    configure_logging(logging.WARNING)  # stderr only: stdout carries the protocol
    state = ServiceState(config=config, namespaces=Namespaces(config, {}))
    server = build_mcp_server(state)

    async def main() -> None:
        await state.namespaces.start()
        try:
            await server.run_stdio_async()
        finally:
            await state.namespaces.stop()

    asyncio.run(main())
    return 0
