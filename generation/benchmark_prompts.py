"""Each benchmark prompted as its authors did, for a generation run: the
benchmark's format (corpus.models.Benchmark.Format) picks the prompt.

- ELITR-Bench (and the generic format): the paper's instruction around the
  transcript, then the question (generation.prompts);
- ZeroSCROLLS: the row's own input, with its authors' chat builder and
  truncation by tokens with the task's separator (generation.prompts_zeroscrolls),
  and the task's own generation budget;
- L-Eval: its baseline scripts' prompt for the system's model family
  (generation.prompts_leval; a server without a family is prompted as
  turbo16k, GPT-3.5-16k, as L-Eval did), the document truncated as the scripts
  do, 512 new tokens; sci_fi asks its second, "fact" question and stores
  "<answer> [fact: <answer>]" as L-Eval's scoring reads it.

- LongBench v2: pred.py's 0-shot template (generation.prompts_longbench_v2)
  as one user message, cut in the middle to the system's context_length in
  tokens (the authors' 120,000 when not set), 128 new tokens.

- RULER: the line's input and its answer prefix, as one user message
  (generation.prompts_ruler), the task's own answer budget.

- BABILong: the task's instruction, examples and answer format around the
  text and the question (generation.prompts_babilong), 20 new tokens.

- LooGLE: the task's template around the document and the question, cut in
  the middle to the system's context_length in tokens, as one system
  message (generation.prompts_loogle), the task's own answer budget.

L-Eval, ZeroSCROLLS, LongBench v2, RULER, BABILong and LooGLE ask each
question alone: their runs are single-turn.
"""

from __future__ import annotations

from typing import Any

from core.tiktoken_offline import tiktoken_encoding
from corpus.models import Benchmark
from generation.config import GenerationConfig
from generation.models import GenerationRun
from generation.prompts import openai_messages
from generation.prompts_babilong import MAX_NEW_TOKENS as BABILONG_NEW_TOKENS
from generation.prompts_babilong import babilong_prompt
from generation.prompts_leval import (
    CLOSED_ENDED_TASKS,
    MAX_NEW_TOKENS,
    LevalPrompt,
    leval_calls,
    sci_fi_prediction,
)
from generation.prompts_leval import length_instruction as leval_length_instruction
from generation.prompts_longbench_v2 import DEFAULT_MAX_LEN, longbench_v2_prompt, truncate_middle
from generation.prompts_longbench_v2 import MAX_NEW_TOKENS as LONGBENCH_V2_NEW_TOKENS
from generation.prompts_loogle import cut_middle, cut_middle_local, loogle_prompt
from generation.prompts_loogle import max_new_tokens as loogle_new_tokens
from generation.prompts_ruler import api_text as ruler_api_text
from generation.prompts_ruler import max_new_tokens as ruler_new_tokens
from generation.prompts_zeroscrolls import GENERATION_TOKENS, Row, Tokenizer, chat_prompt
from generation.work import MeetingWork, length_instruction_for

SINGLE_TURN_ONLY = (
    Benchmark.Format.LEVAL,
    Benchmark.Format.ZEROSCROLLS,
    Benchmark.Format.LONGBENCH_V2,
    Benchmark.Format.RULER,
    Benchmark.Format.BABILONG,
    Benchmark.Format.LOOGLE,
)


def benchmark_format(run: GenerationRun) -> str:
    return str(run.dataset.benchmark.format)


def api_tokenizer(config: GenerationConfig) -> Tokenizer | None:
    """The server's tokens, if the system names how to count them: a tiktoken
    encoding ("tiktoken:cl100k_base", OpenAI's models) or the model family's own
    tokenizer from a local folder ("hf:/models/llama-2-7b-chat": a llama or mpt
    served by vLLM, counted and cut as the authors' scripts cut with it)."""
    if not config.tokenizer:
        return None
    if config.tokenizer.startswith("hf:"):
        return hf_tokenizer(config.tokenizer.removeprefix("hf:"))
    return tiktoken_encoding(config.tokenizer.removeprefix("tiktoken:"))


