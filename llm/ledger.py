"""The call ledger's reads and writes, batched where a run allows it.

A run looks up the answers it may already have in one query per thousand
requests (`prefetch`) instead of one per item. A call is written as soon as it
is answered: the row is what makes a resumed run not pay again, so it is
never held back for a progress flush. `LedgerThread` writes the calls that
answered at about the same moment in one INSERT, off the calling threads.

A call is paid for once it is answered, so its row must not be lost to a
database blip: a write or a look-up whose connection broke (a restart, a
failover, a session the server ended) is tried again on a new connection,
waiting longer each time, until the database answers
(`core.database.outlasting_outages`); a write whose commit went through
before its connection broke is found, not written twice. Meanwhile each
calling thread waits for its last call's write before sending again
(`ModelCaller.complete`), so an outage holds at most one unrecorded call per
thread.
"""

from __future__ import annotations

import hashlib
import json
import queue
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any, TypeVar

from django.db import IntegrityError, connection, transaction
from django.db.models import Max

from core.database import outlasting_outages
from llm.models import LLMCall
from llm.text import storable

T = TypeVar("T")

PREFETCH_CHUNK = 1000


def request_hash(endpoint: str, model: str, messages: list[dict], params: dict) -> str:
    canonical = json.dumps(
        {"base_url": endpoint.rstrip("/"), "model": model, "messages": messages, "params": params},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def estimated_tokens(messages: list[dict], params: dict) -> int:
    return sum(len(m.get("content", "")) for m in messages) // 4 + int(params.get("max_tokens", 0))


class Ledger:
    """One run's view of the ledger: the answers it has looked up, the last
    attempt number of each request, and the writes."""

    def __init__(
        self,
        endpoint: str,
        model: str,
        purpose: str,
        template_version: str = "",
        parser_version: str = "",
    ) -> None:
        self.endpoint = endpoint
        self.model = model
        self.purpose = purpose
        self.template_version = template_version
        self.parser_version = parser_version
        # None: looked up, no answer (an answer written is forgotten: _forget)
        self.answers: dict[str, LLMCall | None] = {}
        self.last_attempt: dict[str, int] = {}
        self.lock = threading.Lock()

    def prefetch(self, digests: Iterable[str]) -> None:
        """Look up many requests at once (the raw messages are not loaded)."""
        todo = [d for d in dict.fromkeys(digests) if d not in self.answers]
        for start in range(0, len(todo), PREFETCH_CHUNK):
            self._look_up(todo[start : start + PREFETCH_CHUNK])

    def _look_up(self, digests: list[str]) -> None:
        found: dict[str, LLMCall | None] = dict.fromkeys(digests)
        attempts: dict[str, int] = {}
        stored = outlasting_outages(
            lambda: list(
                LLMCall.objects.filter(request_hash__in=digests)
                .defer("messages")
                .order_by("request_hash", "attempt")
            ),
            what="Looking up the call ledger",
        )
        for call in stored:
            attempts[call.request_hash] = call.attempt
            if call.status == LLMCall.Status.OK:
                found[call.request_hash] = call  # the latest answer wins
        with self.lock:
            for digest, answer in found.items():
                held = self.answers.get(digest)
                # an answer of this run not yet written stays (the query missed it)
                if answer is not None or not isinstance(held, LLMCall):
                    self.answers[digest] = answer
            for digest, attempt in attempts.items():
                self.last_attempt[digest] = max(attempt, self.last_attempt.get(digest, -1))

    def answer(self, digest: str) -> LLMCall | None:
        """The latest answer to this request, if any."""
        with self.lock:
            if digest in self.answers:
                return self.answers[digest]
        self._look_up([digest])
        with self.lock:
            return self.answers.get(digest)

    def knows(self, digest: str) -> bool:
        """Whether this request was looked up (its answer and last attempt are known)."""
        with self.lock:
            return digest in self.answers or digest in self.last_attempt

    def answer_in_memory(self, digest: str) -> tuple[bool, LLMCall | None]:
        """(looked up, answer): no query. An answer written earlier in this run
        was forgotten: not looked up (the caller asks the database)."""
        with self.lock:
            if digest in self.answers:
                return True, self.answers[digest]
            return False, None

    def new_call(self, digest: str, messages: list[dict], params: dict, **fields) -> LLMCall:
        """An unsaved call under the request's next attempt number, taken now (so
        that two calls of one request never share one), and remembered as the
        request's answer when it is one. The request must have been looked up."""
        if "raw_output" in fields:
            fields["raw_output"] = storable(fields["raw_output"])
        with self.lock:
            attempt = self.last_attempt.get(digest, -1) + 1
            self.last_attempt[digest] = attempt
            call = LLMCall(
                request_hash=digest,
                attempt=attempt,
                purpose=self.purpose,
                base_url=self.endpoint,
                model=self.model,
                params=params,
                messages=messages,
                template_version=self.template_version,
                parser_version=self.parser_version,
                **fields,
            )
            if call.status == LLMCall.Status.OK:
                self.answers[digest] = call
        return call

    def write(self, calls: list[LLMCall]) -> None:
        """Insert new calls in one statement. When another process stored one of
        the same requests at once (the attempt number is taken), each call goes
        alone under the next free attempt number. While the database cannot be
        reached the write is tried again (see the module's docstring)."""
        outlasting_outages(self._insert, calls, what="Writing the call ledger")
        self._forget(calls)

    def _insert(self, calls: list[LLMCall]) -> None:
        try:
            with transaction.atomic():
                LLMCall.objects.bulk_create(calls)
        except IntegrityError:
            for call in calls:
                self._write_one(call)

    def _forget(self, calls: list[LLMCall]) -> None:
        """Written answers leave memory (the database has them; the same
        request again is looked up there, its answer and its last attempt): a
        run of tens of thousands of requests keeps the ones in flight, not
        every call with its messages."""
        with self.lock:
            for call in calls:
                if self.answers.get(call.request_hash) is call:
                    del self.answers[call.request_hash]
                    self.last_attempt.pop(call.request_hash, None)

    def _write_one(self, call: LLMCall) -> None:
        for _ in range(5):
            if call.pk is not None:
                return  # written by an earlier try of this write
            try:
                with transaction.atomic():
                    call.save(force_insert=True)
                return
            except IntegrityError:
                if self._written_before(call):
                    return
                last = LLMCall.objects.filter(request_hash=call.request_hash).aggregate(
                    m=Max("attempt")
                )["m"]
                call.attempt = (last or 0) + 1
                call.pk = None
                with self.lock:
                    self.last_attempt[call.request_hash] = max(
                        call.attempt, self.last_attempt.get(call.request_hash, -1)
                    )
        raise RuntimeError("Could not store an LLM call after 5 tries.")

    @staticmethod
    def _written_before(call: LLMCall) -> bool:
        """Whether this very call is stored already (an INSERT that committed
        before its connection broke, tried again): then it takes that row's id
        instead of a second row under the next attempt number."""
        pk = (
            LLMCall.objects.filter(
                request_hash=call.request_hash,
                attempt=call.attempt,
                status=call.status,
                raw_output=call.raw_output,
                error=call.error,
                latency_ms=call.latency_ms,
            )
            .values_list("pk", flat=True)
            .first()
        )
        if pk is None:
            return False
        call.pk = pk
        call._state.adding = False
        return True

    def store(self, digest: str, messages: list[dict], params: dict, **fields) -> LLMCall:
        """Write one call now, under the request's next attempt number (a refresh
        or a retry after an API error keeps the earlier rows)."""
        if not self.knows(digest):
            self.prefetch([digest])
        call = self.new_call(digest, messages, params, **fields)
        self.write([call])
        return call


class LedgerThread:
    """The ledger's database work for one caller, on one thread with one
    connection of its own: the look-ups a prefetch missed, and answered calls
    written in batches (one INSERT for every call that arrived while the last
    one was written). A run's 32 or 64 calling threads then neither open a
    connection each nor wait for a commit each: a wave of answers costs one
    round trip. `flush` returns once every call handed in before it is on the
    record; a write that failed raises there."""

    BATCH = 500

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.guard = threading.Lock()
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def _start(self) -> None:
        with self.guard:
            if self.thread is None:
                self.thread = threading.Thread(target=self._serve, name="ledger", daemon=True)
                self.thread.start()

    def submit(self, call: LLMCall) -> Future:
        """Queue an unsaved call for writing; the future holds it once saved."""
        self._start()
        done: Future = Future()
        self.jobs.put(("write", call, done))
        return done

    def run(self, function: Callable[..., T], *args: Any) -> T:
        """Run a read on the ledger's thread and wait for its result."""
        self._start()
        done: Future = Future()
        self.jobs.put(("read", (function, args), done))
        return done.result()

    def flush(self) -> None:
        """Wait until every call submitted so far is written."""
        if self.thread is None:
            return
        done: Future = Future()
        self.jobs.put(("barrier", None, done))
        done.result()
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        """Write what is queued, then stop the thread (and close its connection)."""
        if self.thread is None:
            return
        self.flush()
        self.jobs.put(("stop", None, None))
        self.thread.join()
        self.thread = None

    def _serve(self) -> None:
        try:
            while True:
                jobs = [self.jobs.get()]
                while len(jobs) < self.BATCH:
                    try:
                        jobs.append(self.jobs.get_nowait())
                    except queue.Empty:
                        break
                writes: list[tuple[LLMCall, Future]] = []
                for kind, payload, done in jobs:
                    if kind == "write":
                        writes.append((payload, done))
                        continue
                    self._write(writes)  # in order: what came before a read or barrier first
                    writes = []
                    if kind == "stop":
                        return
                    if kind == "barrier":
                        done.set_result(None)
                        continue
                    function, args = payload
                    try:
                        done.set_result(function(*args))
                    except BaseException as error:  # the caller's thread raises it
                        done.set_exception(error)
                self._write(writes)
        finally:
            connection.close()

    def _write(self, writes: list[tuple[LLMCall, Future]]) -> None:
        if not writes:
            return
        try:
            self.ledger.write([call for call, _ in writes])
        except BaseException as error:
            self.error = error
            for _, done in writes:
                done.set_exception(error)
            return
        for call, done in writes:
            done.set_result(call)
