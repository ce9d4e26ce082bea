"""The one way Concord calls a model: `ModelCaller.complete`.

A request is answered from the ledger when an identical one was answered
before (unless the run refreshes, then once per run); otherwise it waits for
the run's rate limits and the endpoint's gate, reserves its most possible cost
from the run's budget (`llm.budget`), goes to the provider under the retry
policy, and is written to the ledger, answered or failed. Identical requests
in flight at once make one call. The circuit breaker stops the run when the
endpoint cannot be reached. Every wait (rate limit, gate, budget, a server's
Retry-After) ends as soon as the run is halted.

A run's caller is fenced by the run's lease (`fence`, set by
`llm.driver.RunWatch`): right before every request, with its gate slot
held, a calling thread asks the lease whether it may still send; while it
may not (its holder could not renew it: see `runs.lifecycle`), the thread
waits, and stops when the lease turns out lost. A cut-off holder thus sends
nothing once another worker may have taken the run over.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from django.db import connection

from llm.budget import (
    Budget,
    BudgetSpent,
    Prices,
    answer_tokens_allowed,
    counted_tokens,
    most_prompt_tokens,
)
from llm.config import ModelConfig
from llm.gate import RateLimiter, gate_for
from llm.ledger import Ledger, LedgerThread, estimated_tokens, request_hash
from llm.models import LLMCall
from llm.policy import BreakerOpen, CircuitBreaker, RetryPolicy, Stopped
from llm.providers import ChatModel, ModelOutput, chat_model_for

T = TypeVar("T")

__all__ = ["CallResult", "Fence", "ModelCaller", "Request", "Stopped"]

FENCE_POLL_SECONDS = 0.1  # how often a thread the fence holds back asks again


class Halt(StrEnum):
    """Why a caller stopped sending (its `halt_kind`): callers branch on this,
    never on the words of the reason."""

    TAKEN_OVER = "taken over"
    CANCELLED = "cancelled"
    BUDGET = "budget"
    UNREADABLE = "unreadable"  # a judge none of whose answers could be read


HALT_WORDS = {
    Halt.TAKEN_OVER: "another worker took the run over",
    Halt.CANCELLED: "cancelled",
    Halt.BUDGET: "budget",
    Halt.UNREADABLE: "no answer held a readable score",
}


class Fence(Protocol):
    """What a caller asks before each request (a run's lease)."""

    def sendable(self) -> bool:
        """Whether a request may go out now."""
        ...

    def gone(self) -> bool:
        """Whether no request may ever go out again (the caller stops)."""
        ...


@dataclass(frozen=True)
class Request:
    """A request with its hash, computed once (`ModelCaller.request`)."""

    messages: list[dict]
    params: dict
    digest: str


@dataclass(frozen=True)
class CallResult:
    call: LLMCall  # unsaved until `written` is done (write_behind)
    cached: bool  # answered from the ledger: no request, no cost
    written: Future | None = None  # the ledger's write, when it was left behind


class RequestLocks:
    """One lock per request hash, so that identical requests in one run (the
    same prompt for two responses with the same text) make one call, not two.
    A lock lives while someone holds or waits for it: a run of tens of
    thousands of requests keeps only those in flight."""

    def __init__(self) -> None:
        self.locks: dict[str, tuple[threading.Lock, int]] = {}
        self.guard = threading.Lock()

    @contextmanager
    def __call__(self, digest: str) -> Iterator[None]:
        with self.guard:
            lock, users = self.locks.get(digest) or (threading.Lock(), 0)
            self.locks[digest] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self.guard:
                lock, users = self.locks[digest]
                if users == 1:
                    del self.locks[digest]
                else:
                    self.locks[digest] = (lock, users - 1)


class ModelCaller:
    """A run's access to one model: its ledger, limits, retries and breaker."""

    def __init__(
        self,
        config: ModelConfig,
        purpose: str,
        *,
        refresh: bool = False,
        model: ChatModel | None = None,
        template_version: str = "",
        parser_version: str = "",
        price_factor: float = 1.0,
        breaker_threshold: int = 3,
        budget: Budget | None = None,
    ) -> None:
        self.config = config
        self.model = model or chat_model_for(config)
        self.endpoint = config.endpoint
        self.model_name = config.model_name
        self.refresh = refresh
        self.policy = RetryPolicy(max_retries=config.max_retries)
        self.breaker = CircuitBreaker(breaker_threshold)
        self.limiter = RateLimiter(
            config.requests_per_minute,
            config.tokens_per_minute,
            gate_for(self.model.connection_key(), config.endpoint_max_in_flight),
        )
        self.ledger = Ledger(
            self.endpoint, self.model_name, purpose, template_version, parser_version
        )
        self.price_factor = price_factor
        self.prices = Prices(
            config.price_input_per_million, config.price_output_per_million, price_factor
        )
        self.budget = budget or Budget(None)
        self.waits: dict[int, float] = {}  # calling thread -> when its Retry-After wait ends
        self.counted_usage = 0  # answers without usage from the server: tokens counted here
        self.locks = RequestLocks()
        self.refreshed: set[str] = set()
        self.halted = threading.Event()
        self.halt_kind: Halt | None = None
        self.halt_reason = ""
        self.fence: Fence | None = None
        self.fenced_waits = 0  # requests held back by the fence (each counted once)
        # Made inside a transaction (a test, a command run in one), the ledger's
        # reads and writes stay on the calling thread: another connection would
        # not see that transaction, nor be rolled back with it.
        self.ledger_thread = None if connection.in_atomic_block else LedgerThread(self.ledger)
        self.unrecorded = threading.local()  # each calling thread's last write, if behind

    def _on_ledger_thread(self, function: Callable[..., T], *args: Any) -> T:
        if self.ledger_thread is None:
            return function(*args)
        return self.ledger_thread.run(function, *args)

    def flush(self) -> None:
        """Wait until every call answered so far is on the record."""
        if self.ledger_thread is not None:
            self.ledger_thread.flush()

    def close(self) -> None:
        """Write what is left, stop the ledger's thread and let go of the
        provider's connections (call when the run ends)."""
        try:
            if self.ledger_thread is not None:
                self.ledger_thread.close()
        finally:
            self.model.close()

    # --- the run's controls --------------------------------------------------------------

    def halt(self, kind: Halt, detail: str = "") -> None:
        """Stop: calls not yet sent raise Stopped; waits between retries end.
        `halt_reason` says it in words ("budget: <detail>")."""
        if not self.halted.is_set():
            self.halt_kind = kind
            self.halt_reason = HALT_WORDS[kind] + (f": {detail}" if detail else "")
            self.halted.set()

    @property
    def stop_reason(self) -> str:
        return self.breaker.cause or self.halt_reason

    def waiting_until(self) -> float | None:
        """When the last thread waiting because the server asked it to
        (Retry-After) will ask again (a time.time()), or None."""
        return max(self.waits.values(), default=None)

    def most_cost(self, messages: list[dict], params: dict) -> float:
        """The most a request can cost: what the budget reserves for it."""
        return self.prices.cost(
            most_prompt_tokens(messages),
            answer_tokens_allowed(params, getattr(self.config, "max_tokens", 0)),
        )

    def request(self, messages: list[dict], params: dict) -> Request:
        return Request(
            messages, params, request_hash(self.endpoint, self.model_name, messages, params)
        )

    def prefetch(self, requests: Iterable[Request]) -> None:
        """Look up the ledger's answers to many requests at once."""
        if not self.refresh:
            self.ledger.prefetch(r.digest for r in requests)

    def cached(self, request: Request) -> LLMCall | None:
        """The ledger's answer without calling (None when the run refreshes)."""
        if self.refresh:
            return None
        return self.ledger.answer(request.digest)

    # --- calling -----------------------------------------------------------------------

    def complete(self, request: Request, *, write_behind: bool = False) -> CallResult:
        """Answer a request from the ledger or by calling the model. The call is
        on the record when this returns, unless `write_behind`: then the calling
        thread goes on at once and the ledger's thread writes the call with
        others (`result.written`; `flush` waits for every one). Either way a
        thread sends its next request only once its last call is on the
        record, so a worker killed at any moment has paid for at most one
        unrecorded call per calling thread (the ones in flight)."""
        messages, params, digest = request.messages, request.params, request.digest
        with self.locks(digest):
            refresh = self.refresh and digest not in self.refreshed
            known, answer = self.ledger.answer_in_memory(digest)
            if not known:  # not prefetched: one look-up
                answer = self._on_ledger_thread(self.ledger.answer, digest)
            if not refresh and answer is not None:
                if answer.pk is None and not write_behind:
                    self.flush()  # answered a moment ago in this run, not yet written
                return CallResult(answer, True)
            result = self._call(digest, messages, params)
            if refresh:
                self.refreshed.add(digest)
        if not write_behind and result.written is not None:
            result.written.result()  # a failed write raises here
        return result

    def complete_many(
        self, requests: list[Request], on_result: Callable[[int, CallResult], None]
    ) -> None:
        """Answer many requests, each handed to `on_result` (its index, its
        result) once it is on the record: those the ledger holds at once, the
        rest in one go of the provider's `generate_many` (a local model decodes
        prompts that share a prefix together), each written to the ledger as
        soon as its answer is done. For local models, whose requests cost
        nothing and wait for no server; a failure of the model reaches the
        caller (what was answered before it is on the record)."""
        self.prefetch(requests)
        todo: list[int] = []
        for index, request in enumerate(requests):
            answer = self.cached(request)
            if answer is not None and answer.status == LLMCall.Status.OK:
                on_result(index, CallResult(answer, True))
            else:
                todo.append(index)
        if not todo:
            return
        self._check()
        self._await_fence()
        started = time.perf_counter()

        def answered(position: int, output: ModelOutput) -> None:
            # answers decoded together share their time
            seconds = time.perf_counter() - started
            result = self.record(requests[todo[position]], output, seconds)
            on_result(todo[position], result)

        self.model.generate_many(
            [(requests[i].messages, requests[i].params) for i in todo], answered
        )

    def record(self, request: Request, output: ModelOutput, seconds: float) -> CallResult:
        """Put on the record an answer the caller obtained from this caller's
        model itself (a local model's conversation turn decoded in a batch with
        other conversations), as `complete` would have."""
        output, counted = self._with_usage(output, request.messages)
        result = self._record(
            request.digest,
            request.messages,
            request.params,
            status=LLMCall.Status.OK,
            raw_output=output.text,
            finish_reason=output.finish_reason,
            prompt_tokens=output.prompt_tokens,
            completion_tokens=output.completion_tokens,
            cost=self.prices.cost(output.prompt_tokens, output.completion_tokens),
            latency_ms=seconds * 1000,
            system_fingerprint=output.fingerprint,
            usage_counted=counted,
            token_logprobs=output.token_logprobs,
        )
        if result.written is not None:
            result.written.result()  # on the record before the caller points at it
        return result

    def _record(self, digest: str, messages: list[dict], params: dict, **fields) -> CallResult:
        """Put a call on the record: handed to the ledger's thread, or written here."""
        call = self.ledger.new_call(digest, messages, params, **fields)
        if self.ledger_thread is None:
            self.ledger.write([call])
            return CallResult(call, False)
        written = self.unrecorded.written = self.ledger_thread.submit(call)
        return CallResult(call, False, written)

    def _check(self) -> None:
        if self.halted.is_set():
            raise Stopped(self.halt_reason)
        self.breaker.check()

    def _await_fence(self) -> None:
        """Right before a request goes out: wait while the fence says no; stop
        (Stopped) when it is gone for good or the run halts meanwhile."""
        fence = self.fence
        if fence is None or fence.sendable():
            return
        with self.budget.changed:
            self.fenced_waits += 1
        while not fence.sendable():
            if fence.gone():
                self.halt(Halt.TAKEN_OVER)
            self._check()
            self.halted.wait(FENCE_POLL_SECONDS)
        self._check()

    def _call(self, digest: str, messages: list[dict], params: dict) -> CallResult:
        last = getattr(self.unrecorded, "written", None)
        if last is not None:
            last.result()  # usually written already, while this request was prepared
        error_text = ""
        started = time.perf_counter()
        most = self.most_cost(messages, params)
        for attempt in range(self.policy.max_retries + 1):
            self._check()
            try:
                reserved = self.budget.reserve(most, self.halted.is_set)
            except BudgetSpent as spent:
                self.halt(Halt.BUDGET, str(spent))
                raise Stopped(self.halt_reason) from None
            started = time.perf_counter()
            try:
                with self.limiter.request(estimated_tokens(messages, params), self.halted):
                    self._check()
                    self._await_fence()
                    started = time.perf_counter()
                    output = self.model.generate(messages, params)
            except (BreakerOpen, Stopped):
                self.budget.settle(reserved, 0.0)
                raise
            except Exception as error:
                self.budget.settle(reserved, 0.0)  # an error answer is not billed
                failure = self.model.classify(error)
                if failure is None:
                    raise
                error_text = failure.message
                self.breaker.record_failure(failure)
                if self.breaker.is_open:
                    self.halted.set()  # wakes every thread waiting to retry
                    break
                if not self.policy.should_retry(failure, attempt):
                    break
                self._wait(self.policy.wait_seconds(failure, attempt))
                continue
            self.breaker.record_success()
            output, counted = self._with_usage(output, messages)
            cost = self.prices.cost(output.prompt_tokens, output.completion_tokens)
            self.budget.settle(reserved, cost)
            return self._record(
                digest,
                messages,
                params,
                status=LLMCall.Status.OK,
                raw_output=output.text,
                finish_reason=output.finish_reason,
                prompt_tokens=output.prompt_tokens,
                completion_tokens=output.completion_tokens,
                cost=cost,
                latency_ms=(time.perf_counter() - started) * 1000,
                system_fingerprint=output.fingerprint,
                usage_counted=counted,
                token_logprobs=output.token_logprobs,
            )
        return self._record(
            digest,
            messages,
            params,
            status=LLMCall.Status.API_ERROR,
            error=error_text,
            latency_ms=(time.perf_counter() - started) * 1000,
        )

    def _wait(self, seconds: float) -> None:
        """Wait before asking again, visibly (`waiting_until`), until halted."""
        thread = threading.get_ident()
        self.waits[thread] = time.time() + seconds
        try:
            self.halted.wait(seconds)
        finally:
            self.waits.pop(thread, None)

    def _with_usage(self, output: ModelOutput, messages: list[dict]) -> tuple[ModelOutput, bool]:
        """The answer with its tokens; counted here (4 characters a token) when
        the server reported none, so that its calls still cost what they use."""
        if output.prompt_tokens or output.completion_tokens:
            return output, False
        with self.budget.changed:
            self.counted_usage += 1
        prompt = counted_tokens("".join(str(m.get("content", "")) for m in messages))
        return (
            dataclasses.replace(
                output, prompt_tokens=prompt, completion_tokens=counted_tokens(output.text)
            ),
            True,
        )
