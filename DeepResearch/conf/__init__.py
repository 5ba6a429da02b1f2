"""The Hydra configuration of `deepresearch` and `deepresearch-memory` (pkg://DeepResearch.conf)."""
