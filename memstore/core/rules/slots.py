"""Slot detection: which attribute of which subject a short fact states, so that a newer fact on
the same subject + slot can supersede an older one (offline; regular expressions, no model).

A slot is a single-valued attribute: where someone lives, where they work, their relationship,
diet, name, occupation, a favourite, one plan ("plan:move to denver") or one thing they own
("owns:civic": "sold the Civic" ends it). `value` is None when the
fact ends the attribute ("Alice quit her job", "Alice broke up with Bob").

>>> detect_slot("Alice moved to Seattle last week")
SlotMatch(subject='alice', slot='lives_in', value='seattle', additive=False)
>>> detect_slot("Alice broke up with Bob")
SlotMatch(subject='alice', slot='relationship', value=None, additive=False)
>>> detect_slot("Alice is no longer planning to move to Denver").slot
'plan:move to denver'
>>> detect_slot("Alice likes jazz") is None
True
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["SLOTS", "SlotMatch", "detect_slot", "fulfilled_plans", "holder_key", "is_negated", "plan_key", "question_slot",
           "slot_key", "slot_reranker"]

# Slots this module knows (plans and favourites carry a suffix: "plan:<action>", "favorite:<thing>").
SLOTS = ("lives_in", "works_at", "occupation", "relationship", "diet", "name", "favorite", "plan", "owns")


@dataclass(frozen=True)
class SlotMatch:
    """What a fact says: `subject` (normalised), `slot`, normalised `value` (None = ended).
    `additive` facts ("also works at ...") add a value instead of replacing the old one."""

    subject: str
    slot: str
    value: str | None
    additive: bool = False


_NAME = r"(?:I|[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*){0,3}?)"
_KIN = (r"(?:older |younger |little |big |best )?(?:sister|brother|mother|mom|mum|father|dad|son|daughter|"
        r"boss|friend|roommate|cousin|aunt|uncle|grandmother|grandfather|grandma|grandpa|niece|nephew|colleague|coworker|"
        r"co-worker|neighbou?r|wife|husband|partner|boyfriend|girlfriend|kid|child)")
_PARTNER = r"(?:girlfriend|boyfriend|partner|wife|husband|fianc[eé]e?|spouse)"
# "Alice", "Alice Smith", "Alice's sister", "Alice and others" / "Alice and her husband" (what "we" said)
_S = rf"(?P<s>{_NAME}(?:['’]s {_KIN}(?:\s+(?!and\b|is\b|was\b)[A-Z][\w'’-]*)?)?(?:\s+and\s+(?:others|(?:her|his|their|{_NAME}['’]s)\s+(?:{_KIN}|{_PARTNER})))?)"
_P = rf"(?P<s>{_NAME})['’]s"                        # possessive: "Alice's name is ..."
_ADV = r"(?P<adv>(?:\s+(?:now|currently|still|just|recently|finally|also|actually|officially|already|"\
       r"happily|eventually|again|then|soon|since))*)"
_HER = r"(?:(?:her|his|their|my|the|\w+['’]s)\s+)?"
_V = r"(?P<v>.+)"                                   # the value (a plan's action)

_DIETS = (r"vegetarian|vegan|pescatarian|pescetarian|keto|paleo|flexitarian|carnivore|omnivore|gluten[- ]free|"
          r"lactose[- ]free|plant[- ]based|raw[- ]vegan")
_FOODS = r"meat|red meat|fish|seafood|chicken|pork|beef|dairy|eggs|animal products|gluten"
_JOBS = (r"engineer|developer|programmer|teacher|nurse|doctor|physician|surgeon|lawyer|attorney|manager|designer|"
         r"student|accountant|chef|cook|scientist|researcher|professor|writer|journalist|artist|architect|"
         r"consultant|analyst|pharmacist|dentist|therapist|electrician|plumber|mechanic|pilot|firefighter|"
         r"police officer|officer|salesperson|cashier|barista|waiter|waitress|photographer|musician|"
         r"entrepreneur|founder|ceo|cto|intern|veterinarian|vet|librarian|paramedic|economist|editor")

# A thing owned: up to three words ending at a vehicle, a home or another big possession.
_THING = (r"(?:(?!for\b|to\b|on\b|at\b|with\b|in\b|of\b|from\b|near\b)[\w-]+\s+){0,3}?(?:car|truck|van|bike|e-bike|motorbike|motorcycle|scooter|boat|house|home|flat|"
          r"apartment|condo|cabin|piano|[A-Z][\w-]+)")

# (slot, pattern, value): value "v" = the captured value, None = the attribute ends, any other
# string = that constant. Negations come before the positive forms they contain.
_RULES: list[tuple[str, str, str | None]] = [
    # -- plans: the slot is the action itself, so only the same plan is retracted
    ("plan", rf"{_S}{_ADV}\s+(?:is|was|are)\s+(?:no longer|not)\s+(?:planning|going|hoping|intending|"
             rf"thinking about|considering)\s+(?:to\s+)?{_V}", "cancelled"),
    ("plan", rf"{_S}{_ADV}\s+(?:no longer|doesn['’]t|does not|won['’]t|will not|didn['’]t)\s+"
             rf"(?:plans?|wants?|intends?|hopes?|going)\s+to\s+{_V}", "cancelled"),
    ("plan", rf"{_S}{_ADV}\s+(?:cancelled|canceled|called off|dropped|abandoned|scrapped|shelved|gave up on|"
             rf"gave up|postponed indefinitely)\s+{_HER}(?:plans?|idea|intention|decision)\s+(?:to|of)\s+{_V}",
     "cancelled"),
    ("plan", rf"{_S}{_ADV}\s+(?:decided|chose)\s+(?:not to|against)\s+{_V}", "cancelled"),
    ("plan", rf"{_S}{_ADV}\s+(?:am|is|are)\s+(?:not|no longer)\s+(?P<v>(?:moving|relocating)\s+(?:back\s+)?to\s+.+)",
     "cancelled"),
    ("plan", rf"{_S}{_ADV}\s+(?:cancelled|canceled|called off|scrapped|abandoned|shelved)\s+{_HER}"
             rf"(?P<v>(?:\w+\s+){{0,2}}(?:trip|vacation|holiday|move|visit|wedding|party|plans?)\b.*)", "cancelled"),
    ("plan", rf"{_S}{_ADV}\s+(?:is|was|are)\s+(?:planning|hoping|intending|thinking about|considering|about|"
             rf"going\s+(?=to\s+(?!the\b|a\b|an\b|my\b|his\b|her\b|their\b|our\b|[A-Z])))\s*(?:to\s+)?{_V}",
     "planned"),
    ("plan", rf"{_S}{_ADV}\s+(?:am|is|are)\s+(?P<v>(?:interviewing|applying)\s+(?:at|to)\s+"
             rf"[A-Z][\w&.'’-]*(?:\s+[A-Z][\w&.'’-]*)*)(?:\s+(?:for|as)\b.*)?", "planned"),   # "... at Amazon for a role"
    ("plan", rf"{_S}{_ADV}\s+(?:am|is|are)\s+(?P<v>(?:moving|relocating)\s+(?:back\s+)?to\s+.+)", "planned"),
    ("plan", rf"{_S}{_ADV}\s+(?:am|is|are)\s+(?P<v>(?:going|flying|heading|traveling|travelling)\s+(?:back\s+)?to\s+"
             rf"[A-Z].*)", "planned"),                                      # "is going to Portugal in May"
    ("plan", rf"{_S}{_ADV}\s+(?:plans?|intends?|hopes?|decided|has decided)\s+to\s+{_V}", "planned"),
    ("plan", rf"{_P}\s+plan\s+is\s+to\s+{_V}", "planned"),
    # -- where someone lives
    ("lives_in", rf"{_S}{_ADV}\s+(?:no longer|doesn['’]t|does not)\s+(?:lives?|resides?)\s+in\s+{_V}", None),
    ("lives_in", rf"{_S}{_ADV}\s+moved\s+(?:out\s+of|away\s+from)\s+{_V}", None),
    ("lives_in", rf"{_S}{_ADV}\s+(?:lives?|is living|has been living|has lived|resides?|is residing|"
                 rf"is based|is staying|has settled|settled)\s+(?:down\s+)?in\s+{_V}", "v"),
    ("lives_in", rf"{_S}{_ADV}\s+(?:has\s+)?(?:moved|relocated|moves|relocates)\s+(?:back\s+)?to\s+{_V}", "v"),
    ("lives_in", rf"{_P}\s+(?:home|house|apartment|flat)\s+is\s+(?:now\s+)?in\s+{_V}", "v"),
    # -- where someone works
    ("works_at", rf"{_S}{_ADV}\s+(?:quit|left|resigned from|retired from|was laid off from|got laid off from|"
                 rf"was fired from|got fired from|lost)\s+{_HER}(?:job|position|role)(?:\s+(?:at|with)\s+{_V})?",
     None),
    ("works_at", rf"{_S}{_ADV}\s+(?:quit|left|resigned from|retired from|was laid off from|got laid off from|"
                 rf"was fired from|got fired from)\s+(?P<v>[A-Z].*)", None),
    # "left acme last month, starting at Globex on monday": where they went is what holds now
    ("works_at", rf"{_S}{_ADV}\s+(?:quit|left)\s+[^,]+,\s+(?:and\s+)?(?:now\s+)?(?:starting|started|working|joining|"
                 rf"joined)\s+(?:at|with|for)?\s*(?P<v>[A-Z].*)", "v"),
    ("works_at", rf"{_S}{_ADV}\s+(?:handed in|gave|put in|turned in)\s+{_HER}notice\s+(?:at|to)\s+{_V}", None),
    ("works_at", rf"{_S}:\s+(?:[Ww]ork|[Tt]he job|{_NAME}['’]s job)\s+at\s+(?P<v>[A-Z][\w&.'’-]*(?:\s+[A-Z][\w&.'’-]*)*)"
                 rf"\s+(?:is|has been|was)\b.*", "v"),          # said: "Alice: Work at Initech is killing Alice"
    ("works_at", rf"{_S}{_ADV}\s+(?:is|became|has been)\s+(?:now\s+)?(?P<v>unemployed|retired|out of work|between jobs)",
     "v"),
    ("works_at", rf"{_S}{_ADV}\s+(?:no longer|doesn['’]t|does not)\s+works?\s+(?:at|for)\s+{_V}", None),
    ("works_at", rf"{_S}{_ADV}\s+(?:works?|is working|has been working|has worked)(?:\s+(?:remotely|full[- ]time|"
                 rf"part[- ]time|there|now|still))?\s+(?:at|for)\s+{_V}", "v"),
    ("works_at", rf"{_S}{_ADV}\s+(?:started|began|is starting|starts)\s+(?:working\s+)?(?:at|with)\s+{_V}", "v"),
    ("works_at", rf"{_S}{_ADV}\s+(?:started|is starting|began|has started|starts|got|landed|accepted|took)\s+"
                 rf"(?:a\s+)?(?:new\s+)?(?:job|position|role|work|offer)(?:\s+as\s+[\w\s-]+?)?\s+(?:at|with)\s+{_V}",
     "v"),
    ("works_at", rf"{_S}{_ADV}\s+(?:is employed|was hired|got hired|is hired|has been hired)\s+(?:at|by)\s+{_V}",
     "v"),
    ("works_at", rf"{_S}{_ADV}\s+(?:has\s+)?joined\s+(?P<v>(?:[A-Z]|(?:a|an|the)\s+(?:[\w-]+\s+){{0,3}}(?:called|named)\s+"
                 rf"[A-Z]).*)", "v"),
    ("works_at", rf"{_P}\s+(?:employer|company|workplace)\s+is\s+(?:now\s+)?{_V}", "v"),
    # -- occupation
    ("occupation", rf"{_S}{_ADV}\s+(?:works|is working)\s+as\s+(?:an?\s+)?{_V}", "v"),
    ("occupation", rf"{_S}{_ADV}\s+(?:became|has become|is employed as|was promoted to|got promoted to)\s+"
                   rf"(?:an?\s+)?(?!(?:father|mother|mom|dad|parent|grandparent|grandmother|grandfather|aunt|uncle|"
                   rf"citizen|vegan|vegetarian|member|fan)\b){_V}", "v"),
    ("occupation", rf"{_S}{_ADV}\s+is\s+(?:now\s+)?(?:an?|the)\s+(?P<v>(?:[\w-]+\s+){{0,3}}(?i:{_JOBS}))"
                   rf"(?:\s+(?:at|for|in|of|with|on|based|living|who)\s+.+)?", "v"),
    ("occupation", rf"{_S}{_ADV}\s+(?:teaches|is teaching|started teaching|has been teaching|is now teaching)\s+"
                   rf"(?P<v>[\w-]+)(?:\s+(?:at|in|to)\s+.+)?", "teaches {v}"),        # "teaches chemistry at ..."
    ("occupation", rf"{_P}\s+(?:job|occupation|profession)\s+is\s+(?:now\s+)?(?:an?\s+)?{_V}", "v"),
    # -- relationship (value: the partner, or a status word)
    ("relationship", rf"{_S}{_ADV}\s+(?:broke up|split up|separated|split)\s+(?:with|from)\s+{_V}", None),
    ("relationship", rf"{_S}{_ADV}\s+(?:divorced|dumped|left)\s+{_HER}(?:{_PARTNER}\s+)?(?P<v>[A-Z].*)", None),
    ("relationship", rf"{_S}{_ADV}\s+(?:broke up|split up|got divorced)", None),                 # "we broke up"
    ("relationship", rf"{_S}\s+and\s+(?P<v>[A-Z][\w'’-]*){_ADV}\s+(?:broke up|split up|got divorced|separated)", None),
    ("relationship", rf"{_S}{_ADV}\s+(?:got|was)\s+(?:divorced|separated)", None),
    ("relationship", rf"{_S}{_ADV}\s+(?:is|became|has been)\s+(?:now\s+)?(?P<v>single|divorced|separated|widowed)", "v"),
    ("relationship", rf"{_S}{_ADV}\s+(?:is|are)\s+(?:no longer|not)\s+(?:dating|seeing|with|married to|"
                     rf"engaged to|together with)\s+{_V}", None),
    ("relationship", rf"{_S}{_ADV}\s+(?:is|are|has been)\s+(?:dating|seeing|going out with|in a relationship with|"
                     rf"engaged to|married to|together with)\s+{_V}", "v"),
    ("relationship", rf"{_S}{_ADV}\s+(?:started dating|started seeing|got engaged to|got married to|married|"
                     rf"is marrying|moved in with)\s+{_V}", "v"),
    ("relationship", rf"{_S}\s+and\s+(?P<v>[A-Z][\w'’-]*){_ADV}\s+(?:are dating|got married|are married|got engaged|"
                     rf"are engaged|are together|started dating)", "v"),
    ("relationship", rf"{_P}\s+(?:new\s+)?{_PARTNER}\s+is\s+(?:now\s+)?{_V}", "v"),
    ("relationship", rf"{_S}{_ADV}\s+(?:is|got)\s+(?:married|engaged)", "married"),
    ("relationship", rf"{_S}{_ADV}\s+(?:is|are)\s+in\s+a\s+relationship", "in a relationship"),
    # -- diet
    ("diet", rf"{_S}{_ADV}\s+(?:is|are)\s+(?:no longer|not)\s+(?:an?\s+)?(?:strict\s+)?(?P<v>{_DIETS})", "not {v}"),
    ("diet", rf"{_S}{_ADV}\s+(?:stopped|quit)\s+being\s+(?:an?\s+)?(?P<v>{_DIETS})", "not {v}"),
    ("diet", rf"{_S}{_ADV}\s+(?:stopped|quit|gave up|dropped|is done with)\s+(?:doing\s+|being on\s+|following\s+)?"
             rf"(?:the\s+|an?\s+)?(?P<v>{_DIETS})(?:\s+diet)?", "not {v}"),                 # "stopped doing keto"
    ("diet", rf"{_S}{_ADV}\s+(?:no longer eats|doesn['’]t eat|does not eat|stopped eating|quit eating|gave up|"
             rf"cut out|avoids|won['’]t eat|never eats)\s+(?P<v>{_FOODS})", "no {v}"),
    ("diet", rf"{_S}{_ADV}\s+(?:eats|is eating|started eating|is back to eating|went back to eating|"
             rf"eats|resumed eating|started eating)\s+(?P<v>{_FOODS})", "eats {v}"),
    ("diet", rf"{_S}{_ADV}\s+(?:is|are|became|has become|went|has gone|turned|is now|has been|have been)\s+(?:an?\s+)?"
             rf"(?:strict\s+|full\s+|fully\s+)?(?P<v>{_DIETS})", "v"),
    ("diet", rf"{_S}{_ADV}\s+(?:switched|has switched|changed|moved)\s+(?:over\s+)?to\s+(?:an?\s+)?(?:strict\s+)?"
             rf"(?P<v>{_DIETS})(?:\s+diet)?", "v"),
    ("diet", rf"{_S}{_ADV}\s+(?:is on|is following|follows|started|went on|is doing)\s+(?:an?|the)\s+(?P<v>[\w-]+)\s+diet",
     "v"),
    # -- name
    ("name", rf"{_P}\s+(?:full\s+|new\s+|real\s+|legal\s+)?name\s+is\s+(?:now\s+)?{_V}", "v"),
    ("name", rf"{_S}{_ADV}\s+(?:has\s+)?(?:legally\s+)?changed\s+{_HER}(?:last\s+|first\s+|legal\s+)?name\s+to\s+{_V}",
     "v"),
    ("name", rf"{_S}{_ADV}\s+(?:goes by|is called|is now called|wants to be called|prefers to be called|"
             rf"is known as|now goes by)\s+{_V}", "v"),
    # -- things someone owns: one slot per thing ("owns:civic"); selling it ends the slot
    ("owns", rf"{_S}{_ADV}\s+(?:sold|has sold|got rid of|gave away|traded in|traded|scrapped|totaled|totalled|"
             rf"returned)\s+{_HER}(?P<k>{_THING})(?:\s+(?:for|to|on|at|with)\b.*)?", None),
    ("owns", rf"{_S}{_ADV}\s+(?:owns|drives|bought|has bought|purchased|got|leased|is driving)\s+(?:an?\s+|the\s+|(?:her|his|their|my|\w+['’]s)\s+)"
             rf"(?:new\s+|used\s+|second-hand\s+)?(?P<k>{_THING})(?:\s+(?:for|from|on|at|with|in|near)\b.*)?", "yes"),
    # -- favourites: one slot per thing ("favorite:color")
    ("favorite", rf"{_P}\s+(?:new\s+)?fav(?:ou?rite)?\s+(?P<k>[\w -]+?)\s+is\s+(?:now\s+)?{_V}", "v"),
]
# Words that may follow a complete statement ("Alice is vegan now", "... eats meat again").
_MONTH = r"(?i:january|february|march|april|may|june|july|august|september|october|november|december)"
_TIME = (rf"(?:(?:last|next|this|a few|a couple of|\d+|one|two|three|four|five|six|seven|eight|nine|ten|several)\s+"
         rf"(?:\w+\s+)?(?:days?|weeks?|months?|years?|weekend|spring|summer|fall|autumn|winter|night|morning)"
         rf"(?:\s+ago)?|a while ago|yesterday|tonight|tomorrow|right now|in the (?:spring|summer|fall|autumn|winter)|"
         rf"(?:in|on|since|by|until|from)\s+(?:{_MONTH}|[A-Z][a-z]+day|(?:19|20)\d\d|spring|summer|fall|autumn|winter)"
         rf"(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?|for\s+(?:\w+\s+){{0,2}}(?:days?|weeks?|months?|years?)|"
         rf"on\s+(?:weekends|[A-Z][a-z]+days))")
_TAIL = (r"(?:\s+(?:now|again|anymore|any more|too|as well|these days|for good|at the moment|lately|recently|"
         rf"today|for now|after all|instead(?: of .+)?|{_TIME}))*(?:,?\s+(?:after|because|since|when|as|so)\b.*)?(?:,.*)?")
_COMPILED = [(slot, re.compile(pat + _TAIL + r"\s*$", re.IGNORECASE if slot == "diet" else 0), value)
             for slot, pat, value in _RULES]
_ADDITIVE = re.compile(r"(?:\btoo|\bas well)$")

_TRAILING = re.compile(
    r"\s+(?:(?:in|since|from|until|by)\s+(?:january|february|march|april|may|june|july|august|september|october|"
    r"november|december|spring|summer|autumn|fall|winter|\d{4})\b.*|(?:last|next|this|a few|a couple of|two|three|"
    r"several)\s+(?:\w+\s+)?(?:week|weeks|month|months|year|years|day|days|weekend|spring|summer|fall|autumn|"
    r"winter|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b.*|"
    r"(?:now|again|anymore|any more|ago|recently|for good|after all|soon|today|yesterday|tomorrow|tonight|last night|"
    r"these days|"
    r"at the moment|full[- ]time|part[- ]time|instead|too|as well)\b.*|"
    r"(?:because|since|after|when|so|but|and then|with)\b.*)$",
    re.IGNORECASE)
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_WORD = re.compile(r"[\w'’-]+")


def _clean_value(v: str | None, slot: str) -> str | None:
    if v is None:
        return None
    v = v.split(",")[0].strip(" .,!;:\"'")
    v = re.sub(r"^.*?\b(?:called|named)\s+(?=[A-Z])", "", v)     # "a startup called Loomly" -> "Loomly"
    for _ in range(3):                         # "Seattle with Bob last week" -> "Seattle"
        shorter = _TRAILING.sub("", v).strip(" .,!;:")
        if shorter == v or not shorter:
            break
        v = shorter
    if slot in ("works_at", "lives_in"):
        v = re.split(r"\s+(?:as|in|on|near)\s+(?=[a-z])|\s+(?:for|because|with)\s+", v)[0]   # "Google as an engineer"
    if slot == "occupation":
        v = re.split(r"\s+(?:at|for|in|with|on)\s+", v)[0]              # "nurse at OHSU" -> "nurse"
    v = _ARTICLE.sub("", v)
    return " ".join(_WORD.findall(v.lower())) or None


def _stem(word: str) -> str:
    """Base form of a plan's verb, so 'moving to Denver' and 'move to Denver' give one key."""
    w = word.lower()
    if w.endswith("ing") and len(w) > 4:
        w = w[:-3]
        if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "aeiouls":
            w = w[:-1]                                   # getting -> get
        elif re.fullmatch(r"[^aeiou]*[aeiou][^aeiouwxy]", w):
            w += "e"                                     # moving -> move, taking -> take
    return w


