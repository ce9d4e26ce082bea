"""Running an LLM judge over a run's items, fast and without paying twice.

Calls go out from a pool of threads (the judge's max_concurrency), under an
optional requests-per-minute limit. 429s wait for Retry-After; 5xx, timeouts
and connection errors back off exponentially with jitter. Every answer goes to
the call ledger first; an identical request is answered from it. A judgment is
written as soon as its answer parses; an answer that does not parse is asked
again with a new seed, and after `reask` tries lands in the "needs a human"
list. A failure is never stored as a score.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager

import openai
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connections, transaction
from django.db.models import F, Max
from django.utils import timezone

from corpus.models import QuestionText
from generation.text import storable
from judging.llm.config import JudgeConfig
from judging.llm.limits import gate_for
from judging.models import JudgeItem, JudgingRun, Judgment, LLMCall, PairwiseVerdict
from judging.parsers import PARSER_VERSION, parse_boxed, parse_prometheus, parse_verdict
from judging.prompts import (
    pairwise_judge_messages,
    prometheus_judge_prompt,
    render_template,
    rubric_judge_messages,
)
from judging.prompts.templates import TEMPLATE_VERSION

REASK_SEED_STEP = 1_000_003  # a re-ask's seed: far from any seed a researcher picks


class RateLimiter:
    """At most `per_minute` request starts and `tokens_per_minute` tokens (the
    prompt, estimated at 4 characters a token, plus max_tokens) in any sliding
    minute; None: no limit."""

    def __init__(
        self, per_minute: int | None, tokens_per_minute: int | None = None, gate=None
    ) -> None:
        self.per_minute = per_minute
        self.tokens_per_minute = tokens_per_minute
        self.gate = gate  # judging.llm.limits.EndpointGate: shared by runs and workers
        self.starts: list[tuple[float, int]] = []
        self.lock = threading.Lock()

    def acquire(self, tokens: int = 0) -> None:
        if not self.per_minute and not self.tokens_per_minute:
            return
        if self.tokens_per_minute:
            tokens = min(tokens, self.tokens_per_minute)  # a huge request still goes, alone
        while True:
            with self.lock:
                now = time.monotonic()
                self.starts = [(t, n) for t, n in self.starts if now - t < 60]
                requests_ok = not self.per_minute or len(self.starts) < self.per_minute
                used = sum(n for _, n in self.starts)
                tokens_ok = not self.tokens_per_minute or used + tokens <= self.tokens_per_minute
                if requests_ok and tokens_ok:
                    self.starts.append((now, tokens))
                    return
                wait = 60 - (now - self.starts[0][0])
            time.sleep(max(wait, 0.01))

    @contextmanager
    def request(self, tokens: int = 0):
        """Wait for this run's rate limits, then for a slot on the endpoint."""
        self.acquire(tokens)
        if self.gate is None:
            yield
            return
        with self.gate.slot():
            yield


def estimated_tokens(messages: list[dict], params: dict) -> int:
    return sum(len(m.get("content", "")) for m in messages) // 4 + int(params.get("max_tokens", 0))


