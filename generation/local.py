"""Generation with a local HF model (gpu queue), through the model driver like
every other call: each prompt is a request on the call ledger (its hash, its
tokens, its seconds), so a request answered before (the same system settings
on the same prompt, a resumed or repeated run) is answered from the ledger
and generates nothing.

Single-turn: a meeting's unanswered questions go to the local provider in one
`complete_many`; their transcript prefix is computed once and they are
decoded together (`llm.providers.LocalHFModel.generate_many`). Multi-turn:
meetings side by side, each conversation with its own KV cache
(`llm.hf.ConversationBatch`); each turn is put on the ledger as it is done.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import partial
from typing import Any, TypedDict

from corpus.choices import Mode
from generation.benchmark_prompts import (
    SINGLE_TURN_ONLY,
    benchmark_format,
    combined_answer,
    max_new_tokens,
    recorded_length_instruction,
)
from generation.config import GenerationConfig
from generation.local_prompts import benchmark_prompts
from generation.long_inputs import trim_transcript
from generation.models import GenerationRun
from generation.prompts import hf_prompt, openai_messages
from generation.work import (
    MeetingWork,
    naming_the_prompt,
    questions_for_prompt,
    save_answer,
    stopping,
    stored_answers,
)
from llm.calls import CallResult, ModelCaller, Request
from llm.hf import HFModelSpec, LoadedModel
from llm.models import LLMCall
from llm.providers import LocalHFModel, ModelOutput, raw_prompt
from runs.lifecycle import Lease


class _Sampling(TypedDict):
    """The sampling keywords of `llm.hf`'s generate calls."""

    temperature: float
    top_p: float | None
    top_k: int | None
    repetition_penalty: float | None


class _TrimFields(TypedDict):
    removed_tokens: int
    trim_notice: str


def hf_spec(config: GenerationConfig, original_context: int | None = None) -> HFModelSpec:
    factor = None
    if config.rope_scaling and config.context_length and original_context:
        factor = float(math.ceil(config.context_length / original_context))
    return HFModelSpec(
        config.model_path,
        config.dtype,
        "auto",
        config.attn_implementation,
        factor if factor and factor > 1 else None,
        config.rope_type,
    )


def local_caller(config: GenerationConfig) -> ModelCaller:
    """The run's access to its local model through the driver (RoPE scaling:
    the model's own window read first, then the scaled model loaded)."""
    spec = hf_spec(config)
    if config.rope_scaling:
        original = int(
            getattr(
                LocalHFModel(config, spec=spec).loaded.model.config, "max_position_embeddings", 0
            )
        )
        spec = hf_spec(config, original)
    return ModelCaller(config, LLMCall.Purpose.GENERATE, model=LocalHFModel(config, spec=spec))


def local_params(config: GenerationConfig, seed: int | None, spec: HFModelSpec) -> dict[str, Any]:
    """A request's parameters: the sampling, and what of the model's loading
    changes its answers (precision, attention, RoPE scaling), so that the
    ledger tells them apart. Batching and the prefix cache are left out: they
    do not change the tokens (float32 greedy is identical)."""
    params: dict[str, Any] = {
        "max_tokens": config.max_new_tokens,
        "temperature": config.temperature,
        "local": {
            "dtype": spec.dtype,
            "attn_implementation": spec.attn_implementation,
            "rope_factor": spec.rope_factor,
            "rope_type": spec.rope_type if spec.rope_factor else None,
        },
    }
    if config.top_p is not None:
        params["top_p"] = config.top_p
    if seed is not None:
        params["seed"] = seed
    extra = {
        name: value
        for name, value in (
            ("top_k", config.top_k),
            ("repetition_penalty", config.repetition_penalty),
        )
        if value is not None
    }
    if extra:
        params["extra_body"] = extra
    return params


def _render(
    config: GenerationConfig,
    loaded: LoadedModel,
    transcript: str,
    questions: list[str],
    answers: list[str],
    index: int,
    mode: str,
) -> str:
    if config.chat_template != "tokenizer":
        return hf_prompt(
            config.chat_template,
            transcript,
            questions,
            answers,
            index,
            mode,
            config.qa_markers,
            config.language,
        )
    messages = openai_messages(
        transcript,
        [f"QUESTION: {q} ANSWER:" if config.qa_markers else q for q in questions],
        answers,
        index,
        mode,
        config.language,
    )
    return str(
        loaded.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    )


@dataclass
class _Prepared:
    """A meeting's prompts as a local model gets them: its questions (with the
    length instruction), the answers stored so far, the transcript (trimmed to
    the context) and what the trimming removed."""

    meeting: MeetingWork
    questions: list[str]
    answers: list[str]
    answered: set[int]  # question ids stored
    transcript: str
    trim_fields: _TrimFields

    def missing(self) -> list[int]:
        return [i for i, q in enumerate(self.meeting.questions) if q.pk not in self.answered]


