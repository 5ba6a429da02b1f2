"""SYNTHESISED long conversations for benchmarks/bench_sessions.py: no real data, nothing
downloaded; the same seed gives the same users, sessions, turns and questions.

Each user talks with a friend over SESSIONS dated sessions a few days apart. A session holds
small talk, sometimes a purchase ("I bought a ... at ... today"), and sometimes one of the
user's recurring hobbies, told over several turns (so the turns around the one that answers
all match a question about the hobby: the case where neighbour smoothing fills a list with
one session). Questions:
- multi-session: "What have I made at pottery class?": the answer turns of every session of
  that hobby (2-6 sessions);
- time-anchored: "What did I buy two weeks ago?" (yesterday, last week, on <date>), asked
  `as_of` a day chosen so that one purchase is the answer.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

SESSIONS = 40
START = datetime(2024, 1, 8, 18, 30, tzinfo=UTC)

HOBBIES = {
    "pottery class": ("made", ["a blue vase", "a tea bowl", "a wobbly mug", "a small planter",
                               "a serving plate", "a clay owl"]),
    "the climbing gym": ("climbed", ["the orange overhang route", "a V4 slab", "the crack wall",
                                     "the yellow traverse", "a dyno problem", "the roof route"]),
    "book club": ("discussed", ["a novel about lighthouse keepers", "a memoir of a chef",
                                "a thriller set in Oslo", "a history of salt",
                                "a book of short ghost stories", "a biography of a chess champion"]),
    "cooking class": ("cooked", ["a mushroom risotto", "fresh ravioli", "a Thai green curry",
                                 "a lemon tart", "beef bourguignon", "steamed dumplings"]),
    "choir rehearsal": ("sang", ["a Bach chorale", "an old sea shanty", "a gospel medley",
                                 "a Beatles arrangement", "a Latin motet", "a lullaby in Welsh"]),
}
HOBBY_TALK = [
    "User: Just got back from {hobby}, I am tired but happy.",
    "Friend: Oh nice, how was {hobby} this time?",
    "User: At {hobby} I {verb} {obj}.",
    "Friend: That sounds great, {hobby} really suits you.",
    "User: The people at {hobby} are lovely, we stayed late chatting.",
]
ITEMS = ["a green raincoat", "a cast iron pan", "a pair of hiking boots", "a desk lamp",
         "a sourdough starter kit", "a used bicycle", "noise cancelling headphones", "a yoga mat",
         "a set of watercolours", "a wool blanket", "a coffee grinder", "a houseplant",
         "a chess set", "a travel backpack", "a kettle", "a board game", "a winter scarf",
         "a phone case", "garden shears", "a picture frame", "running shoes", "a teapot",
         "a camping stove", "a bird feeder"]
SHOPS = ["the market", "a charity shop", "the mall", "a small shop downtown", "the hardware store"]
SMALL_TALK = [
    "User: Work was busy today, lots of meetings.", "Friend: The weather has been so grey lately.",
    "User: I watched a documentary about whales last night.", "Friend: My cat knocked a glass over again.",
    "User: I am thinking about repainting the kitchen.", "Friend: Did you see the news about the new bridge?",
    "User: I slept badly, the neighbours had a party.", "Friend: My sister is visiting next month.",
    "User: I finally fixed the leaking tap.", "Friend: We should go for a walk by the river sometime.",
    "User: My manager liked my report.", "Friend: I started learning Spanish on my phone.",
]
TIME_ASKS = ["two weeks ago", "yesterday", "last week", "on {date}"]


@dataclass
class Turn:
    tid: str
    content: str
    session: int
    when: datetime


@dataclass
class Question:
    text: str
    kind: str  # "multi-session" | "time: <expression>"
    evidence: set[str]  # turn ids
    sessions: set[int]  # the sessions of the evidence
    as_of: datetime | None = None


@dataclass
class User:
    name: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def _date_words(when: datetime) -> str:
    return f"{when.day} {when.strftime('%B')} {when.year}"


def make_user(index: int, rng: random.Random) -> User:
    user = User(f"user{index}")
    hobbies = rng.sample(sorted(HOBBIES), 3)
    hobby_sessions = {h: sorted(rng.sample(range(SESSIONS), rng.randint(2, 6))) for h in hobbies}
    items = rng.sample(ITEMS, len(ITEMS))
    purchases: list[tuple[Turn, datetime]] = []
    when = START + timedelta(days=index)
    evidence: dict[str, tuple[set[str], set[int]]] = {h: (set(), set()) for h in hobbies}
    for s in range(SESSIONS):
        when += timedelta(days=rng.randint(3, 6))
        lines = rng.sample(SMALL_TALK, 3)
        hobby = next((h for h in hobbies if s in hobby_sessions[h]), None)
        if hobby is not None:
            verb, objects = HOBBIES[hobby]
            obj = objects[hobby_sessions[hobby].index(s)]
            lines[1:1] = [t.format(hobby=hobby, verb=verb, obj=obj) for t in HOBBY_TALK]
        bought = items.pop() if items and rng.random() < 0.5 else None
        if bought is not None:
            lines.insert(rng.randint(0, len(lines)), f"User: I bought {bought} at {rng.choice(SHOPS)} today.")
        for i, content in enumerate(lines):
            turn = Turn(f"{user.name}-s{s}-t{i}", content, s, when + timedelta(minutes=i))
            user.turns.append(turn)
            if hobby is not None and content.startswith(f"User: At {hobby} I "):
                evidence[hobby][0].add(turn.tid)
                evidence[hobby][1].add(s)
            if bought is not None and content.startswith(f"User: I bought {bought}"):
                purchases.append((turn, when))
    for hobby in hobbies:
        verb = HOBBIES[hobby][0]
        ids, sessions = evidence[hobby]
        user.questions.append(Question(f"What have I {verb} at {hobby}?", "multi-session", ids, sessions))
    for turn, when in rng.sample(purchases, min(8, len(purchases))):
        ask = rng.choice(TIME_ASKS)
        offset = {"two weeks ago": 14, "yesterday": 1, "last week": 7}.get(ask, rng.randint(20, 60))
        text = ask.format(date=_date_words(when))
        user.questions.append(Question(
            f"What did I buy {text}?", f"time: {ask.split(' {')[0]}", {turn.tid}, {turn.session},
            as_of=(when + timedelta(days=offset)).replace(hour=12, minute=0),
        ))
    return user


def make_users(n: int = 6, seed: int = 23) -> list[User]:
    rng = random.Random(seed)
    return [make_user(i, rng) for i in range(n)]
