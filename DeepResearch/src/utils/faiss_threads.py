"""FAISS calls run on their own worker threads, each limited to one OpenMP thread.

On 2 cores FAISS's OpenMP search threads and torch fight: an embed + flat search took 45 ms
with FAISS's default threads and 18 ms with one (../shared/API_NOTES.md). The limit is a
per-thread OpenMP setting, and when torch is imported before FAISS the two share one OpenMP
runtime: setting it on a shared `asyncio.to_thread` worker also cut torch to one thread on
that worker, and storing memories ran at 0.55x raw encode speed. So FAISS work goes to this
pool, whose threads are limited once at start, and embeddings keep the default pool.

A small read may also run in the caller's thread (faiss_store.INLINE_READS_UP_TO); that thread
is limited the same way while it reads (`one_openmp_thread_here`). Left at the default, a search there
started an OpenMP team whose idle worker spun on the second core and slowed the next query
embedding: a compound workflow run's recalls took +30 ms instead of -10 ms.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
WORKERS = 2  # a vector and a lexical search of one retrieve side by side

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _one_openmp_thread() -> None:
    import faiss

    faiss.omp_set_num_threads(1)


@contextmanager
def one_openmp_thread_here() -> Iterator[None]:
    """FAISS limited to one OpenMP thread in the calling thread for the block, then given
    back its setting (torch may share the OpenMP runtime, and this thread may run torch)."""
    import faiss

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
            _pool = ThreadPoolExecutor(
                max_workers=WORKERS, thread_name_prefix="faiss", initializer=_one_openmp_thread
            )
        return _pool


async def run_faiss(fn: Callable[..., T], *args: Any) -> T:
    """`await asyncio.to_thread(fn, *args)`, on the FAISS pool."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(faiss_pool(), functools.partial(fn, *args))
