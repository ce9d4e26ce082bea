"""The call ledger's own thread: answered calls written in batches off the
calling threads, a write that loses a race kept under the next attempt, a
failed write reported, identical requests in flight answered once; and the
provider's handling of a 200 that is not a chat completion."""

import threading

import pytest

from llm.calls import ModelCaller
from llm.config import ModelConfig
from llm.ledger import Ledger, LedgerThread, request_hash
from llm.models import LLMCall
from llm.policy import RetryPolicy
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)

MESSAGES = [{"role": "user", "content": "How many people attended?"}]


def new_call(ledger: Ledger, n: int) -> LLMCall:
    digest = request_hash("http://x/v1", "m", MESSAGES, {"seed": n})
    ledger.prefetch([digest])
    return ledger.new_call(digest, MESSAGES, {"seed": n}, status="ok", raw_output=f"answer {n}")


class CountingLedger(Ledger):
    def __init__(self) -> None:
        super().__init__("http://x/v1", "m", "judge")
        self.batches: list[int] = []

    def write(self, calls):
        self.batches.append(len(calls))
        super().write(calls)


def test_calls_that_arrive_together_are_written_in_one_statement():
    ledger = CountingLedger()
    thread = LedgerThread(ledger)
    release = threading.Event()
    # the thread is busy with a slow read while 20 answers come in
    reading = threading.Thread(target=thread.run, args=(release.wait,))
    reading.start()
    while thread.jobs.qsize():  # the read has been picked up
        pass
    calls = [new_call(ledger, n) for n in range(20)]
    futures = [thread.submit(call) for call in calls]
    assert not any(f.done() for f in futures)  # the calling threads did not wait
    release.set()
    thread.flush()
    assert ledger.batches == [20]
    assert all(f.result().pk is not None for f in futures)
    assert sorted(LLMCall.objects.values_list("raw_output", flat=True)) == sorted(
        f"answer {n}" for n in range(20)
    )
    thread.close()
    assert thread.thread is None


def test_a_write_that_loses_a_race_is_kept_under_the_next_attempt():
    ledger = Ledger("http://x/v1", "m", "judge")
    call = new_call(ledger, 1)  # attempt 0, taken in memory
    # another process stores the same request meanwhile
    LLMCall.objects.create(
        request_hash=call.request_hash, attempt=0, status="ok", raw_output="theirs"
    )
    thread = LedgerThread(ledger)
    stored = thread.submit(call).result()
    thread.close()
    assert stored.attempt == 1 and stored.raw_output == "answer 1"
    assert list(
        LLMCall.objects.filter(request_hash=call.request_hash)
        .order_by("attempt")
        .values_list("attempt", "raw_output")
    ) == [(0, "theirs"), (1, "answer 1")]


def test_a_failed_write_is_reported_at_flush(monkeypatch):
    ledger = Ledger("http://x/v1", "m", "judge")
    thread = LedgerThread(ledger)

    def broken(calls):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(ledger, "write", broken)
    future = thread.submit(new_call(ledger, 1))
    with pytest.raises(RuntimeError, match="went away"):
        thread.flush()
    with pytest.raises(RuntimeError, match="went away"):
        future.result()
    assert not LLMCall.objects.exists()


