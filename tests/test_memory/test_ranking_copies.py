"""Copies do not crowd the dense candidates: memories that share a vector and a text (a nested
loop's memories merged into its parent, the plan each run of a recurring question writes) are
one candidate, and the search widens until `n` different memories are in."""

from __future__ import annotations

from collections.abc import Callable

from DeepResearch.src.memory import MemorySystemClient
from DeepResearch.src.memory.backends.base import EMBEDDING_KEY

QUESTION = "how are variants called?"


async def test_copies_of_one_answer_leave_room_for_the_plan(
    make_client: Callable[..., MemorySystemClient], embedder
) -> None:
    """30 runs of one question stored the same answer (and 30 copies of it were merged into
    parent sessions); the plan of one run shares that vector. A recall of both types must
    return the plan: before, the 20 nearest were all answer copies, de-duplicated to one."""
    client = make_client()
    vector = embedder.embed([QUESTION])[0]
    answer = f"Question: {QUESTION}\nAnswer: callers compare reads with the reference."
    copies = [
        {"content": answer, "memory_type": "answer", "vector": vector, "session_id": f"run{i}",
         "metadata": {EMBEDDING_KEY: QUESTION}}
        for i in range(60)
    ]
    plan = {"content": f"Plan for {QUESTION!r} succeeded: 2 of 2 steps done.", "vector": vector,
            "memory_type": "plan", "session_id": "run60", "metadata": {EMBEDDING_KEY: QUESTION}}
    await client.store_many(copies)
    plan_id = (await client.store_many([plan]))[0]  # stored last: last among equal scores

    found = await client.retrieve(QUESTION, top_k=5, all_sessions=True,
                                  filters={"memory_type": ["plan", "answer"]})
    assert plan_id in {m.id for m in found}
    assert [m.document.memory_type for m in found].count("answer") == 1  # one of the copies
    assert max(m.similarity for m in found if m.id == plan_id) > 0.99
