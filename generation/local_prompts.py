"""Each benchmark's prompts for a local HF model (generation.local): the
authors' text for the question (generation.benchmark_prompts), truncated by
the model's own tokens where the authors truncate, and framed as the model
reads it: the user's message under the tokenizer's chat template, or the
named template (generation.prompts). ELITR-Bench's own prompts are
generation.local's (a transcript prefix shared by a meeting's questions)."""

from __future__ import annotations

from corpus.models import Benchmark
from generation.benchmark_prompts import (
    ModelTokens,
    babilong_text,
    benchmark_format,
    leval_requests,
    longbench_v2_text,
    loogle_local_text,
    zeroscrolls_text,
)
from generation.config import GenerationConfig
from generation.models import GenerationRun
from generation.prompts import render
from generation.prompts_ruler import answer_prefix as ruler_answer_prefix
from generation.work import MeetingWork
from llm.hf import LoadedModel


def benchmark_prompts(
    config: GenerationConfig,
    run: GenerationRun,
    loaded: LoadedModel,
    meeting: MeetingWork,
    todo: list[int],
) -> list[tuple[int, str]] | None:
    """(question index, prompt) for each request of the questions `todo` (L-Eval's
    sci_fi asks two per question), in the run's benchmark's prompts; None for a
    benchmark whose prompts are ELITR-Bench's."""
    kind = benchmark_format(run)
    if kind == Benchmark.Format.ZEROSCROLLS:
        return [(i, zeroscrolls_prompt(config, run, loaded, meeting, i)) for i in todo]
    if kind == Benchmark.Format.LEVAL:
        return [(i, text) for i in todo for text in leval_prompts(config, run, loaded, meeting, i)]
    if kind == Benchmark.Format.LONGBENCH_V2:
        # cut in the middle by the model's own tokens, as pred.py sends it to a chat server
        tokens = ModelTokens(loaded.tokenizer)
        return [
            (i, framed(config, loaded, longbench_v2_text(config, meeting, i, tokens))) for i in todo
        ]
    if kind == Benchmark.Format.RULER:
        return [(i, ruler_prompt(config, loaded, meeting, i)) for i in todo]
    if kind == Benchmark.Format.BABILONG:
        return [(i, framed(config, loaded, babilong_text(run, meeting, i))) for i in todo]
    if kind == Benchmark.Format.LOOGLE:  # pred_opensource_models.py's cut
        tokenizer = loaded.tokenizer
        return [
            (i, framed(config, loaded, loogle_local_text(config, run, meeting, i, tokenizer)))
            for i in todo
        ]
    return None


def framed(config: GenerationConfig, loaded: LoadedModel, text: str) -> str:
    """`text` as the user's message under the tokenizer's chat template, or the
    named template (BABILong's script with and without --use_chat_template)."""
    if config.chat_template == "tokenizer":
        return str(
            loaded.tokenizer.apply_chat_template(
                [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
            )
        )
    return render(config.chat_template, [(text, None)])


def leval_prompts(
    config: GenerationConfig,
    run: GenerationRun,
    loaded: LoadedModel,
    meeting: MeetingWork,
    index: int,
) -> list[str]:
    """L-Eval's prompts of a question for a local model: the family's text, or
    the turbo16k family's messages under the tokenizer's chat template."""
    window = config.context_length or loaded.context_length or None
    texts = []
    for call in leval_requests(
        config, run, meeting, index, ModelTokens(loaded.tokenizer), window=window
    ):
        if call.messages is not None:
            texts.append(
                str(
                    loaded.tokenizer.apply_chat_template(
                        call.messages, tokenize=False, add_generation_prompt=True
                    )
                )
            )
        else:
            texts.append(call.text or "")
    return texts


def zeroscrolls_prompt(
    config: GenerationConfig,
    run: GenerationRun,
    loaded: LoadedModel,
    meeting: MeetingWork,
    index: int,
) -> str:
    """A ZeroSCROLLS row for a local model: under the tokenizer's chat template,
    the authors' chat prompt (the format request, no response header); under a
    named template or none, the row's whole input, as their HF runner gives it
    (then the template's wrapping). Truncated by the model's own tokens to its
    window, the separator and the query kept."""
    chat = config.chat_template == "tokenizer"
    window = config.context_length or loaded.context_length or None
    text = zeroscrolls_text(
        config, run, meeting, index, ModelTokens(loaded.tokenizer), chat=chat, window=window
    )
    return framed(config, loaded, text)


def ruler_prompt(
    config: GenerationConfig, loaded: LoadedModel, meeting: MeetingWork, index: int
) -> str:
    """RULER's line for a local model: its input as the user's message under
    the tokenizer's chat template (or the named template), the answer prefix
    after the assistant's header, as prepare.py's model templates place it."""
    return framed(config, loaded, meeting.document.text) + ruler_answer_prefix(
        meeting.prompts[index]
    )
