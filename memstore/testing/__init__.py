"""Test helpers for memstore (scripted OpenAI-compatible server, etc.)."""
