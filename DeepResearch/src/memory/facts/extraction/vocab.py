"""The small word lists of the offline extractor (all lower case; matched case-insensitively).

Kept short on purpose: they decide ambiguous cases only ("knows Rust" is a skill, "knows
Bob" a person; "working in Python" is a skill, "working in Berlin" is not). A phrasing
whose object is unambiguous ("coding in X", "I work at X") needs no list.
"""

from __future__ import annotations

# Skills recognised where the verb alone does not say "skill" (know, use, work with, ...).
SKILLS: frozenset[str] = frozenset({
    "python", "java", "javascript", "typescript", "rust", "go", "golang", "c", "c++", "c#",
    "ruby", "php", "kotlin", "swift", "scala", "haskell", "r", "julia", "sql", "bash",
    "html", "css", "react", "vue", "angular", "django", "flask", "fastapi", "spring", "node",
    "node.js", "pytorch", "tensorflow", "pandas", "numpy", "kubernetes", "docker", "terraform",
    "aws", "gcp", "azure", "linux", "git", "spark", "kafka", "postgres", "postgresql",
    "mysql", "mongodb", "redis", "graphql", "excel", "figma", "photoshop", "matlab",
    # tools people "work with" and "join" that are not people or (here) employers
    "jira", "confluence", "slack", "notion", "github", "gitlab", "jenkins", "airflow",
    "tableau", "salesforce", "blender", "unity",
    # more of the common languages, frameworks, databases, clouds and tools of the trade
    "perl", "lua", "dart", "elixir", "erlang", "clojure", "f#", "ocaml", "fortran", "cobol",
    "assembly", "objective-c", "solidity", "zig", "nim", "groovy", "powershell", "yaml",
    "json", "xml", "sass", "tailwind", "jquery", "svelte", "next.js", "nextjs",
    "rails", "ruby on rails", "laravel", "symfony", ".net", "asp.net", "dotnet", "unreal",
    "flutter", "react native", "swiftui", "android", "ios", "xcode", "keras", "jax",
    "scikit-learn", "sklearn", "opencv", "hadoop", "flink", "dbt",
    "bigquery", "redshift", "power bi", "sqlite",
    "cassandra", "dynamodb", "elasticsearch", "opensearch", "neo4j", "cypher",
    "clickhouse", "rabbitmq", "nginx", "ansible", "helm",
    "prometheus", "grafana", "vim", "emacs", "latex", "sketch",
    "illustrator", "indesign", "after effects", "lightroom", "autocad",
    "solidworks", "stata", "spss", "sas", "webpack", "vite", "selenium", "cypress",
    "playwright", "grpc", "protobuf", "k8s", "openshift",
    "pulumi", "cloudformation", "ec2", "s3",
    "wordpress",
})
# Instruments: "I play the cello" is a skill ("I play Catan" is no instrument).
INSTRUMENTS: frozenset[str] = frozenset({
    "guitar", "piano", "violin", "viola", "cello", "drums", "bass", "saxophone", "sax",
    "trumpet", "trombone", "flute", "clarinet", "oboe", "ukulele", "harp", "banjo",
    "mandolin", "accordion", "harmonica", "keyboard", "keys", "organ", "tuba", "horn",
})
# Natural languages: skills for "know" as for "speak" ("I know French" is no person). Kept
# apart from SKILLS, which also reads "a K developer" ("a French developer" is a nationality).
LANGUAGES: frozenset[str] = frozenset({
    "english", "french", "spanish", "german", "italian", "portuguese", "dutch", "swedish",
    "norwegian", "danish", "finnish", "icelandic", "polish", "czech", "slovak", "hungarian",
    "romanian", "bulgarian", "serbian", "croatian", "greek", "russian", "ukrainian",
    "turkish", "arabic", "hebrew", "persian", "farsi", "hindi", "urdu", "bengali", "punjabi",
    "tamil", "telugu", "marathi", "gujarati", "mandarin", "cantonese", "chinese", "japanese",
    "korean", "vietnamese", "thai", "indonesian", "malay", "tagalog", "filipino", "swahili",
    "amharic", "yoruba", "catalan", "basque", "galician", "welsh", "irish", "latin",
    "esperanto", "asl",
})
# A word of either list is never a person, an employer or a subject.
KNOWN_SKILLS: frozenset[str] = SKILLS | LANGUAGES

# Words before a clause's fact that weaken it: strong ones (a guess) and weak ones (a belief).
STRONG_HEDGES: tuple[str, ...] = (
    "maybe", "might", "perhaps", "possibly", "not sure", "i guess", "i suppose", "rumour",
    "rumor", "could be", "may have", "may be",
)
WEAK_HEDGES: tuple[str, ...] = (
    "i think", "i believe", "probably", "apparently", "seems", "i heard", "supposedly",
    "reportedly", "likely", "pretty sure",
)
# A clause under one of these states no fact at all.
DENIALS: tuple[str, ...] = ("not think", "doubt", "no idea whether", "wish")