def _prepare(
    run: GenerationRun, config: GenerationConfig, loaded: LoadedModel, meeting: MeetingWork
) -> _Prepared:
    tokenizer = loaded.tokenizer
    context = config.context_length or loaded.context_length
    questions = questions_for_prompt(config, meeting)
    stored = stored_answers(run, meeting)
    answers = [stored.get(q.pk, "") for q in meeting.questions]
    transcript = meeting.document.text
    # a benchmark with its own prompts truncates as its authors did
    # (generation.benchmark_prompts); the ELITR instruction's transcript is trimmed here
    own_prompts = benchmark_format(run) in SINGLE_TURN_ONLY
    budget = context - config.max_new_tokens if context and not own_prompts else None

    def tokens(text: str, index: int = 0) -> int:
        return len(
            tokenizer(_render(config, loaded, text, questions, answers, index, run.mode))[
                "input_ids"
            ]
        )

    trimmed = None
    if budget:
        longest = max(
            range(len(questions)),
            key=lambda i: (
                len(questions[i])
                + (sum(len(a) for a in answers[:i]) if run.mode == Mode.MULTI_TURN else 0)
            ),
        )
        trimmed = trim_transcript(transcript, lambda t: tokens(t, longest), budget)
        transcript = trimmed.transcript
    trim_fields: _TrimFields = {
        "removed_tokens": trimmed.removed_tokens if trimmed else 0,
        "trim_notice": trimmed.notice if trimmed else "",
    }
    return _Prepared(meeting, questions, answers, set(stored), transcript, trim_fields)


def _sampling(config: GenerationConfig) -> _Sampling:
    return {
        "temperature": config.temperature,
        "top_p": config.top_p,
        "top_k": config.top_k,
        "repetition_penalty": config.repetition_penalty,
    }


def _store(
    run: GenerationRun,
    config: GenerationConfig,
    prepared: _Prepared,
    index: int,
    result: CallResult,
    *,
    text: str | None = None,
) -> None:
    """An answer (from the model or the ledger) as the question's response
    (`text`: what its calls' answers make together, L-Eval's sci_fi)."""
    call = result.call
    question = prepared.meeting.questions[index]
    answer = call.raw_output if text is None else text
    prepared.answers[index] = answer
    prepared.answered.add(question.pk)
    save_answer(
        run,
        question,
        answer,
        result,
        length_instruction=recorded_length_instruction(config, run, prepared.meeting, index),
        **prepared.trim_fields,
    )


def run_local(
    run: GenerationRun, config: GenerationConfig, work: list[MeetingWork], lease: Lease
) -> bool:
    """Answer the run's unanswered questions with its local model. Returns False
    when the run was cancelled or its lease lost."""
    caller = local_caller(config)
    try:
        if run.mode == Mode.MULTI_TURN:
            return _multi_turn(run, config, caller, work, lease)
        for meeting in work:
            if stopping(run, lease):
                return False
            _single_turn(run, config, caller, meeting)
        return True
    finally:
        caller.close()


def _model(caller: ModelCaller) -> LocalHFModel:
    model = caller.model
    assert isinstance(model, LocalHFModel), "a local run's caller has the local provider"
    return model


def _single_turn(
    run: GenerationRun, config: GenerationConfig, caller: ModelCaller, meeting: MeetingWork
) -> None:
    """The meeting's unanswered questions in one `complete_many`: those the
    ledger holds at once, the others decoded together over the transcript
    prefix (up to max_batch_size at once, fewer when memory is short); each
    answer is stored as soon as it is done."""
    model = _model(caller)
    loaded = model.loaded
    prepared = _prepare(run, config, loaded, meeting)
    todo = prepared.missing()
    if not todo:
        return
    params = local_params(config, run.seed, model.spec)
    # each question's requests (L-Eval's sci_fi asks two), answered together
    asked = benchmark_prompts(config, run, loaded, meeting, todo)
    if asked is not None:
        params["max_tokens"] = max_new_tokens(config, run)
    else:
        asked = [
            (
                i,
                _render(
                    config,
                    loaded,
                    prepared.transcript,
                    prepared.questions,
                    prepared.answers,
                    i,
                    run.mode,
                ),
            )
            for i in todo
        ]
    requests = [caller.request(raw_prompt(prompt), params) for _, prompt in asked]
    wanted = {i: sum(1 for j, _ in asked if j == i) for i in todo}
    heard: dict[int, dict[int, CallResult]] = {i: {} for i in todo}

    def answered(k: int, result: CallResult) -> None:
        index = asked[k][0]
        heard[index][k] = result
        if len(heard[index]) < wanted[index]:
            return  # its other request (sci_fi's fact question) is still coming
        results = [heard[index][n] for n in sorted(heard[index])]
        if len(results) == 1:
            _store(run, config, prepared, index, results[0])
        else:
            text = combined_answer(run, [r.call.raw_output.strip() for r in results])
            _store(run, config, prepared, index, results[-1], text=text)

    longest = max(len(r.messages[0]["content"]) for r in requests) // 4  # until it is measured
    with naming_the_prompt(longest, config):
        caller.complete_many(requests, answered)


class _Cancelled(Exception):
    pass


