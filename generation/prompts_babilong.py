"""BABILong's prompt as its authors send it (booydar/babilong,
`scripts/run_model_on_babilong.py` with `babilong/prompts.py`): the task's
instruction, its in-context examples and its answer format, then the text in
`<context>` tags and the question (DEFAULT_TEMPLATE, `get_formatted_input`),
as one user message; for a local model under its chat template, or the named
template (the script's `--use_chat_template`). The strings are the authors'
DEFAULT_PROMPTS (generation/data/babilong_prompts.json, checked against
prompts.py in tests/generation/test_babilong.py). No truncation: each
configuration was made to fit its length. The answer budget is the script's 20
new tokens, greedy."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from corpus.importers.formats.babilong import task_name

MAX_NEW_TOKENS = 20  # run_model_on_babilong.py's generate_kwargs
TEMPLATE = (
    "{instruction}\n\n{examples}\n\n{post_prompt}\n\n<context>\n{context}\n</context>\n\n"
    "Question: {question}"
)
PROMPTS_FILE = Path(__file__).parent / "data" / "babilong_prompts.json"


@lru_cache(maxsize=1)
def default_prompts() -> dict[str, dict[str, str]]:
    """prompts.py's DEFAULT_PROMPTS: each task's instruction, examples and post_prompt."""
    return dict(json.loads(PROMPTS_FILE.read_text(encoding="utf-8")))


def babilong_prompt(context: str, question: str, task: str) -> str:
    """get_formatted_input with the task's default prompt (every part used,
    as the authors' scripts and leaderboard run it)."""
    parts = default_prompts().get(task_name(task))
    if parts is None:
        raise ValueError(f"No BABILong task {task_name(task)!r}: one of qa1-qa20.")
    return TEMPLATE.format(
        instruction=parts["instruction"],
        examples=parts["examples"],
        post_prompt=parts["post_prompt"],
        context=context.strip(),
        question=question,
    ).strip()