# Capitalised words that are not names (sentence openers, days, months, greetings, pronouns).
NOT_NAMES: frozenset[str] = frozenset({
    "i", "i'm", "i've", "i'd", "i'll", "we", "he", "she", "they", "it", "you", "my", "our",
    "your", "his", "her", "their", "its", "the", "a", "an", "this", "that", "these", "those",
    "and", "but", "or", "so", "then", "also", "yes", "no", "yeah", "yep", "nope", "ok", "okay",
    "hi", "hey", "hello", "thanks", "thank", "sure", "well", "oh", "wow", "cool", "nice",
    "great", "good", "congrats", "lol", "btw", "fyi", "actually", "anyway", "now", "today",
    "yesterday", "tomorrow", "tonight", "last", "next", "maybe", "perhaps", "probably",
    "apparently", "honestly", "basically", "what", "why", "how", "when", "where", "who",
    "which", "there", "here", "if", "because", "since", "after", "before", "once", "still",
    "just", "not", "all", "both", "some", "every", "each", "in", "on", "at", "for", "from",
    "with", "as", "by", "of", "to", "do", "does", "did", "is", "are", "was", "were", "can",
    "could", "would", "should", "will", "let", "please", "sorry", "really", "speaking",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "christmas", "team", "everyone", "guys", "folks",
    "kb", "mb", "gb", "tb", "ram", "cpu", "gpu", "faq", "tl;dr", "eta", "asap", "pr",
    # sentence openers seen as "names" in real chat (LoCoMo): "Sounds like ...", "Life is ..."
    "sounds", "seems", "looks", "feels", "almost", "glad", "wish", "see", "even", "always",
    "never", "one", "everything", "love", "life", "nature", "family", "you'll", "you're",
    "we're", "they're", "that's", "it's", "here's", "there's", "what's", "let's", "haven't",
    "lately", "sometimes", "whenever", "lots", "besides", "plus", "overall",
    # no one in particular ("Someone at Google knows Rust")
    "someone", "somebody", "anyone", "anybody", "nobody", "everybody", "people", "hq",
    # titles ("Dana is our CTO": Dana is named, the title is not)
    "ceo", "cto", "cfo", "coo", "cio", "cpo", "vp", "svp", "evp",
})

# Words that end the name of a group one is a MEMBER_OF ("the data team").
GROUP_WORDS: tuple[str, ...] = (
    "team", "group", "club", "committee", "board", "band", "community", "guild", "squad",
    "crew", "department", "lab", "society", "union", "council", "chapter", "association",
    "meetup", "choir", "league", "working group", "task force", "forum", "network",
    "org", "orchestra", "ensemble", "troupe", "collective", "circle", "gym", "cohort",
    "program", "programme", "federation", "fraternity", "sorority", "co-op", "cooperative",
    "unit", "division", "pod", "tribe", "clan",
)

# Groups named by their kind alone after "the / a / our" ("in the choir", "in a band").
BARE_GROUPS: tuple[str, ...] = (
    "choir", "band", "orchestra", "board", "committee", "council", "union", "ensemble",
    "troupe",
)
# Verbs of a craft or sport said alone ("I knit", "she climbs competitively"): the skill is
# the activity (its -ing form).
CRAFT_VERBS: dict[str, str] = {
    "cook": "cooking", "cooks": "cooking", "bake": "baking", "bakes": "baking",
    "knit": "knitting", "knits": "knitting", "sew": "sewing", "sews": "sewing",
    "paint": "painting", "paints": "painting", "draw": "drawing", "draws": "drawing",
    "sing": "singing", "sings": "singing", "dance": "dancing", "dances": "dancing",
    "surf": "surfing", "surfs": "surfing", "ski": "skiing", "skis": "skiing",
    "snowboard": "snowboarding", "snowboards": "snowboarding", "climb": "climbing",
    "climbs": "climbing", "skate": "skating", "skates": "skating", "swim": "swimming",
    "swims": "swimming", "crochet": "crochet", "crochets": "crochet", "weld": "welding",
    "welds": "welding", "solder": "soldering", "solders": "soldering", "box": "boxing",
    "boxes": "boxing", "fence": "fencing", "fences": "fencing", "sail": "sailing",
    "sails": "sailing", "dive": "diving", "dives": "diving", "row": "rowing", "rows": "rowing",
    "juggle": "juggling", "juggles": "juggling",
}
# Endings and acronyms that make a name a school (for "went to X", which is not always one).
SCHOOL_WORDS: tuple[str, ...] = (
    "university", "college", "school", "institute", "academy", "polytechnic", "conservatory",
)
SCHOOL_ACRONYMS: frozenset[str] = frozenset({
    "mit", "cmu", "ucla", "nyu", "eth", "epfl", "kth", "tum", "ucl", "lse", "caltech",
    "stanford", "harvard", "oxford", "cambridge", "berkeley", "princeton", "yale",
})
# Roles that mean studying, not working ("a PhD student at X" -> STUDIED_AT).
STUDENT_ROLES: tuple[str, ...] = ("student", "undergrad", "undergraduate", "phd candidate")

