"""Rate limiting: one token bucket per API key (per client address when no key is configured).
`take(who)` returns 0 when the request may go, else the seconds to wait (Retry-After)."""

from __future__ import annotations

import math
import time

from cachetools import LRUCache

from DeepResearch.src.memory.config import RateLimitConfig

MAX_BUCKETS = 100_000


class RateLimiter:
    def __init__(self, config: RateLimitConfig) -> None:
        self.rate = config.requests_per_second
        self.burst = float(config.burst)
        # who -> (tokens, at); the least recently used bucket goes beyond MAX_BUCKETS
        self._buckets: LRUCache[str, tuple[float, float]] = LRUCache(MAX_BUCKETS)

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def take(self, who: str, now: float | None = None) -> float:
        if not self.enabled:
            return 0.0
        now = time.monotonic() if now is None else now
        tokens, at = self._buckets.pop(who, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) * self.rate)
        if tokens >= 1.0:
            self._buckets[who] = (tokens - 1.0, now)
            wait = 0.0
        else:
            self._buckets[who] = (tokens, now)
            wait = (1.0 - tokens) / self.rate
        return wait

    @staticmethod
    def retry_after(wait: float) -> str:
        return str(max(1, math.ceil(wait)))