def request_hash(base_url: str, model: str, messages: list[dict], params: dict) -> str:
    canonical = json.dumps(
        {"base_url": base_url.rstrip("/"), "model": model, "messages": messages, "params": params},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def judge_messages(config: JudgeConfig, question: str, response: str, reference: str) -> list[dict]:
    if config.protocol == "rubric":
        return rubric_judge_messages(question, response, reference, config.language)
    if config.protocol == "prometheus":
        return [
            {
                "role": "user",
                "content": prometheus_judge_prompt(question, response, reference, config.language),
            }
        ]
    return [
        {
            "role": "user",
            "content": render_template(
                config.template,
                {"question": question, "response": response, "reference": reference, "rubric": ""},
            ),
        }
    ]


def parse_answer(config: JudgeConfig, text: str):
    if config.protocol == "pairwise":
        return parse_verdict(text)
    if config.protocol == "prometheus":
        return parse_prometheus(text, config.low, config.high)
    return parse_boxed(text, config.low, config.high)


def common_score(config: JudgeConfig, value: int) -> float:
    """Onto the common 1-10 scale: Prometheus x2 as in the paper; a Czech 0
    ("not in Czech") becomes the lowest score, 1, and stays 0 in raw_score."""
    scaled = value * 2 if config.protocol == "prometheus" else value
    return float(max(1, scaled))


def item_messages(
    config: JudgeConfig, item: JudgeItem, question: str, reference: str
) -> list[dict]:
    """The prompt of a run's item. Pairwise: order 0 shows the judged response
    first, order 1 the baseline's."""
    if config.protocol != "pairwise":
        return judge_messages(config, question, item.response.text, reference)
    first, second = item.response.text, item.opponent.text
    if item.order == 1:
        first, second = second, first
    return pairwise_judge_messages(question, reference, first, second)


def record_result(
    run: JudgingRun, config: JudgeConfig, item: JudgeItem, score: int, feedback: str
) -> None:
    """A parsed (or researcher-entered) score as the item's judgment, or for a
    pairwise judge its verdict; once: a second write (a redelivered task, a
    re-parse) finds it stored and changes nothing."""
    try:
        with transaction.atomic():
            if config.protocol == "pairwise":
                PairwiseVerdict.objects.create(
                    evaluator_id=run.evaluator_id,
                    response_id=item.response_id,
                    opponent_id=item.opponent_id,
                    seed=item.seed,
                    order=item.order,
                    winner=("first", "second", "tie")[score],
                    feedback=feedback,
                )
            else:
                Judgment.objects.create(
                    evaluator_id=run.evaluator_id,
                    response_id=item.response_id,
                    rater="",
                    seed=item.seed,
                    order=item.order,
                    score=common_score(config, score),
                    raw_score=score,
                    raw_scale_min=config.low,
                    raw_scale_max=config.high,
                    feedback=feedback,
                )
    except IntegrityError:
        pass


def _retry_after(error: openai.APIStatusError) -> float | None:
    try:
        value = error.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError):
        return None


class RequestLocks:
    """One lock per request hash, so that identical requests in one run (the
    same prompt for two responses with the same text) make one call, not two."""

    def __init__(self) -> None:
        self.locks: dict[str, threading.Lock] = {}
        self.guard = threading.Lock()

    def __call__(self, digest: str) -> threading.Lock:
        with self.guard:
            return self.locks.setdefault(digest, threading.Lock())


def call_llm(
    client: openai.OpenAI,
    config: JudgeConfig,
    messages: list[dict],
    params: dict,
    *,
    refresh: bool,
    limiter: RateLimiter,
    locks: RequestLocks | None = None,
    refreshed: set[str] | None = None,
) -> tuple[LLMCall, bool]:
    """The ledger's answer to this request, calling the server only when needed.
    Returns (call, answered_from_ledger). With `refresh`, each distinct request
    is called once per run (`refreshed` remembers which)."""
    digest = request_hash(config.endpoint, config.model, messages, params)
    with (locks or RequestLocks())(digest):
        if refresh and refreshed is not None and digest in refreshed:
            refresh = False  # already called again in this run
        call, cached = _call_llm(client, config, messages, params, digest, refresh, limiter)
        if refresh and refreshed is not None:
            refreshed.add(digest)
        return call, cached


def _call_llm(
    client: openai.OpenAI,
    config: JudgeConfig,
    messages: list[dict],
    params: dict,
    digest: str,
    refresh: bool,
    limiter: RateLimiter,
) -> tuple[LLMCall, bool]:
    latest = list(LLMCall.objects.filter(request_hash=digest).order_by("-attempt")[:10])
    if not refresh:
        cached = next((c for c in latest if c.status == LLMCall.Status.OK), None)
        if cached is not None:
            return cached, True
    next_attempt = latest[0].attempt + 1 if latest else 0
    error_text = ""
    started = time.perf_counter()
    for attempt in range(config.max_retries + 1):
        started = time.perf_counter()
        try:
            with limiter.request(estimated_tokens(messages, params)):
                started = time.perf_counter()
                answer = client.chat.completions.create(
                    model=config.model, messages=messages, **params
                )
        except openai.RateLimitError as error:
            error_text = f"429: {error}"
            wait = _retry_after(error)
            time.sleep(wait if wait is not None else _backoff(attempt))
            continue
        except (
            openai.APITimeoutError,
            openai.APIConnectionError,
            openai.InternalServerError,
        ) as error:
            error_text = f"{type(error).__name__}: {error}"
            time.sleep(_backoff(attempt))
            continue
        except openai.APIStatusError as error:  # 4xx other than 429: asking again will not help
            error_text = f"{error.status_code}: {error}"
            break
        choice = answer.choices[0] if answer.choices else None
        usage = answer.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        return _store(
            digest,
            next_attempt,
            config,
            messages,
            params,
            status=LLMCall.Status.OK,
            raw_output=(choice.message.content or "") if choice else "",
            finish_reason=(choice.finish_reason or "") if choice else "",
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost=(
                prompt_tokens * config.price_input_per_million
                + completion_tokens * config.price_output_per_million
            )
            / 1e6,
            latency_ms=(time.perf_counter() - started) * 1000,
            system_fingerprint=getattr(answer, "system_fingerprint", None) or "",
        ), False
    return _store(
        digest,
        next_attempt,
        config,
        messages,
        params,
        status=LLMCall.Status.API_ERROR,
        error=error_text,
        latency_ms=(time.perf_counter() - started) * 1000,
    ), False


