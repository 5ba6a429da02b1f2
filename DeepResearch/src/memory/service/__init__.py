"""The memory service: FastAPI (`deepresearch-memory serve`) and MCP (`deepresearch-memory
mcp`, and /mcp on the HTTP service). Thin: every endpoint and tool calls the namespace's
`MemorySystemClient`, FactGraph or the retrieval agent (operations.py). See docs/service.md.

    app.py         the FastAPI app, its middleware (request id, key, rate limit, body size,
                   metrics, trace, JSON log) and error bodies
    routes.py      the endpoints
    operations.py  what endpoints and MCP tools do, written once
    namespaces.py  API keys -> namespaces; one client (and FactGraph) per namespace over one
                   shared backend and embedder
    state.py       what one running service holds; the time limit of each call
    work_loop.py   the event loop (own thread) the memory work runs on, apart from HTTP
    batching.py    concurrent requests' texts embedded in one encode
    coalesce.py    group commit of one namespace's concurrent store requests
    ratelimit.py   the token buckets
    metrics.py     Prometheus metrics and the request traces
    mcp_server.py  the MCP tools
    schemas.py     request and response bodies
    run.py         `serve` and `mcp`: checks, uvicorn, stdio
"""

from DeepResearch.src.memory.service.app import create_app

__all__ = ["create_app"]
