"""`memstore` subcommands for the governance area."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add this area's subcommands to the parser."""
