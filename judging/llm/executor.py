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

import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Count, F

from corpus.models import QuestionText
from judging.llm.config import JudgeConfig
from judging.models import JudgeItem, JudgingRun
from judging.parsers import PARSER_VERSION
from judging.prompts.templates import TEMPLATE_VERSION
from judging.protocols import protocol_for
from llm.calls import ModelCaller, Stopped
from llm.models import LLMCall
from llm.policy import BreakerOpen
from llm.providers import ProviderSetupError
from runs.lifecycle import Lease, finish, holding_lease

REASK_SEED_STEP = 1_000_003  # a re-ask's seed: far from any seed a researcher picks
RETRY = "retry"  # the outcome of an item sent back to be asked again


def judge_caller(config: JudgeConfig, *, refresh: bool = False, **options) -> ModelCaller:
    """The judge's access to its model (raises ProviderSetupError)."""
    return ModelCaller(
        config,
        LLMCall.Purpose.JUDGE,
        refresh=refresh,
        template_version=TEMPLATE_VERSION,
        parser_version=PARSER_VERSION,
        **options,
    )


def judge_item(
    item: JudgeItem,
    config: JudgeConfig,
    caller: ModelCaller,
    run: JudgingRun,
    texts: dict[int, tuple[str, str]],
) -> dict:
    """Judge one item; returns the counters to add to the run. A stopped run
    (cancelled, budget spent, endpoint unreachable) leaves the item pending."""
    counters = {
        "requests": 0,
        "cache_hits": 0,
        "cost": 0.0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
    }
    question, reference = texts[item.response.question_id]
    protocol = protocol_for(config)
    messages = protocol.item_messages(item, question, reference)
    outcome, detail, call = "", "", None
    # An item a researcher sent back ("retry failed") is asked with seeds it has
    # not used: the ledger would give the same unusable answers again.
    first = item.attempts if item.outcome == RETRY else 0
    for attempt in range(config.reask + 1):
        params = config.sampling(item.seed + (first + attempt) * REASK_SEED_STEP)
        try:
            result = caller.complete(messages, params)
        except (Stopped, BreakerOpen):
            return counters
        call, cached = result.call, result.cached
        counters["cache_hits" if cached else "requests"] += 1
        if not cached:
            counters["cost"] += call.cost
            counters["prompt_tokens"] += call.prompt_tokens
            counters["completion_tokens"] += call.completion_tokens
        if call.status == LLMCall.Status.API_ERROR:
            JudgeItem.objects.filter(pk=item.pk).update(
                outcome="api_error", call=call, attempts=F("attempts") + 1, detail=call.error[:2000]
            )
            return counters  # stays pending: a resumed run asks again
        if call.finish_reason == "length":
            outcome, detail = "truncated", "the answer hit max_tokens before a score"
            continue
        parsed = protocol.parse(call.raw_output)
        if parsed.ok:
            with transaction.atomic():
                protocol.record(run, item, parsed.value, call.raw_output)
                JudgeItem.objects.filter(pk=item.pk).update(
                    status=JudgeItem.Status.DONE,
                    outcome="ok",
                    call=call,
                    detail="",
                    attempts=F("attempts") + attempt + 1,
                )
            return counters
        outcome, detail = parsed.outcome, parsed.detail
    JudgeItem.objects.filter(pk=item.pk).update(
        status=JudgeItem.Status.NEEDS_HUMAN,
        outcome=outcome,
        call=call,
        detail=detail,
        attempts=F("attempts") + config.reask + 1,
    )
    return counters


def item_counts(run: JudgingRun) -> dict[str, int]:
    """done and failed as stored: judged or resolved items; items that need a
    human or whose last call failed (a later success moves them out of both)."""
    counts = dict.fromkeys(("done", "failed"), 0)
    for status, outcome, n in (
        JudgeItem.objects.filter(run=run)
        .values_list("status", "outcome")
        .annotate(n=Count("id"))
        .order_by()
    ):
        if status in (JudgeItem.Status.DONE, JudgeItem.Status.RESOLVED):
            counts["done"] += n
        elif status == JudgeItem.Status.NEEDS_HUMAN or outcome == "api_error":
            counts["failed"] += n
    return counts


def run_llm_judging(run_id: int) -> JudgingRun:
    """Judge every pending item of the run, holding the run's lease; a run
    another live worker holds, or a finished one, is left as it is."""
    with holding_lease(JudgingRun, run_id) as lease:
        if lease is not None:
            _judge_pending(JudgingRun.objects.select_related("evaluator").get(pk=run_id), lease)
    return JudgingRun.objects.get(pk=run_id)


def _judge_pending(run: JudgingRun, lease: Lease) -> None:
    config = JudgeConfig.from_dict(run.evaluator.config)
    try:
        caller = judge_caller(config, refresh=run.refresh)
    except ProviderSetupError as error:
        finish(run, JudgingRun.Status.FAILED, str(error))
        return
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
    protocol = protocol_for(config)
    caller.prefetch(
        (
            protocol.item_messages(item, *texts[item.response.question_id]),
            config.sampling(item.seed),
        )
        for item in items
    )
    budget = float(run.budget) if run.budget is not None else None

    thread_connections: dict[int, object] = {}

    def work(item: JudgeItem) -> dict:
        # Each pool thread keeps its own database connection for the whole run
        # (opening one per item costs more than the item); they are closed below.
        if threading.get_ident() not in thread_connections:
            wrapper = connections[DEFAULT_DB_ALIAS]
            wrapper.inc_thread_sharing()  # so that the main thread may close it
            thread_connections[threading.get_ident()] = wrapper
        if caller.halted.is_set():
            return {}
        return judge_item(item, config, caller, run, texts)

    pending_counters: dict[str, float] = {}
    last_flush = time.monotonic()

    def flush() -> None:
        """Add the counters to the run, then look at cancellation and the budget."""
        nonlocal last_flush
        last_flush = time.monotonic()
        JudgingRun.objects.filter(pk=run.pk).update(
            **{name: F(name) + value for name, value in pending_counters.items()},
            **item_counts(run),
        )
        pending_counters.clear()
        current = JudgingRun.objects.values("status", "cost").get(pk=run.pk)
        if lease.lost.is_set():
            caller.halt("another worker took the run over")
        elif current["status"] == JudgingRun.Status.CANCELLED:
            caller.halt("cancelled")
        elif budget is not None and current["cost"] >= budget and not caller.halted.is_set():
            caller.halt("budget")
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
    pending = JudgeItem.objects.filter(run=run, status=JudgeItem.Status.PENDING).count()
    human = JudgeItem.objects.filter(run=run, status=JudgeItem.Status.NEEDS_HUMAN).count()
    if caller.breaker.is_open:
        problem = (
            f"Stopped: {config.endpoint} could not be reached ({caller.breaker.cause}); "
            f"{pending} items not judged: resume the run when it answers again. "
        )
    elif pending:
        problem = f"{pending} items failed with API errors: resume the run to ask again. "
    else:
        problem = ""
    finish(
        run,
        JudgingRun.Status.DONE if pending == 0 else JudgingRun.Status.FAILED,
        problem + (f"{human} answers need a human." if human else ""),
    )