def _backoff(attempt: int) -> float:
    return min(30.0, 0.25 * 2**attempt) + random.uniform(0, 0.25)


def _store(
    digest: str, attempt: int, config: JudgeConfig, messages: list[dict], params: dict, **fields
) -> LLMCall:
    """Write the call under the next attempt number (a refresh or a retry after an
    API error keeps the earlier rows)."""
    for _ in range(5):
        try:
            with transaction.atomic():
                if "raw_output" in fields:
                    fields["raw_output"] = storable(fields["raw_output"])
                return LLMCall.objects.create(
                    request_hash=digest,
                    attempt=attempt,
                    base_url=config.endpoint,
                    model=config.model,
                    params=params,
                    messages=messages,
                    template_version=TEMPLATE_VERSION,
                    parser_version=PARSER_VERSION,
                    **fields,
                )
        except IntegrityError:  # another process stored the same request at once
            last = LLMCall.objects.filter(request_hash=digest).aggregate(m=Max("attempt"))["m"]
            attempt = (last or 0) + 1
    raise RuntimeError("Could not store an LLM call after 5 tries.")


def judge_item(
    item: JudgeItem,
    config: JudgeConfig,
    client: openai.OpenAI,
    run: JudgingRun,
    limiter: RateLimiter,
    texts: dict[int, tuple[str, str]],
    locks: RequestLocks | None = None,
    refreshed: set[str] | None = None,
) -> dict:
    """Judge one item; returns the counters to add to the run."""
    counters = {
        "done": 0,
        "failed": 0,
        "requests": 0,
        "cache_hits": 0,
        "cost": 0.0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
    }
    question, reference = texts[item.response.question_id]
    messages = item_messages(config, item, question, reference)
    outcome, detail, call = "", "", None
    for attempt in range(config.reask + 1):
        params = config.sampling(item.seed + attempt * REASK_SEED_STEP)
        call, cached = call_llm(
            client,
            config,
            messages,
            params,
            refresh=run.refresh,
            limiter=limiter,
            locks=locks,
            refreshed=refreshed,
        )
        counters["cache_hits" if cached else "requests"] += 1
        if not cached:
            counters["cost"] += call.cost
            counters["prompt_tokens"] += call.prompt_tokens
            counters["completion_tokens"] += call.completion_tokens
        if call.status == LLMCall.Status.API_ERROR:
            JudgeItem.objects.filter(pk=item.pk).update(
                outcome="api_error", call=call, attempts=F("attempts") + 1, detail=call.error[:2000]
            )
            counters["failed"] += 1
            return counters  # stays pending: a resumed run asks again
        if call.finish_reason == "length":
            outcome, detail = "truncated", "the answer hit max_tokens before a score"
            continue
        parsed = parse_answer(config, call.raw_output)
        if parsed.ok:
            with transaction.atomic():
                record_result(run, config, item, parsed.score, call.raw_output)
                JudgeItem.objects.filter(pk=item.pk).update(
                    status=JudgeItem.Status.DONE,
                    outcome="ok",
                    call=call,
                    detail="",
                    attempts=F("attempts") + attempt + 1,
                )
            counters["done"] += 1
            return counters
        outcome, detail = parsed.outcome, parsed.detail
    JudgeItem.objects.filter(pk=item.pk).update(
        status=JudgeItem.Status.NEEDS_HUMAN,
        outcome=outcome,
        call=call,
        detail=detail,
        attempts=F("attempts") + config.reask + 1,
    )
    counters["failed"] += 1
    return counters


def make_client(config: JudgeConfig) -> openai.OpenAI:
    if config.server == "hf":
        from generation.backends.hf import HFChatClient, HFModelSpec

        return HFChatClient(
            HFModelSpec(config.model_path, config.dtype, config.device, config.attn_implementation)
        )
    key = os.environ.get(config.api_key_env, "")
    if not key and "api.openai.com" in config.base_url:
        raise RuntimeError(f"Set {config.api_key_env} to call {config.base_url}.")
    # Local servers (vLLM, Ollama, ...) accept any key; the openai client needs one.
    return openai.OpenAI(
        base_url=config.base_url,
        api_key=key or "not-needed",
        max_retries=0,
        timeout=config.timeout_s,
    )