def slot_key(subject: str | None, slot: str | None) -> str | None:
    """The key a fact's subject and slot are stored, superseded and looked up under; None: no slot.

    >>> slot_key("alice", "lives_in"), slot_key("alice", None)
    ('alice|lives_in', None)
    """
    return f"{subject}|{slot}" if subject and slot else None


def holder_key(subject: str | None, slot: str | None, value: str | None) -> str | None:
    """The slot key a fact *holds* (a current value); a fact that ends its slot (value None) is in
    the slot's history under `slot_key` but holds nothing.

    >>> holder_key("alice", "relationship", None) is None, holder_key("alice", "lives_in", "seattle")
    (True, 'alice|lives_in')
    """
    return slot_key(subject, slot) if value is not None else None


def plan_key(action: str) -> str:
    """Normalise a plan's action: stemmed verb + cleaned object.

    >>> plan_key("moving to Denver next spring") == plan_key("move to Denver")
    True
    >>> plan_key("Japan trip"), plan_key("trip to Japan in October")
    ('trip to japan', 'trip to japan')
    """
    action = _clean_value(action, "plan") or ""
    words = action.split()
    if not words:
        return ""
    trip = re.fullmatch(r"(?:her |his |their |my )?((?:\w+ ){1,2})(trip|vacation|holiday)", action)
    if trip:                                   # "the Japan trip" is "a trip to Japan"
        return f"{trip.group(2)} to {trip.group(1).strip()}"
    rest = [w for w in words[1:] if w not in ("her", "his", "their", "my")]
    return " ".join([_stem(words[0])] + rest)


