"""Small wording helpers for the human-readable reasons and tables (no domain logic)."""
from __future__ import annotations


def count_noun(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` followed by ``noun`` in the right grammatical number.

    ``count_noun(1, "state") == "1 state"``, ``count_noun(2, "state") == "2 states"``,
    ``count_noun(3, "D-class", "D-classes") == "3 D-classes"``. ``plural`` defaults to ``noun + "s"``.
    """
    return f"{count} {noun if count == 1 else (plural or noun + 's')}"
