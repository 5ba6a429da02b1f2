"""`memory.service` validation and the start-up refusals of `deepresearch-memory serve`."""

from __future__ import annotations

import pytest

from DeepResearch.src.memory.cli import main
from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.errors import MemoryConfigError
from DeepResearch.src.memory.service.namespaces import check_binding, load_api_keys
from DeepResearch.src.memory.service.ratelimit import RateLimiter

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("overrides", "says"), [
    (["memory.service.host=0.0.0.0"], "no API key configured"),
    (["memory.service.workers=2"], "memory.service.workers=1, or use memory.backend=neo4j"),
    (["memory.service.port=70000"], "memory.service.port=70000"),
    (["memory.service.rate_limit.burst=0"], "memory.service.rate_limit.burst=0"),
    (["+memory.service.colour=red"], "unknown configuration key 'memory.service.colour'"),
])
def test_serve_refuses(overrides: list[str], says: str, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("DEEPRESEARCH_MEMORY_API_KEYS", raising=False)
    assert main(["serve", f"memory.faiss.path={tmp_path}", *overrides]) == 2
    assert says in capsys.readouterr().err


def test_serve_refuses_a_port_another_process_listens_on(tmp_path, capsys, monkeypatch) -> None:
    """A real listener in another process holds the port: one line naming it, exit 2, and
    nothing loaded (uvicorn alone would log the bind error after start-up and exit 3)."""
    import subprocess
    import sys

    monkeypatch.delenv("DEEPRESEARCH_MEMORY_API_KEYS", raising=False)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import socket,sys,time; s=socket.socket(); s.bind(('127.0.0.1',0)); "
         "s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        port = int(holder.stdout.readline())
        assert main(["serve", f"memory.faiss.path={tmp_path}", f"memory.service.port={port}"]) == 2
        err = capsys.readouterr().err
        assert f"cannot listen on 127.0.0.1:{port}" in err and "memory.service.port=N" in err
        assert not (tmp_path / "memory.sqlite3").exists()  # refused before the store opened
    finally:
        holder.kill()
        holder.wait()


def test_keys_from_config_and_env() -> None:
    cfg = MemoryConfig(service={"api_keys": {"k" * 16: "alice"}})
    env = {"DEEPRESEARCH_MEMORY_API_KEYS": "b0123456789abcdefg=bob, c0123456789abcdefg=carol"}
    assert load_api_keys(cfg, env) == {"k" * 16: "alice", "b0123456789abcdefg": "bob",
                                       "c0123456789abcdefg": "carol"}
    env = {"DEEPRESEARCH_MEMORY_API_KEYS": '{"d0123456789abcdefg": "dave"}'}
    assert load_api_keys(cfg, env)["d0123456789abcdefg"] == "dave"
    with pytest.raises(MemoryConfigError, match="at least 16"):
        load_api_keys(cfg, {"DEEPRESEARCH_MEMORY_API_KEYS": "short=bob"})
    with pytest.raises(MemoryConfigError, match="namespace"):
        load_api_keys(cfg, {"DEEPRESEARCH_MEMORY_API_KEYS": "e0123456789abcdefg=../x"})
    with pytest.raises(MemoryConfigError, match="at least 16"):
        MemoryConfig(service={"api_keys": {"short": "alice"}})
    # with a key, another host is allowed
    check_binding(MemoryConfig(service={"host": "0.0.0.0"}), {"k" * 16: "alice"})
    with pytest.raises(MemoryConfigError, match=r"binds 127\.0\.0\.1 only"):
        check_binding(MemoryConfig(service={"host": "0.0.0.0"}), {})
    MemoryConfig(backend="neo4j", service={"workers": 4})  # several workers on Neo4j


def test_token_bucket() -> None:
    from DeepResearch.src.memory.config import RateLimitConfig

    limiter = RateLimiter(RateLimitConfig(requests_per_second=2, burst=2))
    assert limiter.take("a", now=0) == 0 and limiter.take("a", now=0) == 0
    assert limiter.take("a", now=0) == pytest.approx(0.5)
    assert limiter.take("b", now=0) == 0  # per key
    assert limiter.take("a", now=0.5) == 0  # refilled
    assert RateLimiter(RateLimitConfig(requests_per_second=0)).take("a") == 0  # off