# Job titles that say "a person" and no more ("Dana is our CTO": which organisation "our" is,
# the sentence does not say); regular expressions, matched case-insensitively.
TITLES: tuple[str, ...] = (
    "ceo", "cto", "cfo", "coo", "cio", "cpo", "svp", "evp", r"vp(?: of \w+)?", "president",
    "founder", "chair", "chairman", "chairwoman", "director", r"head of \w+", "lead",
    "tech lead", "team lead", "product manager", "engineering manager", "designer", "recruiter",
    "intern", "architect", "engineer", "developer", "admin",
)

# Relations that make two people KNOW each other; the CLOSE ones also make them CLOSE_TO.
RELATIONS: tuple[str, ...] = (
    "friend", "colleague", "coworker", "co-worker", "manager", "boss", "mentor", "mentee",
    "teammate", "classmate", "neighbour", "neighbor", "report", "cofounder", "co-founder",
    "partner", "wife", "husband", "brother", "sister", "cousin", "roommate", "flatmate",
    "girlfriend", "boyfriend", "mother", "father", "mom", "dad", "son", "daughter",
    "gf", "bf", "bff", "fiance", "fiancee", "fianc\u00e9", "fianc\u00e9e", "spouse", "mum", "mate",
    "buddy", "aunt", "uncle", "niece", "nephew", "grandmother", "grandfather", "grandma",
    "grandpa", "twin", "stepbrother", "stepsister", "housemate", "bandmate", "ex",
)
CLOSE_RELATIONS: frozenset[str] = frozenset({
    "partner", "wife", "husband", "brother", "sister", "cousin", "roommate", "flatmate",
    "girlfriend", "boyfriend", "mother", "father", "mom", "dad", "son", "daughter",
    "best friend", "close friend", "good friend", "cofounder", "co-founder",
    "gf", "bf", "bff", "fiance", "fiancee", "fianc\u00e9", "fianc\u00e9e", "spouse", "mum",
    "best mate", "aunt", "uncle", "niece", "nephew", "grandmother", "grandfather", "grandma",
    "grandpa", "twin", "stepbrother", "stepsister", "housemate",
})
# How often two people meet; present -> CLOSE_TO as well as KNOWS.
FREQUENCIES: tuple[str, ...] = (
    "daily", "weekly", "every day", "every week", "each week", "all the time", "often",
    "regularly", "a lot", "constantly", "every morning", "twice a week", "most days",
)

# Proficiency named by an adjective ("fluent in", "good at") and by years of practice.
PROFICIENCY_WORDS: dict[str, str] = {
    "expert": "expert", "fluent": "expert", "proficient": "advanced", "skilled": "advanced",
    "experienced": "advanced", "good": "advanced", "strong": "advanced", "decent": "intermediate",
    "ok": "intermediate", "okay": "intermediate", "comfortable": "intermediate",
    "new": "beginner", "learning": "beginner", "beginner": "beginner",
    "wizard": "expert", "whiz": "expert", "ninja": "expert", "guru": "expert",
    "excellent": "expert", "great": "advanced", "amazing": "advanced", "brilliant": "advanced",
    "solid": "advanced",
}


def proficiency_for_years(years: float) -> str:
    """beginner < 1 year <= intermediate < 3 <= advanced < 7 <= expert."""
    if years < 1:
        return "beginner"
    if years < 3:
        return "intermediate"
    if years < 7:
        return "advanced"
    return "expert"


NUMBER_WORDS: dict[str, float] = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15,
    "twenty": 20, "a couple of": 2, "a few": 3, "several": 4, "half a": 0.5,
}