# A state that fulfils a plan: "Alice lives in Seattle" ends the plan "move to seattle", "Alice
# works at Amazon" ends "interview at amazon".
_FULFILS = {"lives_in": ("move to {v}", "move back to {v}"),
            "works_at": ("interview at {v}", "apply to {v}", "apply at {v}")}


def fulfilled_plans(slot: str | None, value: str | None) -> list[str]:
    """Plan slots a fact on `slot` with `value` fulfils (so they stop being current).

    >>> fulfilled_plans("lives_in", "seattle")
    ['plan:move to seattle', 'plan:move back to seattle']
    """
    if not slot or not value:
        return []
    return [f"plan:{t.format(v=value)}" for t in _FULFILS.get(slot, ())]


def _subject(raw: str, speaker: str | None) -> str:
    s = re.sub(r"\s+and\s+.*$", "", raw.strip())          # "Alice and others" (we) is Alice's fact
    s = re.sub(r"^.*['’]s\s+(?:[\w-]+\s+){1,2}(?=[A-Z])", "", s)    # "Alice's sister Carol" is Carol
    if s in ("I", "i") and speaker:
        s = speaker
    return " ".join(s.lower().replace("’", "'").split())


def detect_slot(text: str, speaker: str | None = None) -> SlotMatch | None:
    """The subject + slot a fact states, or None. `speaker` resolves a leading "I" (raw messages).

    >>> detect_slot("Alice's name is Alicia Keys")
    SlotMatch(subject='alice', slot='name', value='alicia keys', additive=False)
    >>> detect_slot("I work at Google", speaker="Bob").subject
    'bob'
    >>> detect_slot("Alice also works at a bakery on weekends").additive
    True
    """
    if not isinstance(text, str):
        return None
    t = " ".join(text.strip().rstrip(".!;").split())
    if not t or t.endswith("?"):
        return None
    t = _NOW.sub("", t)                 # "These days Alice's favorite band is ..." states the slot now
    if speaker:     # "Maria and Bob got married" / "Bob's wife and Bob are vegan": Bob's slot
        t = re.sub(rf"^([\w'’ -]{{1,40}}?) and {re.escape(speaker)}\b", rf"{speaker} and \1", t)
    for slot, rx, value in _COMPILED:
        m = rx.match(t)
        if not m:
            continue
        groups = m.groupdict()
        raw_v = groups.get("v")
        if slot == "plan":
            key = plan_key(raw_v or "")
            if not key:
                continue
            return SlotMatch(_subject(groups["s"], speaker), f"plan:{key}", value)
        if slot == "favorite":
            slot = "favorite:" + " ".join(_WORD.findall(groups["k"].lower()))
        if slot == "owns":        # "a 2015 Honda Civic" and "the Civic" are one thing
            slot = "owns:" + _WORD.findall(groups["k"].lower())[-1]
        if value is None:
            val = None
        elif value == "v":
            val = _clean_value(raw_v, slot)
        else:
            val = value.format(v=(raw_v or "").lower())
        additive = "also" in (groups.get("adv") or "").split() or _ADDITIVE.search(t) is not None
        return SlotMatch(_subject(groups["s"], speaker), slot, val, additive)
    return None


