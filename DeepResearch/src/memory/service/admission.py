"""Admission control: bounded work in flight per worker process, a bounded wait queue, and
past it an immediate refusal (503 `overloaded` with Retry-After) instead of a request that
waits its whole time limit to fail.

`Admission.enter()` admits a request at once while fewer than `max_in_flight` run; otherwise
it queues (first come, first served) while fewer than `max_queued` wait and the wait it can
expect is within a third of `max_wait_seconds`, and is refused at once when not. The
expected wait is the work ahead of it at the recent pace, over the slots: each request ahead
counts the running mean duration of its kind (method and path: a search is not an ingest of
a hundred messages); a kind not timed yet counts nothing, so only the count bounds it. So a refusal
comes on arrival, not after a wait: a queued request is refused later (at
`max_wait_seconds`) only when the pace drops threefold while it waits, for instance a
backend that stops answering. A refused request was never started: nothing of it was done
or stored. Retry-After is when the client's turn comes at that pace: after the work in
flight and queued, and after the clients refused before it that have not come back yet. A
crowd refused together is so told to come back one after another, at the pace the service
serves them, not all at once to be refused again."""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter, deque
from dataclasses import dataclass

from cachetools import LRUCache

from DeepResearch.src.memory.config_service import AdmissionConfig

EWMA_WEIGHT = 0.1  # weight of the newest request's duration in the running mean
HEADROOM = 1 / 3  # queued only when expected to start within this share of max_wait_seconds
MAX_OWED = 100_000  # refused clients remembered until their Retry-After has passed
MAX_KINDS = 64  # kinds of request whose pace is kept (least recently seen forgotten)


@dataclass
class Overloaded(Exception):
    """A request refused by admission control (never started)."""

    reason: str  # "queue_full", "wait_too_long" (both on arrival) or "wait_expired"
    message: str
    retry_after: int  # whole seconds (the header's unit)


class Admission:
    def __init__(self, config: AdmissionConfig) -> None:
        self.max_in_flight = config.max_in_flight
        self.max_queued = config.max_queued
        self.max_wait = config.max_wait_seconds
        self.in_flight = 0
        self._queue: deque[tuple[asyncio.Future[None], str]] = deque()  # (turn, kind)
        self._running: Counter[str] = Counter()  # the kinds in flight
        self._waiting: Counter[str] = Counter()  # the kinds queued (sums cost kinds, not requests)
        self._means: LRUCache[str, float] = LRUCache(MAX_KINDS)  # each kind's running mean
        self._mean_all = 0.0  # every kind's: the pace of the refused, whose kinds are not kept
        self._owed: deque[float] = deque()  # when each refused client was told to come back

    @property
    def enabled(self) -> bool:
        return self.max_in_flight > 0

    @property
    def queued(self) -> int:
        return len(self._queue)

    def pace(self, kind: str) -> float:
        """Seconds a request of `kind` runs, at the recent pace (0 before one was timed)."""
        return self._means.get(kind, 0.0)

    def _work(self, kinds: Counter[str]) -> float:
        return sum(self.pace(kind) * n for kind, n in kinds.items())

    def expected_wait(self) -> float:
        """Seconds a request queued now would wait for a slot: the queued work ahead of it and
        a request in flight's time (until a slot comes free), over the slots."""
        slot = self._work(self._running) / max(1, self.in_flight)
        return (self._work(self._waiting) + slot) / max(1, self.max_in_flight)

    def retry_after(self, kind: str = "") -> int:
        """Seconds until a refused client's turn, at the recent pace: after the work in
        flight and queued now and the clients refused before it that are still to come back
        (it is counted among them until then)."""
        now = time.monotonic()
        while self._owed and self._owed[0] <= now:
            self._owed.popleft()
        work = (self._work(self._running) + self._work(self._waiting)
                + len(self._owed) * self._mean_all + self.pace(kind))
        seconds = max(1, math.ceil(work / max(1, self.max_in_flight)))
        if len(self._owed) < MAX_OWED:
            self._owed.append(now + seconds)
        return seconds

    def _refuse(self, reason: str, kind: str) -> Overloaded:
        what = {
            "queue_full": f"{self.max_queued} requests already wait "
                          "(memory.service.admission.max_queued)",
            "wait_too_long": f"a newcomer would wait about {self.expected_wait():.1f} s for a "
                             "slot, more than a third of memory.service.admission."
                             f"max_wait_seconds={self.max_wait:g}",
            "wait_expired": "no slot came free within memory.service.admission."
                            f"max_wait_seconds={self.max_wait:g}",
        }[reason]
        retry = self.retry_after(kind)
        return Overloaded(reason, (
            f"the service is at its limit: {self.max_in_flight} requests in flight "
            f"(memory.service.admission.max_in_flight) and {what}. The request was not "
            f"started: nothing was stored or changed; send it again after {retry} s"), retry)

    async def enter(self, kind: str = "") -> None:
        """Return once a request of `kind` may run (call `leave` after it); Overloaded
        otherwise."""
        if self.in_flight < self.max_in_flight and not self._queue:
            self.in_flight += 1
            self._running[kind] += 1
            return
        if len(self._queue) >= self.max_queued:
            raise self._refuse("queue_full", kind)
        if self.expected_wait() > HEADROOM * self.max_wait:
            raise self._refuse("wait_too_long", kind)
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((turn, kind))
        self._waiting[kind] += 1
        try:
            await asyncio.wait_for(asyncio.shield(turn), self.max_wait)
        except TimeoutError:
            if turn.done() and not turn.cancelled():  # the slot came as the wait ended
                return
            turn.cancel()
            self._remove(turn)
            raise self._refuse("wait_expired", kind) from None
        except BaseException:  # the client went away while queued
            if turn.done() and not turn.cancelled():
                self.leave(None, kind)  # its slot goes to the next one
            else:
                turn.cancel()
                self._remove(turn)
            raise

    def _remove(self, turn: asyncio.Future[None]) -> None:
        for entry in self._queue:
            if entry[0] is turn:
                self._queue.remove(entry)
                self._uncount(self._waiting, entry[1])
                return

    @staticmethod
    def _uncount(kinds: Counter[str], kind: str) -> None:
        kinds[kind] -= 1
        if kinds[kind] <= 0:
            del kinds[kind]

    def leave(self, seconds: float | None, kind: str = "") -> None:
        """A request of `kind` admitted by `enter` is done (`seconds`: how long it ran)."""
        if seconds is not None:
            mean = self._means.get(kind, seconds)
            self._means[kind] = mean + EWMA_WEIGHT * (seconds - mean)
            self._mean_all += EWMA_WEIGHT * (seconds - self._mean_all) if self._mean_all else seconds
        self._uncount(self._running, kind)
        while self._queue:  # the slot passes to the first one still waiting
            turn, next_kind = self._queue.popleft()
            self._uncount(self._waiting, next_kind)
            if not turn.done():
                turn.set_result(None)
                self._running[next_kind] += 1
                return
        self.in_flight -= 1
