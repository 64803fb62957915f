"""Knowledge-update benchmark: does search answer with the CURRENT fact after a fact changed?

Generates fact-change pairs from templates (seeded): for each person, an old statement of a slot
(where they live, work, their diet, relationship, occupation, name, a plan) in one session and a
newer, differently worded statement of the same slot months later, plus unrelated facts. Each
statement goes through the public API (`add` with `timestamp`, offline heuristic extractor), then
one question per pair is asked with `search`; a pair counts when the top-1 result is the new fact.

Reported: the share with slot supersession (default config), without it (`slot_supersession="off"`:
both facts stay current, as in mem0), the share of `as_of` questions (between the two sessions)
answered with the OLD fact, and how many pairs the write path superseded.

    python bench/knowledge_update.py                      # 252 pairs (36 people x 7 slots)
    python bench/knowledge_update.py --people 10 --seed 7
"""
from __future__ import annotations

import argparse
import copy
import datetime as dt
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memstore import Memory
from memstore.core.rules.slots import detect_slot, slot_reranker

NAMES = ["Alice", "Bruno", "Chloe", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ingrid", "Jamal", "Keiko", "Liam",
         "Maya", "Nikolai", "Olivia", "Pedro", "Quinn", "Rosa", "Samir", "Tara", "Umar", "Vera", "Wen", "Ximena",
         "Yusuf", "Zoe", "Anders", "Bianca", "Carlos", "Dalia", "Emeka", "Fiona", "Gustav", "Hana", "Ivan", "Julia",
         "Kofi", "Lena", "Marco", "Nadia"]
CITIES = ["Boston", "Seattle", "Denver", "Austin", "Chicago", "Portland", "Toronto", "Berlin", "Lisbon", "Madrid",
          "Dublin", "Oslo", "Prague", "Vienna", "Tokyo", "Sydney", "Melbourne", "Nairobi", "Lagos", "Mumbai",
          "Singapore", "Seoul", "Montreal", "Vancouver", "Edinburgh", "Barcelona", "Amsterdam", "Copenhagen"]
COMPANIES = ["Google", "Microsoft", "Amazon", "Stripe", "Shopify", "Spotify", "Airbnb", "Netflix", "Adobe", "Oracle",
             "Siemens", "Philips", "Nokia", "Accenture", "Deloitte", "Pfizer", "Novartis", "Unilever", "IKEA", "Toyota"]
JOBS = ["teacher", "nurse", "software engineer", "architect", "accountant", "chef", "lawyer", "designer",
        "data scientist", "pharmacist", "journalist", "electrician", "photographer", "physician", "consultant"]
PARTNERS = ["Sam", "Alex", "Jordan", "Taylor", "Morgan", "Riley", "Casey", "Jamie", "Robin", "Avery", "Noah", "Emma"]
SURNAMES = ["Smith", "Garcia", "Novak", "Okafor", "Tanaka", "Silva", "Kowalski", "Haddad", "Larsen", "Moreau",
            "Rossi", "Schmidt", "Nguyen", "Kim", "Patel", "Cohen"]
DIETS = [("I'm vegetarian.", "I eat meat again."), ("I'm vegan.", "I'm vegetarian now."),
         ("I eat meat.", "I'm vegan now."), ("I'm pescatarian.", "I stopped eating fish."),
         ("I'm on a keto diet.", "I'm vegetarian now."), ("I eat meat.", "I'm vegetarian now.")]
HOBBIES = ["hiking", "chess", "painting", "surfing", "baking", "cycling", "jazz", "gardening", "knitting", "tennis"]
PETS = ["dog", "cat", "parrot", "rabbit", "turtle"]


def _pick(rng: random.Random, pool: list[str], n: int = 2) -> list[str]:
    return rng.sample(pool, n)


