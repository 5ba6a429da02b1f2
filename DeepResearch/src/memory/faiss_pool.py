"""FAISS work (the memory's embedded backend, the rag store) runs on this small pool, whose
threads limit FAISS to one OpenMP thread each once FAISS is loaded.

On 2 cores FAISS's OpenMP search threads and torch fight: an embed + flat search took 45 ms
with FAISS's default threads and 18 ms with one (../shared/API_NOTES.md). The limit is a
per-thread OpenMP setting, and when torch is imported before FAISS the two share one OpenMP
runtime: setting it on a shared `asyncio.to_thread` worker would also cut torch to one thread
on that worker. So FAISS work goes to this pool and embeddings keep the default one.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
WORKERS = 2  # a vector and a lexical search of one retrieve side by side

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_limited = threading.local()  # .done: this pool thread limited FAISS's OpenMP threads


def _loaded_faiss() -> Any:
    """The faiss module if something imported it, else None (never imports it: ~35 ms)."""
    return sys.modules.get("faiss")


def _on_one_openmp_thread(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on a pool thread, which limits FAISS to one OpenMP thread the first time
    it runs something with FAISS loaded (the setting is per thread and lasts)."""
    if not getattr(_limited, "done", False) and (faiss := _loaded_faiss()) is not None:
        faiss.omp_set_num_threads(1)
        _limited.done = True
    return fn(*args)


def faiss_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="faiss")
        return _pool


async def run_faiss(fn: Callable[..., T], *args: Any) -> T:
    """`await asyncio.to_thread(fn, *args)`, on the FAISS pool."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(
        faiss_pool(), functools.partial(_on_one_openmp_thread, fn, *args)
    )


@contextlib.contextmanager
def all_openmp_threads() -> Iterator[None]:
    """FAISS on every core for the calling pool thread, then back to one: for a bulk index
    build (an HNSW index of 60k vectors built in 30-38 s on 2 threads against 38-50 s on
    one, measured with another job on the machine), which no search is waiting behind."""
    faiss = _loaded_faiss()
    if faiss is None:
        yield
        return
    faiss.omp_set_num_threads(os.cpu_count() or 1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(1)
