"""Test helpers for corpus data, shared by every app's tests."""

from __future__ import annotations

from corpus.models import Dataset


def qa_test2() -> Dataset:
    """The English single-question test2 split (the synthetic two meetings'
    and the paper's own), the one most tests judge or rate."""
    return Dataset.objects.get(version="qa", language="en", split="test2")
