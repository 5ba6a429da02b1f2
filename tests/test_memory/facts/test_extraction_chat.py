"""Ordinary chat phrasings the offline extractor reads beyond the plain "S verb at X": being
at / in a place or organisation, changes of job, team and home ("switched from X to Y",
"moved here from X"), skills said as a kind of person ("a Java guy"), by what one does ("I do
Terraform") or by years of practice, interests with chat fillers ("tbh"), couples and his / her
relations; with the phrasings next to them that must not be read so.

Each row: the conversation ('Author: text' lines; a lone string is one message of Carol's)
and the exact set of (subject, predicate, object) it states, MENTIONED and PARTICIPATED_IN
left out of the comparison."""

from __future__ import annotations

import pytest

from test_memory.facts.extraction_support import Triple, carol_rows, facts_of, find, stated

BEING_AT_OR_IN = carol_rows(
    ("I'm at Equinor now.", {("Carol", "WORKS_AT", "Equinor")}),
    ("I'm still stuck at Deloitte lol", {("Carol", "WORKS_AT", "Deloitte")}),
    ("Before this I was at Shopify for four years.", {("Carol", "WORKED_AT", "Shopify")}),
    ("I was at CMU too.", {("Carol", "STUDIED_AT", "CMU")}),
    ("I'm in Seattle now.", {("Carol", "LIVES_IN", "Seattle")}),
    ("Henrik is in Oslo too.", {("Henrik", "LIVES_IN", "Oslo")}),
    ("He's in a chess club.", set()),  # no one for "he"
    ("Bob is in a chess club.", {("Bob", "MEMBER_OF", "chess club")}),
    # a visit, an office, a place of a moment: no home, no employer
    ("I'm in Paris for the weekend.", set()),
    ("I'm in Lisbon next week.", set()),
    ("We are in the Madrid office.", set()),
    ("I'm at the Madrid office.", set()),
    ("Are you in Austin?", set()),
    ("I'm not at Google.", set()),
)

CHANGES = carol_rows(
    ("She switched from Goldman to Citadel.", set()),  # no one for "she"
    ("Noor switched from Goldman to Citadel last year.",
     {("Noor", "WORKED_AT", "Goldman"), ("Noor", "WORKS_AT", "Citadel")}),
    ("I switched from the mobile team to the backend team.",
     {("Carol", "MEMBER_OF", "mobile team"), ("Carol", "MEMBER_OF", "backend team")}),
    ("I moved from Berlin to Lisbon.",
     {("Carol", "LIVES_IN", "Berlin"), ("Carol", "LIVES_IN", "Lisbon")}),
    ("I moved out of Chicago.", {("Carol", "LIVES_IN", "Chicago")}),
    ("Nadia comes to us from CrowdStrike.", {("Nadia", "WORKED_AT", "CrowdStrike")}),
    ("I quit my job at Acme.", {("Carol", "WORKED_AT", "Acme")}),
    ("I'm no longer at Acme.", {("Carol", "WORKED_AT", "Acme")}),
    ("I'm not at Acme anymore.", {("Carol", "WORKED_AT", "Acme")}),
    ("I'm doing a PhD at Oxford now.", {("Carol", "STUDIED_AT", "Oxford")}),
    ("I'm doing a postdoc at EPFL.", {("Carol", "WORKS_AT", "EPFL")}),
    ("I'd switch from Goldman to Citadel.", set()),
)

SKILLS = carol_rows(
    ("I write mostly Scala and some Python.",
     {("Carol", "HAS_SKILL", "Scala"), ("Carol", "HAS_SKILL", "Python")}),
    ("I'm a Java guy.", {("Carol", "HAS_SKILL", "Java")}),
    ("I'm more of a Rust person.", {("Carol", "HAS_SKILL", "Rust")}),
    ("Fatima is an absolute wizard with Spark and dbt.",
     {("Fatima", "HAS_SKILL", "Spark"), ("Fatima", "HAS_SKILL", "dbt")}),
    ("I do terraform, aws, and way too much yaml.",
     {("Carol", "HAS_SKILL", "terraform"), ("Carol", "HAS_SKILL", "aws"),
      ("Carol", "HAS_SKILL", "yaml")}),
    ("I know way too much about nginx.", {("Carol", "HAS_SKILL", "nginx")}),
    ("I've done Kotlin forever.", {("Carol", "HAS_SKILL", "Kotlin")}),
    ("I've been climbing for like 10 years.", {("Carol", "HAS_SKILL", "climbing")}),
    ("I've started skiing.", {("Carol", "HAS_SKILL", "skiing")}),
    ("I've been waiting for 10 years.", set()),
    ("I do not do Python.", set()),
    ("I'm a French guy.", set()),  # a nationality, not a listed skill
)

