"""Which stored place names a location query may mean, in three grades, best first:

  exact   the query itself ("San Francisco" for "san francisco")
  alias   another name of the same place or a place of the region it names, from the table
          in places.yaml ("SF" -> San Francisco; "the Bay Area" -> San Francisco, Oakland, ...)
  fuzzy   a stored place name close in spelling (rapidfuzz ratio >= FUZZY_MIN, names of at
          least FUZZY_MIN_LENGTH characters: "San Fransisco")

Keys are `name_key`s with dots and a leading "the" dropped, so "S.F.", "the bay area" and
"Bay Area" match their entries.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import yaml
from rapidfuzz import fuzz, process

from DeepResearch.src.memory.facts.store import name_key

TABLE = Path(__file__).with_name("places.yaml")
FUZZY_MIN = 85.0
FUZZY_MIN_LENGTH = 5
GRADES = ("exact", "alias", "fuzzy")


def place_key(name: str) -> str:
    key = name_key(re.sub(r"\.", "", name))
    return key[4:] if key.startswith("the ") else key


@functools.cache
def _table() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(key -> the keys of every name of its place, region key -> the keys of its places
    and their names)."""
    data = yaml.safe_load(TABLE.read_text(encoding="utf-8")) or {}
    same: dict[str, set[str]] = {}
    for canonical, others in (data.get("places") or {}).items():
        group = {place_key(canonical), *(place_key(o) for o in others or ())}
        for key in group:
            same.setdefault(key, set()).update(group)
    regions: dict[str, set[str]] = {}
    for region, members in (data.get("regions") or {}).items():
        keys = {k for m in members or () for k in same.get(place_key(m), {place_key(m)})}
        regions[place_key(region)] = keys
    return same, regions


def alias_keys(query: str) -> set[str]:
    """The keys the query may also mean (its other names, a region's places), without itself."""
    key = place_key(query)
    same, regions = _table()
    found = set(same.get(key, ()))
    for name in {key, *found}:
        found |= regions.get(name, set())
    found.discard(key)
    return found


def fuzzy_keys(query: str, pool: list[str]) -> set[str]:
    """The stored keys close in spelling to the query."""
    key = place_key(query)
    if len(key) < FUZZY_MIN_LENGTH:
        return set()
    candidates = [k for k in pool if len(k) >= FUZZY_MIN_LENGTH]
    return {near for near, _, _ in process.extract(key, candidates, scorer=fuzz.ratio,
                                                   score_cutoff=FUZZY_MIN, limit=None)}


def grade_of(name: str, query: str, aliases: set[str], fuzzy: set[str]) -> str | None:
    """How `name` (a stored place name) matches the query: a GRADES word, or None."""
    key = place_key(name)
    if key == place_key(query):
        return "exact"
    if key in aliases:
        return "alias"
    if key in fuzzy:
        return "fuzzy"
    return None