_NOW = re.compile(r"^(?:these days|nowadays|lately|now|currently|at the moment|as of now|right now),?\s+(?=[A-Z])",
                  re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|longer)\b|n['’]t\b", re.IGNORECASE)


def is_negated(text: str) -> bool:
    """Whether a fact is stated negatively; near-identical embeddings of opposite polarity are
    not duplicates ("is allergic" / "is not allergic" embed at ~0.98 cosine).

    >>> is_negated("Alice is not allergic to peanuts"), is_negated("Alice isn't vegan"), is_negated("Alice is vegan")
    (True, True, False)
    """
    return _NEGATION.search(text) is not None


# Which slot a QUESTION asks about; checked in order (a plan question mentions "move", a name
# question may mention "called").
_QUESTION_SLOTS: list[tuple[str, re.Pattern[str]]] = [(slot, re.compile(rx, re.IGNORECASE)) for slot, rx in (
    ("plan", r"\b(?:plan|plans|planning|planned|intend|intends|going to|will \w+ (?:still )?(?:move|go|visit|buy|"
             r"start|quit|leave)|thinking (?:of|about))\b"),
    ("name", r"\b(?:name|surname|called|goes by)\b"),
    ("favorite", r"\bfavou?rite\b"),
    ("diet", r"\b(?:eat|eats|eating|diet|vegetarian|vegan|pescatarian|meat|fish|keto)\b"),
    ("relationship", r"\b(?:dating|date|dates|partner|relationship|married|marry|single|boyfriend|girlfriend|"
                     r"husband|wife|spouse|engaged|seeing|together)\b"),
    ("occupation", r"\b(?:for a living|job|profession|occupation|career|what does \w+ do)\b"),
    ("works_at", r"\b(?:work|works|working|employer|employed|company|firm|office)\b"),
    ("lives_in", r"\b(?:live|lives|living|home|city|town|country|reside|resides|based|located|moved|where is)\b"),
)]


def question_slot(question: str) -> str | None:
    """The slot family a question asks about, or None.

    >>> question_slot("Where does Alice live?"), question_slot("Who is Alice's employer?")
    ('lives_in', 'works_at')
    >>> question_slot("Is Alice planning to move to Denver?"), question_slot("Does Alice like jazz?")
    ('plan', None)
    """
    for slot, rx in _QUESTION_SLOTS:
        if rx.search(question or ""):
            return slot
    return None


def slot_reranker(query: str, results: list[dict[str, Any]]) -> list[float]:
    """A reranker for `Memory.search(rerank=True)`: results stating the slot the question asks
    about come first (in fused order), then the rest. Use: `m.reranker = slot_reranker`.

    >>> slot_reranker("Where does Alice live?", [{"memory": "Alice loves jazz", "score": 0.5},
    ...                                          {"memory": "Alice moved to Oslo", "score": 0.4}])
    [0.5, 1.4]
    """
    want = question_slot(query)
    out = []
    for r in results:
        m = detect_slot(r.get("memory") or "")
        family = m.slot.split(":", 1)[0] if m else None
        out.append(float(r.get("score") or 0.0) + (1.0 if want is not None and family == want else 0.0))
    return out