INTERESTS_AND_PEOPLE = carol_rows(
    ("I'm obsessed with dinosaurs tbh", {("Carol", "INTERESTED_IN", "dinosaurs")}),
    ("I'm more into sci-fi honestly", {("Carol", "INTERESTED_IN", "sci-fi")}),
    ("I'm totally hooked on bouldering now.", {("Carol", "INTERESTED_IN", "bouldering")}),
    ("Jack and I are officially together.", {("Carol", "CLOSE_TO", "Jack"),
                                             ("Carol", "KNOWS", "Jack")}),
    ("can I bring my gf Noor", {("Carol", "CLOSE_TO", "Noor"), ("Carol", "KNOWS", "Noor")}),
    (("Carol: Josh is a black belt.", "Carol: I met Josh yesterday.",
      "Carol: his sister Beth is even better."),
     {("Carol", "KNOWS", "Josh"), ("Josh", "KNOWS", "Beth"), ("Josh", "CLOSE_TO", "Beth")}),
)

CHAT_TURNS = carol_rows(
    ("fyi Jack and I are officially together", {("Carol", "CLOSE_TO", "Jack"),
                                                ("Carol", "KNOWS", "Jack")}),
    ("me and Jun both know Kafka pretty well",
     {("Carol", "HAS_SKILL", "Kafka"), ("Jun", "HAS_SKILL", "Kafka")}),
    # a list ends at a negation: "never touched Terraform" negates only its own clause
    ("I mostly write Go and Python, never touched Terraform",
     {("Carol", "HAS_SKILL", "Go"), ("Carol", "HAS_SKILL", "Python")}),
    ("this is Fatima, she's joining our data team from Airbnb",
     {("Fatima", "MEMBER_OF", "data team"), ("Fatima", "WORKED_AT", "Airbnb")}),
    ("Welcome Nadia to the security team!", {("Nadia", "MEMBER_OF", "security team")}),
    ("I'm not on the infra team anymore", {("Carol", "MEMBER_OF", "infra team")}),
    ("I'm not on the infra team", set()),
    ("I used to be at Cloudflare.", {("Carol", "WORKED_AT", "Cloudflare")}),
    ("I'm working at a robotics company called Tensorgrip.",
     {("Carol", "WORKS_AT", "Tensorgrip")}),
    (("Vera: I met Luca in Leeds.", "Simon: Luca!! yeah of course",
      "Vera: he was my best mate that year"), {("Vera", "KNOWS", "Luca"), ("Luca", "CLOSE_TO", "Vera"),
                                                ("Luca", "KNOWS", "Vera")}),
    # a pronoun a few short chat sentences after its name
    (("Rosa: I ran into Diego at the airport", "Mika: DIEGO?? from uni?",
      "Rosa: yes! he lives in Mexico City now"),
     {("Rosa", "KNOWS", "Diego"), ("Diego", "LIVES_IN", "Mexico City")}),
)

