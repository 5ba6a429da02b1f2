"""`deepresearch-memory consolidate [--dry-run] [--namespace N] [--session S] [--prune] [--json]`:
merge near-duplicate memories and, with --prune, archive low-value ones (consolidation.py);
a progress bar on stderr while it works (on a terminal), then the report."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from DeepResearch.src.memory.client import MemorySystemClient
from DeepResearch.src.memory.consolidation import consolidate

STAGES = {"reading": ("reading", "memories"), "comparing": ("comparing", "groups"),
          "writing": ("writing", "clusters")}


def add_parser(sub: Any) -> None:
    s = sub.add_parser(
        "consolidate",
        help="merge near-duplicate memories (archiving the sources); --prune also archives "
        "low-value ones",
    )
    s.add_argument("--dry-run", action="store_true", help="report what would change; change nothing")
    s.add_argument("--namespace", default=None, help="the namespace (default: memory.namespace)")
    s.add_argument("--session", default=None, help="only this session's memories")
    s.add_argument("--prune", action="store_true",
                   help="also archive memories valued below memory.pruning.min_value")
    s.add_argument("--json", action="store_true", help="print the report as JSON")


class Bars:
    """One tqdm bar per stage (reading, comparing, writing), on stderr, shown on a terminal
    only; a stage's bar is cleared when it ends."""

    def __init__(self) -> None:
        self._bars: dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        from tqdm import tqdm

        bar = self._bars.get(stage)
        if bar is None:
            desc, unit = STAGES.get(stage, (stage, "it"))
            bar = self._bars[stage] = tqdm(total=total, desc=desc, unit=f" {unit}",
                                          file=sys.stderr, disable=None, leave=False)
        bar.total = total
        bar.n = done
        bar.refresh()
        if done >= total:  # this stage is over: its line is cleared for the next one
            bar.close()

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()


async def run_consolidate(args: argparse.Namespace, client: MemorySystemClient) -> int:
    bars = Bars()
    try:
        report = await consolidate(client, session=args.session, dry_run=args.dry_run,
                                   prune=args.prune, progress=bars)
    finally:
        bars.close()
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(report.summary())
    return 0
