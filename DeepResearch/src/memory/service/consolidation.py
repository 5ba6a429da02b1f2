"""The service's periodic consolidation (`memory.consolidation.every_minutes`, off by default):
a background task, started and stopped with the app, that consolidates every namespace the
service serves (and prunes them when `memory.pruning.min_value` is set) one after the other.
A failed run is logged and the next one comes all the same."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time

from DeepResearch.src.memory.consolidation import ConsolidationReport, consolidate
from DeepResearch.src.memory.service.namespaces import Namespaces

log = logging.getLogger("DeepResearch.memory.service")


class PeriodicConsolidation:
    def __init__(self, namespaces: Namespaces) -> None:
        self.namespaces = namespaces
        self.config = namespaces.config
        self.runs = 0  # completed passes over the namespaces
        self.last_run: float | None = None  # when the last pass ended (epoch seconds)
        self.last_reports: dict[str, ConsolidationReport] = {}
        self._task: asyncio.Task[None] | None = None
        self._passed = asyncio.Condition()

    def targets(self) -> list[str]:
        """The namespaces the service serves: its API keys', or memory.namespace when local."""
        if self.namespaces.local:
            return [self.config.namespace]
        return sorted(set(self.namespaces.keys.values()))

    def start(self) -> None:
        if self.config.consolidation.every_minutes is not None and self._task is None:
            self._task = asyncio.create_task(self._loop(), name="memory-consolidation")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        minutes = self.config.consolidation.every_minutes
        assert minutes is not None
        while True:
            await asyncio.sleep(minutes * 60.0)
            await self.run_once()

    async def run_once(self) -> dict[str, ConsolidationReport]:
        """One pass over every namespace; the reports of those that succeeded."""
        prune = self.config.pruning.min_value is not None
        reports: dict[str, ConsolidationReport] = {}
        for namespace in self.targets():
            try:
                report = await self.namespaces.run(
                    consolidate(self.namespaces.client(namespace), prune=prune))
            except Exception:  # logged; the next pass comes all the same
                log.exception("periodic consolidation of namespace %r failed", namespace)
                continue
            reports[namespace] = report
            log.info(json.dumps({
                "event": "consolidated", "namespace": namespace, "clusters": len(report.clusters),
                "pruned": len(report.pruned), "memories_before": report.memories_before,
                "memories_after": report.memories_after, "seconds": report.seconds,
            }))
        self.last_reports.update(reports)
        self.last_run = time.time()
        async with self._passed:
            self.runs += 1
            self._passed.notify_all()
        return reports

    async def wait_for_runs(self, n: int) -> None:
        """Until `n` passes have completed (tests and shutdown hooks)."""
        async with self._passed:
            await self._passed.wait_for(lambda: self.runs >= n)
