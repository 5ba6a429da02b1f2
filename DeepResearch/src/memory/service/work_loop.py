"""`WorkLoop`: the event loop the service's memory work runs on, in its own thread, apart from
the loop that serves HTTP.

A search runs its ranking steps as Python on whatever loop awaits it, 10-20 ms at a time
between two awaits. On the HTTP loop that work sits in front of every other callback: a
request past the admission limit, whose refusal costs well under a millisecond, waited
behind the running searches' steps before it was even read (refusals up to ~200 ms at twice
the saturation rate). Here the HTTP loop only reads requests, checks keys, limits and
admission, and writes answers; every call into the memory (clients, graphs, the backend)
runs on the work loop. The two threads share one interpreter lock, which the running one
hands over every few milliseconds (`sys.getswitchinterval()`), so the HTTP loop's turn
comes within that, not after the work in flight.

Everything that touches the namespaces' clients goes through `run` (ServiceState.bounded,
health, start, stop, periodic consolidation): their locks, tasks and futures all live on the
work loop. Before `start` (and after `stop`) `run` awaits the call on the caller's loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class WorkLoop:
    def __init__(self, name: str = "memory-work") -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._loop is not None

    def start(self) -> None:
        """Start the loop's thread (idempotent)."""
        if self._loop is not None:
            return
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def main() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        self._thread = threading.Thread(target=main, name=self.name, daemon=True)
        self._thread.start()
        ready.wait()
        self._loop = loop

    async def run(self, call: Coroutine[Any, Any, T]) -> T:
        """`await call`, run on the work loop. Cancelling the awaiting task (a time limit, a
        client gone) cancels the call there."""
        loop = self._loop
        if loop is None or loop is asyncio.get_running_loop():
            return await call
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call, loop))

    async def stop(self) -> None:
        """Stop the loop once its pending callbacks ran, and join its thread. Call after the
        last `run` returned (Namespaces.stop closes the clients on it first)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = self._thread = None

        async def finish() -> None:  # let the tasks the closing started end
            current = asyncio.current_task()
            rest = [t for t in asyncio.all_tasks() if t is not current]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)
            await loop.shutdown_asyncgens()

        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(finish(), loop))
        loop.call_soon_threadsafe(loop.stop)
        await asyncio.to_thread(thread.join, 30)
        loop.close()
