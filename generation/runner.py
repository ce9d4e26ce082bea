"""Generation runs: a system answers every question of a dataset, meeting by
meeting, in single-turn or multi-turn mode.

Each response is stored as soon as it is made, with token counts and timing;
a crashed or cancelled run resumes where it stopped (multi-turn conversations
are rebuilt from their stored turns). Local models (gpu queue) compute a
meeting's transcript prefix once in single-turn mode and reuse its KV cache
for every question.
"""

from __future__ import annotations

import math
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from os.path import commonprefix

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from corpus.models import Document, Question, QuestionText
from generation.config import GenerationConfig, GenerationConfigError
from generation.long_inputs import length_instruction, trim_transcript
from generation.models import GenerationRun, Response, System
from generation.prompts import hf_prompt, openai_messages
from llm.text import storable


class GenerationError(Exception):
    pass


class OutOfMemory(GenerationError):
    pass


@contextmanager
def naming_the_prompt(prompt_tokens: int, config: GenerationConfig):
    """torch.cuda.OutOfMemoryError (a RuntimeError, named here without importing
    torch) becomes a message that says which prompt did not fit."""
    try:
        yield
    except Exception as error:
        if type(error).__name__ != "OutOfMemoryError":
            raise
        raise OutOfMemory(
            f"Out of memory on the GPU generating for a prompt of {prompt_tokens} tokens "
            f"(+{config.max_new_tokens} new): {error}. The run stopped cleanly; lower "
            "context_length or max_new_tokens, or use a bigger GPU, then resume."
        ) from error


@dataclass
class MeetingWork:
    document: Document
    questions: list[Question]
    texts: list[str]
    references: list[str]


@transaction.atomic
def start_generation(system: System, dataset, mode: str, seed: int | None = None) -> GenerationRun:
    try:
        GenerationConfig.from_dict(system.config or {})
    except (GenerationConfigError, TypeError) as error:
        raise GenerationError(f"{system.name}: {error}") from None
    if mode not in ("st", "mt"):
        raise GenerationError("mode: 'st' or 'mt'.")
    if dataset.version == "conv" and mode == "st":
        raise GenerationError("Conv questions depend on earlier turns: use multi-turn mode.")
    total = QuestionText.objects.filter(dataset=dataset).count()
    if not total:
        raise GenerationError(f"{dataset} has no questions.")
    run, created = GenerationRun.objects.get_or_create(
        system=system,
        dataset=dataset,
        mode=mode,
        seed=seed,
        defaults={"origin": GenerationRun.Origin.GENERATED, "total": total},
    )
    if not created and run.status == GenerationRun.Status.DONE:
        raise GenerationError(f"Run {run.pk} of this system, dataset, mode and seed is done.")
    return run


def meetings(run: GenerationRun) -> list[MeetingWork]:
    texts = (
        QuestionText.objects.filter(dataset=run.dataset)
        .select_related("question__document")
        .order_by("question__document__external_id", "question__order")
    )
    work: dict[int, MeetingWork] = {}
    for text in texts:
        document = text.question.document
        entry = work.setdefault(document.pk, MeetingWork(document, [], [], []))
        entry.questions.append(text.question)
        entry.texts.append(text.text)
        entry.references.append(text.reference_answer)
    return list(work.values())


def queue_for(system: System) -> str:
    return "gpu" if (system.config or {}).get("backend", "hf") == "hf" else "llm"


def run_generation(run_id: int) -> GenerationRun:
    run = GenerationRun.objects.select_related("system", "dataset").get(pk=run_id)
    if run.status in (GenerationRun.Status.DONE, GenerationRun.Status.CANCELLED):
        return run
    config = GenerationConfig.from_dict(run.system.config)
    GenerationRun.objects.filter(pk=run.pk).update(
        status=GenerationRun.Status.RUNNING, started_at=run.started_at or timezone.now(), message=""
    )
    try:
        if config.backend == "hf":
            for meeting in meetings(run):
                if GenerationRun.objects.filter(pk=run.pk, status="cancelled").exists():
                    return GenerationRun.objects.get(pk=run.pk)
                _hf_meeting(run, config, meeting)
        else:
            _api_run(run, config)
            if GenerationRun.objects.filter(pk=run.pk, status="cancelled").exists():
                return GenerationRun.objects.get(pk=run.pk)
    except MemoryError as error:  # the host ran out
        return _fail(run, f"Out of memory on the host: {error}")
    except OutOfMemory as error:
        return _fail(run, str(error))
    GenerationRun.objects.filter(pk=run.pk).update(
        status=GenerationRun.Status.DONE, finished_at=timezone.now()
    )
    return GenerationRun.objects.get(pk=run.pk)


