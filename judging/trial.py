"""A scoring judge tried on a few responses before any run is paid: the
prompt it sends (filled with a real item), its raw answers and what Concord
reads in them. The calls go through the ledger as a run's do, so a run
started afterwards with the same settings asks nothing of them again.

The console's judge page calls this (console.views.judges); nothing here
needs HTTP."""

from __future__ import annotations

from dataclasses import dataclass

from corpus.models import Dataset, QuestionText
from generation.models import Response
from judging.evaluators import JudgeConfig, judge_for
from judging.evaluators.judges import ScoringJudge
from judging.model_judging import judge_caller
from llm.calls import Stopped
from llm.models import LLMCall
from llm.policy import BreakerOpen
from llm.providers import ProviderSetupError

TRIAL_ITEMS = 3


class TrialRefused(ValueError):
    """The judge cannot be tried (its settings, its protocol, or no data)."""


@dataclass
class TrialAnswer:
    system: str
    question: str
    prompt: str  # the messages as sent, one "role: content" block each
    raw: str  # the judge's answer as it came, or the error
    outcome: str  # ok, parse_failure, out_of_range, truncated, api_error
    score: int | None
    detail: str


def scoring_judge(config: dict) -> ScoringJudge:
    judge = judge_for(JudgeConfig.from_dict(config))
    if not isinstance(judge, ScoringJudge):
        raise TrialRefused(
            f"A {judge.name} judge compares two answers: try it in a run with its baseline."
        )
    return judge


def sample_responses(dataset: Dataset | None, count: int = TRIAL_ITEMS) -> list[Response]:
    """Single-turn responses to try a judge on: one of each system first (the
    first questions), from `dataset`, or the first dataset that has some."""
    responses = Response.objects.filter(run__mode="st").select_related("run__system", "question")
    if dataset is not None:
        responses = responses.filter(run__dataset=dataset)
    else:
        first = responses.order_by("pk").values_list("run__dataset", flat=True).first()
        if first is None:
            return []
        responses = responses.filter(run__dataset=first)
    chosen: list[Response] = []
    seen_systems: set[int] = set()
    for response in responses.order_by("question_id", "pk")[:200]:
        if response.run.system_id not in seen_systems:
            chosen.append(response)
            seen_systems.add(response.run.system_id)
        if len(chosen) == count:
            break
    return chosen


def texts_of(response: Response) -> tuple[str, str]:
    """The question's wording and reference answer in the response's dataset."""
    found = (
        QuestionText.objects.filter(dataset_id=response.run.dataset_id, question=response.question)
        .values_list("text", "reference_answer")
        .first()
    )
    return found if found is not None else ("", "")


def written(messages: list[dict]) -> str:
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)


def prompt_preview(config: dict, response: Response) -> str:
    """The prompt the judge sends for `response`, as text."""
    question, reference = texts_of(response)
    return written(scoring_judge(config).messages(question, response.text, reference))


def try_judge(config: dict, responses: list[Response]) -> list[TrialAnswer]:
    """Ask the judge about each response once (its first seed), through the
    ledger, and read each answer as a run would. Raises TrialRefused when the
    judge cannot be asked at all (its settings, a missing key)."""
    judge = scoring_judge(config)
    settings = judge.config
    try:
        caller = judge_caller(settings)
    except ProviderSetupError as error:
        raise TrialRefused(str(error)) from None
    answers = []
    try:
        for response in responses:
            question, reference = texts_of(response)
            messages = judge.messages(question, response.text, reference)
            request = caller.request(messages, settings.sampling(settings.seeds[0]))
            system = response.run.system.name
            try:
                call = caller.complete(request).call
            except (Stopped, BreakerOpen) as stopped:
                answers.append(
                    TrialAnswer(
                        system, question, written(messages), "", "stopped", None, str(stopped)
                    )
                )
                break
            if call.status == LLMCall.Status.API_ERROR:
                outcome, score, detail, raw = "api_error", None, call.error[:500], call.error[:2000]
            elif call.finish_reason == "length":
                outcome, score, raw = "truncated", None, call.raw_output
                detail = "the answer hit max_tokens before a score"
            else:
                parsed = judge.parse(call.raw_output)
                raw = call.raw_output
                outcome, detail = ("ok", "") if parsed.ok else (parsed.outcome, parsed.detail)
                score = parsed.value if parsed.ok else None
            answers.append(
                TrialAnswer(system, question, written(messages), raw, outcome, score, detail)
            )
    finally:
        caller.close()
    return answers
