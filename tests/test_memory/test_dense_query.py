"""retrieval.dense_query: what the dense search embeds. `without_names` embeds the query minus
the names it holds, `both` adds a second vector search for that name-free query, min-max
fused; the lexical list always reads the query as written."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from DeepResearch.src.memory import MemorySystemClient
from DeepResearch.src.memory.ranking.candidates import dense_query_text

MakeClient = Callable[..., MemorySystemClient]
QUERY = "What instruments does Dana play with Ravi?"


def test_names_leave_the_dense_query_sentence_starts_pronoun_and_acronyms_stay() -> None:
    assert dense_query_text(QUERY, "without_names") == "What instruments does play with"
    assert dense_query_text("What did Dana's brother cook?", "without_names") == "What did brother cook?"
    assert dense_query_text("Did I meet Ravi? Dana says so.", "without_names") == "Did I meet Dana says so."
    assert dense_query_text("When did Lee join the LGBTQ group?", "without_names") == (
        "When did join the LGBTQ group?")
    assert dense_query_text(QUERY, "as_written") == QUERY


@pytest.mark.parametrize("query", ["Who is Dana?", "Project Apollo Status Report"])
def test_a_query_that_is_mostly_names_is_embedded_as_written(query: str) -> None:
    assert dense_query_text(query, "without_names") == query


async def test_without_names_the_similarity_is_to_the_name_free_query(
    make_client: MakeClient,
) -> None:
    seen = {}
    for mode in ("as_written", "without_names"):
        client = make_client(retrieval={"dense_query": mode})
        memory = "Dana: I have been practising the violin every evening"
        await client.store(memory)
        hit = (await client.retrieve(QUERY, top_k=1))[0]
        vector = client.embedder.embed([memory])[0]
        seen[mode] = hit.similarity
        text = dense_query_text(QUERY, mode)
        assert hit.similarity == pytest.approx(float(vector @ client.embedder.embed([text])[0]),
                                               abs=1e-4)
    assert seen["as_written"] != pytest.approx(seen["without_names"], abs=1e-3)


async def test_both_brings_in_what_only_the_name_free_query_finds(make_client: MakeClient) -> None:
    """One dense candidate per list, no lexical list: the memory nearest the name-free query
    is found only by the second search, and its fused bonus (weight 1 x its normalised
    cosine, 1.0) puts it first (the two query vectors are far apart: cosine ~0.48)."""
    results = {}
    for mode in ("as_written", "both"):
        client = make_client(retrieval={
            "dense_query": mode, "dense_query_weight": 1.0, "hybrid": False, "candidate_pool": 1,
            "neighbour_smoothing": {"enabled": False}, "time_query": {"enabled": False},
        })
        written, name_free = client.embedder.embed([QUERY, dense_query_text(QUERY, "both")])
        assert float(written @ name_free) < 0.999  # two different vectors
        await client.store_many([
            {"content": "as written", "vector": written.tolist()},
            {"content": "name free", "vector": name_free.tolist()},
        ])
        hits = await client.retrieve(QUERY, top_k=1)
        results[mode] = (hits[0].content, hits[0].signals.get("topic"))
        given = await client.retrieve(QUERY, top_k=1, query_vector=written.tolist())
        assert given[0].content == hits[0].content  # a given vector: the topic one still added
    assert results["as_written"] == ("as written", None)
    assert results["both"][0] == "name free" and results["both"][1] == pytest.approx(1.0)


def test_dense_query_rejects_an_unknown_mode() -> None:
    from pydantic import ValidationError

    from DeepResearch.src.memory.config import RetrievalConfig

    with pytest.raises(ValidationError, match="dense_query"):
        RetrievalConfig(dense_query="no_names")
    assert np.isfinite(RetrievalConfig().dense_query_weight)