LOWER_CASE_AND_VERBLESS = carol_rows(
    # lower-case chat: "i" is the author, a name after a verb's preposition is a name
    ("i work at google", {("Carol", "WORKS_AT", "Google")}),
    ("used to be at cloudflare but now i'm at fastly",
     {("Carol", "WORKED_AT", "Cloudflare"), ("Carol", "WORKS_AT", "Fastly")}),
    ("based in cork", {("Carol", "LIVES_IN", "Cork")}),
    ("i work at home", set()),
    ("i'm interested in distributed systems", {("Carol", "INTERESTED_IN", "distributed systems")}),
    # verbless clauses of an introduction are the author's
    (("Yusuf: Yusuf, backend engineer at Monzo, based in London.",),
     {("Yusuf", "WORKS_AT", "Monzo"), ("Yusuf", "LIVES_IN", "London")}),
    ("Data scientist, ex-Uber, now at Mercado Libre.",
     {("Carol", "WORKED_AT", "Uber"), ("Carol", "WORKS_AT", "Mercado Libre")}),
    ("update: quit my job at Acme, moved out of Chicago, now living in Denver",
     {("Carol", "WORKED_AT", "Acme"), ("Carol", "LIVES_IN", "Chicago"),
      ("Carol", "LIVES_IN", "Denver")}),
    ("I'm a PhD student at KTH, living in Stockholm",
     {("Carol", "STUDIED_AT", "KTH"), ("Carol", "LIVES_IN", "Stockholm")}),
    ("still in Cambridge actually", {("Carol", "LIVES_IN", "Cambridge")}),
    # ... or of the person the sentence is about, when a bare name known as a person opens it
    (("Carol: I met Owen last week.", "Carol: update: Owen, ex-Booking.com, strong in Java"),
     {("Carol", "KNOWS", "Owen"), ("Owen", "WORKED_AT", "Booking.com"),
      ("Owen", "HAS_SKILL", "Java")}),
    # a clause after another subject is not the author's; an unknown bare name: no one's
    ("Bob is great, based in London.", set()),
    ("he's nice, now at Google.", set()),
    ("Priya, ex-Google, based in Lisbon.", set()),
    ("based in London?", set()),
    ("Big fan of board games.", {("Carol", "INTERESTED_IN", "board games")}),
    ("Designer, previously Grab, now at Shopee.",
     {("Carol", "WORKED_AT", "Grab"), ("Carol", "WORKS_AT", "Shopee")}),
)

MORE_PHRASINGS = carol_rows(
    ("I intern at Stripe.", {("Carol", "WORKS_AT", "Stripe")}),
    ("I teach at Lycee Victor Hugo.", {("Carol", "WORKS_AT", "Lycee Victor Hugo")}),
    ("I started a new job at Canva.", {("Carol", "WORKS_AT", "Canva")}),
    ("I spent five years at Google.", {("Carol", "WORKED_AT", "Google")}),
    ("I spent three years in Berlin.", {("Carol", "LIVES_IN", "Berlin")}),
    ("at my last job, Zalando, I used Neo4j",
     {("Carol", "WORKED_AT", "Zalando"), ("Carol", "HAS_SKILL", "Neo4j")}),
    ("Apple laid me off.", {("Carol", "WORKED_AT", "Apple")}),
    ("Apple let me know.", set()),
    ("I have 5 years of experience with Python.", {("Carol", "HAS_SKILL", "Python")}),
    ("I can speak French.", {("Carol", "HAS_SKILL", "French")}),
    ("I'm a native Portuguese speaker.", {("Carol", "HAS_SKILL", "Portuguese")}),
    ("I play the cello.", {("Carol", "HAS_SKILL", "cello")}),
    ("I play Catan.", set()),
    ("I teach chemistry.", set()),  # an unlisted subject is not read
    ("I got really into pottery", {("Carol", "INTERESTED_IN", "pottery")}),
    ("I'm a huge history nerd.", {("Carol", "INTERESTED_IN", "history")}),
    ("I grew up in Manhattan.", {("Carol", "LIVES_IN", "Manhattan")}),
    ("I've been in Lisbon for two years.", {("Carol", "LIVES_IN", "Lisbon")}),
    ("I'm London-based.", {("Carol", "LIVES_IN", "London")}),
    ("I'm in my second year at Stanford.", {("Carol", "STUDIED_AT", "Stanford")}),
    ("I did my undergrad at McGill.", {("Carol", "STUDIED_AT", "McGill")}),
    ("I'm an MIT alum.", {("Carol", "STUDIED_AT", "MIT")}),
    ("I work on the payments team.", {("Carol", "MEMBER_OF", "payments team")}),
    ("I play in a jazz band.", {("Carol", "MEMBER_OF", "jazz band")}),
    ("I moved to the growth org.", {("Carol", "MEMBER_OF", "growth org")}),
    ("I'm married to Sam.", {("Carol", "CLOSE_TO", "Sam")}),
    ("Tom is an old friend of mine.", {("Carol", "KNOWS", "Tom"), ("Carol", "CLOSE_TO", "Tom")}),
    ("we used Postgres for the demo", set()),  # a team's use is no one's skill
    ("I'm going with Ana, my sister.", {("Carol", "KNOWS", "Ana"), ("Carol", "CLOSE_TO", "Ana")}),
)

