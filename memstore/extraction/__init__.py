"""Fact extraction: what a conversation is turned into before it is stored.

- `extract_llm.py`: ONE call to an OpenAI-compatible LLM per add (prompt, JSON parsing, limits).
- `extract_heuristic.py` + `clauses.py`, `chat_text.py`, `time_phrases.py`:
  the offline, rule-based extractor (the default), on spaCy's parse.
- `factory.py`: the extractor a config asks for.

Models (spaCy, embedders) live in `memstore/providers/`; this package holds the rules.
"""
