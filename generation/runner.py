"""Generation runs: a system answers every question of a dataset, meeting by
meeting, in single-turn or multi-turn mode.

Each response is stored as soon as it is made, with token counts and timing;
a crashed or cancelled run resumes where it stopped (multi-turn conversations
are rebuilt from their stored turns). Local models (gpu queue) compute a
meeting's transcript prefix once in single-turn mode and decode its questions
together over it; in multi-turn mode they talk with several meetings at once
(llm.hf.BatchedDecoding, docs/generation.md).
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from os.path import commonprefix
from typing import TypedDict

from django.db import IntegrityError, transaction
from django.db.models import F

from config.errors import ErrorCode, Invalid
from config.words import count
from corpus.choices import DatasetVersion, Mode, either
from corpus.models import Document, Question, QuestionText
from generation.config import GenerationConfig, GenerationConfigError
from generation.long_inputs import length_instruction, trim_transcript
from generation.models import GenerationRun, Response, System
from generation.prompts import hf_prompt, openai_messages
from llm.calls import ModelCaller, Stopped
from llm.driver import RunWatch, drive, usage_and_note, usage_of
from llm.models import LLMCall
from llm.policy import BreakerOpen
from llm.providers import ProviderSetupError
from llm.text import storable
from runs import lifecycle
from runs.lifecycle import Lease, enqueue_on_commit, finish, holding_lease


class GenerationError(Invalid):
    code = ErrorCode.GENERATION_REFUSED


class OutOfMemory(GenerationError):
    code = ErrorCode.OUT_OF_MEMORY


@contextmanager
def naming_the_prompt(prompt_tokens: int, config: GenerationConfig):
    """torch.cuda.OutOfMemoryError (a RuntimeError, named here without importing
    torch) becomes a message that says which prompt did not fit: the one that
    did not fit alone when batches were halved down to one (llm.hf's
    PromptOutOfMemory), else `prompt_tokens`."""
    try:
        yield
    except Exception as error:
        if type(error).__name__ not in ("OutOfMemoryError", "PromptOutOfMemory"):
            raise
        tokens = getattr(error, "prompt_tokens", prompt_tokens)
        raise OutOfMemory(
            f"Out of memory on the GPU generating for a prompt of {tokens} tokens "
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
def create_generation_run(
    system: System, dataset, mode: str, seed: int | None = None
) -> GenerationRun:
    try:
        GenerationConfig.from_dict(system.config or {})
    except (GenerationConfigError, TypeError) as error:
        raise GenerationError(f"{system.name}: {error}") from None
    if mode not in Mode.values:
        raise GenerationError(f"mode: {either(Mode)}.")
    if dataset.version == DatasetVersion.CONV and mode == Mode.SINGLE_TURN:
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
    if run.status in (GenerationRun.Status.FAILED, GenerationRun.Status.CANCELLED):
        # started again: it goes on with what is not answered yet
        GenerationRun.objects.filter(pk=run.pk).update(
            status=GenerationRun.Status.QUEUED, message="", finished_at=None
        )
        run.refresh_from_db()
    return run


def start_generation_run(
    system: System, dataset, mode: str, seed: int | None = None
) -> GenerationRun:
    """Create the run (or take the unfinished one of this system, dataset, mode
    and seed) and queue it once the surrounding transaction commits. The one
    way admin, API, commands and sweeps start generation; a broker that cannot
    take the task leaves the run failed, saying why."""
    with transaction.atomic():
        run = create_generation_run(system, dataset, mode, seed)
        if not run.lease_is_live:  # a live worker already runs it
            enqueue_on_commit(run)
    run.refresh_from_db()
    return run


def resume_generation_run(run: GenerationRun) -> lifecycle.Outcome:
    if run.origin != GenerationRun.Origin.GENERATED:
        return lifecycle.Outcome(False, f"Run {run.pk} was imported: nothing to generate.", "done")
    return lifecycle.resume(run)


def cancel_generation_run(run: GenerationRun) -> lifecycle.Outcome:
    return lifecycle.cancel(run)


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


def run_generation(run_id: int) -> GenerationRun:
    """Answer every question not answered yet, holding the run's lease; a run
    another live worker holds, or a finished one, is left as it is."""
    with holding_lease(GenerationRun, run_id) as lease:
        if lease is not None:
            _generate(
                GenerationRun.objects.select_related("system", "dataset").get(pk=run_id), lease
            )
    return GenerationRun.objects.get(pk=run_id)


def _stopping(run: GenerationRun, lease: Lease) -> bool:
    return lease.lost.is_set() or lifecycle.is_cancelled(run)


def _generate(run: GenerationRun, lease: Lease) -> None:
    config = GenerationConfig.from_dict(run.system.config)
    problem = ""
    try:
        if config.backend == "hf" and run.mode == Mode.MULTI_TURN:
            if not _hf_multi_turn(run, config, meetings(run), lease):
                return
        elif config.backend == "hf":
            for meeting in meetings(run):
                if _stopping(run, lease):
                    return
                _hf_single_turn(run, config, meeting)
        else:
            problem = _api_run(run, config, lease)
    except MemoryError as error:  # the host ran out
        finish(run, GenerationRun.Status.FAILED, f"Out of memory on the host: {error}")
        return
    except (OutOfMemory, GenerationError) as error:
        finish(run, GenerationRun.Status.FAILED, str(error))
        return
    done = Response.objects.filter(run=run).count()
    run.refresh_from_db(fields=["counted_usage"])
    if problem or done < run.total:
        problem = problem or f"{count(run.total - done, 'question')} not answered: resume the run."
        finish(run, GenerationRun.Status.FAILED, usage_and_note(problem, run), done=done)
    else:
        finish(run, GenerationRun.Status.DONE, usage_and_note("", run), done=done, failed=0)


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


def _save(
    run: GenerationRun, question: Question, text: str, usage: dict | None = None, **fields
) -> None:
    """Store a response and count it (with the usage of the call that made it,
    for API systems)."""
    try:
        with transaction.atomic():
            Response.objects.create(run=run, question=question, text=storable(text), **fields)
            GenerationRun.objects.filter(pk=run.pk).update(
                done=F("done") + 1,
                generated_tokens=F("generated_tokens") + (fields.get("output_tokens") or 0),
                **{name: F(name) + value for name, value in (usage or {}).items()},
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


class _Sampling(TypedDict):
    """The sampling keywords of `llm.hf`'s generate calls."""

    temperature: float
    top_p: float | None
    top_k: int | None
    repetition_penalty: float | None


