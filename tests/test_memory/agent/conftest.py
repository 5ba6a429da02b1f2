"""The fact-graph fixtures of tests/test_memory/facts (the small team over in_memory and the
embedded backend), reused by the retrieval agent's tests."""

from tests.test_memory.facts.conftest import (  # noqa: F401 -- fixtures, re-exported
    TEAM_FACTS,
    backend_name,
    fact_client,
    fact_embedder,
    graph,
    team,
)
