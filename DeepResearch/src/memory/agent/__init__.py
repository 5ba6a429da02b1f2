"""Agents built on the memory: the retrieval agent (`retrieval/`), which turns a
conversation into the facts and memories worth knowing about it."""