class ModelTokens:
    """A Hugging Face tokenizer as the benchmarks' builders count with it."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids))


def hf_tokenizer(folder: str) -> Tokenizer:
    """A Hugging Face tokenizer from a local folder (never a download), counting
    as a local model's does."""
    from transformers import AutoTokenizer

    return ModelTokens(AutoTokenizer.from_pretrained(folder, local_files_only=True))


def max_new_tokens(config: GenerationConfig, run: GenerationRun) -> int:
    """ZeroSCROLLS' own budget per task (its authors' `dataset_to_leave_tokens_for_generations`),
    L-Eval's 512; the system's `max_new_tokens` otherwise."""
    if benchmark_format(run) == Benchmark.Format.ZEROSCROLLS:
        return GENERATION_TOKENS.get(run.dataset.task, config.max_new_tokens)
    if benchmark_format(run) == Benchmark.Format.LEVAL:
        return MAX_NEW_TOKENS
    if benchmark_format(run) == Benchmark.Format.LONGBENCH_V2:
        return LONGBENCH_V2_NEW_TOKENS
    if benchmark_format(run) == Benchmark.Format.RULER:
        return ruler_new_tokens(run.dataset.task)
    if benchmark_format(run) == Benchmark.Format.BABILONG:
        return BABILONG_NEW_TOKENS
    if benchmark_format(run) == Benchmark.Format.LOOGLE:
        return loogle_new_tokens(run.dataset.task)
    return config.max_new_tokens


def is_closed_ended(task: str) -> bool:
    """An L-Eval task its scripts run under exam_eval (L-Eval's closed-ended list)."""
    return task.lower() in {t.lower() for t in CLOSED_ENDED_TASKS}


# mpt-test.py's `doc_len`: its documents are cut to 7,500 tokens whatever the window
MPT_DOCUMENT_TOKENS = 7500


def leval_document(
    document: str,
    task: str,
    tokenizer: Tokenizer | None,
    context_length: int | None,
    family: str = "turbo16k",
) -> str:
    """The scripts' truncation: while the document has more tokens than the
    window less the 512 new ones, keep its first `max_length - cnt` words (codeU:
    its last), 250 fewer each time. mpt-test.py keeps the first words always
    (no codeU rule) within its fixed 7,500 tokens."""
    if tokenizer is None:
        return document
    if family == "mpt":
        max_length, keep_end = MPT_DOCUMENT_TOKENS, False
    elif context_length is None:
        return document
    else:
        max_length, keep_end = context_length - MAX_NEW_TOKENS, "code" in task.lower()
    cut = 0
    while len(tokenizer.encode(document)) > max_length:
        words = document.split(" ")
        if keep_end:
            document = " ".join(words[cut - max_length :])
        else:
            document = " ".join(words[: max_length - cut])
        cut += 250
        if max_length - cut <= 0:
            break
    return document


def leval_requests(
    config: GenerationConfig,
    run: GenerationRun,
    meeting: MeetingWork,
    index: int,
    tokenizer: Tokenizer | None,
    *,
    window: int | None,
) -> list[LevalPrompt]:
    family = config.prompt_family or "turbo16k"
    document = leval_document(meeting.document.text, run.dataset.task, tokenizer, window, family)
    return leval_calls(
        family,
        run.dataset.task,
        document,
        meeting.texts[index],
        meeting.references[index],
        closed=is_closed_ended(run.dataset.task),
    )


def combined_answer(run: GenerationRun, answers: list[str]) -> str:
    """What a question's answers are stored as (L-Eval's sci_fi: both, as read by its scoring)."""
    if len(answers) == 2:
        return sci_fi_prediction(answers[0], answers[1])
    return answers[0]


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