@dataclass
class _Talk:
    """One meeting's conversation in a multi-turn batch."""

    prepared: _Prepared
    turn: int = -1  # the question being answered
    prompt: str = ""  # its prompt
    previous_prompt: str = ""  # the prompt of the turn before, as the batch holds it
    prompt_tokens: int = 0


def _answer_from_ledger(
    run: GenerationRun,
    config: GenerationConfig,
    caller: ModelCaller,
    talk: _Talk,
    params: dict[str, Any],
) -> None:
    """The conversation's next turns that the ledger holds (asked before with
    these settings), stored without decoding, up to the first it does not."""
    loaded = _model(caller).loaded
    p = talk.prepared
    while p.missing():
        turn = p.missing()[0]
        prompt = _render(config, loaded, p.transcript, p.questions, p.answers, turn, run.mode)
        request = caller.request(raw_prompt(prompt), params)
        answer = caller.cached(request)
        if answer is None or answer.status != LLMCall.Status.OK:
            return
        _store(run, config, p, turn, CallResult(answer, True))


def _multi_turn(
    run: GenerationRun,
    config: GenerationConfig,
    caller: ModelCaller,
    work: list[MeetingWork],
    lease: Lease,
) -> bool:
    """Meetings side by side, up to max_batch_size at once (fewer when memory
    is short): each conversation carries its own KV cache (llm.hf's
    ConversationBatch), its turns in order; every answer is put on the ledger
    and stored as soon as it is done, and a resumed run rebuilds each
    conversation from its stored turns. Turns the ledger holds are not
    decoded again. Returns False when the run was cancelled or its lease
    lost."""
    from llm.hf import BatchedDecoding, ConversationBatch, in_halving_batches

    model = _model(caller)
    loaded = model.loaded
    tokenizer = loaded.tokenizer
    params = local_params(config, run.seed, model.spec)
    talks = [_Talk(_prepare(run, config, loaded, meeting)) for meeting in work]
    for talk in talks:
        _answer_from_ledger(run, config, caller, talk, params)
    talks = [talk for talk in talks if talk.prepared.missing()]
    if not talks:
        return True
    decoding = BatchedDecoding(
        loaded, max_tokens=config.max_new_tokens, seed=run.seed, **_sampling(config)
    )

    def final_tokens(talk: _Talk) -> int:
        """About the longest prompt of the conversation: the last question's,
        each answer still to come counted at max_new_tokens."""
        p = talk.prepared
        last = len(p.questions) - 1
        prompt = _render(config, loaded, p.transcript, p.questions, p.answers, last, run.mode)
        return len(tokenizer(prompt)["input_ids"]) + len(p.missing()) * config.max_new_tokens

    longest = max(map(final_tokens, talks))
    size = decoding.batch_size(
        shared_tokens=0,
        row_tokens=longest + config.max_new_tokens,
        query_tokens=0,
        cap=config.max_batch_size,
    )

    def store_row(
        rows: tuple[_Talk, ...], started: float, row: int, output: list[int], finish: str
    ) -> None:
        talk = rows[row]
        text = tokenizer.decode(output, skip_special_tokens=True).strip()
        answer = ModelOutput(text, finish, talk.prompt_tokens, len(output), model.fingerprint)
        request: Request = caller.request(raw_prompt(talk.prompt), params)
        # the turn's seconds, shared by the batch
        result = caller.record(request, answer, time.perf_counter() - started)
        _store(run, config, talk.prepared, talk.turn, result)

    def converse(group: list[_Talk]) -> None:
        batch = ConversationBatch(loaded, len(group), carry=config.prefix_cache)
        active = list(group)
        for talk in active:
            talk.previous_prompt = ""  # a new batch: every conversation from its start
        while active:
            if stopping(run, lease):
                raise _Cancelled
            new_ids, restart = [], []
            for row, talk in enumerate(active):
                p = talk.prepared
                talk.turn = p.missing()[0]
                talk.prompt = _render(
                    config, loaded, p.transcript, p.questions, p.answers, talk.turn, run.mode
                )
                again = not talk.previous_prompt or not talk.prompt.startswith(talk.previous_prompt)
                if again:
                    ids = tokenizer(talk.prompt)["input_ids"]
                else:  # only the last answer and this question are new
                    ids = tokenizer(
                        talk.prompt[len(talk.previous_prompt) :], add_special_tokens=False
                    )["input_ids"]
                talk.prompt_tokens = len(ids) + (0 if again else len(batch.ids[row] or []))
                new_ids.append(ids)
                restart.append(again)
            started = time.perf_counter()
            batch.turn(
                new_ids,
                decoding,
                partial(store_row, tuple(active), started),
                restart=restart,
            )
            for talk in active:
                talk.previous_prompt = talk.prompt
            going_on = [row for row, talk in enumerate(active) if talk.prepared.missing()]
            if len(going_on) < len(active):
                batch.keep(going_on)
                active = [active[row] for row in going_on]

    try:
        with naming_the_prompt(longest, config):
            in_halving_batches(
                talks,
                size,
                converse,
                pending=lambda talk: bool(talk.prepared.missing()),
                prompt_tokens=lambda talk: talk.prompt_tokens,
            )
    except _Cancelled:
        return False
    return True
