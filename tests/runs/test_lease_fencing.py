"""A worker cut off from the network while its run was taken over comes back
later, with results in hand: it must write nothing of the run's (items,
counters, its end), since the new holder owns them now. Found by the cluster
rehearsal (tests/cluster): the returning worker marked items the new holder
had judged as failed API calls, on a run already done."""

import pytest

from corpus.models import Dataset
from judging.evaluators import JudgeConfig, judge_for
from judging.judging_runs import create_judging_run
from judging.model_judging import ItemResult, ResultWriter
from judging.models import Evaluator, JudgeItem, JudgingRun
from runs.lifecycle import finish, holding_lease

pytestmark = pytest.mark.django_db

CONFIG = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "server": "vllm", "seeds": [2023]}


def test_a_worker_whose_run_was_taken_over_writes_nothing_of_it(two_meetings):
    judge = Evaluator.objects.create(name="fenced judge", kind="llm_rubric", config=CONFIG)
    run = create_judging_run(
        judge, Dataset.objects.get(version="qa", language="en", split="test2"), "st"
    )
    item = JudgeItem.objects.filter(run=run).order_by("pk").first()
    with holding_lease(JudgingRun, run.pk) as lease:
        assert lease is not None
        # while this worker could not reach the database, its lease expired,
        # another worker took the run over and judged the item
        JudgingRun.objects.filter(pk=run.pk).update(lease_owner="llm2:7:other")
        JudgeItem.objects.filter(pk=item.pk).update(status="done", outcome="ok")
        # back on the network: its call timed out meanwhile
        writer = ResultWriter(run, judge_for(JudgeConfig.from_dict(CONFIG)), lease)
        writer.add(ItemResult(item, outcome="api_error", detail="timed out", attempts=1))
        writer.flush()
        finish(run, JudgingRun.Status.FAILED, "1 item failed with API errors", lease)
        assert lease.lost.is_set()
    item.refresh_from_db()
    assert (item.status, item.outcome, item.attempts) == ("done", "ok", 0)
    run.refresh_from_db()
    assert (run.status, run.lease_owner, run.failed, run.message) == (
        "running",
        "llm2:7:other",
        0,
        "",
    )


def test_the_holder_still_writes_and_ends_its_run(two_meetings):
    judge = Evaluator.objects.create(name="holding judge", kind="llm_rubric", config=CONFIG)
    run = create_judging_run(
        judge, Dataset.objects.get(version="qa", language="en", split="test2"), "st"
    )
    item = JudgeItem.objects.filter(run=run).order_by("pk").first()
    with holding_lease(JudgingRun, run.pk) as lease:
        assert lease is not None
        writer = ResultWriter(run, judge_for(JudgeConfig.from_dict(CONFIG)), lease)
        writer.add(ItemResult(item, outcome="api_error", detail="timed out", attempts=1))
        writer.flush()
        finish(run, JudgingRun.Status.FAILED, "1 item failed with API errors", lease)
        assert not lease.lost.is_set()
    item.refresh_from_db()
    assert (item.outcome, item.attempts) == ("api_error", 1)
    run.refresh_from_db()
    assert (run.status, run.failed) == ("failed", 1)
