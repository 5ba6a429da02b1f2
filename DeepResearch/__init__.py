"""DeepResearch: a research-agent framework with a first-class memory subsystem."""
