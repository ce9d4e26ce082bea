"""RULER's prompt as its authors send it (NVIDIA/RULER `scripts/pred/
call_api.py`): the line's `input` with its `answer_prefix` after it, as one
user message to a chat server (`client_wrappers.OpenAIClient`); for a local
model, the input under the model's chat template and the answer prefix after
the assistant's header, as prepare.py's model templates place it ("[INST]
{input} [/INST]{answer_prefix}"). No truncation: each line was made to fit
its length. The answer budget is the task's `tokens_to_generate`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from corpus.ruler.constants import ALL_TASKS, TOKENS_TO_GENERATE, ruler_task

DEFAULT_NEW_TOKENS = 128  # niah's, for a task RULER does not name


def answer_prefix(prompt_parts: Mapping[str, Any]) -> str:
    prefix = prompt_parts.get("answer_prefix", "")
    return prefix if isinstance(prefix, str) else ""


def api_text(document: str, prompt_parts: Mapping[str, Any]) -> str:
    """The one user message: the input, then the answer prefix."""
    return document + answer_prefix(prompt_parts)


def max_new_tokens(task: str) -> int:
    """The stored task's (`niah_single_1-4096`) tokens_to_generate
    (synthetic/constants.py)."""
    base = ALL_TASKS.get(ruler_task(task))
    return TOKENS_TO_GENERATE[base] if base else DEFAULT_NEW_TOKENS