ANSWERS = [
    (("Ben: where are you based?", "Alice: Lisbon, moved here in January"),
     {("Alice", "LIVES_IN", "Lisbon")}),
    (("Ben: where are you based?", "Alice: Lisbon", "Alice: what about you?",
      "Ben: Dublin for now."), {("Alice", "LIVES_IN", "Lisbon"), ("Ben", "LIVES_IN", "Dublin")}),
    (("Ben: where do you work?", "Alice: Stripe, since 2019"), {("Alice", "WORKS_AT", "Stripe")}),
    (("Jorge: you're in Austin right?", "Nadia: yup, south Austin."),
     {("Nadia", "LIVES_IN", "Austin")}),
    (("Jorge: you're in Austin right?", "Nadia: no, Dallas."), set()),
    (("Dev: does anyone here know Terraform well?", "Marta: I know it a bit, what's up"),
     {("Marta", "HAS_SKILL", "Terraform")}),
    (("Sofia: do you know Go?", "Ravi: enough to be dangerous"), {("Ravi", "HAS_SKILL", "Go")}),
    (("Sofia: do you know Go?", "Ravi: nope"), set()),
    (("Erin: I met Jack at uni.", "Erin: is he still at Accenture?", "Maya: nope, he left"),
     {("Erin", "KNOWS", "Jack"), ("Jack", "WORKED_AT", "Accenture")}),
    (("Erin: I met Jack at uni.", "Erin: is he still at Accenture?", "Maya: yes"),
     {("Erin", "KNOWS", "Jack"), ("Jack", "WORKS_AT", "Accenture")}),
    (("Petra: wait you moved to Oslo?? for the new job?", "Ola: yep"),
     {("Ola", "LIVES_IN", "Oslo")}),
    # a place answered types its name: the clause after it is the answerer's
    (("Ben: where are you based?", "Alice: Lisbon, moved here from Toronto"),
     {("Alice", "LIVES_IN", "Lisbon"), ("Alice", "LIVES_IN", "Toronto")}),
    # "anyone (else) into X?" says the asker is; a yes says the answerer is too
    (("Haruto: anyone into mechanical keyboards? I just built my first one",
      "Vik: YES. I have like 9"),
     {("Haruto", "INTERESTED_IN", "mechanical keyboards"),
      ("Vik", "INTERESTED_IN", "mechanical keyboards")}),
    (("Haruto: anyone into mechanical keyboards?", "Vik: nope"),
     {("Haruto", "INTERESTED_IN", "mechanical keyboards")}),
    # the asker's own next message answers nothing; nor does a later one
    (("Ben: where are you based?", "Ben: Lisbon"), set()),
    (("Ben: where are you based?", "Alice: hm", "Carl: Lisbon"), set()),
]

