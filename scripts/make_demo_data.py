"""Write the demo chat exports under data/demo/ (seeded, deterministic: same bytes every run).

    python scripts/make_demo_data.py            # writes data/demo/
    python scripts/make_demo_data.py --out DIR  # somewhere else

What it writes (all synthetic, written by us; no real person's data):

    data/demo/chatgpt/alice/conversations.json   ChatGPT export (message tree with an edited branch)
    data/demo/claude/bob/conversations.json      Claude export (chat_messages, one empty conversation)
    data/demo/locomo/carol_dave.json             LoCoMo-style sessions with date_time strings
    data/demo/jsonl/erin/messages.jsonl          generic JSONL; columns need --map role=author,content=text,ts=created
    data/demo/expected_facts.json                the changes of fact over time, for tests and the dashboard

Each user's story spans 2024 with changes of fact phrased in the first person, so the offline
heuristic extractor finds them: moves, job changes, diet, relationships, a name change and a
retracted plan. The same builders (`chatgpt_export`, `claude_export`, `locomo_export`,
`jsonl_rows`) also make the large synthetic exports used by bench/ingest.py (`synthetic_story`).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import uuid
from dataclasses import dataclass, field
from pathlib import Path

SEED = 20240101
UTC = dt.timezone.utc


@dataclass
class Conversation:
    """One chat: a title, when it started, and (role, text) turns a few minutes apart."""

    title: str
    start: dt.datetime
    turns: list[tuple[str, str]]
    id: str = ""
    edited: dict[int, str] = field(default_factory=dict)    # turn index -> abandoned earlier wording (ChatGPT)
    content: dict[int, dict] = field(default_factory=dict)  # turn index -> ChatGPT content (code, images)


# -- filler: ordinary questions and answers that carry no personal fact --------------------------
FILLER = [
    ("Can you explain how Python decorators work?",
     "A decorator is a function that takes a function and returns a new one. The @name syntax applies it at "
     "definition time, which is handy for logging, caching or access checks."),
    ("What's the difference between a list and a tuple in Python?",
     "Lists are mutable and tuples are not. Tuples can be dictionary keys and signal a fixed structure."),
    ("How do I center a div with CSS?",
     "Use flexbox on the parent: display: flex; justify-content: center; align-items: center."),
    ("Give me three ideas for a rainy Sunday.",
     "Try a long-simmering soup, a museum you have never visited, or a jigsaw puzzle with a podcast."),
    ("Summarize the plot of Pride and Prejudice in two sentences.",
     "Elizabeth Bennet and the proud Mr Darcy misjudge each other. Over time they confront their prejudices "
     "and fall in love."),
    ("What is a good stretching routine after running?",
     "Hold each stretch for 30 seconds: calves, hamstrings, quads, hip flexors and glutes."),
    ("How long should I boil an egg for a jammy yolk?",
     "About six and a half minutes from boiling, then straight into ice water."),
    ("Write a haiku about autumn.",
     "Red leaves drift and spin / the maple lets go of summer / cold wind keeps the count"),
    ("What does HTTP 429 mean?",
     "Too Many Requests: the server is rate limiting you. Back off and retry after the Retry-After delay."),
    ("Can you recommend a sci-fi novel?",
     "The Left Hand of Darkness by Ursula K. Le Guin is a classic that still feels fresh."),
    ("How do I make my sourdough more sour?",
     "Use a longer, cooler fermentation and a higher proportion of whole-grain flour in the starter."),
    ("Explain compound interest simply.",
     "You earn interest on your interest: each period the balance grows by a percentage of itself."),
    ("What's a polite way to decline a meeting?",
     "Thank them, say you can't make it, and offer an alternative such as async notes or another time."),
    ("Translate 'where is the train station' into Spanish.",
     "¿Dónde está la estación de tren?"),
    ("How do I undo the last git commit but keep the changes?",
     "Run git reset --soft HEAD~1. The changes stay staged."),
    ("What are some good houseplants for low light?",
     "Snake plants, ZZ plants, pothos and cast-iron plants all tolerate low light."),
    ("How many minutes of exercise a week is recommended?",
     "Guidelines suggest at least 150 minutes of moderate activity or 75 minutes of vigorous activity."),
    ("Can you help me write a SQL query that counts orders per customer?",
     "SELECT customer_id, count(*) AS orders FROM orders GROUP BY customer_id ORDER BY orders DESC;"),
    ("What is the capital of Australia?", "Canberra."),
    ("Give me a packing list for a weekend hike.",
     "Water, layers, rain jacket, map, headlamp, first-aid kit, snacks and sunscreen."),
]
ACKS = ["Thanks, that helps.", "Perfect, thank you!", "Great.", "Got it, thanks.", "Okay, makes sense.",
        "Nice, thank you!"]
REPLIES = ["Noted — thanks for telling me.", "Good to know. How can I help with that?",
           "Congratulations! Anything you want to plan around it?", "That sounds like a big change.",
           "Thanks for the update.", "Happy to help with that."]


def _filler(rng: random.Random, n_pairs: int) -> list[tuple[str, str]]:
    turns: list[tuple[str, str]] = []
    for q, a in rng.sample(FILLER, n_pairs):
        turns += [("user", q), ("assistant", a)]
        if rng.random() < 0.3:
            turns += [("user", rng.choice(ACKS)), ("assistant", "You're welcome!")]
    return turns


def _fact_turns(rng: random.Random, statements: list[str]) -> list[tuple[str, str]]:
    turns: list[tuple[str, str]] = []
    for s in statements:
        turns += [("user", s), ("assistant", rng.choice(REPLIES))]
    return turns


def _day(month: int, day: int, hour: int = 10, year: int = 2024) -> dt.datetime:
    return dt.datetime(year, month, day, hour, 0, tzinfo=UTC)


# -- the stories -----------------------------------------------------------------------------------
# (date, title, first-person statements, filler pairs). Statements are what the extractor should find.
ALICE = [
    (_day(1, 8), "New year planning", ["I live in Boston and I work at Fidelity as a data analyst.",
                                       "I'm vegetarian. Can you suggest a weekly meal plan?"], 2),
    (_day(1, 22, 19), "Dinner ideas", ["My boyfriend Tom loves spicy food.",
                                       "I have a cat named Miso."], 2),
    (_day(2, 14, 20), "Valentine's plans", ["I'm planning a trip to Japan in October with Tom."], 2),
    (_day(3, 3), "Python help", [], 3),
    (_day(3, 19), "Interview prep", ["I'm interviewing at Amazon for a data scientist role."], 2),
    (_day(4, 11), "Moving checklist", ["I accepted the Amazon offer and I'm moving to Seattle next month."], 2),
    (_day(5, 6, 18), "Seattle neighborhoods", ["I moved to Seattle last weekend.",
                                               "I live in Seattle now, in Capitol Hill."], 2),
    (_day(5, 20), "First week", ["I started a new job at Amazon as a data scientist."], 2),
    (_day(6, 15), "Weekend hike", [], 3),
    (_day(7, 2, 21), "Hard week", ["I broke up with Tom last week.", "I'm single now."], 1),
    (_day(8, 9), "Trip change", ["I cancelled the Japan trip.",
                                 "I'm going to Portugal in October instead."], 2),
    (_day(9, 1), "Cooking", ["I'm vegan now.", "I stopped eating cheese and eggs in August."], 2),
    (_day(10, 12), "Lisbon tips", ["I'm in Lisbon this week."], 2),
    (_day(11, 3), "SQL question", [], 3),
    (_day(12, 1, 17), "Year in review", ["I'm dating someone new named Priya.",
                                         "I adopted a second cat named Tofu."], 2),
]
BOB = [
    (_day(1, 15), "Intro", ["I live in Austin and I work at Dell as a software engineer.",
                            "I'm on a keto diet."], 2),
    (_day(2, 2), "House hunting", ["I plan to buy a house in Austin this summer."], 2),
    (_day(2, 27), "Rust question", [], 3),
    (_day(3, 30, 20), "Big news", ["I got engaged to Maria!"], 2),
    (_day(4, 21), "Career", ["I quit Dell and I joined a startup called Loomly as CTO."], 2),
    (_day(5, 18), "Budget", ["I'm not buying the house anymore.", "I'm renting a loft downtown instead."], 2),
    (_day(6, 9), "Diet", ["I stopped doing keto.", "I eat mostly Mediterranean food now."], 2),
    (_day(7, 14), "Empty", [], 0),  # an empty conversation: ingest records it as skipped
    (_day(8, 24, 19), "Wedding", ["Maria and I got married on August 17.", "I go by Rob now."], 2),
    (_day(9, 28), "Relocation", ["We moved to Denver because Loomly opened an office there.",
                                 "I live in Denver now."], 2),
    (_day(11, 16), "Running", ["I'm training for the Denver half marathon."], 2),
    (_day(12, 20), "Holidays", [], 3),
]
# LoCoMo-style: two people talking; both are "user" speakers with their own names.
CAROL_DAVE = [
    (_day(1, 20, 13), [("Carol", "Hey Dave! I just started teaching chemistry at Lincoln High."),
                       ("Dave", "That's great! I'm still at the bakery on Elm Street."),
                       ("Carol", "My name is Carol Smith on the staff list, so the kids call me Ms. Smith."),
                       ("Dave", "Ha, very official. I'm training my new puppy, Pepper.")]),
    (_day(3, 9, 15), [("Carol", "I'm engaged! James proposed last weekend."),
                      ("Dave", "Congratulations! I'm thinking about opening my own bakery."),
                      ("Carol", "I live in Denver but I'm looking at apartments in Boulder.")]),
    (_day(5, 25, 11), [("Dave", "I signed the lease for my own bakery on Pearl Street."),
                       ("Carol", "Amazing! I moved to Boulder this month."),
                       ("Carol", "I'm allergic to walnuts, so keep them out of my birthday cake.")]),
    (_day(7, 6, 16), [("Carol", "I married James on June 29."),
                      ("Carol", "I changed my last name to Nguyen, so I'm Carol Nguyen now."),
                      ("Dave", "Congrats, Mrs. Nguyen! The bakery opens next week.")]),
    (_day(9, 14, 10), [("Dave", "I gave up the bakery plan for now and I'm back at Elm Street."),
                       ("Carol", "Sorry to hear that. I'm teaching biology this year instead of chemistry."),
                       ("Dave", "Pepper graduated from obedience school.")]),
    (_day(11, 30, 18), [("Carol", "I'm pregnant! The baby is due in May."),
                        ("Dave", "Wonderful news. I'm running the bakery's holiday market stall.")]),
]
ERIN = [
    (_day(2, 5), "Garden", ["I live in Portland and I grow tomatoes on my balcony.",
                            "I work as a nurse at OHSU."], 2),
    (_day(4, 17), "Schedule", ["I switched to night shifts in April."], 2),
    (_day(6, 26), "Study", ["I enrolled in a nurse practitioner program at Gonzaga."], 2),
    (_day(8, 30), "Diet", ["I'm gluten-free now after my celiac diagnosis."], 2),
    (_day(10, 7), "Plans", ["I planned to move to Spokane for school.",
                            "Actually I'm not moving to Spokane; the program is online."], 2),
    (_day(12, 11), "Wrap-up", ["I went back to day shifts in December."], 2),
]

EXPECTED = {
    "alice": [
        {"fact": "lives in Boston", "from": "2024-01-08", "until": "2024-05-06", "replaced_by": "lives in Seattle"},
        {"fact": "works at Fidelity as a data analyst", "from": "2024-01-08", "until": "2024-05-20",
         "replaced_by": "works at Amazon as a data scientist"},
        {"fact": "is vegetarian", "from": "2024-01-08", "until": "2024-09-01", "replaced_by": "is vegan"},
        {"fact": "boyfriend Tom", "from": "2024-01-22", "until": "2024-07-02", "replaced_by": "is single"},
        {"fact": "trip to Japan in October", "from": "2024-02-14", "until": "2024-08-09",
         "replaced_by": "cancelled; going to Portugal instead"},
        {"fact": "is dating Priya", "from": "2024-12-01", "until": None, "replaced_by": None},
        {"fact": "has cats Miso and Tofu", "from": "2024-01-22", "until": None, "replaced_by": None},
    ],
    "bob": [
        {"fact": "lives in Austin", "from": "2024-01-15", "until": "2024-09-28", "replaced_by": "lives in Denver"},
        {"fact": "works at Dell as a software engineer", "from": "2024-01-15", "until": "2024-04-21",
         "replaced_by": "CTO at Loomly"},
        {"fact": "keto diet", "from": "2024-01-15", "until": "2024-06-09", "replaced_by": "Mediterranean food"},
        {"fact": "plans to buy a house in Austin", "from": "2024-02-02", "until": "2024-05-18",
         "replaced_by": "not buying; renting a loft"},
        {"fact": "engaged to Maria", "from": "2024-03-30", "until": "2024-08-24", "replaced_by": "married Maria"},
        {"fact": "name Bob", "from": "2024-01-15", "until": "2024-08-24", "replaced_by": "goes by Rob"},
    ],
    "carol": [
        {"fact": "teaches chemistry", "from": "2024-01-20", "until": "2024-09-14", "replaced_by": "teaches biology"},
        {"fact": "name Carol Smith", "from": "2024-01-20", "until": "2024-07-06", "replaced_by": "Carol Nguyen"},
        {"fact": "lives in Denver", "from": "2024-03-09", "until": "2024-05-25", "replaced_by": "lives in Boulder"},
        {"fact": "engaged to James", "from": "2024-03-09", "until": "2024-07-06", "replaced_by": "married James"},
        {"fact": "Dave plans his own bakery", "from": "2024-03-09", "until": "2024-09-14",
         "replaced_by": "gave up the bakery plan"},
    ],
    "erin": [
        {"fact": "works day shifts", "from": "2024-02-05", "until": "2024-04-17", "replaced_by": "night shifts"},
        {"fact": "works night shifts", "from": "2024-04-17", "until": "2024-12-11", "replaced_by": "day shifts"},
        {"fact": "plans to move to Spokane", "from": "2024-10-07", "until": "2024-10-07",
         "replaced_by": "not moving; the program is online"},
        {"fact": "is gluten-free", "from": "2024-08-30", "until": None, "replaced_by": None},
    ],
}


def story_conversations(story: list, rng: random.Random) -> list[Conversation]:
    """Turn (date, title, statements, filler pairs) rows into conversations with mixed turns."""
    out = []
    for start, title, statements, n_filler in story:
        turns = _fact_turns(rng, statements)
        if n_filler:
            filler = _filler(rng, n_filler)
            cut = 2 * rng.randint(0, n_filler)          # facts somewhere inside the small talk
            turns = filler[:cut] + turns + filler[cut:]
        out.append(Conversation(title=title, start=start, turns=turns, id=str(_uuid(rng))))
    return out


def small_talk(rng: random.Random, n: int, year: int = 2024) -> list[tuple]:
    """`n` fact-free conversations on random days of `year` (story rows, as in ALICE)."""
    rows = []
    for k in range(n):
        start = dt.datetime(year, 1, 1, tzinfo=UTC) + dt.timedelta(days=rng.randint(0, 360), hours=rng.randint(7, 22))
        rows.append((start, f"Question {k + 1}", [], rng.randint(1, 4)))
    return rows


def synthetic_story(n_messages: int, seed: int = SEED, start: dt.datetime | None = None,
                    filler_pairs: tuple[int, int] = (1, 4)) -> list[Conversation]:
    """About `n_messages` messages of conversations (bench data): 0-3 first-person facts and
    `filler_pairs` question/answer pairs (each ~2-2.6 messages) per conversation, hours apart."""
    rng = random.Random(seed)
    cities = ["Boston", "Seattle", "Denver", "Austin", "Portland", "Chicago", "Lisbon", "Toronto", "Berlin"]
    jobs = [("Acme", "an engineer"), ("Globex", "a data analyst"), ("Initech", "a manager"),
            ("Umbrella", "a researcher"), ("Hooli", "a designer"), ("Stark", "a consultant")]
    pets = ["cat", "dog", "parrot", "rabbit"]
    names = ["Miso", "Pepper", "Biscuit", "Tofu", "Luna", "Ziggy", "Olive", "Mango"]
    hobbies = ["climbing", "pottery", "chess", "salsa dancing", "birdwatching", "running", "baking"]
    t = start or _day(1, 1, 9, 2023)
    convs: list[Conversation] = []
    total = 0
    while total < n_messages:
        statements = []
        for _ in range(rng.randint(0, 3)):
            kind = rng.randrange(5)
            if kind == 0:
                statements.append(f"I live in {rng.choice(cities)} now.")
            elif kind == 1:
                company, role = rng.choice(jobs)
                statements.append(f"I work at {company} as {role}.")
            elif kind == 2:
                statements.append(f"I have a {rng.choice(pets)} named {rng.choice(names)}.")
            elif kind == 3:
                statements.append(f"I started {rng.choice(hobbies)} this month.")
            else:
                statements.append(f"I'm planning a trip to {rng.choice(cities)} in {rng.randint(2, 28)} days.")
        n_filler = rng.randint(*filler_pairs)
        c = story_conversations([(t, f"Chat {len(convs) + 1}", statements, n_filler)], rng)[0]
        convs.append(c)
        total += len(c.turns)
        t += dt.timedelta(hours=rng.randint(3, 40))
    return convs


def _uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def _times(c: Conversation, rng: random.Random) -> list[dt.datetime]:
    out, t = [], c.start
    for _ in c.turns:
        out.append(t)
        t += dt.timedelta(seconds=rng.randint(20, 400))
    return out


# -- writers ---------------------------------------------------------------------------------------
def chatgpt_export(convs: list[Conversation], rng: random.Random) -> list[dict]:
    """ChatGPT `conversations.json`: a `mapping` tree per conversation; `current_node` is the leaf of
    the branch the user last saw. Edited turns leave an abandoned sibling branch behind. Newest
    conversation first, as in real exports."""
    out = []
    for c in convs:
        times = _times(c, rng)
        mapping: dict[str, dict] = {}

        def node(msg: dict | None, parent: str | None) -> str:
            nid = str(_uuid(rng)) if msg is not None else "client-created-root"
            mapping[nid] = {"id": nid, "message": msg, "parent": parent, "children": []}
            if parent is not None:
                mapping[parent]["children"].append(nid)
            return nid

        def message(role: str, text: str, when: dt.datetime, content: dict | None = None) -> dict:
            mid = str(_uuid(rng))
            return {"id": mid, "author": {"role": role, "name": None, "metadata": {}},
                    "create_time": when.timestamp() + rng.random(), "update_time": None,
                    "content": content or {"content_type": "text", "parts": [text]},
                    "status": "finished_successfully", "end_turn": role == "assistant" or None,
                    "weight": 1.0, "metadata": {}, "recipient": "all", "channel": None}

        parent = node(None, None)
        hidden = message("system", "", c.start)
        hidden["metadata"] = {"is_visually_hidden_from_conversation": True}
        parent = node(hidden, parent)
        for i, ((role, text), when) in enumerate(zip(c.turns, times)):
            if i in c.content:   # code-interpreter call, tool output or an image with text
                extra = dict(c.content[i])
                msg = message(role, text, when, extra.pop("content"))
                msg.update(extra)
                parent = node(msg, parent)
                continue
            if i in c.edited:   # the first wording, answered, then edited: an abandoned branch
                old = node(message(role, c.edited[i], when), parent)
                node(message("assistant", rng.choice(REPLIES), when + dt.timedelta(seconds=5)), old)
                when = when + dt.timedelta(seconds=90)
            parent = node(message(role, text, when), parent)
        out.append({"title": c.title, "create_time": c.start.timestamp(),
                    "update_time": times[-1].timestamp() if times else c.start.timestamp(),
                    "mapping": mapping, "moderation_results": [], "current_node": parent,
                    "plugin_ids": None, "conversation_id": c.id, "conversation_template_id": None,
                    "gizmo_id": None, "is_archived": False, "safe_urls": [], "default_model_slug": "gpt-4o",
                    "id": c.id})
    out.reverse()   # like a real export: most recent conversation first
    return out


def _iso(t: dt.datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def claude_export(convs: list[Conversation], rng: random.Random, account: str) -> list[dict]:
    """Claude `conversations.json`: `chat_messages` with sender human/assistant and ISO times."""
    out = []
    for c in convs:
        times = _times(c, rng)
        msgs = []
        for (role, text), when in zip(c.turns, times):
            stamp = _iso(when)
            msgs.append({"uuid": str(_uuid(rng)), "text": text,
                         "content": [{"start_timestamp": stamp, "stop_timestamp": stamp, "type": "text",
                                      "text": text, "citations": []}],
                         "sender": "human" if role == "user" else "assistant",
                         "created_at": stamp, "updated_at": stamp, "attachments": [], "files": []})
        out.append({"uuid": c.id, "name": c.title, "created_at": _iso(c.start),
                    "updated_at": _iso(times[-1] if times else c.start), "account": {"uuid": account},
                    "chat_messages": msgs})
    return out


def _locomo_time(t: dt.datetime) -> str:
    return f"{t.hour % 12 or 12}:{t.minute:02d} {'am' if t.hour < 12 else 'pm'} on {t.day} {t:%B}, {t.year}"


def locomo_export(sessions: list, sample_id: str, rng: random.Random) -> list[dict]:
    """LoCoMo-style JSON: one sample with `conversation.session_N` lists and `session_N_date_time`."""
    conv: dict[str, object] = {"speaker_a": sessions[0][1][0][0], "speaker_b": sessions[0][1][1][0]}
    for n, (start, turns) in enumerate(sessions, 1):
        conv[f"session_{n}_date_time"] = _locomo_time(start)
        conv[f"session_{n}"] = [{"speaker": who, "dia_id": f"D{n}:{i}", "text": text}
                                for i, (who, text) in enumerate(turns, 1)]
    return [{"sample_id": sample_id, "conversation": conv, "qa": [
        {"question": "What is Carol's last name after the wedding?", "answer": "Nguyen", "evidence": ["D4:2"],
         "category": 1},
        {"question": "Where does Carol live in June 2024?", "answer": "Boulder", "evidence": ["D3:2"], "category": 2},
    ]}]


def jsonl_rows(convs: list[Conversation], rng: random.Random) -> list[dict]:
    """Generic message rows with non-standard column names (thread/msg_id/author/text/created, author
    human|ai): needs `--map role=author,content=text,ts=created`."""
    rows = []
    for c in convs:
        for (role, text), when in zip(c.turns, _times(c, rng)):
            rows.append({"thread": c.id, "msg_id": str(_uuid(rng)), "author": "human" if role == "user" else "ai",
                         "text": text, "created": when.isoformat()})
    return rows


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def write_demo(out: Path, seed: int = SEED) -> dict[str, int]:
    """Write every demo file under `out`; returns message counts per file."""
    counts: dict[str, int] = {}
    rng = random.Random(seed)

    alice = story_conversations(sorted(ALICE + small_talk(rng, 10), key=lambda r: r[0]), rng)
    # Alice first said Cambridge, then edited the message: only the edited branch is current.
    first = next(c for c in alice if c.title == "New year planning")
    first.edited[_index_of(first, "I live in Boston")] = "I live in Cambridge and I work at Fidelity."
    _add_rich_turns(next(c for c in alice if c.title == "Python help"),
                    next(c for c in alice if c.title == "Seattle neighborhoods"))
    write_json(out / "chatgpt/alice/conversations.json", chatgpt_export(alice, rng))
    counts["chatgpt/alice/conversations.json"] = sum(len(c.turns) for c in alice)

    bob = story_conversations(sorted(BOB + small_talk(rng, 8), key=lambda r: r[0]), rng)
    write_json(out / "claude/bob/conversations.json", claude_export(bob, rng, account=str(_uuid(rng))))
    counts["claude/bob/conversations.json"] = sum(len(c.turns) for c in bob)

    write_json(out / "locomo/carol_dave.json", locomo_export(CAROL_DAVE, "demo-carol-dave", rng))
    counts["locomo/carol_dave.json"] = sum(len(t) for _, t in CAROL_DAVE)

    erin = story_conversations(sorted(ERIN + small_talk(rng, 5), key=lambda r: r[0]), rng)
    rows = jsonl_rows(erin, rng)
    path = out / "jsonl/erin/messages.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    counts["jsonl/erin/messages.jsonl"] = len(rows)

    write_json(out / "expected_facts.json", EXPECTED)
    return counts


def _add_rich_turns(code_conv: Conversation, image_conv: Conversation) -> None:
    """ChatGPT content that is not plain text: a code-interpreter call and its output (assistant/tool
    turns, not the user's words) and a user message with an uploaded photo plus text."""
    at = 2
    code_conv.turns[at:at] = [("user", "Can you compute the mean of 3, 5 and 10?"),
                              ("assistant", "(3 + 5 + 10) / 3"), ("tool", "6.0"),
                              ("assistant", "The mean is 6.")]
    code_conv.content[at + 1] = {"content": {"content_type": "code", "language": "python",
                                             "text": "(3 + 5 + 10) / 3"}, "recipient": "python"}
    code_conv.content[at + 2] = {"content": {"content_type": "execution_output", "text": "6.0"},
                                 "author": {"role": "tool", "name": "python", "metadata": {}}}
    image_conv.turns[0:0] = [("user", "This is the view from my new apartment. Which mountain is that?"),
                             ("assistant", "That looks like Mount Rainier on a clear day.")]
    image_conv.content[0] = {"content": {"content_type": "multimodal_text", "parts": [
        {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-demo0001",
         "size_bytes": 183201, "width": 1024, "height": 768},
        "This is the view from my new apartment. Which mountain is that?"]}}


def _index_of(c: Conversation, needle: str) -> int:
    return next(i for i, (_, text) in enumerate(c.turns) if needle in text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "data" / "demo"))
    p.add_argument("--seed", type=int, default=SEED)
    args = p.parse_args(argv)
    counts = write_demo(Path(args.out), args.seed)
    for name, n in counts.items():
        print(f"{n:5d} messages  {Path(args.out) / name}")
    print(f"{sum(counts.values()):5d} messages in total")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