def _fail(run: GenerationRun, message: str) -> GenerationRun:
    GenerationRun.objects.filter(pk=run.pk).update(
        status=GenerationRun.Status.FAILED, message=message, finished_at=timezone.now()
    )
    return GenerationRun.objects.get(pk=run.pk)


def _stored(run: GenerationRun, meeting: MeetingWork) -> dict[int, str]:
    return dict(
        Response.objects.filter(run=run, question__in=meeting.questions).values_list(
            "question_id", "text"
        )
    )


def _questions_for_prompt(config: GenerationConfig, meeting: MeetingWork) -> list[str]:
    if not config.length_instruction:
        return list(meeting.texts)
    return [
        f"{q} {length_instruction(r)}"
        for q, r in zip(meeting.texts, meeting.references, strict=True)
    ]


def _save(run: GenerationRun, question: Question, text: str, **fields) -> None:
    try:
        with transaction.atomic():
            Response.objects.create(run=run, question=question, text=storable(text), **fields)
            GenerationRun.objects.filter(pk=run.pk).update(
                done=F("done") + 1,
                generated_tokens=F("generated_tokens") + (fields.get("output_tokens") or 0),
            )
    except IntegrityError:
        pass  # answered before (a redelivered task): one response per run and question


# --- Local models ------------------------------------------------------------------------------


def _hf_spec(config: GenerationConfig, original_context: int | None = None):
    from llm.hf import HFModelSpec

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


def _load(config: GenerationConfig):
    from llm.hf import load_model

    base = load_model(_hf_spec(config))
    if not config.rope_scaling:
        return base
    original = int(getattr(base.model.config, "max_position_embeddings", 0))
    return load_model(_hf_spec(config, original))


def _render(
    config: GenerationConfig,
    loaded,
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
    return loaded.tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )


def _hf_meeting(run: GenerationRun, config: GenerationConfig, meeting: MeetingWork) -> None:
    from llm.hf import shared_prefix_generate

    loaded = _load(config)
    tokenizer = loaded.tokenizer
    context = config.context_length or loaded.context_length
    questions = _questions_for_prompt(config, meeting)
    stored = _stored(run, meeting)
    answers = [stored.get(q.pk, "") for q in meeting.questions]
    transcript = meeting.document.text
    budget = context - config.max_new_tokens if context else None

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
                len(questions[i]) + (sum(len(a) for a in answers[:i]) if run.mode == "mt" else 0)
            ),
        )
        trimmed = trim_transcript(transcript, lambda t: tokens(t, longest), budget)
        transcript = trimmed.transcript
    trim_fields = {
        "removed_tokens": trimmed.removed_tokens if trimmed else 0,
        "trim_notice": trimmed.notice if trimmed else "",
    }
    seed = run.seed
    sampling = {
        "temperature": config.temperature,
        "top_p": config.top_p,
        "top_k": config.top_k,
        "repetition_penalty": config.repetition_penalty,
    }
    if run.mode == "st":
        todo = [i for i, q in enumerate(meeting.questions) if q.pk not in stored]
        if not todo:
            return
        prompts = [
            _render(config, loaded, transcript, questions, answers, i, "st")
            for i in range(len(questions))
        ]
        prefix_text = commonprefix(prompts) if config.prefix_cache and len(prompts) > 1 else ""
        prefix_ids = (
            tokenizer(prefix_text, add_special_tokens=True)["input_ids"] if prefix_text else []
        )
        for i in todo:
            suffix_ids = tokenizer(
                prompts[i][len(prefix_text) :], add_special_tokens=not prefix_ids
            )["input_ids"]
            started = time.perf_counter()
            with naming_the_prompt(len(prefix_ids) + len(suffix_ids), config):
                result = shared_prefix_generate(
                    loaded,
                    prefix_ids,
                    [suffix_ids],
                    max_tokens=config.max_new_tokens,
                    seed=seed,
                    use_cache=bool(prefix_ids),
                    **sampling,
                )
            text = tokenizer.decode(result.outputs[0], skip_special_tokens=True).strip()
            _save(
                run,
                meeting.questions[i],
                text,
                input_tokens=len(prefix_ids) + len(suffix_ids),
                output_tokens=len(result.outputs[0]),
                finish_reason=result.finish_reasons[0],
                seconds=time.perf_counter() - started,
                length_instruction=length_instruction(meeting.references[i])
                if config.length_instruction
                else "",
                **trim_fields,
            )
        return
    # multi-turn: in order, each answer appended; the KV cache is carried across turns
    from llm.hf import Conversation

    conversation = Conversation(loaded, carry=config.prefix_cache)
    previous_prompt = ""
    for i, question in enumerate(meeting.questions):
        prompt = _render(config, loaded, transcript, questions, answers, i, "mt")
        if question.pk in stored:
            continue
        if conversation.ids is None or not prompt.startswith(previous_prompt):
            conversation = Conversation(loaded, carry=config.prefix_cache)
            new_ids = tokenizer(prompt)["input_ids"]
        else:  # only the last answer and this question are new
            new_ids = tokenizer(prompt[len(previous_prompt) :], add_special_tokens=False)[
                "input_ids"
            ]
        started = time.perf_counter()
        with naming_the_prompt(len(conversation.ids or []) + len(new_ids), config):
            output, finish = conversation.turn(
                new_ids, max_tokens=config.max_new_tokens, seed=seed, **sampling
            )
        text = tokenizer.decode(output, skip_special_tokens=True).strip()
        answers[i] = text
        previous_prompt = prompt
        _save(
            run,
            question,
            text,
            input_tokens=len(conversation.ids),
            output_tokens=len(output),
            finish_reason=finish,
            seconds=time.perf_counter() - started,
            length_instruction=length_instruction(meeting.references[i])
            if config.length_instruction
            else "",
            **trim_fields,
        )


