"""The faiss backend's cache work runs on its own worker threads; while FAISS is loaded (an
HNSW store: a flat store searches in numpy and never imports it), each is limited to one
OpenMP thread.

On 2 cores FAISS's OpenMP search threads and torch fight: an embed + flat search took 45 ms
with FAISS's default threads and 18 ms with one (../shared/API_NOTES.md). The limit is a
per-thread OpenMP setting, and when torch is imported before FAISS the two share one OpenMP
runtime: setting it on a shared `asyncio.to_thread` worker also cut torch to one thread on
that worker, and storing memories ran at 0.55x raw encode speed. So FAISS work goes to this
pool, whose threads are limited once FAISS is loaded, and embeddings keep the default pool.

A small read may also run in the caller's thread (faiss_store.INLINE_READS_UP_TO); that thread
is limited the same way while it reads (`one_openmp_thread_here`). Left at the default, a search there
started an OpenMP team whose idle worker spun on the second core and slowed the next query
embedding: a compound workflow run's recalls took +30 ms instead of -10 ms.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
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


@contextmanager
def one_openmp_thread_here() -> Iterator[None]:
    """FAISS, when loaded, limited to one OpenMP thread in the calling thread for the block,
    then given back its setting (torch may share the OpenMP runtime, and this thread may run
    torch)."""
    faiss = _loaded_faiss()
    if faiss is None:
        yield
        return
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


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
