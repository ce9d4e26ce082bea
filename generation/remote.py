"""Generation on an OpenAI-compatible server, through the model driver: up to
max_concurrency requests at once (`llm.driver.CallPool`), every call on the
ledger (a resumed run pays nothing twice). Single-turn questions are
independent; a multi-turn meeting is one conversation, so meetings go in
parallel and each one's turns in order.
"""

from __future__ import annotations

from core.database import outlasting_outages
from core.words import count
from generation.benchmark_prompts import (
    api_messages,
    api_tokenizer,
    combined_answer,
    max_new_tokens,
    recorded_length_instruction,
)
from generation.config import GenerationConfig
from generation.models import GenerationRun
from generation.prompts_zeroscrolls import Tokenizer
from generation.work import (
    GenerationError,
    MeetingWork,
    meetings,
    questions_for_prompt,
    save_answer,
    stored_answers,
)
from llm.calls import ModelCaller, Stopped
from llm.driver import CallPool, RunWatch, stopped_message
from llm.models import LLMCall
from llm.policy import BreakerOpen
from llm.providers import ProviderSetupError
from runs.lifecycle import Lease


def run_remote(run: GenerationRun, config: GenerationConfig, lease: Lease) -> str:
    """Answer the run's unanswered questions on its server. Returns what went
    wrong, or ""."""
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
    tokenizer = api_tokenizer(config)
    with CallPool(caller, RunWatch(run, caller, lease), config.max_concurrency) as pool:
        for meeting, indexes in jobs:
            pool.submit(_turns, run, config, caller, meeting, indexes, failures, tokenizer)
        pool.drive()
    # as long as it holds the run (not once another worker took it over)
    outlasting_outages(
        GenerationRun.objects.filter(pk=run.pk, lease_owner=lease.owner).update,
        failed=len(failures),
        what=f"Counting the failures of {run.kind_label}",
    )
    if caller.breaker.is_open:
        return f"{stopped_message(caller)}: resume the run when it answers again."
    if failures:
        return (
            f"{count(len(failures), 'question')} failed with API errors (first: {failures[0]}): "
            "resume the run to ask again."
        )
    return ""


def _turns(
    run: GenerationRun,
    config: GenerationConfig,
    caller: ModelCaller,
    meeting: MeetingWork,
    indexes: list[int],
    failures: list[str],
    tokenizer: Tokenizer | None,
) -> None:
    questions = [
        f"QUESTION: {q} ANSWER:" if config.qa_markers else q
        for q in questions_for_prompt(config, meeting)
    ]
    stored = stored_answers(run, meeting)
    answers = [stored.get(q.pk, "") for q in meeting.questions]
    for i in indexes:
        question = meeting.questions[i]
        if question.pk in stored:
            continue
        params = config.request_params(run.seed, max_new_tokens(config, run))
        said: list[str] = []
        for messages in api_messages(config, run, meeting, questions, answers, i, tokenizer):
            try:
                result = caller.complete(caller.request(messages, params))
            except (Stopped, BreakerOpen):
                return
            call = result.call
            if call.status == LLMCall.Status.API_ERROR:
                failures.append(f"{question}: {call.error[:300]}")
                return  # a conversation's later turns need this answer
            said.append(call.raw_output.strip())
        text = combined_answer(run, said)
        answers[i] = text
        save_answer(
            run,
            question,
            text,
            result,
            length_instruction=recorded_length_instruction(config, run, meeting, i),
        )
