"""A judge's confidence from its server's token log-probabilities: the
probability its tokens gave the score (or verdict) it wrote.

A judge run with `logprobs: true` keeps, in the ledger, each answer token and
its log-probability. The parser says where in the answer it read the score
(its characters); the tokens that overlap those characters are the ones that
wrote it, and their probabilities' product is the probability of the score
given all the judge wrote before it (for "[RESULT] 4": that of "4"; for a
two-token "10", of both). It is the signal Trust or Escalate (Jung et al.,
ICLR 2025) calls the judge's predictive probability. None where it cannot be
told: no tokens, a score read from nowhere, or tokens that do not spell the
stored answer (the probability would then be of some other text).
"""

from __future__ import annotations

import math


def span_probability(tokens: list[list], text: str, span: tuple[int, int]) -> float | None:
    """exp(the sum of the log-probabilities of the tokens overlapping
    text[span[0]:span[1]]), `tokens` as the ledger keeps them ([[token,
    logprob], ...]); None when the tokens do not spell `text`."""
    written = "".join(token for token, _ in tokens)
    offset = written.find(text) if text else -1
    if offset < 0 or not text[span[0] : span[1]].strip():
        return None
    start, end = span[0] + offset, span[1] + offset
    total, at, overlapping = 0.0, 0, 0
    for token, logprob in tokens:
        following = at + len(token)
        if following > start and at < end:
            total += logprob
            overlapping += 1
        at = following
    return math.exp(total) if overlapping else None


def answer_probability(call, protocol) -> float | None:
    """The probability of the answer `protocol` reads in `call` (an LLMCall),
    or None (no token log-probabilities kept, or no score read)."""
    if call is None or not call.token_logprobs:
        return None
    parsed = protocol.parse(call.raw_output)
    if not parsed.ok or parsed.span is None:
        return None
    return span_probability(call.token_logprobs, call.raw_output, parsed.span)
