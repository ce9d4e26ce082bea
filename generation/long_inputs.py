"""Inputs longer than the context window, and the L-Eval length instruction.

Trimming follows ZeroSCROLLS: keep the start of the transcript, cut whole
lines from the end until the prompt fits, append a sentence saying the rest
was trimmed, and keep the question. Each trimmed response records how many
tokens were removed and the notice used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

TRIM_NOTICE = "... [The rest of the transcript is omitted]"


@dataclass(frozen=True)
class Trimmed:
    transcript: str
    removed_tokens: int
    notice: str


def trim_transcript(
    transcript: str, prompt_tokens: Callable[[str], int], budget: int, notice: str = TRIM_NOTICE
) -> Trimmed:
    """The longest start of `transcript` (whole lines) whose prompt, built by the
    caller around it (`prompt_tokens(text)` counts the whole prompt's tokens),
    fits in `budget` tokens; the notice is appended when anything is cut."""
    full = prompt_tokens(transcript)
    if full <= budget:
        return Trimmed(transcript, 0, "")
    lines = transcript.split("\n")
    low, high = 0, len(lines)  # invariant: keeping `low` lines fits
    if prompt_tokens(notice) > budget:
        raise ValueError(
            f"Even without the transcript the prompt needs more than {budget} "
            "tokens: raise the context or shorten the instruction."
        )
    while low < high:
        middle = (low + high + 1) // 2
        candidate = "\n".join(lines[:middle]) + "\n" + notice
        if prompt_tokens(candidate) <= budget:
            low = middle
        else:
            high = middle - 1
    kept = ("\n".join(lines[:low]) + "\n" + notice) if low else notice
    return Trimmed(kept, full - prompt_tokens(kept), notice)


def length_instruction(reference: str) -> str:
    """L-Eval's length-instruction-enhanced protocol: the expected answer length,
    from the reference answer's word count."""
    words = max(1, len(reference.split()))
    return f"Answer in about {words} word{'' if words == 1 else 's'}."