# --- OpenAI-compatible servers -----------------------------------------------------------------


def _api_run(run: GenerationRun, config: GenerationConfig) -> None:
    """Up to max_concurrency requests at once: single-turn questions are
    independent; a multi-turn meeting is one conversation, so meetings go in
    parallel and each one's turns in order."""
    from concurrent.futures import ThreadPoolExecutor

    import openai
    from django.db import connection

    key = os.environ.get(config.api_key_env, "")
    if not key and "api.openai.com" in config.base_url:
        raise GenerationError(f"Set {config.api_key_env} to call {config.base_url}.")
    # the client retries 429 (after Retry-After), 5xx and timeouts with backoff
    client = openai.OpenAI(
        base_url=config.base_url,
        api_key=key or "not-needed",
        max_retries=5,
        timeout=config.timeout_s,
    )
    jobs = []
    for meeting in meetings(run):
        if run.mode == "st":
            jobs += [(meeting, [i]) for i in range(len(meeting.questions))]
        else:
            jobs.append((meeting, list(range(len(meeting.questions)))))

    def work(job) -> None:
        try:
            if not GenerationRun.objects.filter(pk=run.pk, status="cancelled").exists():
                _api_turns(run, config, client, *job)
        finally:
            connection.close()  # each thread's own connection

    with ThreadPoolExecutor(max_workers=config.max_concurrency) as pool:
        for future in [pool.submit(work, job) for job in jobs]:
            future.result()  # an error stops the run and reaches the task


def _api_turns(
    run: GenerationRun, config: GenerationConfig, client, meeting: MeetingWork, indexes: list[int]
) -> None:
    questions = [
        f"QUESTION: {q} ANSWER:" if config.qa_markers else q
        for q in _questions_for_prompt(config, meeting)
    ]
    stored = _stored(run, meeting)
    answers = [stored.get(q.pk, "") for q in meeting.questions]
    for i in indexes:
        question = meeting.questions[i]
        if question.pk in stored:
            continue
        messages = openai_messages(
            meeting.document.text, questions, answers, i, run.mode, config.language
        )
        started = time.perf_counter()
        answer = client.chat.completions.create(
            model=config.model, messages=messages, **config.api_params(run.seed)
        )
        text = (answer.choices[0].message.content or "").strip()
        answers[i] = text
        usage = answer.usage
        _save(
            run,
            question,
            text,
            input_tokens=usage.prompt_tokens if usage else None,
            output_tokens=usage.completion_tokens if usage else None,
            finish_reason=answer.choices[0].finish_reason or "",
            seconds=time.perf_counter() - started,
            length_instruction=length_instruction(meeting.references[i])
            if config.length_instruction
            else "",
        )
