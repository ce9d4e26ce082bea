"""The endpoint gate in Redis: a killed holder's slots are free again within
seconds, and a Redis outage in the middle of a judging run pauses the run,
which goes on by itself when Redis is back. Each test starts its own
redis-server on a free port (never the machine's shared one)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
import uuid

import pytest
from django.db import connections

from judging.judging_runs import create_judging_run
from judging.model_judging import run_llm_judging
from judging.models import JudgingRun
from llm import gate
from llm.models import LLMCall
from llm.policy import Stopped
from tests.conftest import port_open, require
from tests.corpus.fixtures import qa_test2
from tests.fakes.openai_server import FakeOpenAI
from tests.judging.fixtures import llm_judge
from tests.judging.test_llm_runs import DISTINCT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]

LEASE = 1.5


class PrivateRedis:
    def __init__(self, tmp_path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.tmp_path = tmp_path
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.tmp_path)],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while not port_open("127.0.0.1", self.port):
            assert time.monotonic() < deadline, "the private redis-server did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def private_redis(tmp_path, settings):
    require(shutil.which("redis-server") is not None, "redis-server is not installed")
    redis = PrivateRedis(tmp_path)
    redis.start()
    settings.CONCORD_GATE_LEASE_SECONDS = LEASE
    settings.CELERY_BROKER_URL = redis.url  # where the gate keeps its slots
    yield redis
    redis.stop()


def test_a_killed_holders_slots_are_free_again_within_seconds(private_redis):
    endpoint = f"http://fake/{uuid.uuid4().hex} m"
    # a worker took both slots and was killed: nobody renews or releases them
    dead = gate.EndpointGate(endpoint, 2, private_redis.url)
    for token in ("dead-1", "dead-2"):
        assert dead.script(keys=[dead.key], args=[2, LEASE, token]) == 1
    live = gate.EndpointGate(endpoint, 2, private_redis.url)
    started = time.monotonic()
    with live.slot():
        waited = time.monotonic() - started
    assert 0.5 < waited < LEASE + 2, waited


def test_a_held_slot_is_renewed_while_its_request_is_in_flight(private_redis):
    endpoint = f"http://fake/{uuid.uuid4().hex} m"
    holder = gate.EndpointGate(endpoint, 1, private_redis.url)
    other = gate.EndpointGate(endpoint, 1, private_redis.url)
    stop = threading.Event()
    timer = threading.Timer(3 * LEASE, stop.set)
    timer.start()
    # three leases long, the held slot stays taken: the other caller waits, then stops
    with holder.slot(), pytest.raises(Stopped), other.slot(stop):
        pass
    with other.slot():
        pass  # released with its request


@pytest.mark.usefixtures("two_meetings_committed")
def test_a_redis_outage_pauses_the_run_and_it_goes_on_by_itself(private_redis):
    seeds = [2023, 2024, 2025, 2026, 2027]
    with FakeOpenAI(latency=0.2) as server:
        judge = llm_judge(
            server.url, max_concurrency=4, endpoint_max_in_flight=3, seeds=seeds, timeout_s=5
        )
        run = create_judging_run(judge, qa_test2(), "st")
        outcome: dict[str, JudgingRun] = {}

        def work() -> None:
            try:
                outcome["run"] = run_llm_judging(run.pk)
            finally:
                connections.close_all()

        worker = threading.Thread(target=work)
        worker.start()
        deadline = time.monotonic() + 20
        while server.count < 10:
            assert time.monotonic() < deadline, "the run did not start"
            time.sleep(0.05)
        private_redis.stop()
        sent_when_stopped = server.count
        time.sleep(20)
        during = JudgingRun.objects.get(pk=run.pk)
        sent_during = server.count - sent_when_stopped
        private_redis.start()  # an empty Redis on the same port, as after a restart
        worker.join(120)
        assert not worker.is_alive()
    # paused, not failed: at most the requests that held a slot went out meanwhile
    assert during.status == "running" and during.message == "", during.message
    assert sent_during <= 3
    done = outcome["run"]
    assert (done.status, done.done, done.failed) == ("done", 36 * len(seeds), 0), done.message
    # nothing asked twice, and never more than 3 in flight
    assert server.count == DISTINCT * len(seeds) == LLMCall.objects.count()
    assert server.max_in_flight <= 3
