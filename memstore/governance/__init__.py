"""Changing what is stored: update, delete, supersession, expiry, erasure, retention."""