def test_identical_requests_in_flight_make_one_call_and_both_see_it_stored():
    with FakeOpenAI(latency=0.2) as server:
        config = ModelConfig(base_url=server.url, model="m", server="vllm")
        caller = ModelCaller(config, LLMCall.Purpose.GENERATE)
        request = caller.request(MESSAGES, {"temperature": 0.0, "max_tokens": 8})
        results = []
        threads = [
            threading.Thread(target=lambda: results.append(caller.complete(request)))
            for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        caller.close()
    assert server.count == 1
    assert sorted(r.cached for r in results) == [False, True]
    # without write_behind, what complete returns is on the record, the copy too
    assert all(r.call.pk is not None for r in results)
    assert LLMCall.objects.count() == 1


def test_an_answer_that_is_not_a_chat_completion_is_a_transient_failure():
    with FakeOpenAI(plan=["notjson", "notjson"]) as server:
        config = ModelConfig(base_url=server.url, model="m", server="vllm", max_retries=1)
        caller = ModelCaller(config, LLMCall.Purpose.JUDGE)
        caller.policy = RetryPolicy(max_retries=0, base_seconds=0.01, jitter_seconds=0)
        failed = caller.complete(caller.request(MESSAGES, {"max_tokens": 8}))
        # a transient failure is asked again (the breaker does not count it)
        caller.policy = RetryPolicy(max_retries=1, base_seconds=0.01, jitter_seconds=0)
        answered = caller.complete(caller.request(MESSAGES, {"max_tokens": 9}))
        caller.close()
    assert failed.call.status == "api_error"
    assert failed.call.error.startswith("MalformedAnswer: the server's answer is not a chat")
    assert "502 Bad Gateway" in failed.call.error
    assert answered.call.status == "ok" and server.count == 3
    assert caller.model.clients == []  # the per-thread clients were closed


def test_a_thread_sends_its_next_request_only_once_its_last_call_is_recorded():
    """So that a worker killed at any moment has paid for at most one unrecorded
    call per calling thread: the one in flight."""
    with FakeOpenAI() as server:
        config = ModelConfig(base_url=server.url, model="m", server="vllm")
        caller = ModelCaller(config, LLMCall.Purpose.JUDGE)
        requests = [caller.request(MESSAGES, {"seed": n}) for n in (1, 2, 3)]
        caller.prefetch(requests)  # no look-up will need the ledger's thread
        release = threading.Event()
        held = threading.Thread(target=caller.ledger_thread.run, args=(release.wait,))
        held.start()  # the ledger's thread is held up: no write lands
        first_done = threading.Event()
        results = {}

        def one_thread_two_calls():
            results["first"] = caller.complete(requests[0], write_behind=True)
            first_done.set()
            results["second"] = caller.complete(requests[1], write_behind=True)

        worker = threading.Thread(target=one_thread_two_calls)
        worker.start()
        assert first_done.wait(10)
        # another thread, with nothing unrecorded, is free to send
        other = caller.complete(requests[2], write_behind=True)
        worker.join(timeout=0.5)
        assert worker.is_alive()  # its second request waits for its first write
        assert server.count == 2 and not results["first"].written.done()
        release.set()
        worker.join(timeout=10)
        assert server.count == 3 and results["second"].call.status == "ok"
        caller.close()
        held.join()
    assert other.call.pk is not None and results["second"].call.pk is not None
    assert LLMCall.objects.count() == 3


def test_a_written_answer_leaves_memory_and_is_still_answered_from_the_ledger():
    """After its call is written, the ledger forgets the request (the call
    with its messages, its last attempt); the same request later in the run is
    answered from the database, with no second request to the server."""
    with FakeOpenAI() as server:
        config = ModelConfig(base_url=server.url, model="m", server="vllm")
        caller = ModelCaller(config, LLMCall.Purpose.JUDGE)
        request = caller.request(MESSAGES, {"temperature": 0.0, "max_tokens": 8})
        first = caller.complete(request, write_behind=True)
        caller.flush()
        assert request.digest not in caller.ledger.answers
        assert request.digest not in caller.ledger.last_attempt
        assert caller.locks.locks == {}  # no lock is kept for a request answered
        again = caller.complete(request)
        assert caller.cached(request).pk == first.call.pk
        caller.close()
    assert server.count == 1
    assert again.cached and again.call.pk == first.call.pk
    assert again.call.raw_output == first.call.raw_output
    # a request answered but not yet written stays in memory for the next one
    ledger = Ledger("http://x/v1", "m", "judge")
    unsaved = new_call(ledger, 99)
    ledger._look_up([unsaved.request_hash])  # the database does not have it yet
    assert ledger.answer_in_memory(unsaved.request_hash) == (True, unsaved)


def test_a_write_the_database_did_not_take_is_tried_again_until_it_does(monkeypatch, settings):
    """The database went away for a moment (a restart, a failover): the write
    is tried again on a new connection, and the call is on the record once."""
    from django.db import InterfaceError
    from django.db.models import QuerySet

    settings.CONCORD_DATABASE_OUTAGE_SECONDS = 30
    ledger = Ledger("http://x/v1", "m", "judge")
    thread = LedgerThread(ledger)
    original = QuerySet.bulk_create
    tries = []

    def flaky(queryset, objs, *args, **kwargs):
        tries.append(len(objs))
        if len(tries) <= 3:
            raise InterfaceError("connection already closed")
        return original(queryset, objs, *args, **kwargs)

    monkeypatch.setattr(QuerySet, "bulk_create", flaky)
    stored = thread.submit(new_call(ledger, 1)).result(timeout=10)
    thread.flush()
    thread.close()
    assert tries == [1, 1, 1, 1]
    assert stored.pk is not None
    assert list(LLMCall.objects.values_list("pk", "attempt", "raw_output")) == [
        (stored.pk, 0, "answer 1")
    ]


def test_a_write_whose_commit_went_through_before_its_connection_broke_is_not_doubled(
    monkeypatch,
):
    from django.db import InterfaceError

    ledger = Ledger("http://x/v1", "m", "judge")
    original = Ledger._insert
    tries = []

    def committed_then_lost(self, calls):
        tries.append(1)
        original(self, calls)
        if len(tries) == 1:
            for call in calls:  # the answer to the INSERT never arrived
                call.pk = None
                call._state.adding = True
            raise InterfaceError("connection already closed")

    monkeypatch.setattr(Ledger, "_insert", committed_then_lost)
    calls = [new_call(ledger, n) for n in (1, 2)]
    ledger.write(calls)
    assert len(tries) == 2
    assert sorted(LLMCall.objects.values_list("pk", "attempt")) == sorted(
        (call.pk, 0) for call in calls
    )


def test_a_write_the_database_refused_is_not_tried_again(monkeypatch):
    """An error of the write itself (not an outage) reaches the caller at once."""
    from django.db import DataError
    from django.db.models import QuerySet

    ledger = Ledger("http://x/v1", "m", "judge")
    tries = []

    def refused(queryset, objs, *args, **kwargs):
        tries.append(1)
        raise DataError("value too long")

    monkeypatch.setattr(QuerySet, "bulk_create", refused)
    with pytest.raises(DataError):
        ledger.write([new_call(ledger, 1)])
    assert tries == [1]
