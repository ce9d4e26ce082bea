"""A worker killed (-9) in the middle of an LLM judging run: another worker
finishes the run, with nothing lost and nothing judged twice."""

import os
import signal
import uuid

import pytest

from config.celery import app as celery_app
from corpus.models import Dataset
from judging.models import Evaluator, JudgingRun, Judgment
from judging.runs import start_run
from judging.tasks import run_judging
from llm.models import LLMCall
from tests.conftest import port_open, require
from tests.fakes.openai_server import FakeOpenAI
from tests.workers import redis_url, start_worker, stop, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_killed_worker_loses_and_doubles_nothing(tmp_path):
    from corpus.importers.synthetic import write_synthetic_elitr
    from judging.importing import import_elitr_bench

    url = redis_url()
    host_port = url.split("://", 1)[1].split("/", 1)[0]
    host, _, port = host_port.rpartition(":")
    require(port_open(host or "127.0.0.1", int(port or 6379)), f"Redis is not reachable at {url}")
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    queue = f"test-kill-{uuid.uuid4().hex[:8]}"
    with FakeOpenAI(latency=0.4) as server:
        judge = Evaluator.objects.create(
            name="killable judge",
            kind="llm_rubric",
            config={
                "base_url": server.url,
                "model": "m",
                "server": "vllm",
                "max_concurrency": 2,
                "seeds": [2023],
                "timeout_s": 5,
            },
        )
        run = start_run(
            judge, Dataset.objects.get(version="qa", language="en", split="test2"), "st"
        )
        first = start_worker(queue, url, tmp_path, "first")
        second = None
        try:
            with celery_app.connection_for_write(url) as broker:
                run_judging.apply_async(args=[run.pk], queue=queue, connection=broker)
            assert wait_for(lambda: Judgment.objects.filter(evaluator=judge).count() >= 6, 60)
            os.kill(first.pid, signal.SIGKILL)
            first.wait(timeout=10)
            judged_at_kill = Judgment.objects.filter(evaluator=judge).count()
            assert judged_at_kill < 36
            second = start_worker(queue, url, tmp_path, "second")
            assert wait_for(lambda: JudgingRun.objects.get(pk=run.pk).status == "done", 90), (
                tmp_path / "second.log"
            ).read_text()
        finally:
            stop(first, second)
        assert Judgment.objects.filter(evaluator=judge).count() == 36
        assert LLMCall.objects.filter(status="ok").count() == 18  # 18 distinct prompts
        # at most the calls in flight at the kill (2) were asked twice
        assert 18 <= server.count <= 18 + 2