SKILL_FRAMES_AND_PRONOUNS = carol_rows(
    ("I'm really good at public speaking.", {("Carol", "HAS_SKILL", "public speaking")}),
    ("I'm good with kids.", set()),
    ("I have 10 years of experience in accounting.", {("Carol", "HAS_SKILL", "accounting")}),
    ("After six years at Google, I left.", {("Carol", "WORKED_AT", "Google")}),
    ("I'm a Google alum.", {("Carol", "WORKED_AT", "Google")}),
    ("I moved on from Acme last year.", {("Carol", "WORKED_AT", "Acme")}),
    ("my flat in Leith is tiny", {("Carol", "LIVES_IN", "Leith")}),
    ("I used to be on the mobile team.", {("Carol", "MEMBER_OF", "mobile team")}),
    (("Petra: Henrik is in Oslo too.", "Ola: I know him already."),
     {("Henrik", "LIVES_IN", "Oslo"), ("Ola", "KNOWS", "Henrik")}),
    ("I know her brother.", set()),
    # an introduction's verbless list of known skills is the author's
    ("Figma, Sketch, a bit of HTML/CSS.",
     {("Carol", "HAS_SKILL", "Figma"), ("Carol", "HAS_SKILL", "Sketch"),
      ("Carol", "HAS_SKILL", "HTML"), ("Carol", "HAS_SKILL", "CSS")}),
    ("stack: Python, Go and Postgres",
     {("Carol", "HAS_SKILL", "Python"), ("Carol", "HAS_SKILL", "Go"),
      ("Carol", "HAS_SKILL", "Postgres")}),
    ("Python, Bob and pizza.", set()),  # not all of it skills: no list of skills
    ("I use Python and Airtable.",
     {("Carol", "HAS_SKILL", "Python"), ("Carol", "HAS_SKILL", "Airtable")}),
    ("I knit.", {("Carol", "HAS_SKILL", "knitting")}),
    ("she climbs competitively", set()),  # no one for "she"
    ("I'd climb if I could.", set()),
    ("Rust is my thing.", {("Carol", "HAS_SKILL", "Rust")}),
    ("I sing in the choir.", {("Carol", "MEMBER_OF", "choir")}),
    ("I play bass in a band.", {("Carol", "MEMBER_OF", "band"), ("Carol", "HAS_SKILL", "bass")}),
    ("I'm on the team.", set()),  # a team not named
    ("Mostly Python and Go these days.",
     {("Carol", "HAS_SKILL", "Python"), ("Carol", "HAS_SKILL", "Go")}),
    ("Python, Go and Zig.", {("Carol", "HAS_SKILL", "Python"), ("Carol", "HAS_SKILL", "Go"),
                             ("Carol", "HAS_SKILL", "Zig")}),
    ("I did three years of RN at Klarna.", {("Carol", "WORKED_AT", "Klarna")}),
    # "it" of a skill: the skill named last (a few messages back at most)
    (("Quinn: we need someone who can do React Native", "Quinn: any ideas",
      "Lars: Beatriz knows it better than me"),
     {("Beatriz", "HAS_SKILL", "React Native"), ("Lars", "HAS_SKILL", "React Native")}),
    (("Quinn: we need someone who can do React Native", "Quinn: ok", "Quinn: hmm", "Quinn: so",
      "Quinn: well", "Lars: Beatriz knows it better than me"), set()),
    ("I know it.", set()),
    # where one works, said with it, is where one lives; not for a job still to begin
    ("I'm doing a postdoc at EPFL in Lausanne.",
     {("Carol", "WORKS_AT", "EPFL"), ("Carol", "LIVES_IN", "Lausanne")}),
    ("I was at Grab in Singapore.",
     {("Carol", "WORKED_AT", "Grab"), ("Carol", "LIVES_IN", "Singapore")}),
    ("I got a job at Bending Spoons in Milan.", {("Carol", "WORKS_AT", "Bending Spoons")}),
    ("I work at Google in the Zurich office.", {("Carol", "WORKS_AT", "Google")}),
    ("we were in the same lab", set()),
    ("are you still in industry?", set()),
    ("my friend Ana, who lives in Oslo, is visiting",
     {("Carol", "KNOWS", "Ana"), ("Carol", "CLOSE_TO", "Ana"), ("Ana", "LIVES_IN", "Oslo")}),
    ("I did an internship at Spotify.", {("Carol", "WORKED_AT", "Spotify")}),
    ("I'm a former Google engineer.", {("Carol", "WORKED_AT", "Google")}),
    ("I'm ex-Google.", {("Carol", "WORKED_AT", "Google")}),
    ("Sam and I broke up.", {("Carol", "CLOSE_TO", "Sam"), ("Carol", "KNOWS", "Sam")}),
    ("I'm a huge Arsenal fan.", {("Carol", "INTERESTED_IN", "Arsenal")}),
    ("I can't get enough of jazz.", {("Carol", "INTERESTED_IN", "jazz")}),
    ("Ana is like a sister to me.", {("Carol", "CLOSE_TO", "Ana")}),
    (("Carol: I moved to Berlin.", "Carol: I know Berlin well."), {("Carol", "LIVES_IN", "Berlin")}),
    # typos that swap two neighbouring letters, a vocative "you", a question's subject
    ("swithced from the mobile team to the search team",
     {("Carol", "MEMBER_OF", "mobile team"), ("Carol", "MEMBER_OF", "search team")}),
    ("Zoe ur in jersey city, it's basically ny", {("Zoe", "LIVES_IN", "Jersey City")}),
    (("Sara: does Ming still work at the bank?", "Tomas: she's doing a PhD at Oxford now"),
     {("Ming", "STUDIED_AT", "Oxford")}),
    ("Tobias ran the ES clusters at Zalando before joining us",
     {("Tobias", "WORKED_AT", "Zalando")}),
    ("8 yrs of swift dont just go away", {("Carol", "HAS_SKILL", "swift")}),
    # a skill said of another that says the author has it too
    ("Theo taught me basically everything I know about Kubernetes",
     {("Theo", "HAS_SKILL", "Kubernetes"), ("Carol", "HAS_SKILL", "Kubernetes"),
      ("Carol", "KNOWS", "Theo")}),
    ("Kenji knows Swift way better than me",
     {("Kenji", "HAS_SKILL", "Swift"), ("Carol", "HAS_SKILL", "Swift")}),
    ("Kenji knows Swift.", {("Kenji", "HAS_SKILL", "Swift")}),
    # a group called by its first word after it was named; a short word alone is no group
    (("Alice: I just joined the platform team", "Chloe: I'm on platform too"),
     {("Alice", "MEMBER_OF", "platform team"), ("Chloe", "MEMBER_OF", "platform team")}),
    ("I'm on vacation.", set()),
    ("My favourite band is Radiohead.", {("Carol", "INTERESTED_IN", "Radiohead")}),
    ("I've been reading a lot about urban planning.",
     {("Carol", "INTERESTED_IN", "urban planning")}),
    ("I spend my weekends hiking.", {("Carol", "INTERESTED_IN", "hiking")}),
    ("I used to run the ML team at Uber.", {("Carol", "WORKED_AT", "Uber")}),
    ("I used to live in Paris.", {("Carol", "LIVES_IN", "Paris")}),
    ("Deloitte was my first job.", {("Carol", "WORKED_AT", "Deloitte")}),
    ("I ran into my old boss at IBM.", {("Carol", "WORKED_AT", "IBM")}),
    ("Sam and I live together.", {("Carol", "CLOSE_TO", "Sam"), ("Carol", "KNOWS", "Sam")}),
    ("Ana (my sister) is visiting.", {("Carol", "CLOSE_TO", "Ana"), ("Carol", "KNOWS", "Ana")}),
    ("I'm a Toastmasters member.", {("Carol", "MEMBER_OF", "Toastmasters")}),
)

