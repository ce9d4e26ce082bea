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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Count, F

from corpus.models import QuestionText
from judging.llm.config import JudgeConfig
from judging.models import JudgeItem, JudgingRun, Judgment, PairwiseVerdict
from judging.parsers import PARSER_VERSION
from judging.prompts.templates import TEMPLATE_VERSION
from judging.protocols import JudgeProtocol, protocol_for
from llm.budget import Budget
from llm.calls import ModelCaller, Request, Stopped
from llm.driver import RunWatch, add_usage, drive, usage_and_note, usage_of
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


@dataclass
class ItemResult:
    """What asking about one item gave: written with others in one batch."""

    item: JudgeItem
    status: str = JudgeItem.Status.PENDING  # PENDING: stopped, or an API error
    outcome: str = ""
    detail: str = ""
    call: LLMCall | None = None
    attempts: int = 0  # asks made now (answers from the ledger included)
    value: object = None  # the parsed answer, when DONE
    usage: dict[str, float] = field(default_factory=dict)


def first_request(
    item: JudgeItem,
    config: JudgeConfig,
    caller: ModelCaller,
    protocol: JudgeProtocol,
    texts: dict[int, tuple[str, str]],
) -> Request:
    """The item's first ask (its messages and hash, computed once)."""
    messages = protocol.item_messages(item, *texts[item.response.question_id])
    return caller.request(messages, item_params(config, item, 0))


def judge_item(
    item: JudgeItem,
    config: JudgeConfig,
    caller: ModelCaller,
    protocol: JudgeProtocol,
    first: Request,
) -> ItemResult:
    """Ask about one item (re-asking with new seeds when the answer does not
    parse), writing nothing but the ledger's calls. A stopped run (cancelled,
    budget spent, endpoint unreachable) leaves the item pending."""
    result = ItemResult(item)
    usage = result.usage
    for attempt in range(config.reask + 1):
        request = (
            first
            if attempt == 0
            else caller.request(first.messages, item_params(config, item, attempt))
        )
        try:
            # the ledger's thread writes the call; the run's flush waits for it
            answer = caller.complete(request, write_behind=True)
        except (Stopped, BreakerOpen):
            return result
        call = result.call = answer.call
        result.attempts += 1
        add_usage(usage, usage_of(answer))
        if call.status == LLMCall.Status.API_ERROR:
            result.outcome, result.detail = "api_error", call.error[:2000]
            return result  # stays pending: a resumed run asks again
        if call.finish_reason == "length":
            result.outcome = "truncated"
            result.detail = "the answer hit max_tokens before a score"
            continue
        parsed = protocol.parse(call.raw_output)
        if parsed.ok:
            result.status, result.outcome, result.detail = JudgeItem.Status.DONE, "ok", ""
            result.value = parsed.value
            return result
        result.outcome, result.detail = parsed.outcome, parsed.detail
    result.status = JudgeItem.Status.NEEDS_HUMAN
    return result


def item_params(config: JudgeConfig, item: JudgeItem, attempt: int) -> dict:
    """The sampling parameters of an item's `attempt`-th ask. An item a
    researcher sent back ("retry failed") is asked with seeds it has not used:
    the ledger would give the same unusable answers again."""
    first = item.attempts if item.outcome == RETRY else 0
    return config.sampling(item.seed + (first + attempt) * REASK_SEED_STEP)


class ResultWriter:
    """Writes items' results in batches, in one transaction each: the results
    (judgments or verdicts, once), the items' states, the run's usage and its
    done / failed counted from the stored items. The calls themselves are in
    the ledger already, so a batch lost with a killed worker costs nothing
    to redo."""

    def __init__(self, run: JudgingRun, protocol: JudgeProtocol) -> None:
        self.run = run
        self.protocol = protocol
        self.results: list[ItemResult] = []
        self.usage: dict[str, float] = {}

    def add(self, result: ItemResult) -> None:
        self.results.append(result)
        add_usage(self.usage, result.usage)

    def flush(self) -> None:
        results, self.results = self.results, []
        usage, self.usage = self.usage, {}
        rows: dict[type[Judgment | PairwiseVerdict], list] = {}
        changed = []
        for result in results:
            item = result.item
            if result.attempts == 0:
                continue  # never asked (the run stopped first)
            if result.status == JudgeItem.Status.DONE:
                assert result.call is not None, "a judged item keeps the call that judged it"
                row = self.protocol.result_row(
                    self.run, item, self.protocol.check_answer(result.value), result.call.raw_output
                )
                rows.setdefault(type(row), []).append(row)
            item.status, item.outcome, item.detail = result.status, result.outcome, result.detail
            item.call = result.call
            item.attempts += result.attempts
            changed.append(item)
        with transaction.atomic():
            for model, batch in rows.items():
                # once: a result stored before (a redelivered task) is kept as it is
                model.objects.bulk_create(batch, ignore_conflicts=True)
            if changed:
                update_items(changed)
            JudgingRun.objects.filter(pk=self.run.pk).update(
                **{name: F(name) + value for name, value in usage.items()},
                **item_counts(self.run),
            )


