"""An LLM judge tried on a few items before any run is paid: the prompt it
sends (filled with a real item), its raw answers and what Concord reads in
them (a score; for a pairwise judge, the verdict in both orders against the
baseline's answer to the same question, and which system it prefers).
The calls go through the ledger as a run's do, so a run started afterwards
with the same settings asks nothing of them again.

The console's judge page calls this (console.views.judges); nothing here
needs HTTP."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from corpus.models import Dataset, QuestionText
from generation.models import Response
from judging.evaluators import ConfigError, JudgeConfig, judge_for
from judging.evaluators.base import ModelJudge
from judging.evaluators.judges import Pairwise, ScoringJudge
from judging.model_judging import judge_caller
from judging.parsers import Verdict
from judging.token_probability import answer_probability
from llm.calls import Stopped
from llm.models import LLMCall
from llm.policy import BreakerOpen
from llm.providers import ProviderSetupError

TRIAL_ITEMS = 3


class TrialRefused(ValueError):
    """The judge cannot be tried (its settings, its protocol, or no data)."""


@dataclass(frozen=True)
class TrialItem:
    """A response to judge; for a pairwise judge, with the baseline's answer
    to the same question (its opponent, as a run pairs them)."""

    response: Response
    opponent: Response | None = None


@dataclass
class TrialAnswer:
    system: str
    question: str
    prompt: str  # the messages as sent, one "role: content" block each
    raw: str  # the judge's answer as it came, or the error
    outcome: str  # ok, parse_failure, out_of_range, truncated, api_error
    score: int | None
    detail: str
    order: int = 0  # pairwise: 0 shows the judged answer first (A), 1 the baseline's
    winner: str = ""  # pairwise: the system whose answer won, or "tie"
    # with logprobs: the probability the judge's tokens gave what was read
    probability: float | None = None


def judge_of(config: dict) -> ModelJudge[Any]:
    try:
        return judge_for(JudgeConfig.from_dict(config))
    except ConfigError as error:
        raise TrialRefused(str(error)) from None


def sample_items(
    config: dict, dataset: Dataset | None, count: int = TRIAL_ITEMS
) -> list[TrialItem]:
    """What to try the judge on: responses, or (pairwise) responses each
    with the baseline's answer to its question."""
    judge = judge_of(config)
    if judge.pairwise:
        return sample_pairs(dataset, judge.config.baseline, count)
    return [TrialItem(response) for response in sample_responses(dataset, count)]


def _one_per_system_first(responses, count: int) -> list[Response]:
    """`count` responses: one of each system first (the first questions),
    then the next ones in order."""
    candidates = list(responses.order_by("question_id", "pk")[:200])
    chosen: list[Response] = []
    seen_systems: set[int] = set()
    for response in candidates:
        if response.run.system_id not in seen_systems and len(chosen) < count:
            chosen.append(response)
            seen_systems.add(response.run.system_id)
    for response in candidates:
        if len(chosen) >= count:
            break
        if response not in chosen:
            chosen.append(response)
    return chosen


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
    return _one_per_system_first(responses, count)


def sample_pairs(
    dataset: Dataset | None, baseline: str, count: int = TRIAL_ITEMS
) -> list[TrialItem]:
    """Other systems' single-turn responses beside the baseline's answer to
    the same question, from `dataset` or the first dataset the baseline
    answered; none when the baseline answered nothing there."""
    theirs = Response.objects.filter(run__mode="st", run__system__name=baseline)
    if dataset is None:
        first = theirs.order_by("pk").values_list("run__dataset", flat=True).first()
        if first is None:
            return []
        dataset_id = first
    else:
        dataset_id = dataset.pk
    opponents = {r.question_id: r for r in theirs.filter(run__dataset_id=dataset_id).order_by("pk")}
    others = (
        Response.objects.filter(
            run__mode="st", run__dataset_id=dataset_id, question_id__in=list(opponents)
        )
        .exclude(run__system__name=baseline)
        .select_related("run__system", "question")
    )
    return [TrialItem(r, opponents[r.question_id]) for r in _one_per_system_first(others, count)]