class _TrimFields(TypedDict):
    removed_tokens: int
    trim_notice: str


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


def _prepare(run: GenerationRun, config: GenerationConfig, loaded, meeting: MeetingWork):
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


def _length_instruction(config: GenerationConfig, meeting: MeetingWork, index: int) -> str:
    return length_instruction(meeting.references[index]) if config.length_instruction else ""


def _hf_single_turn(run: GenerationRun, config: GenerationConfig, meeting: MeetingWork) -> None:
    """The meeting's unanswered questions over its transcript prefix, computed
    once and decoded together (up to max_batch_size at once, fewer when memory
    is short); each answer is stored as soon as it is done."""
    from llm.hf import shared_prefix_generate

    loaded = _load(config)
    tokenizer = loaded.tokenizer
    prepared = _prepare(run, config, loaded, meeting)
    todo = prepared.missing()
    if not todo:
        return
    prompts = [
        _render(
            config, loaded, prepared.transcript, prepared.questions, prepared.answers, i, run.mode
        )
        for i in range(len(prepared.questions))
    ]
    prefix_text = commonprefix(prompts) if config.prefix_cache and len(prompts) > 1 else ""
    prefix_ids = tokenizer(prefix_text, add_special_tokens=True)["input_ids"] if prefix_text else []
    suffixes = [
        tokenizer(prompts[i][len(prefix_text) :], add_special_tokens=not prefix_ids)["input_ids"]
        for i in todo
    ]
    started = time.perf_counter()

    def answered(k: int, output: list[int], finish: str) -> None:
        i = todo[k]
        _save(
            run,
            meeting.questions[i],
            tokenizer.decode(output, skip_special_tokens=True).strip(),
            input_tokens=len(prefix_ids) + len(suffixes[k]),
            output_tokens=len(output),
            finish_reason=finish,
            seconds=time.perf_counter() - started,  # answers decoded together share it
            length_instruction=_length_instruction(config, meeting, i),
            **prepared.trim_fields,
        )

    with naming_the_prompt(len(prefix_ids) + max(map(len, suffixes)), config):
        shared_prefix_generate(
            loaded,
            prefix_ids,
            suffixes,
            max_tokens=config.max_new_tokens,
            seed=run.seed,
            use_cache=bool(prefix_ids),
            max_batch_size=config.max_batch_size,
            on_answer=answered,
            **_sampling(config),
        )


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


