"""Pairwise battles against a baseline: both orders, two ways of counting,
position-bias diagnostics in the report."""

import pytest

from analysis.report.build import build_report
from analysis.report.selection import Selection
from analysis.statistics.pairwise import verdict_table, win_rates
from judging.evaluators.config import ConfigError, JudgeConfig
from judging.judging_runs import JudgingError, create_judging_run
from judging.model_judging import run_llm_judging
from judging.models import Evaluator, JudgeItem, PairwiseVerdict
from tests.corpus.fixtures import qa_test2
from tests.fakes.openai_server import FakeOpenAI

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]


def pairwise_judge(server, name="battle judge", **settings):
    config = {
        "protocol": "pairwise",
        "baseline": "Synthetic-Hedge",
        "base_url": server.url,
        "model": "m",
        "server": "vllm",
        "max_concurrency": 4,
        "seeds": [2023],
        **settings,
    }
    return Evaluator.objects.create(name=name, kind="llm_pairwise", config=config)


def test_config_needs_a_baseline():
    with pytest.raises(ConfigError, match="needs a baseline"):
        JudgeConfig.from_dict({"protocol": "pairwise"})
    with pytest.raises(ConfigError, match="counting"):
        JudgeConfig.from_dict({"protocol": "pairwise", "baseline": "x", "counting": "elo"})


def test_a_fair_judge(two_meetings_committed):
    with FakeOpenAI() as server:
        judge = pairwise_judge(server)
        run = create_judging_run(judge, qa_test2(), "st")
        # 2 systems x 12 questions x 2 orders against the baseline's answers
        assert run.total == 48
        run = run_llm_judging(run.pk)
    assert (run.status, run.done) == ("done", 48)
    first = JudgeItem.objects.filter(run=run, order=0).select_related("call").first()
    assert "[The Start of Reference Answer]" in first.call.messages[1]["content"]
    assert PairwiseVerdict.objects.count() == 48
    rates = win_rates(verdict_table(), "consistent")["battle judge"]
    assert rates["Synthetic-Echo"] == {
        "against": "Synthetic-Hedge",
        "wins": 12,
        "ties": 0,
        "losses": 0,
        "n": 12,
        "counting": "consistent",
        "win_rate": 1.0,
    }
    assert rates["Synthetic-Terse"]["ties"] == 12 and rates["Synthetic-Terse"]["win_rate"] == 0.5
    report = build_report(Selection(split="test2"))
    diagnostics = report.diagnostics.pairwise["battle judge"]
    assert diagnostics.flip_rate == 0.0
    assert report.diagnostics.win_rates.per_order["battle judge"]["Synthetic-Echo"].n == 24


def test_a_pairwise_judge_s_verdicts_keep_their_token_probability(two_meetings_committed):
    """Asked with logprobs, each verdict keeps the probability the server's
    tokens gave the letter it was read as ([[A]], [[B]] or [[C]])."""
    with FakeOpenAI() as server:
        judge = pairwise_judge(server, name="judge with logprobs", logprobs=True)
        run = run_llm_judging(create_judging_run(judge, qa_test2(), "st").pk)
    assert run.done == 48
    calls = {
        (i.response_id, i.order): i.call.messages[-1]["content"]
        for i in JudgeItem.objects.filter(run=run).select_related("call")
    }
    verdicts = PairwiseVerdict.objects.filter(evaluator=judge)
    assert verdicts.count() == 48
    for verdict in verdicts:
        user = calls[(verdict.response_id, verdict.order)]
        assert verdict.probability == pytest.approx(server.answer_probability[user], rel=1e-12)


def test_a_judge_that_always_prefers_the_first_answer(two_meetings_committed):
    with FakeOpenAI(first_wins=True) as server:
        judge = pairwise_judge(server, name="biased judge")
        run_llm_judging(create_judging_run(judge, qa_test2(), "st").pk)
    table = verdict_table()
    per_order = win_rates(table, "per_order")["biased judge"]["Synthetic-Echo"]
    assert (per_order["wins"], per_order["losses"], per_order["win_rate"]) == (12, 12, 0.5)
    consistent = win_rates(table, "consistent")["biased judge"]["Synthetic-Echo"]
    assert (consistent["ties"], consistent["win_rate"]) == (12, 0.5)
    report = build_report(Selection(split="test2"))
    diagnostics = report.diagnostics.pairwise["biased judge"]
    assert diagnostics.flip_rate == 1.0 and diagnostics.first_position_win_rate == 1.0


def test_baseline_without_responses_is_refused(two_meetings_committed):
    with FakeOpenAI() as server:
        judge = pairwise_judge(server, baseline="Nobody")
        with pytest.raises(JudgingError, match="The baseline 'Nobody' has no st responses"):
            create_judging_run(judge, qa_test2(), "st")


def test_human_review_of_a_pairwise_judge_gives_verdicts(two_meetings_committed, django_user_model):
    from judging.human_review import ReviewError, check_reparse_run, check_resolve_item
    from judging.models import Judgment
    from judging.parsers import Verdict

    with FakeOpenAI() as server:
        judge = pairwise_judge(server, name="reviewed judge")
        run = run_llm_judging(create_judging_run(judge, qa_test2(), "st").pk)
    first, second = JudgeItem.objects.filter(run=run).order_by("pk")[:2]
    for item in (first, second):  # as if their answers had not parsed
        PairwiseVerdict.objects.filter(
            response=item.response, opponent=item.opponent, order=item.order
        ).delete()
        JudgeItem.objects.filter(pk=item.pk).update(status="needs_human")
    first.call.raw_output = "On reflection, they are equal. [[C]]"
    first.call.save()
    JudgeItem.objects.filter(pk=second.pk).update(call=None)
    assert check_reparse_run(run) == 1
    researcher = django_user_model.objects.create_user("r2", role="researcher")
    with pytest.raises(ReviewError, match="takes a verdict: A"):
        check_resolve_item(second, 1, researcher)  # no numbers for a verdict
    check_resolve_item(second, Verdict.B, researcher)  # the answer shown second wins
    assert PairwiseVerdict.objects.get(response=first.response, order=first.order).winner == "tie"
    assert (
        PairwiseVerdict.objects.get(response=second.response, order=second.order).winner == "second"
    )
    assert not Judgment.objects.filter(evaluator=judge).exists()
    assert PairwiseVerdict.objects.filter(evaluator=judge).count() == 48


def test_leval_s_judge_runs_as_leval_ran_it(two_meetings_committed):
    """L-Eval's judge on a run: its prompts, no top_p and no seed sent,
    temperature 0 and 2,048 tokens, both orders stored as verdicts."""
    from judging.prompts import LEVAL_JUDGE_SYSTEM

    with FakeOpenAI() as server:
        judge = pairwise_judge(server, "leval judge", protocol="leval_pairwise")
        run = run_llm_judging(create_judging_run(judge, qa_test2(), "st").pk)
        sent = list(server.requests)
    assert (run.status, run.done) == ("done", 48)
    assert all(r["messages"][0]["content"] == LEVAL_JUDGE_SYSTEM for r in sent)
    assert all(
        (r["temperature"], r["max_tokens"], "top_p" in r, "seed" in r) == (0.0, 2048, False, False)
        for r in sent
    )
    assert PairwiseVerdict.objects.filter(evaluator=judge).count() == 48
    rates = win_rates(verdict_table(), "per_order")["leval judge"]
    assert rates["Synthetic-Echo"]["n"] == 24 and rates["Synthetic-Echo"]["counting"] == "per_order"