def run_llm_judging(run_id: int) -> JudgingRun:
    """Judge every pending item of the run; safe to run again (resume)."""
    run = JudgingRun.objects.select_related("evaluator").get(pk=run_id)
    if run.status in (JudgingRun.Status.DONE, JudgingRun.Status.CANCELLED):
        return run
    config = JudgeConfig.from_dict(run.evaluator.config)
    try:
        client = make_client(config)
    except RuntimeError as error:
        JudgingRun.objects.filter(pk=run.pk).update(
            status=JudgingRun.Status.FAILED, message=str(error)
        )
        return JudgingRun.objects.get(pk=run.pk)
    JudgingRun.objects.filter(pk=run.pk).update(
        status=JudgingRun.Status.RUNNING, started_at=run.started_at or timezone.now()
    )
    items = list(
        JudgeItem.objects.filter(run=run, status=JudgeItem.Status.PENDING).select_related(
            "response", "opponent"
        )
    )
    texts = {
        q: (text, reference)
        for q, text, reference in QuestionText.objects.filter(
            dataset=run.dataset, question_id__in={i.response.question_id for i in items}
        ).values_list("question_id", "text", "reference_answer")
    }
    limiter = RateLimiter(
        config.requests_per_minute,
        config.tokens_per_minute,
        gate_for(f"{config.endpoint} {config.model}", config.endpoint_max_in_flight),
    )
    locks, refreshed = RequestLocks(), set()
    stop = threading.Event()
    budget = float(run.budget) if run.budget is not None else None

    thread_connections: dict[int, object] = {}

    def work(item: JudgeItem) -> dict:
        # Each pool thread keeps its own database connection for the whole run
        # (opening one per item costs more than the item); they are closed below.
        if threading.get_ident() not in thread_connections:
            wrapper = connections[DEFAULT_DB_ALIAS]
            wrapper.inc_thread_sharing()  # so that the main thread may close it
            thread_connections[threading.get_ident()] = wrapper
        if stop.is_set():
            return {}
        return judge_item(item, config, client, run, limiter, texts, locks, refreshed)

    pending_counters: dict[str, float] = {}
    last_flush = time.monotonic()

    def flush() -> None:
        """Add the counters to the run, then look at cancellation and the budget."""
        nonlocal last_flush
        last_flush = time.monotonic()
        if pending_counters:
            JudgingRun.objects.filter(pk=run.pk).update(
                **{name: F(name) + value for name, value in pending_counters.items()}
            )
            pending_counters.clear()
        current = JudgingRun.objects.values("status", "cost").get(pk=run.pk)
        if current["status"] == JudgingRun.Status.CANCELLED:
            stop.set()
        elif budget is not None and current["cost"] >= budget and not stop.is_set():
            stop.set()
            JudgingRun.objects.filter(pk=run.pk).update(
                status=JudgingRun.Status.CANCELLED,
                message=f"Stopped: the budget of {budget:g} was reached.",
            )

    with ThreadPoolExecutor(max_workers=config.max_concurrency) as pool:
        futures = [pool.submit(work, item) for item in items]
        for future in as_completed(futures):
            for name, value in future.result().items():
                pending_counters[name] = pending_counters.get(name, 0) + value
            # Progress goes out every quarter second; with a budget, after every
            # answer, so that the run stops as soon as the budget is spent.
            if budget is not None or time.monotonic() - last_flush > 0.25:
                flush()
        flush()
    for wrapper in thread_connections.values():
        wrapper.close()
        wrapper.dec_thread_sharing()
    run = JudgingRun.objects.get(pk=run.pk)
    if run.status == JudgingRun.Status.RUNNING:
        pending = JudgeItem.objects.filter(run=run, status=JudgeItem.Status.PENDING).count()
        human = JudgeItem.objects.filter(run=run, status=JudgeItem.Status.NEEDS_HUMAN).count()
        run.status = JudgingRun.Status.DONE if pending == 0 else JudgingRun.Status.FAILED
        run.message = (
            f"{pending} items failed with API errors: resume the run to ask again. "
            if pending
            else ""
        ) + (f"{human} answers need a human." if human else "")
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "message", "finished_at"])
    return run
