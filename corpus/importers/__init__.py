"""Readers for benchmark files. Pure Python: no Django import, so that tests
(and other tools) can parse a source without a database."""

from corpus.importers.errors import ImportFailure

__all__ = ["ImportFailure"]
