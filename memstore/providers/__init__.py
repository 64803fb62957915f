"""Providers: LLM extractors, embedders, spaCy NLP. Built from config by `build_*` in `factory.py`."""
