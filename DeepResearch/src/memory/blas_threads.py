"""A counted, process-wide limit on BLAS threads, for work that runs better on fewer.

numpy's wheels bundle OpenBLAS built on pthreads: one pool of worker threads for the whole
process, sized by a process-wide call. Two consequences shape this module:
- Limits can overlap (two encodes in two threads), so the limit is counted: the first user in
  sets it, the last one out restores what it found. Uncounted, two overlapping limits restore
  each other's value and can leave BLAS on one thread for good.
- threadpoolctl (>= 3.6) lets only one Python thread change such a pool: the first that set
  a limit, until its `with threadpool_limits(...)` block ends. Every other thread's request
  is silently ignored. Work here runs in whichever thread asyncio hands it, so each change
  takes that control for the call and gives it back. Without that, a limit from a worker
  thread did nothing whenever another thread held control: measured on a store_many of 512
  texts, its sub-batches ran on two BLAS threads each, 150 -> 110 texts/s.
BLAS libraries built on OpenMP keep a thread count per calling thread, not per process: they
are left alone.
"""

from __future__ import annotations

import threading
from typing import Any


class BlasThreadLimit:
    """`with limit:` runs the block with the process's BLAS pools at `threads` threads."""

    def __init__(self, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.threads = threads
        self._lock = threading.Lock()
        self._users = 0
        self._found: list[tuple[Any, int]] = []  # (library, its thread count) while held
        self._libraries: list[Any] | None = None

    def __enter__(self) -> None:
        with self._lock:
            if self._users == 0:
                self._found = [
                    (lib, threads)
                    for lib in self._locate()
                    if (threads := lib.get_num_threads()) is not None
                ]
                for lib, _ in self._found:
                    _set_threads(lib, self.threads)
            self._users += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0:
                for lib, threads in self._found:
                    _set_threads(lib, threads)
                self._found = []

    def _locate(self) -> list[Any]:
        """The process-wide BLAS pools loaded so far, found once (walking the loaded
        libraries takes a few ms); numpy's is loaded with numpy, before any encode."""
        if self._libraries is None:
            from threadpoolctl import ThreadpoolController

            blas = ThreadpoolController().select(user_api="blas").lib_controllers
            self._libraries = [
                lib for lib in blas if getattr(lib, "threading_layer", None) != "openmp"
            ]
        return self._libraries


def _set_threads(lib: Any, threads: int) -> None:
    # The counted lock above keeps our changes in order; take threadpoolctl's per-pool
    # control for the call (a no-op attribute before 3.6, which had no such rule).
    release = getattr(type(lib), "clear_controlling_thread", None)
    if release is not None:
        release(force=True)
    lib.set_num_threads(threads)
    if release is not None:
        release(force=True)
