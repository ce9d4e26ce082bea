"""A generation worker killed (-9) mid-run: another finishes the run, every
question answered exactly once."""

import os
import signal
import uuid

import pytest

from corpus.models import Dataset
from generation.models import GenerationRun, Response, System
from generation.runner import create_generation_run
from generation.tasks import run_generation_task
from tests.conftest import port_open, require
from tests.fakes.openai_server import FakeOpenAI
from tests.workers import redis_url, send_run, start_worker, stop, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_killed_generation_worker(two_meetings_committed, tmp_path):
    url = redis_url()
    require(port_open("127.0.0.1", 6379), f"Redis is not reachable at {url}")
    queue = f"test-gen-{uuid.uuid4().hex[:8]}"
    with FakeOpenAI(latency=0.4) as server:
        system = System.objects.create(
            name="api",
            model_name="m",
            backend="openai",
            config={
                "backend": "openai",
                "base_url": server.url,
                "model": "m",
                "server": "vllm",
                "max_concurrency": 1,
            },
        )
        dataset = Dataset.objects.get(version="conv", language="en", split="test2")
        run = create_generation_run(system, dataset, "mt", seed=2023)
        first = start_worker(queue, url, tmp_path, "gen-first")
        second = None
        try:
            send_run(run_generation_task, run, queue, url)
            assert wait_for(lambda: Response.objects.filter(run=run).count() >= 3, 60)
            os.kill(first.pid, signal.SIGKILL)
            first.wait(timeout=10)
            assert Response.objects.filter(run=run).count() < 12
            second = start_worker(queue, url, tmp_path, "gen-second")
            assert wait_for(lambda: GenerationRun.objects.get(pk=run.pk).status == "done", 90), (
                tmp_path / "gen-second.log"
            ).read_text()
        finally:
            stop(first, second)
        assert Response.objects.filter(run=run).count() == 12
        assert GenerationRun.objects.get(pk=run.pk).done == 12
        # at most the request in flight at the kill was made twice
        assert 12 <= server.count <= 13