def longbench_v2_text(
    config: GenerationConfig, meeting: MeetingWork, index: int, tokenizer: Tokenizer | None
) -> str:
    """LongBench v2's prompt of question `index`, cut in the middle to the
    system's context_length in tokens (pred.py's max_len; 120,000 when not
    set) where the system says how to count them."""
    prompts = meeting.prompts[index]
    prompt = longbench_v2_prompt(meeting.document.text, meeting.texts[index], prompts)
    return truncate_middle(prompt, tokenizer, config.context_length or DEFAULT_MAX_LEN)


def babilong_text(run: GenerationRun, meeting: MeetingWork, index: int) -> str:
    """BABILong's prompt for question `index` (its row's text and question)."""
    return babilong_prompt(meeting.document.text, meeting.texts[index], run.dataset.task)


def loogle_text(run: GenerationRun, meeting: MeetingWork, index: int) -> str:
    """LooGLE's prompt for question `index`, before any cut."""
    return loogle_prompt(meeting.document.text, meeting.texts[index], run.dataset.task)


def loogle_local_text(
    config: GenerationConfig, run: GenerationRun, meeting: MeetingWork, index: int, tokenizer: Any
) -> str:
    """LooGLE's prompt for a local model, cut by its own tokens as
    pred_opensource_models.py cuts it (its special tokens counted)."""
    return cut_middle_local(loogle_text(run, meeting, index), tokenizer, config.context_length)


def api_messages(
    config: GenerationConfig,
    run: GenerationRun,
    meeting: MeetingWork,
    questions: list[str],
    answers: list[str],
    index: int,
    tokenizer: Tokenizer | None = None,
) -> list[list[dict[str, Any]]]:
    """The requests (chat messages) of question `index` for an OpenAI-compatible
    server, in order: one, or L-Eval's sci_fi two."""
    if benchmark_format(run) == Benchmark.Format.ZEROSCROLLS:
        text = zeroscrolls_text(
            config, run, meeting, index, tokenizer, chat=True, window=config.context_length
        )
        return [[{"role": "user", "content": text}]]
    if benchmark_format(run) == Benchmark.Format.LONGBENCH_V2:
        return [[{"role": "user", "content": longbench_v2_text(config, meeting, index, tokenizer)}]]
    if benchmark_format(run) == Benchmark.Format.RULER:
        return [
            [
                {
                    "role": "user",
                    "content": ruler_api_text(meeting.document.text, meeting.prompts[index]),
                }
            ]
        ]
    if benchmark_format(run) == Benchmark.Format.BABILONG:
        return [[{"role": "user", "content": babilong_text(run, meeting, index)}]]
    if benchmark_format(run) == Benchmark.Format.LOOGLE:  # pred_gpt_models.py: a system message
        text = cut_middle(loogle_text(run, meeting, index), tokenizer, config.context_length)
        return [[{"role": "system", "content": text}]]
    if benchmark_format(run) == Benchmark.Format.LEVAL:
        calls = leval_requests(config, run, meeting, index, tokenizer, window=config.context_length)
        return [
            call.messages
            if call.messages is not None
            else [{"role": "user", "content": call.text or ""}]
            for call in calls
        ]
    return [
        openai_messages(meeting.document.text, questions, answers, index, run.mode, config.language)
    ]


def recorded_length_instruction(
    config: GenerationConfig, run: GenerationRun, meeting: MeetingWork, index: int
) -> str:
    """The length instruction the prompt carried, as the response records it
    (L-Eval's scripts ask for it on every open-ended question)."""
    if benchmark_format(run) == Benchmark.Format.LEVAL:
        if is_closed_ended(run.dataset.task):
            return ""
        return leval_length_instruction(
            config.prompt_family or "turbo16k", meeting.references[index]
        )
    if benchmark_format(run) in (
        Benchmark.Format.ZEROSCROLLS,
        Benchmark.Format.LONGBENCH_V2,
        Benchmark.Format.RULER,
        Benchmark.Format.BABILONG,
        Benchmark.Format.LOOGLE,
    ):
        return ""
    return length_instruction_for(config, meeting, index)