def make_pairs(rng: random.Random, name: str) -> list[dict]:
    """Seven slot changes for one person: old message, new message, question."""
    a, b = _pick(rng, CITIES)
    c1, c2 = _pick(rng, COMPANIES)
    j1, j2 = _pick(rng, JOBS)
    p1, p2 = _pick(rng, PARTNERS)
    s1, s2 = _pick(rng, SURNAMES)
    plan_city = rng.choice([c for c in CITIES if c not in (a, b)])
    d_old, d_new = rng.choice(DIETS)
    pairs = [
        ("lives_in", f"I live in {a}.", rng.choice([f"I moved to {b}.", f"I relocated to {b}.", f"I live in {b} now.",
                                                    f"I just moved to {b}."]),
         rng.choice([f"Where does {name} live?", f"Which city does {name} live in?", f"Where is {name}'s home?"])),
        ("works_at", rng.choice([f"I work at {c1}.", f"I work for {c1}."]),
         rng.choice([f"I just started a new job at {c2}.", f"I work at {c2} now.", f"I got a job at {c2}.",
                     f"I joined {c2}."]),
         rng.choice([f"Where does {name} work?", f"Which company does {name} work for?",
                     f"Who is {name}'s employer?"])),
        ("diet", d_old, d_new, rng.choice([f"What does {name} eat?", f"What is {name}'s diet?",
                                           f"Is {name} vegetarian?"])),
        ("relationship", f"I'm dating {p1}.",
         rng.choice([f"I broke up with {p1}.", "I'm single now.", f"I'm engaged to {p2} now.",
                     f"I got married to {p2}."]),
         rng.choice([f"Who is {name} dating?", f"Is {name} in a relationship?", f"Who is {name}'s partner?"])),
        ("occupation", f"I'm a {j1}.", rng.choice([f"I became a {j2}.", f"I work as a {j2} now.",
                                                  f"I'm a {j2} now."]),
         rng.choice([f"What does {name} do for a living?", f"What is {name}'s job?", f"What is {name}'s profession?"])),
        ("name", f"My name is {name} {s1}.", rng.choice([f"I changed my name to {name} {s2}.",
                                                         f"My name is {name} {s2} now."]),
         rng.choice([f"What is {name}'s full name?", f"What is {name}'s last name?"])),
        ("plan", f"I'm planning to move to {plan_city}.",
         rng.choice([f"I'm no longer planning to move to {plan_city}.", f"I cancelled my plan to move to {plan_city}.",
                     f"I decided not to move to {plan_city}."]),
         rng.choice([f"Is {name} planning to move to {plan_city}?", f"Will {name} move to {plan_city}?"])),
    ]
    return [{"slot": s, "old": o, "new": n, "question": q} for s, o, n, q in pairs]


def distractors(rng: random.Random) -> list[str]:
    h1, h2 = _pick(rng, HOBBIES)
    return [f"I love {h1}.", f"I have a {rng.choice(PETS)} named {rng.choice(PARTNERS)}.", f"I play {h2} on weekends."]


def build(m: Memory, people: list[tuple[str, list[dict], list[str], dt.datetime, dt.datetime]]) -> tuple[int, float]:
    """Two sessions per person (old statements + unrelated facts, then the new statements months
    later), each ONE add with the session's time; the memory id of every statement is found by the
    slot its fact states."""
    adds, t0 = 0, time.perf_counter()
    for name, pairs, extra, t_old, t_new in people:
        for key, when, lines in (("old", t_old, extra), ("new", t_new, [])):
            text = " ".join([p[key] for p in pairs] + lines)
            out = m.add([{"role": "user", "content": text, "name": name}], user_id=name.lower(), timestamp=when)
            adds += 1
            by_family = defaultdict(list)
            for r in out["results"]:
                if r["event"] == "ADD":
                    found = detect_slot(r["memory"])
                    by_family[found.slot.split(":")[0] if found else None].append(r["id"])
            for p in pairs:
                ids = by_family.get(p["slot"], [])
                p[f"{key}_id"] = ids[0] if len(ids) == 1 else None
    return adds, time.perf_counter() - t0