def _hf_multi_turn(
    run: GenerationRun, config: GenerationConfig, work: list[MeetingWork], lease: Lease
) -> bool:
    """Meetings side by side, up to max_batch_size at once (fewer when memory
    is short): each conversation carries its own KV cache (llm.hf's
    ConversationBatch), its turns in order; every answer is stored as soon as
    it is done, and a resumed run rebuilds each conversation from its stored
    turns. Returns False when the run was cancelled or its lease lost."""
    from llm.hf import BatchedDecoding, ConversationBatch, in_halving_batches

    loaded = _load(config)
    tokenizer = loaded.tokenizer
    talks = [_Talk(_prepare(run, config, loaded, meeting)) for meeting in work]
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

    def store(talk: _Talk, output: list[int], finish: str, started: float) -> None:
        p = talk.prepared
        question = p.meeting.questions[talk.turn]
        text = tokenizer.decode(output, skip_special_tokens=True).strip()
        p.answers[talk.turn] = text
        p.answered.add(question.pk)
        _save(
            run,
            question,
            text,
            input_tokens=talk.prompt_tokens,
            output_tokens=len(output),
            finish_reason=finish,
            seconds=time.perf_counter() - started,  # the turn's, shared by the batch
            length_instruction=_length_instruction(config, p.meeting, talk.turn),
            **p.trim_fields,
        )

    def store_row(
        rows: tuple[_Talk, ...], started: float, row: int, output: list[int], finish: str
    ) -> None:
        store(rows[row], output, finish, started)

    def converse(group: list[_Talk]) -> None:
        batch = ConversationBatch(loaded, len(group), carry=config.prefix_cache)
        active = list(group)
        for talk in active:
            talk.previous_prompt = ""  # a new batch: every conversation from its start
        while active:
            if _stopping(run, lease):
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


# --- OpenAI-compatible servers -----------------------------------------------------------------


def _api_run(run: GenerationRun, config: GenerationConfig, lease: Lease) -> str:
    """Up to max_concurrency requests at once, through the call ledger (a
    resumed run pays nothing twice): single-turn questions are independent; a
    multi-turn meeting is one conversation, so meetings go in parallel and each
    one's turns in order. Returns what went wrong, or ""."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    try:
        caller = ModelCaller(config, LLMCall.Purpose.GENERATE)
    except ProviderSetupError as error:
        raise GenerationError(str(error)) from None
    jobs: list[tuple[MeetingWork, list[int]]] = []
    for meeting in meetings(run):
        if run.mode == GenerationRun.Mode.SINGLE_TURN:
            jobs += [(meeting, [i]) for i in range(len(meeting.questions))]
        else:
            jobs.append((meeting, list(range(len(meeting.questions)))))
    failures: list[str] = []

    def work(job: tuple[MeetingWork, list[int]]) -> None:
        try:
            _api_turns(run, config, caller, *job, failures)
        finally:
            connection.close()  # each thread's own connection

    try:
        with ThreadPoolExecutor(max_workers=config.max_concurrency) as pool:
            drive(
                [pool.submit(work, job) for job in jobs],
                lambda _: None,
                RunWatch(run, caller, lease),
            )
    finally:
        caller.close()
    GenerationRun.objects.filter(pk=run.pk).update(failed=len(failures))
    if caller.breaker.is_open:
        return (
            f"Stopped: {config.endpoint} could not be reached ({caller.breaker.cause}): "
            "resume the run when it answers again."
        )
    if failures:
        return (
            f"{count(len(failures), 'question')} failed with API errors (first: {failures[0]}): "
            "resume the run to ask again."
        )
    return ""


def _api_turns(
    run: GenerationRun,
    config: GenerationConfig,
    caller: ModelCaller,
    meeting: MeetingWork,
    indexes: list[int],
    failures: list[str],
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
        try:
            result = caller.complete(caller.request(messages, config.api_params(run.seed)))
        except (Stopped, BreakerOpen):
            return
        call = result.call
        if call.status == LLMCall.Status.API_ERROR:
            failures.append(f"{question}: {call.error[:300]}")
            return  # a conversation's later turns need this answer
        text = call.raw_output.strip()
        answers[i] = text
        _save(
            run,
            question,
            text,
            usage=usage_of(result),
            input_tokens=call.prompt_tokens,
            output_tokens=call.completion_tokens,
            finish_reason=call.finish_reason,
            seconds=call.latency_ms / 1000,
            call=call,
            length_instruction=length_instruction(meeting.references[i])
            if config.length_instruction
            else "",
        )
