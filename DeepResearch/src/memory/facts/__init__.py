"""The knowledge-graph tier of the memory: entities and time-aware facts.

`model.py` holds what an entity and a fact are; `store.py` the small interface each backend
implements to persist them (next to, and transactional with, its memories); everything else
in this package (resolution, contradiction rules, ingestion, the ten fact tools) is written
once above that interface.
"""
