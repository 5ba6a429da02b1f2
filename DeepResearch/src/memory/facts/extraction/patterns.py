"""The phrasings the offline extractor knows: one `Rule` per phrasing, in priority order.

Coverage (S = a subject: I / we (-> the author), he / she / his / her (-> the one person named
in this sentence or the four before, never the speaker nor one the other pronoun has named
("she" Alice is no "he"); with none, two or more, or a name of unknown kind among them, the
clause states nothing: see `antecedents`), a capitalised name (also with its organisation or
team: "Sarah from marketing knows SQL", see `affiliations`; "Ana, who ..."), "Bob and I" and
"me and Jun" (only where a clause starts, also after a chat interjection: "fyi Jack and I";
"I live in New York and I ..." is no "New York and I"); a subject left out after "and" / "then" /
"but" / "so" is the previous clause's, and none after an unresolved "he"; a chat sentence
opening on a past-tense verb of these rules is the author's ("Started at Shopify in 2021.",
"Just joined Stripe!"; not a question, nor in a document: see `clauses`); a list of objects
ends where a clause starts ("I know Python and Bob knows Rust"); "there" -> the organisation
(or place) last named in the conversation).
Confidence is the rule's base times 0.8 after a belief ("I think", "probably") or 0.6 after a
guess ("maybe", "might"), times 0.95 for what one person says about another, times 0.9 for a
pronoun subject. A negated verb ("do not work", "never worked"), a denial ("I don't think", "I
doubt", "not sure I know X") or a question states nothing; nor does a clause inside a condition
("if", "unless", "whether": "If I worked at Google ...") or one whose left-out subject follows
a modal or an intention ("I know Go and plan to move to Berlin and work at SAP"): see
`clauses.asserted`.

=========  ====================================================  =====  ====================
predicate  phrasing (example)                                    conf.  time
=========  ====================================================  =====  ====================
WORKS_AT   S work(s)/am working/am employed at|for X [as a R]    0.92   valid_at = message
           (role R also before "at")                                    (or since / for N y)
WORKS_AT   S am/is a R at|for X ("I'm a data scientist at Acme")  0.90   valid_at = message
WORKS_AT   S work(s)/worked with P at X: S, and each person P    0.90   as work(ed) at
           x0.85 ("I work with Bob at Google"; a skill is no P)
WORKS_AT   P at X <any clause> ("Sarah at Acme knows SQL"), P    0.75   valid_at = message
           from X (X known as an organisation: 0.70)
WORKS_AT   S have been at|with X for N years / since Y           0.85   valid_at = since / for
WORKS_AT   S am/is [now|still] at X (X ends its noun phrase: not  0.75   valid_at = message
           "at the Madrid office"; was at X: WORKED_AT; a school:
           STUDIED_AT); S am doing a postdoc/internship at X      0.80
WORKS_AT   S switched/jumped/went from X to Y: WORKED_AT X +       0.80   invalid_at / valid_at
           WORKS_AT Y (teams: MEMBER_OF both)                           = message
WORKED_AT  S comes to us / joined (us) / is joining our T from X 0.80   invalid_at = message
WORKED_AT  S am no longer at X; S am not at X anymore            0.80
WORKS_AT   S joined / started at / got hired by X [as a R] (not  0.85   valid_at = "in Y" or
           "joined the Zoom call")                                      message
WORKED_AT  S worked / used to work / was working at|for X|there  0.88   from A to B ->
           [as R] [from A to B / until B / since A]                     valid_at / invalid_at
WORKED_AT  S was a R at X                                        0.85   as above
WORKED_AT  S have worked at X (no "since" / "for N years")       0.80   as above
WORKED_AT  S left / quit / resigned from X; S no longer work(s)  0.85   invalid_at = "in Y"
           at X; S do not work at X anymore (left X, X a place           or message
           named before: LIVES_IN ends, 0.80)
HAS_SKILL  S have been coding/programming/developing in|with K   0.88   years ("for N
           [for N years / since Y] (+0.04 with a duration)              years"), proficiency
HAS_SKILL  S am good/fluent/proficient/experienced... at|in|with K 0.85 proficiency from the
                                                                        adjective
HAS_SKILL  S know(s) K (K in the skill or language list)         0.80
HAS_SKILL  S speak(s) [fluent] K                                 0.85   (language)
HAS_SKILL  S use / work(s/ing) with|in / write / build in K      0.78
           (K in the skill list)
HAS_SKILL  S am a K developer/engineer/programmer (listed K)     0.80
HAS_SKILL  S am/is learning / picking up K                        0.70   proficiency beginner
HAS_SKILL  S am a K person/guy/nerd/wizard (listed K); S am a      0.80 / 0.85
           wizard/whiz/great with K
HAS_SKILL  S know a lot / way too much about K; S do / have done  0.78 / 0.75
           K (listed K; "some K", "a bit of K" in lists)
HAS_SKILL  S have been V-ing for N years / since Y; S started /   0.75
           took up V-ing ("climbing", "skiing"; not "waiting")
INTERESTED_IN S am interested in / passionate about / fascinated 0.88
           by / obsessed with T
INTERESTED_IN S am (really) into / keen on / a fan of T          0.82
INTERESTED_IN S am curious / excited about T                     0.75
INTERESTED_IN S love / enjoy / like T; my hobby is T             0.70 / 0.80
LIVES_IN   S live(s) / am living / reside in X|there             0.90   valid_at = message
LIVES_IN   S am based / located in X                             0.88   valid_at = message
LIVES_IN   S moved / relocated [back] [from W] to X              0.85   valid_at = "in Y" or
                                                                        message
LIVES_IN   S moved [here/away] from / out of W (ended)           0.80   invalid_at = message
LIVES_IN   S am/is [now|still] in X (not with a visit, a trip, an 0.75   valid_at = message
           office, next / this week ...)
LIVES_IN   S lived / used to live in X                           0.85   invalid_at = end or
                                                                        message
LIVES_IN   S no longer live(s) in X; S do not live in X anymore  0.85   invalid_at = message
STUDIED_AT S studied [F] at X; S am studying at X; S did my PhD  0.90   field F; dates
           at X
STUDIED_AT S graduated from X [in Y]                             0.90   invalid_at = Y
STUDIED_AT S got/have a (degree) [in F] from X                    0.88
STUDIED_AT S am a (PhD) student at X                              0.90
STUDIED_AT S am doing a PhD/master's at X                          0.85
STUDIED_AT S went to / attended X (X a school by name)           0.82
KNOWS      A and B collaborate / work together / meet / are      0.85   + CLOSE_TO 0.75 with
           friends / know each other ("Bob and I ...")                  a frequency (weekly)
KNOWS      S collaborate(s) / work(s) / meet(s) / talk(s) with P  0.80   + CLOSE_TO 0.70 with
                                                                        a frequency
KNOWS      S know(s) P / met P                                   0.85 / 0.80
KNOWS      P is my friend/colleague/manager/...; my colleague P  0.88 / 0.85 + CLOSE_TO 0.80
                                                                        for close relations
CLOSE_TO   A and B are close / best friends / grew up together   0.85   (+ KNOWS)
           / are (officially) together / are dating / married
KNOWS      his/her R P ("his sister Beth": he's person)          0.80   + CLOSE_TO as my R P
CLOSE_TO   S am close (friends) / best friends with P            0.85   (+ KNOWS 0.85); just
                                                                        "friends with": 0.70
MEMBER_OF  S joined the G (G ends in team/group/club/...)        0.88   valid_at = "in Y" or
                                                                        message
MEMBER_OF  S am a member / part of (the) G or X; S am on the G;  0.88 / 0.85
           S belong(s) to G
MEMBER_OF  S left / quit the G                                   0.85   invalid_at
MEMBER_OF  S am/is in|with a/the G ("he's in a chess club")      0.80
More, 0.75-0.85: intern / teach / consult at X (WORKS_AT); started a new job at, founded X;
spent N years at X (WORKED_AT; "in X": LIVES_IN; a school: STUDIED_AT); my old / last job
(at) X; X laid me off; N years of (experience with) K; can speak / code in K; native K
speaker; my main stack is K; teach K; play the cello (an instrument); got into T; a huge T
nerd / geek / buff; grew up / born and raised in X (ended); have been in X for N years;
X-based; call X home; in my second year at X; an X alum; did / finished my undergrad at X;
work on / lead / play in / moved to the G (MEMBER_OF); married to / dating P (CLOSE_TO);
P is an old friend of mine; P, my sister (KNOWS, + CLOSE_TO as above). "we" states no
HAS_SKILL ("we used Postgres for the demo").
MENTIONED  the author named P (a capitalised name that no other  0.30
           fact of the message names)
=========  ====================================================  =====  ====================

Verbless clauses of chat ("Yusuf, backend engineer at Monzo, based in London", "ex-Uber, now
at Mercado Libre") and lower-case chat ("i'm at fastly") are first given their subject and
capitals back: see `fragments`.

Not covered (on purpose or not yet): lower-case names other than after a verb's preposition
("i know priya"), origin ("I'm from
Spain" is not LIVES_IN), plans ("I will move to X", "I'm moving to X", "I might join X": no
fact, a MENTIONED at most; `dates` reads no future phrase such as "next year" or "in June"
to date them by), possessive subjects ("my wife works at X"), pronouns other than he / she
("they" names no one), he vs she (not told apart: with Alice and Bob named, "she" names no
one), a subject left out after a comma or semicolon ("I work at Google; know Go": Go is not
read), facts spread over several sentences beyond "there" and he / she, and a role statement's
employer ("Dana is our CTO", "Our CTO is Dana": which organisation "our" means is not in the
message, so it gives no WORKS_AT; Dana is only known as a person: MENTIONED, he / she; see
`HINTS`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from DeepResearch.src.memory.facts.extraction.vocab import (
    BARE_GROUPS,
    CRAFT_VERBS,
    GROUP_WORDS,
    JOB_NOUNS,
    RELATIONS,
    SKILL_QUANTIFIERS,
    TITLES,
)

_W = r"[A-Z][\w&'.+-]*"
CAP = rf"{_W}(?: (?:of (?:the )?|for |de |& )?{_W}){{0,4}}"  # an organisation or place name
PERSON = r"[A-Z][a-z'-]+(?: [A-Z][a-z'-]+)?"
_ELIDED = r"(?<=\band)|(?<=\bthen)|(?<=\bbut)|(?<=\bso)"  # "... and worked there"
ADVERBS = (
    "also", "now", "currently", "still", "recently", "just", "really", "actually", "already",
    "finally", "both", "mostly", "probably", "definitely", "even", "previously", "once", "all",
    "maybe", "apparently", "officially", "basically", "originally", "eventually", "later",
    "then", "first", "happily", "briefly", "always", "long", "truly",
)
ADV = r"(?: (?:" + "|".join(ADVERBS) + r"))*"
# Words a clause can start after. "A and B" is one compound subject only where a clause starts
# (or after punctuation / the sentence's start): elsewhere A ends the previous clause ("I live
# in New York and I know Python" has no subject "New York and I").
_OPENERS = (
    *ADVERBS, "and", "but", "or", "so", "because", "since", "while", "when", "that", "though",
    "although", "if", "as", "where", "after", "before", "until", "think", "thinks", "thought",
    "guess", "believe", "believes", "hope", "said", "says", "heard", "suppose", "sure", "bet",
    "today", "yesterday", "tonight", "week", "month", "year", "weekend", "morning", "night",
    # chat interjections a clause follows ("fyi Jack and I are together")
    "fyi", "btw", "omg", "lol", "haha", "ok", "okay", "well", "yes", "yeah", "yep", "nope",
    "no", "oh", "anyway", "update", "news", "wow", "hey", "hi", "ps", "tbh", "honestly",
)
_BY_LENGTH: dict[int, list[str]] = {}
for _word in sorted(set(_OPENERS)):
    _BY_LENGTH.setdefault(len(_word), []).append(_word)
CLAUSE_START = "(?:^|(?<=[,;:(\"\u2014-])|(?<=[,;:(\"\u2014-] )|" + "|".join(
    rf"(?<=\b(?:{'|'.join(words)}) )" for words in _BY_LENGTH.values()) + ")"
_GROUP_ALT = "|".join(GROUP_WORDS)
# A named subject's organisation or team, read by `affiliations` ("Sarah at Acme knows SQL",
# "Sarah from the data team"): part of the subject, so that Acme is not the one who knows.
_AFFIL = (rf"(?P<affil> (?P<aprep>from|at|in|on) (?:the |our |their )?"
          rf"(?P<aorg>{CAP}|[a-z][\w&'-]*(?: (?:{_GROUP_ALT}))?))")
SUBJ = (
    rf"(?P<subj>(?<![\w'])(?:(?=[A-Zm]){CLAUSE_START}(?:{PERSON}|I|me) and (?:I|me|{PERSON})|I|i"
    rf"|[Ww]e|[Hh]e|[Ss]he|{PERSON}(?:,? who(?= )|{_AFFIL})?)|{_ELIDED})"
)
# Verbs in the form that does not go with one named person or he / she: "Sounds like a plan"
# is no "Sounds" who likes a plan.
BASE_FORMS = frozenset({
    "work", "live", "know", "like", "love", "enjoy", "adore", "speak", "code", "program",
    "develop", "use", "write", "build", "study", "attend", "belong", "collaborate", "pair",
    "meet", "talk", "chat", "play", "reside", "hang", "am", "are", "were", "have", "do",
})
ROLE = (
    r"[A-Za-z][\w-]*(?: [a-z][\w-]*){0,4}?"
    r"(?= (?:at|for|in|on|since|from|until|with|and|but|there|by)\b|[,;:.!?)]|$)"
)
GROUP = (rf"(?:(?!(?:the|a|an|of|same|other|different|whole|entire|wrong)\b)[\w&'-]+ ){{1,3}}?"
         rf"(?:{_GROUP_ALT})s?(?![\w-])")
# After "the / a / our", a group named by its kind alone ("in the choir", "in a band").
_BARE = "|".join(BARE_GROUPS)
GROUP0 = rf"(?:{GROUP}|(?:{_BARE})(?![\w-]))"
_SKILL_W = r"(?!I\b)[A-Za-z.][\w+#./-]*(?<![./-])(?: [A-Z][\w+#.]*(?<![.]))*"  # "Mario Kart"
# Verbs a clause starts with (after its subject, if any): a list ends before them, and before
# a pronoun ("I know Python and Bob knows Rust", "... and he knows Rust", "... and speaks
# French" list Python only).
_VERBS = "|".join(sorted(BASE_FORMS | {
    "is", "was", "has", "had", "did", "does", "will", "would", "can", "could", "works",
    "worked", "lives", "lived", "knows", "knew", "likes", "liked", "loves", "loved", "enjoys",
    "speaks", "spoke", "uses", "used", "writes", "wrote", "builds", "built", "studies",
    "studied", "attends", "attended", "belongs", "collaborates", "meets", "met", "talks",
    "plays", "joined", "left", "moved", "relocated", "graduated", "went", "got", "quit",
    "said", "says", "thinks",
}))
NEXT_CLAUSE = rf"(?:I|[Hh]e|[Ss]he|[Ww]e|[Tt]hey|[Yy]ou|never|not|no longer)\b|(?:{PERSON}{ADV} )?(?:{_VERBS})\b"
_NOT_NEXT = rf"(?!{NEXT_CLAUSE})"
_QUANT = "(?:(?:" + "|".join(SKILL_QUANTIFIERS) + ") )*"  # "some Python", "a bit of CSS"
SKILLS = rf"{_QUANT}{_SKILL_W}(?:(?:, and |, | and | or ){_NOT_NEXT}{_QUANT}{_SKILL_W}){{0,5}}"
PERSONS = rf"{PERSON}(?:(?:, and |, | and ){_NOT_NEXT}{PERSON}){{0,3}}"
_TOPIC_END = (
    r"(?=$|[,;:.!?)]| (?:but|because|since|when|so|which|though|although|for|at|with|on|"
    r"from|like|lately|these days|recently|right now|nowadays|as well|too|a lot|now|tbh|honestly|"
    r"lol|haha|though|anyway|in general|and (?:my|"
    rf"our|then|{NEXT_CLAUSE})|these|this)\b)"
)
TOPICS = rf"[\w+#'-]+(?: [\w+#'-]+){{0,6}}?{_TOPIC_END}"
_REL_ALT = "|".join(sorted(RELATIONS, key=len, reverse=True))
_ADJ = r"(?P<adj>best |close |good |old |former |new |dear )?"
_BE = r"(?:am|is|are|(?P<past>was|were))"
# Where a name ends its noun phrase: "at Goldman?", "in Oslo too", not "in the Madrid office".
NP_END = (r"(?=$|[,;:.!?)]| (?:now|too|still|these days|since|for|and|but|right|actually|though|"
          r"lol|haha|tbh|as|with|in|on|at|from|until|anymore|any more|already|again|"
          r"remotely|btw|full[- ]time|part[- ]time|either|as well|nowadays|at the moment|"
          r"so|where|which|who|because|or|then|after|before|lately|currently|these|this|"
          r"last|like|obviously|haha|I|we|is|was|has)\b)")
_CALLED = (r"(?:an? (?:[\w-]+ ){0,3}?(?:company|startup|start-up|firm|agency|studio|shop|lab|"
           r"bank|fund|consultancy|nonprofit|non-profit|place|business|school|university) "
           r"(?:called|named) )?")
_AT_ORG = (r"(?: (?:at|for|by) (?:the )?" + _CALLED + "(?P<obj>" + CAP +
           r")| (?P<there>there)(?![\w']))")
# "joined the Zoom call" / "the Google Meet" ... "meeting" is no employer.
_NOT_A_CALL = (r"(?![\w&'.+-]|(?: [A-Z][\w&'.+-]*)* (?:call|meeting|chat|channel|session|"
               r"huddle|standup|stand-up|room|server|webinar|stream)s?\b)")
_AS_ROLE = rf" as (?:an? |the |our |their )?(?P<role>{ROLE})"
_AS_ROLE2 = rf"(?: as (?:an? |the |our |their )?(?P<role2>{ROLE}))?"


# Triggers (lower-case substrings, one of which a sentence must hold for a rule to run) shared
# by several rules: the words ending a group, "am / is ... at|in", proficiency adjectives.
_GROUP_TRIGGERS = tuple(GROUP_WORDS)
_STUDY_TRIGGERS = ("stud", *(f"{verb} {det} " for verb in ("did", "finished", "completed",
                                                             "started", "got")
                             for det in ("my", "his", "her", "a", "an", "their")))
_BE_LEAD = ("am", "is", "are", "was", "were", "be", "now", "still", "stuck", "back", "also",
            "already", "happily", "formerly", "previously", "once", "originally", "currently",
            "based", "living")
_BE_WORDS_AT = (" at ",)
_BE_WORDS_IN = (" in ",)
_PROFICIENCY_TRIGGERS = (
    "expert", "fluent", "proficient", "skilled", "experienced", "good", "strong", "decent",
    "ok", "comfortable", "new", "beginner", "wizard", "whiz", "ninja", "guru", "great",
    "amazing", "excellent", "solid", "brilliant", "handy", "familiar", "confident",
    "competent", "certified", "versed", "pro", "master", "native", "productive")


@dataclass(frozen=True, slots=True)
class Rule:
    """One phrasing. `obj` names how the `obj` group is read (see offline.OBJECT_KINDS);
    `tense` how times apply: present, past, start (joined), end (left), state (KNOWS)."""

    name: str
    predicate: str
    confidence: float
    tense: str
    obj: str
    pattern: re.Pattern[str]
    triggers: tuple[str, ...]  # the rule runs only on a sentence holding one (lower case)
    negatable: bool = False  # the rule's own words hold a negation ("no longer")


def _rule(name: str, triggers: tuple[str, ...], predicate: str, confidence: float, tense: str,
          obj: str, regex: str, *, negatable: bool = False) -> Rule:
    return Rule(name, predicate, confidence, tense, obj, re.compile(regex), triggers, negatable)


RULES: tuple[Rule, ...] = (
    # --- MEMBER_OF first: "joined the Data team" is a group, not the organisation "Data"
    _rule("member_join", ('joined', 'got into', 'joining'), "MEMBER_OF", 0.88, "start", "group",
          rf"{SUBJ}{ADV} (?:joined|have joined|has joined|got into|is joining|am joining|"
          rf"are joining)(?! us\b) (?:the |a |an |our |my )?(?P<obj>{GROUP})(?! next| in \w+ "
          rf"(?:weeks?|months?|days?)| on \w+day| tomorrow| soon)"),
    _rule("welcome_to", ('welcome',), "MEMBER_OF", 0.8, "start", "group",
          rf"(?<![\w'])[Ww]elcome (?:(?:back|aboard) )?(?P<subj>{PERSON}) to (?:the |our )"
          rf"(?P<obj>{GROUP})"),
    _rule("member_be", ('member of', 'part of', 'one of'), "MEMBER_OF", 0.88, "present", "group_or_org",
          rf"{SUBJ}{ADV} {_BE} (?:now |still )?(?:a |an )?(?:member|part|one) of "
          rf"(?:the |a |an |our )?(?P<obj>{GROUP}|{CAP})"),
    _rule("member_on", _GROUP_TRIGGERS, "MEMBER_OF", 0.85, "present", "group",
          rf"{SUBJ}{ADV} (?:{_BE}|(?P<past2>used to be)) (?:now |still |(?P<neg>not |no longer ))?on "
          rf"(?:the |our |a |an )"
          rf"(?P<obj>{GROUP0})(?P<anymore> any ?more)?", negatable=True),
    _rule("member_in", _GROUP_TRIGGERS, "MEMBER_OF", 0.8, "present", "group",
          rf"{SUBJ}{ADV} (?:{_BE}|(?P<past2>used to be))(?: (?:now|currently|still|also))* (?:in|with) "
          rf"(?:the |a |an |our )"
          rf"(?P<obj>{GROUP0})"),
    _rule("member_work", _GROUP_TRIGGERS,
          "MEMBER_OF", 0.82, "present", "group",
          rf"{SUBJ}{ADV} (?:(?:work|works|am working|is working|are working|play|plays|sing|"
          rf"sings|volunteer|volunteers|row|rows|dance|dances|run|runs)(?: [a-z]+)?? "
          rf"(?:on|in|with|for)|lead|"
          rf"leads|run|runs|manage|manages|head|heads|captain|captains|coach|coaches|"
          rf"(?P<past>worked (?:on|in|with)|played (?:in|with|for)|sang in|led|ran|managed)|"
          rf"(?:moved|switched|transferred)(?: over)? to) (?:the |a |an |our )"
          rf"(?P<obj>{GROUP0})"),
    _rule("member_short", (' on ', ' in '), "MEMBER_OF", 0.75, "present", "known_group",
          rf"{SUBJ}{ADV} {_BE}(?: (?:now|still|also))* (?:on|in) (?P<obj>[a-z][\w-]+)"
          rf"(?= too| as well| now|[,.!?]|$)"),
    _rule("named_member", ('member',), "MEMBER_OF", 0.8, "present", "group_or_org",
          rf"{SUBJ}{ADV} {_BE} (?:now |still |also )?an? (?:(?:proud|active|founding|longtime|"
          rf"long-time) )?(?P<obj>{CAP}) member\b"),
    _rule("member_belong", ('belong',), "MEMBER_OF", 0.85, "present", "group_or_org",
          rf"{SUBJ}{ADV} (?:belong|belongs|(?P<past>belonged)) to (?:the |a |an |our )?"
          rf"(?P<obj>{GROUP}|{CAP})"),
    _rule("member_left", ('left', 'quit'), "MEMBER_OF", 0.85, "end", "group",
          rf"{SUBJ}{ADV} (?:left|quit) (?:the |a |an |our |my )?(?P<obj>{GROUP0})"),
    # --- work
    _rule("be_at", _BE_WORDS_AT, "WORKS_AT", 0.75, "present", "org",
          rf"{SUBJ}{ADV} (?:{_BE}|(?P<past2>used to be))(?: (?:now|currently|still|stuck|back|also|"
          rf"already|happily|formerly|previously|once|originally))* at (?:the )?(?P<obj>{CAP}){NP_END}"),
    _rule("work_at", ('work', 'employed', 'intern', 'teach', 'consulting', 'contracting', 'freelancing'), "WORKS_AT", 0.9, "present", "org",
          rf"{SUBJ}{ADV} (?:work|works|am working|is working|are working|have been working|"
          rf"has been working|(?P<perf>have worked|has worked)|am employed|is employed|"
          rf"are employed|(?:am |is |are )?(?:interning|teaching|consulting|contracting|"
          rf"freelancing)|intern|interns|teach|teaches)(?:{_AS_ROLE})?{_AT_ORG}{_AS_ROLE2}"),
    _rule("work_with_at", (' with ',), "WORKS_AT", 0.9, "present", "org",
          rf"{SUBJ}{ADV} (?:work|works|am working|is working|are working|(?P<past>worked|"
          rf"was working|were working|used to work)) (?:closely |together )?with "
          rf"(?P<with>{PERSONS}) at (?:the )?(?P<obj>{CAP})"),
    _rule("role_at", ('am a', 'is a', 'are a', 'was a', 'were a', 'am the', 'is the', 'are the', 'was the', 'were the', 'now a', 'now the', 'currently a', 'currently the', 'still a', 'still the'), "WORKS_AT", 0.9, "present", "org",
          rf"{SUBJ}{ADV} {_BE} (?:now |currently |still )?(?:an? |the )(?P<role>{ROLE}) "
          rf"(?:at|for|with) (?:the )?(?P<obj>{CAP})"),
    _rule("been_at", ("been at", "been with"), "WORKS_AT", 0.85, "present", "org",
          rf"{SUBJ}{ADV} (?:have|has) been (?:at|with) (?:the )?(?P<obj>{CAP})"
          rf"(?= (?:for|since) )"),
    _rule("worked_at", ('worked', 'used to work', 'was working', 'were working', 'employed', 'interned', 'taught', 'used to teach'), "WORKED_AT", 0.88, "past", "org",
          rf"{SUBJ}{ADV} (?:worked|used to work|was working|were working|had worked|"
          rf"was employed|were employed|interned|taught|used to teach)(?:{_AS_ROLE})?{_AT_ORG}"
          rf"{_AS_ROLE2}"),
    _rule("spent_at", ('spent', 'did ', 'put in'), "WORKED_AT", 0.8, "past", "org_or_place",
          rf"{SUBJ}{ADV} (?:spent|have spent|has spent|did|put in) (?:(?:almost |nearly |over |about |"
          rf"around )?(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|"
          rf"several|many) (?:years?|yrs?)|a decade|most of my career|my (?:twenties|career))"
          rf"(?: of (?:[\w+#.-]+ ){{0,2}}?[\w+#.-]+)? (?P<prep>at|in|with) (?:the )?(?P<obj>{CAP}){NP_END}"),
    _rule("before_joining", ('before joining', 'before coming', 'before moving'), "WORKED_AT",
          0.78, "past", "org",
          rf"{SUBJ}{ADV} [a-z]+(?: [\w-]+){{0,5}}? at (?:the )?(?P<obj>{CAP}) before (?:joining|"
          rf"coming to|moving to|moving over to) (?:us|here|the team|our team)\b"),
    _rule("former_of", ('former', 'ex-', 'ex '), "WORKED_AT", 0.8, "past", "org",
          rf"{SUBJ}{ADV} {_BE} (?:an? )?(?:former |ex-|ex )(?P<obj>{CAP})(?: (?:[\w-]+ ){{0,2}}?"
          rf"(?:{'|'.join(JOB_NOUNS)}|employee|staffer|person|guy|girl))?{NP_END}"),
    _rule("my_days", ('days',), "WORKED_AT", 0.75, "past", "school_or_org",
          rf"(?<![\w'])[Mm]y (?P<obj>{CAP}) days\b"),
    _rule("used_to_at", ('used to',), "WORKED_AT", 0.78, "past", "org",
          rf"{SUBJ}{ADV} used to (?!live|be\b|work\b)[a-z]+(?: [\w-]+){{0,4}}? (?:at|for) (?:the )?"
          rf"(?P<obj>{CAP}){NP_END}"),
    _rule("was_my_job", ('was my',), "WORKED_AT", 0.78, "past", "org",
          rf"(?<![\w'])(?P<obj>{CAP}) was my (?:first|last|previous|old|former) (?:real )?(?:job|"
          rf"employer|company|gig)\b"),
    _rule("my_old_job", ('my ',), "WORKED_AT", 0.8, "past", "org",
          rf"(?<![\w'])[Mm]y (?:old|previous|last|former|first) (?:job|company|employer|"
          rf"workplace|gig|boss|manager|team|colleagues|coworkers|office)(?: at | was (?:at )?|, | \(| - | )(?:the )?(?P<obj>{CAP}){NP_END}"),
    _rule("years_at", ('after', 'following', 'my time', 'my years', 'my days'), "WORKED_AT",
          0.78, "past", "school_or_org",
          rf"(?<![\w'])(?:(?:[Aa]fter|[Ff]ollowing) (?:almost |nearly |over |about )?(?:\d+|a few|"
          rf"several|many|two|three|four|five|six|seven|eight|nine|ten|a decade of|a decade) "
          rf"(?:years?|yrs?|months?)?|(?:[Dd]uring |[Ii]n )?[Mm]y (?:time|years|days)) "
          rf"(?:at|with) (?:the )?(?P<obj>{CAP}){NP_END}"),
    _rule("moved_on", ('moved on',), "WORKED_AT", 0.8, "end", "org",
          rf"{SUBJ}{ADV} (?:moved on|have moved on|has moved on) from (?:the )?(?P<obj>{CAP})"
          rf"{NP_END}"),
    _rule("left_for", ('left', 'quit'), "WORKS_AT", 0.78, "start", "org",
          rf"{SUBJ}{ADV} (?:left|quit) (?:the )?(?P<from>{CAP})(?: in (?:\w+ )?\w+| last \w+)? "
          rf"for (?:the )?(?P<obj>{CAP}){NP_END}"),
    _rule("laid_me_off", ('laid', 'let ', 'fired'), "WORKED_AT", 0.8, "end", "org",
          rf"(?<![\w'])(?P<obj>{CAP}) (?=laid \w+ off|let \w+ go|fired )(?:laid|let|fired) "
          rf"(?P<subj>me|him|her)\b"),
    _rule("joined_org", ('joined', 'started', 'hired', 'got a job', 'landed', 'founded'), "WORKS_AT", 0.85, "start", "org",
          rf"{SUBJ}{ADV} (?:joined|have joined|has joined|started at|started working (?:at|for)|"
          rf"started (?:a |my )?(?:new )?(?:job|role|position) (?:at|with)|landed a job (?:at|with)|"
          rf"founded|co-founded|cofounded|"
          rf"was hired by|were hired by|got hired (?:at|by)|got a job (?:at|with)) (?:the )?"
          rf"(?P<obj>{CAP}){_NOT_A_CALL}{_AS_ROLE2}"),
    _rule("left_org", ('left', 'quit', 'resigned', 'departed', 'laid off'), "WORKED_AT", 0.85, "end", "org",
          rf"{SUBJ}{ADV} (?:left|quit|resigned from|departed|(?:was|were|got) laid off "
          rf"(?:from|by))(?: (?:my|his|her|their) (?:job|position|role) (?:at|with))? (?:the )?"
          rf"(?P<obj>{CAP}){_NOT_A_CALL}"),
    _rule("change_from", ('switch', 'jumped', 'transferred', 'went from', 'went over', 'went back'), "WORKED_AT", 0.8, "end", "org_or_group",
          rf"{SUBJ}{ADV} (?:switched|jumped|transferred|went|have switched|has switched)"
          rf"(?: over| back)? from (?:the |my |our )?(?P<obj>{GROUP}|{CAP})"
          rf"(?= to | over to |,| and | last | this | in |$)"),
    _rule("change_to", ('switch', 'jumped', 'transferred', 'went from', 'went over', 'went back'), "WORKS_AT", 0.8, "start", "org_or_group",
          rf"{SUBJ}{ADV} (?:switched|jumped|transferred|went|have switched|has switched)"
          rf"(?: over| back)? from (?:the |my |our )?(?:{GROUP}|{CAP}) (?:over )?to "
          rf"(?:the |my |our )?(?P<obj>{GROUP}|{CAP}{_NOT_A_CALL})"),
    _rule("came_from", ('to us', 'joins', 'joined', 'joining'), "WORKED_AT", 0.8, "end", "org",
          rf"{SUBJ}{ADV} (?:comes to us|came to us|joins us|joined us|is joining us|joined|"
          rf"is joining|joins|is joining (?:the |our )[\w-]+(?: [\w-]+)?? (?:{_GROUP_ALT}))"
          rf" from (?:the )?(?P<obj>{CAP}){NP_END}"),
    _rule("no_longer_at", ('longer', 'anymore', 'any more'), "WORKED_AT", 0.8, "end", "org",
          rf"{SUBJ}{ADV} (?:am|is|are) (?:no longer|(?P<neg>not)) (?:at|with) (?:the )?"
          rf"(?P<obj>{CAP})(?P<anymore> any ?more)?", negatable=True),
    _rule("no_longer_work", ('no longer work', 'not work'), "WORKED_AT", 0.85, "end", "org",
          rf"{SUBJ}{ADV} (?:no longer work|no longer works|(?P<neg>do not work|does not work))"
          rf"{_AT_ORG}(?P<anymore> any ?more)?", negatable=True),
    _rule("no_longer_live", ('live',), "LIVES_IN", 0.85, "end", "place",
          rf"{SUBJ}{ADV} (?:no longer live|no longer lives|(?P<neg>do not live|does not live))"
          rf"(?: in (?:the )?(?P<obj>{CAP})| (?:in )?(?P<there>there)(?![\w']))"
          rf"(?P<anymore> any ?more)?",
          negatable=True),
    # --- skills
    _rule("skill_code", ('cod', 'program', 'develop'), "HAS_SKILL", 0.88, "state", "skill_any",
          rf"{SUBJ}{ADV} (?:have been |has been |am |is |are |have |has )?(?:coding|programming|"
          rf"developing|code|codes|program|programs|develop|develops|coded|programmed|"
          rf"developed) (?:mostly |mainly |primarily |professionally )?(?:in|with) "
          rf"(?P<obj>{SKILLS})"),
    _rule("skill_adj", _PROFICIENCY_TRIGGERS, "HAS_SKILL", 0.85, "state", "skill_free",
          rf"{SUBJ}{ADV} {_BE} (?:(?:really|very|pretty|quite|super|so|an?|absolute|total|"
          rf"real|complete|such an?|the) )*"
          rf"(?P<prof>expert|fluent|proficient|skilled|experienced|good|strong|decent|ok|okay|"
          rf"comfortable|new|beginner|wizard|whiz|ninja|guru|great|amazing|excellent|solid|"
          rf"brilliant|handy|familiar|confident|competent|certified|fluent|versed|well versed|"
          rf"a pro|pro|master|native|productive)(?: user| speaker)? (?:at|in|with|to) "
          rf"(?P<obj>{TOPICS})"),
    _rule("years_of_skill", ('years of', 'yrs of'), "HAS_SKILL", 0.75, "state", "skill_free",
          rf"^(?:(?:almost|nearly|over|about|like) )?(?:\d+\+?|a few|several|many|two|three|four|"
          rf"five|six|seven|eight|nine|ten|fifteen|twenty) (?:years?|yrs?) of (?P<obj>{SKILLS})"),
    _rule("skill_can", ('can ',), "HAS_SKILL", 0.8, "state", "skill_any",
          rf"{SUBJ}{ADV} can (?:also |even )?(?:speak|code in|program in|write|read|use|play|"
          rf"do) (?:some |a bit of |basic |fluent )?(?:the )?(?P<obj>{SKILLS})"),
    _rule("skill_years", ('years of', 'yrs of', 'years experience', 'yrs experience', 'years in ', 'yrs in ', 'years with', 'yrs with', 'year of', 'year in ', 'year with'), "HAS_SKILL", 0.8, "state", "skill_free",
          rf"{SUBJ}{ADV} (?:have|has|had|bring|brings) (?:(?:almost |nearly |over |about |"
          rf"around |like )?(?:\d+\+?|a few|several|many|two|three|four|five|six|seven|eight|nine|"
          rf"ten|fifteen|twenty)) (?:years?|yrs?) (?:of )?(?:experience )?(?:(?:in|with|of) )?"
          rf"(?:professional )?(?P<obj>{TOPICS})"),
    _rule("been_doing", ('been doing', 'been practi', 'been playing', 'been writing', 'been using', 'been working with', 'been teaching', 'been speaking', 'been studying'), "HAS_SKILL", 0.8, "state", "skill_free",
          rf"{SUBJ}{ADV} (?:have|has) been (?:doing|practicing|practising|playing|writing|using|"
          rf"working with|teaching|speaking|studying) (?P<obj>{TOPICS}) (?=(?:for|since) )"),
    _rule("teach", ('teach', 'taught'), "HAS_SKILL", 0.78, "state", "skill_vocab",
          rf"{SUBJ}{ADV} (?:teach|teaches|am teaching|is teaching|taught|(?:have|has) taught) "
          rf"(?P<obj>{SKILLS})"),
    _rule("native", ('native', 'mother tongue', 'first language'), "HAS_SKILL", 0.85, "state",
          "skill_any",
          rf"{SUBJ}{ADV} {_BE} (?:an? )?native (?P<obj>{_SKILL_W}) speaker|(?<![\w'])[Mm]y "
          rf"(?:native|first|mother) (?:language|tongue) is (?P<obj2>{_SKILL_W})"),
    _rule("my_stack", ('my ',), "HAS_SKILL", 0.8, "state", "skill_any",
          rf"(?<![\w'])[Mm]y (?:main |primary |daily |usual |go-to |favou?rite )?(?:language|"
          rf"languages|stack|tools?|weapon of choice|editor) (?:is|are|:) (?P<obj>{SKILLS})"),
    _rule("know_about", ('about',), "HAS_SKILL", 0.78, "state", "skill_free",
          rf"{SUBJ}{ADV} (?:know|knows|knew) (?:a lot|a ton|way too much|too much|so much|"
          rf"everything|loads|lots|quite a bit|a fair bit|a bit|a little|enough|tons) about "
          rf"(?P<obj>{TOPICS})"),
    _rule("skill_do", ('i do ', ' do ', ' does ', 'done', 'doing'), "HAS_SKILL", 0.75, "state", "skill_vocab",
          rf"{SUBJ}{ADV} (?:do|does|have done|has done|have been doing|has been doing) "
          rf"(?P<obj>{SKILLS})"),
    _rule("activity_for", ('ing for', 'ing since', 'started', 'took up', 'taken up'), "HAS_SKILL", 0.75,
          "state", "activity",
          rf"{SUBJ}{ADV} (?:(?:have|has) been (?P<obj>[a-z]+ing)(?= (?:for|since) (?:like |about |"
          rf"almost |over |nearly |around )?(?:\d+|a few|several|many|two|three|four|five|six|"
          rf"seven|eight|nine|ten|twenty|years|(?:19|20)\d\d|I was|he was|she was|childhood|"
          rf"high school|uni|college)\b)|(?:have |has )?(?:started|took up|taken up) "
          rf"(?P<obj2>[a-z]+ing)(?=$|[,;.!?]| (?:and|but|recently|lately|last|this)\b))"),
    _rule("know", ('know', 'knew'), "HAS_SKILL", 0.8, "state", "skill_or_person",
          rf"{SUBJ}{ADV} (?:know|knows|knew) (?P<obj>{SKILLS})"),
    _rule("speak", ('speak',), "HAS_SKILL", 0.85, "state", "skill_any",
          rf"{SUBJ}{ADV} (?:speak|speaks) (?:fluent )?(?P<obj>{SKILLS})"),
    _rule("skill_use", ('work', 'writ', 'wrote', 'build', 'use', 'using'), "HAS_SKILL", 0.78, "state", "skill_vocab",
          rf"{SUBJ}{ADV} (?:have been |has been |am |is |are )?(?:working|work|works|writing|building|"
          rf"using|use|uses|write|writes|used|wrote|build|builds) (?:things |stuff |apps |"
          rf"code |software |services |tools )?(?:(?:in|with) )?(?P<obj>{SKILLS})"),
    _rule("skill_dev", ('dev', 'engineer', 'programmer', 'expert', 'coder', 'person', 'guy', 'gal', 'girl', 'nerd', 'wizard', 'ninja', 'guru', 'whiz'), "HAS_SKILL", 0.8, "state", "skill_vocab",
          rf"{SUBJ}{ADV} {_BE} (?:more of an? |a bit of an? |kind of an? |an? |the )"
          rf"(?:senior |junior |lead |experienced |professional |great |good |strong |resident )?"
          rf"(?P<obj>{_SKILL_W}) (?:developer|dev|engineer|programmer|expert|coder|person|guy|"
          rf"gal|girl|nerd|wizard|ninja|guru|whiz)\b"),
    _rule("play_instrument", ('play',), "HAS_SKILL", 0.8, "state", "skill_instrument",
          rf"{SUBJ}{ADV} (?:play|plays|am playing|is playing|have played|has played|"
          rf"(?:have|has) been playing) (?:the |some |a bit of )?(?P<obj>[a-z]+)\b"),
    _rule("craft", tuple(f" {verb}" for verb in CRAFT_VERBS), "HAS_SKILL", 0.75, "state", "craft",
          rf"{SUBJ}{ADV} (?P<obj>{'|'.join(CRAFT_VERBS)})(?=$|[,.!;]| (?:a lot|a bit|too|well|"
          rf"professionally|competitively|for a living|every \w+|on weekends|in my free time|"
          rf"semi-professionally|as a hobby|since|and|but|lol|now)\b)"),
    _rule("skill_is_my", (' my ', ' his ', ' her '), "HAS_SKILL", 0.8, "state", "skill_any",
          rf"(?<![\w'])(?P<obj>{_SKILL_W}) (?:is|are) (?P<subj>my|[Hh]is|[Hh]er) (?:thing|jam|"
          rf"strength|forte|specialty|speciality|superpower|bread and butter|main language|"
          rf"first language)\b"),
    _rule("skill_list", (',', ' and '), "HAS_SKILL", 0.75, "state", "skill_list",
          rf"(?:^|(?<=: )|(?<=; )|(?<= - ))(?P<obj>{SKILLS})(?: these days| nowadays| lately| "
          rf"mostly| mainly| at work| too)?(?=[.!]*$|;| - )"),
    _rule("taught_me", ('taught me', 'teaches me', 'showed me'), "HAS_SKILL", 0.8, "state",
          "skill_any",
          rf"(?<![\w'])(?P<subj>{PERSON}|[Hh]e|[Ss]he) (?:taught|teaches|has taught|showed) me "
          rf"(?:basically |pretty much |literally )?(?:(?:everything|all|most of what|a lot|so "
          rf"much)(?: I know)? about )?(?P<obj>{SKILLS})"),
    _rule("skill_it", (' it',), "HAS_SKILL", 0.75, "state", "skill_it",
          rf"{SUBJ}{ADV} (?:know|knows|use|uses|used|write|writes|wrote|teach|teaches|taught|"
          rf"speak|speaks|(?:have|has) used|(?:have|has) written) (?P<obj>it)\b(?! (?:is|was|"
          rf"will|would)\b)"),
    _rule("skill_learn", ('learning', 'picking up'), "HAS_SKILL", 0.7, "state", "skill_any",
          rf"{SUBJ}{ADV} (?:am|is|are|have been|has been) (?:learning|picking up) "
          rf"(?P<obj>{SKILLS})"),
    # --- interests
    _rule("interest", ('interested', 'into', 'passionate', 'fascinated', 'curious', 'excited', 'keen', 'obsessed', 'fan of', 'hooked'), "INTERESTED_IN", 0.82, "present", "topics",
          rf"{SUBJ}{ADV} (?:am|is|are|(?:have|has){ADV} been|(?P<past>was|were)) (?:really |very |"
          rf"super |so |quite |pretty |also |getting |becoming |deeply |increasingly |more |"
          rf"totally |kind of |kinda |absolutely |completely |mostly |mainly |a huge |huge |"
          rf"such a |big |now |still )*"
          rf"(?P<how>interested in|into|passionate about|fascinated by|curious about|excited "
          rf"about|keen on|obsessed with|(?:an? )?(?:big |huge |massive )?fan of|hooked on) "
          rf"(?P<obj>{TOPICS})"),
    _rule("got_into", ('into',), "INTERESTED_IN", 0.78, "present", "topics",
          rf"{SUBJ}{ADV} (?:got|have got|has got|(?:am|is|are|have been|has been) getting) "
          rf"(?:really |super |very |big |heavily |deep )?into (?!the |a |an |my |our )(?P<obj>{TOPICS})"),
    _rule("enthusiast", ('nerd', 'geek', 'buff', 'enthusiast', 'fanatic', 'junkie', 'lover', 'addict', ' fan'),
          "INTERESTED_IN", 0.8, "present", "topics",
          rf"{SUBJ}{ADV} {_BE} (?:an? |such an? |the )(?:huge |big |total |massive |complete |"
          rf"real |bit of an? )?(?P<obj>[\w+#-]+(?: [\w+#-]+)?) (?:nerd|geek|buff|enthusiast|"
          rf"fanatic|junkie|lover|addict|fan)\b"),
    _rule("favourite", ('favourite', 'favorite', 'fave'), "INTERESTED_IN", 0.75, "present",
          "topics",
          rf"(?<![\w'])[Mm]y (?:all-time )?(?:favou?rite|fave) (?:[a-z]+ ){{1,2}}(?:is|are) "
          rf"(?P<obj>{TOPICS})"),
    _rule("a_lot_about", ('a lot about', 'tons about', 'loads about', 'my free time', 'my weekends', 'my evenings', 'my spare time'), "INTERESTED_IN", 0.75, "present", "topics",
          rf"{SUBJ}{ADV} (?:(?:have|has) been )?(?:(?:reading|learning|watching|read|learn|watch|"
          rf"reads|learns|watches) (?:a lot|tons|loads|so much) about|spend|spends|spent) "
          rf"(?:(?:all |most of )?(?:my|his|her) (?:free time|weekends|evenings|spare time) "
          rf"(?:on |doing )?)?(?P<obj>{TOPICS})"),
    _rule("cant_get_enough", ('enough of', 'geek out', 'nerd out', 'talk about'), "INTERESTED_IN",
          0.78, "present", "topics",
          rf"{SUBJ}{ADV} (?:cannot get enough of|can never get enough of|(?:geek|geeks|nerd|nerds) "
          rf"out (?:about|over|on)|could talk about) (?P<obj>{TOPICS})", negatable=True),
    _rule("like", ('love', 'enjoy', 'like', 'adore'), "INTERESTED_IN", 0.7, "present", "topics",
          rf"{SUBJ}{ADV} (?:really )?(?:love|loves|enjoy|enjoys|like|likes|adore|adores) "
          rf"(?P<obj>{TOPICS})"),
    _rule("hobby", ('hobb', 'passion is'), "INTERESTED_IN", 0.8, "present", "topics",
          rf"(?<![\w'])[Mm]y (?:favou?rite )?(?:hobby is|hobbies are|hobbies include|"
          rf"passion is) (?P<obj>{TOPICS})"),
    # --- places
    _rule("live", ('liv', 'resid'), "LIVES_IN", 0.9, "present", "place",
          rf"{SUBJ}{ADV} (?:live|lives|am living|is living|are living|have been living|"
          rf"has been living|have lived|has lived|reside|resides|(?P<past>lived|used to live|"
          rf"was living|were living))(?: (?:in|near|outside|outside of) (?:the )?"
          rf"(?P<obj>{CAP})| (?:in )?(?P<there>there)(?![\w']))"),
    _rule("based", ('based', 'located'), "LIVES_IN", 0.88, "present", "place",
          rf"{SUBJ}{ADV} {_BE} (?:now |currently )?(?:based|located) (?:in|out of) "
          rf"(?P<obj>{CAP})"),
    _rule("be_in", _BE_WORDS_IN, "LIVES_IN", 0.75, "present", "place",
          rf"{SUBJ}{ADV} {_BE}(?: (?:now|currently|still|also|back|based|living))* in (?:the )?"
          rf"(?P<obj>{CAP}){NP_END}(?!.*\b(?:visit|visiting|trip|weekend|vacation|holiday|"
          rf"conference|next|tomorrow|tonight|today|this week|for a (?:few )?(?:day|week)s?|"
          rf"flying|flight|landed|layover|passing through|office)\b)"),
    _rule("grew_up", ('grew up', 'raised', 'born'), "LIVES_IN", 0.82, "past", "place",
          rf"{SUBJ}{ADV} (?:grew up|was raised|were raised|was born and raised|were born and "
          rf"raised) (?:in|near|outside|outside of) (?:the )?(?P<obj>{CAP})"),
    _rule("been_in", ('been in', 'been living'), "LIVES_IN", 0.85, "present", "place",
          rf"{SUBJ}{ADV} (?:have|has) been (?:living |based )?in (?:the )?(?P<obj>{CAP})"
          rf"(?= (?:for|since) )(?!.*\b(?:visit|visiting|trip|vacation|holiday|conference)\b)"),
    _rule("x_based", ('-based',), "LIVES_IN", 0.85, "present", "place",
          rf"{SUBJ}{ADV} {_BE} (?:now |currently )?(?:an? )?(?P<obj>{CAP})-based\b"),
    _rule("call_home", ('home',), "LIVES_IN", 0.85, "present", "place",
          rf"{SUBJ}{ADV} (?:call|calls) (?P<obj>{CAP}) home\b|(?<![\w'])[Hh]ome is (?:now )?"
          rf"(?P<obj2>{CAP}){NP_END}"),
    _rule("my_home_in", ('my ', 'our '), "LIVES_IN", 0.8, "present", "place",
          rf"(?<![\w'])(?:[Mm]y|[Oo]ur) (?:new |little |tiny |small )?(?:flat|apartment|house|"
          rf"place|home|condo|studio) (?:is )?in (?:the )?(?P<obj>{CAP}){NP_END}"),
    _rule("moved_from", ('moved from', 'moved here', 'moved there', 'moved away', 'moved back', 'moved out', 'relocated from', 'relocated here', 'relocated away', 'relocated back', 'relocated out', 'relocated there'), "LIVES_IN", 0.8, "end", "place",
          rf"{SUBJ}{ADV} (?:moved|relocated|have moved|has moved)(?: here| there| away| back| "
          rf"out)? (?:from|out of) (?:the )?(?P<obj>{CAP})"),
    _rule("move", ('mov', 'relocat'), "LIVES_IN", 0.85, "start", "place",
          rf"{SUBJ}{ADV} (?:moved|relocated|have moved|has moved)(?: back| here| there| over)?"
          rf"(?: from (?:the )?{CAP})? to (?:the )?(?P<obj>{CAP})"),
    # --- schools
    _rule("study", _STUDY_TRIGGERS, "STUDIED_AT", 0.9, "past", "org",
          rf"{SUBJ}{ADV} (?:studied|was studying|were studying|(?P<now>study|studies|"
          rf"am studying|is studying|are studying)|(?:did|finished|completed|started|got) "
          rf"(?:my|his|her|a|an|their) (?!(?:postdoc|post-doc|residency|fellowship|internship|"
          rf"apprenticeship)\b)(?P<degree>[\w'-]+(?: [\w'-]+)??))(?: (?P<field>[A-Za-z][\w-]*(?: [A-Za-z][\w-]*)"
          rf"{{0,3}}?))? at (?:the )?(?P<obj>{CAP})"),
    _rule("study_doing", ('doing',), "STUDIED_AT", 0.85, "present", "org",
          rf"{SUBJ}{ADV} (?:am|is|are) (?:now |currently |still )?doing (?:my|his|her|a|an|their) "
          rf"(?P<degree>(?:[\w'-]+ ){{0,2}}?(?:degree|PhD|phd|masters?|master's|bachelors?|"
          rf"bachelor's|MBA|MSc|BSc|BA|MA|doctorate|diploma))(?: in (?P<field>[A-Za-z][\w-]*"
          rf"(?: [A-Za-z][\w-]*){{0,3}}?))? (?:at|in) (?:the )?(?P<obj>{CAP})"),
    _rule("job_doing", ('doing', 'did '), "WORKS_AT", 0.8, "present", "org",
          rf"{SUBJ}{ADV} (?:(?:am|is|are) (?:now |currently |still )?doing|(?P<past>did)) "
          rf"(?:my|his|her|a|an|their) "
          rf"(?P<role>postdoc|post-doc|residency|fellowship|internship|apprenticeship) "
          rf"(?:at|with) (?:the )?(?P<obj>{CAP})"),
    _rule("year_at", ('year at', 'year of', 'semester at', 'term at', 'sophomore', 'freshman', 'fresher', 'junior at', 'senior at', 'grad student', 'undergrad at', 'year at'),
          "STUDIED_AT", 0.85, "present", "org",
          rf"{SUBJ}{ADV} {_BE} (?:now |currently |still )?(?:in (?:my|his|her|their) (?:\w+ )?"
          rf"(?:year|semester|term)|an? (?:sophomore|freshman|fresher|junior|senior|first-year|"
          rf"second-year|third-year|final-year|grad student|undergrad)) (?:at|of) (?:the )?"
          rf"(?P<obj>{CAP})"),
    _rule("alum", ('alum', 'grad', 'alma mater'), "STUDIED_AT", 0.85, "past", "school_or_org",
          rf"{SUBJ}{ADV} {_BE} (?:an? )?(?P<obj>{CAP}) (?:alum|alumna|alumnus|alumni|grad|"
          rf"graduate)\b|(?<![\w'])[Mm]y alma mater is (?:the )?(?P<obj2>{CAP})"),
    _rule("graduated", ('graduat',), "STUDIED_AT", 0.9, "end", "org",
          rf"{SUBJ}{ADV} (?:graduated|have graduated|has graduated) from (?:the )?"
          rf"(?P<obj>{CAP})"),
    _rule("degree", ('degree', 'phd', 'master', 'bachelor', 'mba', 'msc', 'bsc', 'ba ', 'ma ', 'doctorate', 'diploma'), "STUDIED_AT", 0.88, "past", "org",
          rf"{SUBJ}{ADV} (?:got|have|has|earned|received|hold|holds|did) (?:my|his|her|their|"
          rf"a|an) (?P<degree>(?:[\w'-]+ ){{0,2}}?(?:degree|PhD|phd|masters?|master's|"
          rf"bachelors?|bachelor's|MBA|MSc|BSc|BA|MA|doctorate|diploma))"
          rf"(?: in (?P<field>[A-Za-z][\w-]*(?: [A-Za-z][\w-]*){{0,3}}?))? (?:from|at) "
          rf"(?:the )?(?P<obj>{CAP})"),
    _rule("went_to", ('went to', 'attend'), "STUDIED_AT", 0.82, "past", "school",
          rf"{SUBJ}{ADV} (?:went to|attended|(?P<now>attend|attends|am attending|is attending))"
          rf" (?:the )?(?P<obj>{CAP})"),
    # --- people
    _rule("pair", (' and ',), "KNOWS", 0.85, "state", "pair",
          rf"(?<![\w']){CLAUSE_START}(?P<a>{PERSON}|I|[Ww]e) and (?P<b>{PERSON}|I|me)(?: both)?{ADV} "
          rf"(?P<how>collaborate|work together|worked together|have worked together|pair|"
          rf"pair program|hang out|meet up|meet|talk|chat|grab lunch|play \w+|go \w+ing|met|"
          rf"are (?:close |best |good |old )?friends|are close|are colleagues|are coworkers|"
          rf"have been (?:close |best |good )?friends|have been together|live together|"
          rf"are (?:cousins|siblings|brothers|sisters|twins|partners|housemates|flatmates)|"
          rf"(?P<past>broke up|split up|got divorced|"
          rf"are divorced|used to date|used to be (?:together|close|best friends))|"
          rf"are teammates|are roommates|are neighbou?rs|know each other|have known each other|"
          rf"went to school together|grew up together|are (?:officially |now |finally )?together|"
          rf"are dating|are married|are engaged|got married|got engaged)"),
    _rule("with_person", ('with',), "KNOWS", 0.8, "state", "persons",
          rf"{SUBJ}{ADV} (?:collaborate|collaborates|collaborated|work|works|worked|pair|pairs|"
          rf"paired|hang out|hangs out|meet|meets|talk|talks|chat|chats|play \w+|plays \w+|"
          rf"am working|is working) (?:closely |a lot |together )?with (?P<obj>{PERSONS})"),
    _rule("met", ('met', 'ran into', 'know'), "KNOWS", 0.8, "state", "persons",
          rf"{SUBJ}{ADV} (?:met|have met|has met|ran into|know|knows|have known|has known) "
          rf"(?P<obj>{PERSONS})"),
    _rule("know_pron", ('him', 'her'), "KNOWS", 0.8, "state", "pronoun",
          rf"{SUBJ}{ADV} (?:know|knows|met|have known|has known|have met|has met|ran into) "
          rf"(?P<obj>him|her)(?=$|[,.!?;:)]| (?:well|already|from|since|for|through|too|very|"
          rf"pretty|really|and|but|so|lol|a bit|personally|quite|at|in|back|now|yet)\b)"),
    _rule("rel_is", (' my ', ' our '), "KNOWS", 0.88, "state", "relation",
          rf"(?<![\w'])(?P<obj>{PERSON}) (?:is|was) (?:my|our) {_ADJ}(?P<rel>{_REL_ALT})\b"),
    _rule("pron_rel_is", (' my ',), "KNOWS", 0.85, "state", "author",
          rf"(?<![\w'])(?P<subj>[Hh]e|[Ss]he) (?:is|(?P<past>was)) (?:my|our) {_ADJ}"
          rf"(?P<rel>{_REL_ALT})\b"),
    _rule("my_rel", ('my ', 'our '), "KNOWS", 0.85, "state", "relation",
          rf"(?<![\w'])(?:[Mm]y|[Oo]ur) {_ADJ}(?P<rel>{_REL_ALT}),? (?P<obj>{PERSON})"),
    _rule("their_rel", ('his ', 'her '), "KNOWS", 0.8, "state", "relation",
          rf"(?<![\w'])(?P<subj>[Hh]is|[Hh]er) {_ADJ}(?P<rel>{_REL_ALT}),? (?P<obj>{PERSON})"),
    _rule("married_to", ('married', 'engaged', 'dating', 'seeing'), "CLOSE_TO", 0.85, "state",
          "persons",
          rf"{SUBJ}{ADV} (?:(?:am|is|are|was|were|got) (?:happily )?(?:married|engaged) to|"
          rf"(?:am|is|are|have been|has been) (?:dating|seeing))\s(?P<obj>{PERSON})\b"),
    _rule("friend_of_mine", ('of mine',), "KNOWS", 0.85, "state", "relation",
          rf"(?<![\w'])(?P<obj>{PERSON}) (?:is|was) an? {_ADJ}(?P<rel>{_REL_ALT}) of (?:mine|ours)\b"),
    _rule("appositive_rel", (', my ', ', our ', '(my ', '(our '), "KNOWS", 0.85, "state",
          "relation",
          rf"(?<![\w'])(?P<obj>{PERSON}),? \(?(?:my|our) {_ADJ}(?P<rel>{_REL_ALT})\b"),
    _rule("like_family", ('like a', 'like my'), "CLOSE_TO", 0.8, "state", "persons",
          rf"(?<![\w'])(?P<obj>{PERSON}) (?:is|was) (?:basically )?like (?:a|my) (?:brother|sister|"
          rf"mother|father|mom|mum|dad|son|daughter|second mom|second mum|family)(?: to me)?\b"),
    _rule("close_with", ('friends', 'close'), "CLOSE_TO", 0.85, "state", "persons",
          rf"{SUBJ}{ADV} {_BE} (?:very |really |pretty |super )?(?P<how>close friends|best "
          rf"friends|good friends|friends|close) (?:with|to) (?P<obj>{PERSONS})"),
)

# Names a sentence types without stating a fact about them: an organisation "at X" (for "there"
# and MENTIONED), a person with a title ("Dana is our CTO", "Our CTO is Dana": a person for
# he / she and MENTIONED; no WORKS_AT, as "our" names no organisation).
_TITLE = rf"(?:new |former |current )?(?i:{'|'.join(TITLES)})\b"
_PERSON_VERBS = ("ask", "asked", "ping", "pinged", "tell", "told", "bring", "invite", "invited",
                 "text", "texted", "dm", "cc", "thank", "thanked", "hug", "hugged", "introduce",
                 "introduced", "this is", "meet", "welcome", "say hi to", "congrats",
                 "congratulations")
# A hint runs on a sentence holding (lower case) one of its words; None: on every sentence.
_AUX = ("does", "did", "is", "was", "will", "has", "can", "would")
HINT_WORDS: tuple[tuple[str, ...] | None, ...] = (_PERSON_VERBS, _AUX, None, None, None)
HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    # a person as the object of a verb for people ("I'll ask Wen", "this is Fatima")
    (re.compile(rf"(?<![\w'])(?i:{'|'.join(_PERSON_VERBS)}),? (?P<obj>{PERSON})\b"), "Person"),
    # a name as the subject of a question's verb ("does Ming still work ...", "will Ana be")
    (re.compile(rf"(?<![\w'])(?i:{'|'.join(_AUX)}) (?P<obj>{PERSON}) (?:still |also |ever |"
                rf"really |even )?(?:be|work|live|know|have|go|come|join|like|want|need|speak|"
                rf"use|study|get|say|think)\b"), "Person"),
    (re.compile(rf"\bat (?:the )?(?P<obj>{CAP})"), "Organization"),
    (re.compile(rf"(?<![\w'])(?P<obj>{PERSON}) (?:is|was) (?:our|my|their|the) {_TITLE}"),
     "Person"),
    (re.compile(rf"(?<![\w'])(?:[Oo]ur|[Mm]y|[Tt]heir|[Tt]he) {_TITLE} (?:is|was) "
                rf"(?P<obj>{PERSON})"), "Person"),
)