ROWS = (SKILL_FRAMES_AND_PRONOUNS + ANSWERS + MORE_PHRASINGS + BEING_AT_OR_IN + CHANGES + SKILLS + INTERESTS_AND_PEOPLE + CHAT_TURNS
        + LOWER_CASE_AND_VERBLESS)


@pytest.mark.parametrize("lines, expected", ROWS, ids=[" / ".join(r[0]) for r in ROWS])
async def test_phrasing_gives_exactly_its_facts(lines: tuple[str, ...],
                                                expected: set[Triple]) -> None:
    assert await stated(*lines) == expected


async def test_a_change_ends_the_old_fact_and_starts_the_new_one() -> None:
    facts = await facts_of("Carol: I switched from Goldman to Citadel.")
    assert find(facts, "WORKED_AT", "Goldman").invalid_at is not None
    citadel = find(facts, "WORKS_AT", "Citadel")
    assert citadel.invalid_at is None
    moved = await facts_of("Carol: I moved from Berlin to Lisbon.")
    assert find(moved, "LIVES_IN", "Berlin").invalid_at is not None
    assert find(moved, "LIVES_IN", "Lisbon").invalid_at is None


async def test_not_on_a_team_anymore_ends_the_membership() -> None:
    facts = await facts_of("Gina: I'm not on the infra team anymore")
    assert find(facts, "MEMBER_OF", "infra team").invalid_at is not None


async def test_a_break_up_ends_the_closeness() -> None:
    facts = await facts_of("Carol: Sam and I broke up.")
    assert find(facts, "CLOSE_TO", "Sam").invalid_at is not None