ITEM_UPDATE = """
UPDATE {table} SET status = v.status, outcome = v.outcome, detail = v.detail,
    call_id = v.call_id, attempts = v.attempts
FROM (VALUES {rows}) AS v(id, status, outcome, detail, call_id, attempts)
WHERE {table}.id = v.id
"""


def update_items(items: list[JudgeItem], chunk: int = 500) -> None:
    """Items' new states in one UPDATE per 500 (Django's bulk_update writes a
    CASE per field and row, which takes most of a second for 390 items).
    SQLite (the demo) has no column list on a VALUES alias: bulk_update there."""
    if connection.vendor != "postgresql":
        JudgeItem.objects.bulk_update(
            items, ["status", "outcome", "detail", "call", "attempts"], batch_size=chunk
        )
        return
    table = connection.ops.quote_name(JudgeItem._meta.db_table)
    # The first row's casts name the columns' types (a NULL call_id included).
    first = "(CAST(%s AS bigint), CAST(%s AS varchar), CAST(%s AS varchar), CAST(%s AS text), "
    first += "CAST(%s AS bigint), CAST(%s AS integer))"
    with connection.cursor() as cursor:
        for start in range(0, len(items), chunk):
            batch = items[start : start + chunk]
            rows = ", ".join([first] + ["(%s, %s, %s, %s, %s, %s)"] * (len(batch) - 1))
            params = [
                value
                for item in batch
                for value in (
                    item.pk,
                    item.status,
                    item.outcome,
                    item.detail,
                    item.call_id,
                    item.attempts,
                )
            ]
            cursor.execute(ITEM_UPDATE.format(table=table, rows=rows), params)


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
    budget = Budget(float(run.budget) if run.budget is not None else None, spent=run.cost)
    try:
        caller = judge_caller(config, refresh=run.refresh, budget=budget)
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
    writer = ResultWriter(run, protocol)
    watch_run = RunWatch(run, caller, lease)
    last_flush = time.monotonic()

    def flush() -> None:
        """Write what is done (the calls first: results point at them)."""
        nonlocal last_flush
        last_flush = time.monotonic()
        caller.flush()
        writer.flush()

    def add(result: ItemResult) -> None:
        writer.add(result)
        if time.monotonic() - last_flush > 0.25:  # progress every quarter second
            flush()

    thread_connections: dict[int, BaseDatabaseWrapper] = {}

    def work(item: JudgeItem, request: Request) -> ItemResult:
        # The ledger's database work is on its own thread, unless the run was
        # started inside a transaction: then these threads' connections do it,
        # and are closed below.
        if threading.get_ident() not in thread_connections:
            wrapper = connections[DEFAULT_DB_ALIAS]
            wrapper.inc_thread_sharing()  # so that the main thread may close it
            thread_connections[threading.get_ident()] = wrapper
        if caller.halted.is_set():
            return ItemResult(item)
        return judge_item(item, config, caller, protocol, request)

    try:
        with ThreadPoolExecutor(max_workers=config.max_concurrency) as pool:
            # Items go out a chunk at a time as soon as the ledger was asked about
            # them, so the first requests leave while the rest are prepared.
            # Items whose first answer the ledger holds are judged here at once,
            # with no thread and no query.
            futures = []
            for start in range(0, len(items), config.max_concurrency):
                chunk = [
                    (item, first_request(item, config, caller, protocol, texts))
                    for item in items[start : start + config.max_concurrency]
                ]
                caller.prefetch(request for _, request in chunk)
                for item, request in chunk:
                    if caller.cached(request):
                        add(judge_item(item, config, caller, protocol, request))
                    else:
                        futures.append(pool.submit(work, item, request))
            drive(futures, add, watch_run)
        flush()
    finally:
        caller.close()
        for wrapper in thread_connections.values():
            wrapper.close()
            wrapper.dec_thread_sharing()
    pending = JudgeItem.objects.filter(run=run, status=JudgeItem.Status.PENDING).count()
    human = JudgeItem.objects.filter(run=run, status=JudgeItem.Status.NEEDS_HUMAN).count()
    run.refresh_from_db()
    status = JudgingRun.Status.DONE if pending == 0 else JudgingRun.Status.FAILED
    if caller.breaker.is_open:
        problem = (
            f"Stopped: {config.endpoint} could not be reached ({caller.breaker.cause}); "
            f"{pending} items not judged: resume the run when it answers again. "
        )
    elif caller.halt_reason.startswith("budget") and pending:
        status = JudgingRun.Status.CANCELLED
        problem = (
            f"Stopped: the budget of {budget.limit:g} was reached (spent {run.cost:.4f}; "
            f"{caller.halt_reason.removeprefix('budget: ')}); {pending} items not judged. "
        )
    elif pending:
        problem = f"{pending} items failed with API errors: resume the run to ask again. "
    else:
        problem = ""
    message = problem + (f"{human} answers need a human." if human else "")
    finish(run, status, usage_and_note(message, run))