def evaluate(m: Memory, people: list, *, as_of: bool = False,
             rerank: bool = False) -> tuple[dict[str, list[bool]], list[float]]:
    hits: dict[str, list[bool]] = defaultdict(list)
    lat = []
    for name, pairs, _extra, t_old, t_new in people:
        for p in pairs:
            kw = {"as_of": t_old + (t_new - t_old) / 2} if as_of else {}
            t0 = time.perf_counter()
            res = m.search(p["question"], user_id=name.lower(), top_k=10, rerank=rerank, **kw)["results"]
            lat.append(time.perf_counter() - t0)
            want = p["old_id"] if as_of else p["new_id"]
            hits[p["slot"]].append(bool(res) and want is not None and res[0]["id"] == want)
    return hits, lat


def share(hits: dict[str, list[bool]]) -> float:
    flat = [h for v in hits.values() for h in v]
    return sum(flat) / len(flat) if flat else 0.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--people", type=int, default=36, help="people (7 fact-change pairs each; 36 -> 252 pairs)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--embedder", default="local", choices=("local", "hashing"))
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    names = (NAMES * (args.people // len(NAMES) + 1))[:args.people]
    people = []
    for i, name in enumerate(names):
        name = name if i < len(NAMES) else f"{name}{'abcdefghij'[i // len(NAMES)]}"
        t_old = dt.datetime(2023, 1, 1) + dt.timedelta(days=rng.randrange(0, 120))
        t_new = t_old + dt.timedelta(days=rng.randrange(30, 300))
        people.append((name, make_pairs(rng, name), distractors(rng), t_old, t_new))
    n_pairs = sum(len(p[1]) for p in people)
    print(f"knowledge update: {n_pairs} fact-change pairs, {len(people)} people, seed {args.seed}, "
          f"embedder {args.embedder}, heuristic extractor")

    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, mode in (("with supersession", "heuristic"), ("without supersession", "off")):
            run = copy.deepcopy(people)
            with Memory(f"{tmp}/{mode}.duckdb", config={"embedder": {"provider": args.embedder},
                                                        "slot_supersession": mode}) as m:
                adds, t_build = build(m, run)
                hits, lat = evaluate(m, run)
                m.reranker = slot_reranker
                hits_rr, _ = evaluate(m, run, rerank=True)
                as_of = [evaluate(m, run, as_of=True, rerank=rr)[0] for rr in (False, True)] \
                    if mode == "heuristic" else []
                pairs = [p for _n, ps, *_ in run for p in ps]
                stored = [p for p in pairs if p["old_id"] and p["new_id"]]
                superseded = sum((m.get(p["old_id"]) or {}).get("superseded_by") == p["new_id"] for p in stored)
            figures[label] = (share(hits), share(hits_rr))
            print(f"\n{label}:")
            for what, h in (("fused search", hits), ("fused search + slot reranker", hits_rr)):
                n_hit = sum(sum(v) for v in h.values())
                print(f"  top-1 is the current fact, {what}: {share(h):.3f}  ({n_hit}/{n_pairs})"
                      "\n    per slot: " + ", ".join(f"{s} {sum(v) / len(v):.2f}" for s, v in sorted(h.items())))
            if as_of:
                print(f"  as_of between the sessions, top-1 is the old fact: fused {share(as_of[0]):.3f}, "
                      f"+ slot reranker {share(as_of[1]):.3f}")
            print(f"  pairs with both facts stored: {len(stored)}/{n_pairs}; old superseded by new: {superseded}")
            lat.sort()
            print(f"  {adds} adds in {t_build:.1f}s ({t_build / adds * 1000:.0f} ms each); search p50 "
                  f"{lat[len(lat) // 2] * 1000:.1f} ms, p95 {lat[int(len(lat) * 0.95)] * 1000:.1f} ms")
    (w, w_rr), (wo, wo_rr) = figures["with supersession"], figures["without supersession"]
    print(f"\nsummary: top-1 is the current fact — fused search {w:.3f} with supersession vs {wo:.3f} without; "
          f"with the slot reranker {w_rr:.3f} vs {wo_rr:.3f} (target >= 0.95 with supersession)")
    return 0 if max(w, w_rr) >= 0.95 else 1

if __name__ == "__main__":
    sys.exit(main())
