"""LooGLE's prompts as its authors send them (bigai-nlco/LooGLE,
`Prediction/pred_gpt_models.py` and `pred_opensource_models.py`): the task's
template from `config/task2prompt.json` (generation/data, byte-equal; checked
in tests/generation/test_loogle.py) filled with the document and the
question, cut in the middle when it has more tokens than the run's
context_length (the scripts' `--max_length`: the first and the last half,
each decoded on its own), and the task's answer budget from
`task2maxlen.json`. A server gets it as one *system* message, as
pred_gpt_models.py sends it; a local model as the text itself (the open-source
script: no chat template, `chat_template: raw`) or under the named template,
its tokens counted with the tokenizer's special ones, as that script counts."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from generation.prompts_zeroscrolls import Tokenizer

DATA = Path(__file__).parent / "data"


@lru_cache(maxsize=1)
def templates() -> dict[str, str]:
    """task2prompt.json: each task's template ({input}, {Q})."""
    return dict(json.loads((DATA / "loogle_task2prompt.json").read_text(encoding="utf-8")))


@lru_cache(maxsize=1)
def answer_budgets() -> dict[str, int]:
    """task2maxlen.json: each task's new tokens."""
    return dict(json.loads((DATA / "loogle_task2maxlen.json").read_text(encoding="utf-8")))


def max_new_tokens(task: str) -> int:
    budget = answer_budgets().get(task)
    if budget is None:
        raise ValueError(f"No LooGLE task {task!r}: one of {', '.join(answer_budgets())}.")
    return budget


def loogle_prompt(document: str, question: str, task: str) -> str:
    """The task's template filled as get_pred fills it (a summary: the document alone)."""
    template = templates().get(task)
    if template is None:
        raise ValueError(f"No LooGLE task {task!r}: one of {', '.join(templates())}.")
    if task == "longdep_summarization":
        return template.format(input=document)
    return template.format(Q=question, input=document)


def _tiktoken_ids(tokenizer: Tokenizer, text: str) -> list[int]:
    """tiktoken's tokens as pred_gpt_models.py counts them; the text of a special
    token counted as text (where the script's encode stops on it)."""
    import tiktoken

    if isinstance(tokenizer, tiktoken.Encoding):
        return list(tokenizer.encode(text, disallowed_special=()))
    return list(tokenizer.encode(text))


def cut_middle(prompt: str, tokenizer: Tokenizer | None, max_length: int | None) -> str:
    """pred_gpt_models.py's cut: past `max_length` tokens, the first and the
    last int(max_length / 2), each decoded on its own (no tokenizer or
    length: as given)."""
    if tokenizer is None or not max_length:
        return prompt
    ids = _tiktoken_ids(tokenizer, prompt)
    if len(ids) <= max_length:
        return prompt
    half = int(max_length / 2)
    return tokenizer.decode(ids[:half]) + tokenizer.decode(ids[-half:])


def cut_middle_local(prompt: str, tokenizer: Any, max_length: int | None) -> str:
    """pred_opensource_models.py's cut: the tokens counted with the
    tokenizer's special ones (its BOS), each half decoded without them."""
    if not max_length:
        return prompt
    ids = list(tokenizer(prompt, truncation=False)["input_ids"])
    if len(ids) <= max_length:
        return prompt
    half = int(max_length / 2)
    return str(tokenizer.decode(ids[:half], skip_special_tokens=True)) + str(
        tokenizer.decode(ids[-half:], skip_special_tokens=True)
    )
