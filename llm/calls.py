"""The one way Concord calls a model: `ModelCaller.complete`.

A request is answered from the ledger when an identical one was answered
before (unless the run refreshes, then once per run); otherwise it waits for
the run's rate limits and the endpoint's gate, goes to the provider under the
retry policy, and is written to the ledger, answered or failed. Identical
requests in flight at once make one call. The circuit breaker stops the run
when the endpoint cannot be reached.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from llm.config import ModelConfig
from llm.gate import RateLimiter, gate_for
from llm.ledger import Ledger, estimated_tokens, request_hash
from llm.models import LLMCall
from llm.policy import BreakerOpen, CircuitBreaker, RetryPolicy
from llm.providers import ChatModel, chat_model_for


@dataclass(frozen=True)
class CallResult:
    call: LLMCall
    cached: bool  # answered from the ledger: no request, no cost


class Stopped(Exception):
    """The run asked its caller to stop (cancelled, budget spent, breaker open)."""


class RequestLocks:
    """One lock per request hash, so that identical requests in one run (the
    same prompt for two responses with the same text) make one call, not two."""

    def __init__(self) -> None:
        self.locks: dict[str, threading.Lock] = {}
        self.guard = threading.Lock()

    def __call__(self, digest: str) -> threading.Lock:
        with self.guard:
            return self.locks.setdefault(digest, threading.Lock())


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
        self.locks = RequestLocks()
        self.refreshed: set[str] = set()
        self.halted = threading.Event()
        self.halt_reason = ""

    # --- the run's controls --------------------------------------------------------------

    def halt(self, reason: str) -> None:
        """Stop: calls not yet sent raise Stopped; waits between retries end."""
        if not self.halted.is_set():
            self.halt_reason = reason
            self.halted.set()

    @property
    def stop_reason(self) -> str:
        return self.breaker.cause or self.halt_reason

    def digest(self, messages: list[dict], params: dict) -> str:
        return request_hash(self.endpoint, self.model_name, messages, params)

    def prefetch(self, requests) -> None:
        """Look up the ledger's answers to many (messages, params) at once."""
        if not self.refresh:
            self.ledger.prefetch(self.digest(m, p) for m, p in requests)

    def cached(self, messages: list[dict], params: dict) -> LLMCall | None:
        """The ledger's answer without calling (None when the run refreshes)."""
        if self.refresh:
            return None
        return self.ledger.answer(self.digest(messages, params))

    # --- calling -----------------------------------------------------------------------

    def complete(self, messages: list[dict], params: dict) -> CallResult:
        digest = self.digest(messages, params)
        with self.locks(digest):
            refresh = self.refresh and digest not in self.refreshed
            if not refresh:
                answer = self.ledger.answer(digest)
                if answer is not None:
                    return CallResult(answer, True)
            result = self._call(digest, messages, params)
            if refresh:
                self.refreshed.add(digest)
            return result

    def _check(self) -> None:
        if self.halted.is_set():
            raise Stopped(self.halt_reason)
        self.breaker.check()

    def _call(self, digest: str, messages: list[dict], params: dict) -> CallResult:
        error_text = ""
        started = time.perf_counter()
        for attempt in range(self.policy.max_retries + 1):
            self._check()
            started = time.perf_counter()
            try:
                with self.limiter.request(estimated_tokens(messages, params)):
                    self._check()
                    started = time.perf_counter()
                    output = self.model.generate(messages, params)
            except (BreakerOpen, Stopped):
                raise
            except Exception as error:
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
                self.halted.wait(self.policy.wait_seconds(failure, attempt))
                continue
            self.breaker.record_success()
            cost = (
                self.price_factor
                * (
                    output.prompt_tokens * self.config.price_input_per_million
                    + output.completion_tokens * self.config.price_output_per_million
                )
                / 1e6
            )
            call = self.ledger.store(
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
            )
            return CallResult(call, False)
        call = self.ledger.store(
            digest,
            messages,
            params,
            status=LLMCall.Status.API_ERROR,
            error=error_text,
            latency_ms=(time.perf_counter() - started) * 1000,
        )
        return CallResult(call, False)
