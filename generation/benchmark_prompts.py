"""Each benchmark prompted as its authors did, for a generation run: the
benchmark's format (corpus.models.Benchmark.Format) picks the prompt.

- ELITR-Bench (and the generic format): the paper's instruction around the
  transcript, then the question (generation.prompts);
- ZeroSCROLLS: the row's own input, with its authors' chat builder and
  truncation by tokens with the task's separator (generation.prompts_zeroscrolls),
  and the task's own generation budget.

L-Eval and ZeroSCROLLS ask each question alone: their runs are single-turn.
"""

from __future__ import annotations

from typing import Any

from corpus.models import Benchmark
from generation.config import GenerationConfig
from generation.models import GenerationRun
from generation.prompts import openai_messages
from generation.prompts_zeroscrolls import GENERATION_TOKENS, Row, Tokenizer, chat_prompt
from generation.work import MeetingWork

SINGLE_TURN_ONLY = (Benchmark.Format.LEVAL, Benchmark.Format.ZEROSCROLLS)


def benchmark_format(run: GenerationRun) -> str:
    return str(run.dataset.benchmark.format)


def api_tokenizer(config: GenerationConfig) -> Tokenizer | None:
    """The server's tokens, if the system names how to count them."""
    if not config.tokenizer:
        return None
    import tiktoken

    return tiktoken.get_encoding(config.tokenizer.removeprefix("tiktoken:"))


def max_new_tokens(config: GenerationConfig, run: GenerationRun) -> int:
    """ZeroSCROLLS' own budget per task (its authors' `dataset_to_leave_tokens_for_generations`);
    the system's `max_new_tokens` otherwise."""
    if benchmark_format(run) == Benchmark.Format.ZEROSCROLLS:
        return GENERATION_TOKENS.get(run.dataset.task, config.max_new_tokens)
    return config.max_new_tokens


def zeroscrolls_text(
    config: GenerationConfig,
    run: GenerationRun,
    meeting: MeetingWork,
    index: int,
    tokenizer: Tokenizer | None,
    *,
    chat: bool,
    window: int | None,
) -> str:
    row = Row.of_question(meeting.document.text, meeting.texts[index], meeting.prompts[index])
    prompt, _ = chat_prompt(
        row, run.dataset.task, tokenizer, window, max_new_tokens(config, run), chat=chat
    )
    return prompt


def api_messages(
    config: GenerationConfig,
    run: GenerationRun,
    meeting: MeetingWork,
    questions: list[str],
    answers: list[str],
    index: int,
    tokenizer: Tokenizer | None = None,
) -> list[dict[str, Any]]:
    """The chat messages of question `index` for an OpenAI-compatible server."""
    if benchmark_format(run) == Benchmark.Format.ZEROSCROLLS:
        text = zeroscrolls_text(
            config, run, meeting, index, tokenizer, chat=True, window=config.context_length
        )
        return [{"role": "user", "content": text}]
    return openai_messages(
        meeting.document.text, questions, answers, index, run.mode, config.language
    )
