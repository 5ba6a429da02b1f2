"""The counted BLAS limit, on the real numpy/OpenBLAS of this environment."""

from __future__ import annotations

import threading

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from DeepResearch.src.memory.blas_threads import BlasThreadLimit


def pool_threads() -> list[int]:
    """Thread counts of the process-wide BLAS pools (numpy's bundled OpenBLAS among them)."""
    return [
        i["num_threads"]
        for i in threadpool_info()
        if i["user_api"] == "blas" and i.get("threading_layer") != "openmp"
    ]


@pytest.fixture
def two_or_more() -> list[int]:
    before = pool_threads()
    if not before or min(before) < 2:
        pytest.skip(f"BLAS pools at {before} threads: a limit to one would not show")
    return before


def in_thread(work) -> None:  # type: ignore[no-untyped-def]
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


def test_a_worker_thread_limits_blas_while_another_thread_holds_threadpoolctls_control(
    two_or_more,
) -> None:
    limit = BlasThreadLimit(1)
    seen: list[list[int]] = []

    def work() -> None:
        with limit:
            seen.append(pool_threads())
        seen.append(pool_threads())

    # This thread sets a limit through threadpoolctl and so holds control of the pools:
    # threadpoolctl alone would now ignore a limit asked for by any other thread.
    with threadpool_limits(limits=max(two_or_more), user_api="blas"):
        in_thread(work)
    assert seen == [[1] * len(two_or_more), [max(two_or_more)] * len(two_or_more)]
    assert pool_threads() == two_or_more


def test_overlapping_users_keep_the_limit_until_the_last_one_leaves(two_or_more) -> None:
    limit = BlasThreadLimit(1)
    entered, first_left, done = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, list[int]] = {}

    def second() -> None:
        with limit:
            entered.set()
            first_left.wait(5)
            seen["after the first left"] = pool_threads()
        done.set()

    worker = threading.Thread(target=second)
    with limit:
        worker.start()
        assert entered.wait(5)
    first_left.set()
    worker.join(5)
    assert done.is_set()
    assert seen["after the first left"] == [1] * len(two_or_more)
    assert pool_threads() == two_or_more


def test_openmp_built_blas_is_left_alone() -> None:
    import faiss  # noqa: F401  (its wheel brings an OpenMP-built OpenBLAS)

    def openmp_pools() -> list[tuple[str, int]]:
        return [
            (i["filepath"], i["num_threads"])
            for i in threadpool_info()
            if i["user_api"] == "blas" and i.get("threading_layer") == "openmp"
        ]

    before = openmp_pools()
    if not before:
        pytest.skip("no OpenMP-built BLAS loaded here: nothing to leave alone")
    with BlasThreadLimit(1):
        assert openmp_pools() == before


def test_a_limit_below_one_thread_is_refused_by_value() -> None:
    with pytest.raises(ValueError, match="got 0"):
        BlasThreadLimit(0)
