"""Markdown tables and the recall@k plot of a LoCoMo run."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from benchmarks.locomo.data import CATEGORY_NAMES
from benchmarks.locomo.metrics import RecallTable

# The protocol README's reference figures for the development split (R@1, 5, 10, 20).
REFERENCE = {
    "BM25": (0.238, 0.445, 0.526, 0.602),
    "dense (MiniLM)": (0.176, 0.400, 0.501, 0.599),
    "RRF(BM25, dense)": (0.236, 0.476, 0.560, 0.687),
}


def overall_table(tables: Mapping[str, RecallTable]) -> str:
    first = next(iter(tables.values()))
    head = ("| method | questions | " + " | ".join(f"R@{k}" for k in first.ks)
            + " | sessions in top 10 |")
    rows = [head, "|---|---:|" + "---:|" * (len(first.ks) + 1)]
    for name, table in tables.items():
        means = table.mean()
        rows.append(
            f"| {name} | {len(table)} | " + " | ".join(f"{means[k]:.3f}" for k in table.ks)
            + f" | {table.mean_sessions():.2f} |"
        )
    return "\n".join(rows)


def category_table(tables: Mapping[str, RecallTable]) -> str:
    first = next(iter(tables.values()))
    head = ("| category | method | questions | " + " | ".join(f"R@{k}" for k in first.ks)
            + " | sessions in top 10 |")
    rows = [head, "|---|---|---:|" + "---:|" * (len(first.ks) + 1)]
    for category in first.categories():
        label = f"{category} {CATEGORY_NAMES.get(category, '')}".strip()
        for name, table in tables.items():
            means = table.mean(category)
            rows.append(
                f"| {label} | {name} | {table.count(category)} | "
                + " | ".join(f"{means[k]:.3f}" for k in table.ks)
                + f" | {table.mean_sessions(category):.2f} |"
            )
    return "\n".join(rows)


def reference_check(tables: Mapping[str, RecallTable]) -> str:
    """Largest gap between each measured baseline and the README's reference figures."""
    lines = []
    for name, ref in REFERENCE.items():
        if name not in tables:
            continue
        means = tables[name].mean()
        gap = max(abs(means[k] - r) for k, r in zip(tables[name].ks, ref, strict=True))
        lines.append(f"{name} {gap:.3f}")
    return "largest |measured − reference| per baseline: " + ", ".join(lines)


def plot_recall(tables: Mapping[str, RecallTable], path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for name, table in tables.items():
        means = table.mean()
        style = {"linewidth": 2.6} if name.startswith("project") else {"linestyle": "--"}
        ax.plot(table.ks, [means[k] for k in table.ks], marker="o", label=name, **style)
    ax.set_xlabel("k")
    ax.set_ylabel("recall@k")
    ax.set_xticks(list(next(iter(tables.values())).ks))
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
