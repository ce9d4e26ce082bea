"""Counts in words: "1 task", "2 tasks", "1,200 items". Templates use Django's
`pluralize` filter; Python messages use `count`."""

from __future__ import annotations


def count(number: int, noun: str, plural: str | None = None) -> str:
    """`number` and its noun, singular for exactly one (`plural` for nouns
    that do not just add an s: count(3, "process", "processes"))."""
    word = noun if number == 1 else (plural or f"{noun}s")
    return f"{number:,} {word}"