# Words trimmed from the end of a topic or skill list item ("machine learning lately").
TRAILING_FILLERS: tuple[str, ...] = (
    "lately", "these days", "recently", "now", "too", "a lot", "as well", "also", "right now",
    "at the moment", "nowadays", "again", "stuff", "things", "tbh", "honestly", "lol",
    "haha", "though", "anyway", "in general", "for sure", "actually", "to be honest",
)
# Words before a skill in a list that say how much, not what ("some Python", "a bit of CSS").
SKILL_QUANTIFIERS: tuple[str, ...] = (
    "some", "a bit of", "a little", "a little bit of", "a lot of", "lots of", "loads of",
    "plenty of", "mostly", "mainly", "primarily", "way too much", "too much", "basic",
    "also", "even", "occasionally", "a touch of",
)
# What one is "good with" that is no skill ("good with kids").
NOT_SKILLS: frozenset[str] = frozenset({
    "kids", "children", "people", "animals", "dogs", "cats", "names", "faces", "that",
    "them", "him", "her", "me", "you", "us", "it", "this", "everything", "anything", "life",
    "time", "work", "stuff", "things", "the idea", "the team", "the project", "the job",
})
# Gerunds that are no activity one is skilled in ("been waiting for years").
NOT_ACTIVITIES: frozenset[str] = frozenset({
    "working", "living", "waiting", "trying", "thinking", "going", "doing", "staying",
    "using", "looking", "planning", "meaning", "wanting", "hoping", "dating", "seeing",
    "getting", "feeling", "sleeping", "saying", "telling", "asking", "talking", "being",
    "having", "coming", "leaving", "renting", "paying", "putting", "taking", "making",
    "struggling", "dealing", "fighting", "procrastinating", "commuting", "freelancing",
    "job hunting", "interviewing", "applying", "wondering", "considering", "bring",
    "thing", "nothing", "something", "anything", "everything", "morning", "evening",
})
# Objects that are not topics ("I like it").
NOT_TOPICS: frozenset[str] = frozenset({
    "it", "this", "that", "them", "him", "her", "you", "me", "us", "everything", "nothing",
    "something", "anything", "one", "ones", "the idea", "the same",
})

# Nouns that end a job title ("backend engineer at Monzo", "Growth marketer"): a verbless
# clause opening on one is its speaker's job (see `fragments`).
JOB_NOUNS: tuple[str, ...] = (
    "engineer", "developer", "dev", "designer", "scientist", "manager", "marketer", "analyst",
    "researcher", "consultant", "founder", "co-founder", "cofounder", "intern", "student",
    "architect", "sre", "teacher", "nurse", "doctor", "lawyer", "accountant", "writer",
    "editor", "postdoc", "professor", "lecturer", "recruiter", "lead", "director", "ceo",
    "cto", "vp", "head of \\w+", "product owner", "pm", "programmer", "administrator",
    "admin", "specialist", "coordinator", "officer", "associate", "fellow", "technician",
    "journalist", "artist", "photographer", "chef", "barista", "pharmacist", "economist",
    "statistician", "strategist", "advisor", "adviser", "owner", "partner", "contractor",
    "freelancer", "apprentice", "resident", "candidate",
)
# Lower-case words after "at" / "in" / "from" / "for" that are no name ("at home", "in town",
# "for ages"): `fragments.truecase` capitalises only what is not one of these.
COMMON_AFTER_PREPOSITION: frozenset[str] = frozenset({
    "home", "work", "school", "uni", "college", "university", "class", "town", "city", "bed",
    "church", "hospital", "love", "charge", "general", "person", "time", "least", "first",
    "last", "once", "some", "any", "moment", "night", "lunch", "dinner", "breakfast",
    "weekend", "morning", "evening", "afternoon", "tech", "finance", "sales", "marketing",
    "engineering", "design", "product", "support", "ops", "office", "remote", "place",
    "advance", "fact", "case", "order", "front", "touch", "line", "progress", "return",
    "addition", "particular", "short", "total", "mind", "common", "private", "public",
    "theory", "practice", "future", "past", "meantime", "between", "me", "him", "us", "them",
    "years", "months", "weeks", "days", "hours", "minutes", "ages", "life", "ever", "real",
    "fun", "free", "sure", "example", "instance", "trouble", "danger", "debt",
    "prod", "production", "staging", "dev", "test", "tests", "code", "review", "chat",
    "slack", "email", "meetings", "meeting", "standup", "bulk", "full", "part",
    "parallel", "detail", "depth", "response", "reply", "sight",
    "house", "flat", "apartment", "car", "bus", "train", "traffic", "queue", "stock", "use", "hand", "doubt", "question", "now", "then", "there", "here",
    "what", "which", "who", "how", "where", "when", "why", "that", "this", "these", "those",
    "it", "you", "her", "his", "its", "our", "their", "your", "my", "the", "an", "a",
    "all", "both", "each", "every", "many", "much", "more", "most", "few", "several",
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "favor", "favour", "good", "sale", "rent", "nothing",
    "something", "anything", "everything", "someone", "anyone", "everyone", "nobody",
    "so", "too", "very", "really", "just", "not", "no", "yes", "ok", "lol", "haha",
    "startup", "company", "agency", "bank", "firm", "team", "group", "club", "lab",
    # fields one is "in" ("still in industry?")
    "industry", "academia", "research", "consulting", "retail", "healthcare", "government",
    "politics", "media", "law", "medicine", "education", "hospitality", "insurance",
    "banking", "journalism", "grad", "high", "middle", "kindergarten",
})