def texts_of(response: Response) -> tuple[str, str, list[str]]:
    """The question's wording, reference answer and other right answers in the
    response's dataset."""
    found = (
        QuestionText.objects.filter(dataset_id=response.run.dataset_id, question=response.question)
        .values_list("text", "reference_answer", "alternative_answers")
        .first()
    )
    if found is None:
        return "", "", []
    text, reference, alternatives = found
    return text, reference, list(alternatives or [])


def written(messages: list[dict]) -> str:
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)


def item_messages(judge: ModelJudge[Any], item: TrialItem, order: int = 0) -> list[dict]:
    """The messages a run sends for `item` in `order` (a pairwise judge's
    order 1 shows the baseline's answer first)."""
    question, reference, alternatives = texts_of(item.response)
    if isinstance(judge, Pairwise):
        if item.opponent is None:
            raise TrialRefused(
                "A pairwise judge is tried on pairs (a response and the baseline's)."
            )
        first, second = item.response.text, item.opponent.text
        if order == 1:
            first, second = second, first
        return judge.messages(question, reference, first, second)
    assert isinstance(judge, ScoringJudge)
    return judge.answer_messages(question, item.response.text, (reference, *alternatives))


def prompt_preview(config: dict, item: TrialItem) -> str:
    """The prompt the judge sends for `item`, as text."""
    return written(item_messages(judge_of(config), item))


def winner(item: TrialItem, order: int, verdict: Verdict) -> str:
    """Which system's answer a verdict prefers, whatever order showed them."""
    if verdict is Verdict.TIE:
        return "tie"
    judged_first = order == 0
    judged_won = (verdict is Verdict.A) == judged_first
    opponent = item.opponent.run.system.name if item.opponent is not None else "the baseline"
    return item.response.run.system.name if judged_won else opponent


def try_judge(config: dict, items: list[TrialItem]) -> list[TrialAnswer]:
    """Ask the judge about each item once (its first seed; a pairwise judge
    in both orders, as a run does), through the ledger, and read each answer
    as a run would. Raises TrialRefused when the judge cannot be asked at all
    (its settings, a missing key)."""
    judge = judge_of(config)
    settings = judge.config
    try:
        caller = judge_caller(settings)
    except ProviderSetupError as error:
        raise TrialRefused(str(error)) from None
    answers = []
    try:
        for item in items:
            question, _, _ = texts_of(item.response)
            system = item.response.run.system.name
            for order in judge.orders:
                messages = item_messages(judge, item, order)
                request = caller.request(messages, settings.sampling(settings.seeds[0]))
                answer = TrialAnswer(system, question, written(messages), "", "", None, "", order)
                try:
                    call = caller.complete(request).call
                except (Stopped, BreakerOpen) as stopped:
                    answer.outcome, answer.detail = "stopped", str(stopped)
                    answers.append(answer)
                    return answers
                read(judge, item, call, answer)
                answers.append(answer)
    finally:
        caller.close()
    return answers


def read(judge: ModelJudge[Any], item: TrialItem, call: LLMCall, answer: TrialAnswer) -> None:
    """What a run would read in the call's answer."""
    if call.status == LLMCall.Status.API_ERROR:
        answer.outcome, answer.detail, answer.raw = "api_error", call.error[:500], call.error[:2000]
        return
    answer.raw = call.raw_output
    if call.finish_reason == "length":
        answer.outcome, answer.detail = "truncated", "the answer hit max_tokens before a score"
        return
    parsed = judge.parse(call.raw_output)
    answer.outcome, answer.detail = ("ok", "") if parsed.ok else (parsed.outcome, parsed.detail)
    if parsed.ok and isinstance(parsed.value, Verdict):
        answer.winner = winner(item, answer.order, parsed.value)
    elif parsed.ok and isinstance(parsed.value, int):
        answer.score = parsed.value
    if parsed.ok:
        answer.probability = answer_probability(call, judge)
