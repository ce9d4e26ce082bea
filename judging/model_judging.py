"""An LLM judge over a judging run's items, through the model driver
(`llm.driver`), fast and without paying twice.

Calls go out from a pool of threads (the judge's max_concurrency), under an
optional requests-per-minute limit. 429s wait for Retry-After; 5xx, timeouts
and connection errors back off exponentially with jitter. Every answer goes to
the call ledger first; an identical request is answered from it. A judgment is
written as soon as its answer parses; an answer that does not parse is asked
again with a new seed, and after `reask` tries lands in the "needs a human"
list. A failure is never stored as a score.

The OpenAI Batch API is a mode of the same run (`JudgingRun.use_batch`), not
a path of its own: the run's first asks go out in one uploaded batch
(`llm.batch`: half the price, answers within 24 h), the batch id is kept on
the run so that a restarted worker polls instead of sending again, and once
the batch is done its answers are in the ledger and the ordinary loop below
judges every item from there (answers that do not parse are re-asked at
once, synchronously, with new seeds).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.db.models import Count, F

from core.database import outlasting_outages
from corpus.models import QuestionText
from judging.evaluators import JudgeConfig, ModelJudge, judge_for
from judging.models import JudgeItem, JudgingRun, Judgment, PairwiseVerdict
from judging.parsers import PARSER_VERSION
from judging.prompts.templates import TEMPLATE_VERSION
from judging.token_probability import answer_probability
from llm.batch import WAITING, collect_batch, poll_batch, submit_batch, unanswered
from llm.budget import Budget
from llm.calls import HALT_WORDS, Halt, ModelCaller, Request, Stopped
from llm.driver import CallPool, RunWatch, add_usage, stopped_message, usage_and_note, usage_of
from llm.models import LLMCall
from llm.policy import BreakerOpen
from llm.providers import ProviderSetupError
from runs.lifecycle import Lease, finish, holding_lease
from runs.signals import budget_reached

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
    protocol: ModelJudge,
    texts: dict[int, tuple[str, str, list[str]]],
) -> Request:
    """The item's first ask (its messages and hash, computed once)."""
    messages = protocol.item_messages(item, *texts[item.response.question_id])
    return caller.request(messages, item_params(config, item, 0))


class ReadableWatch:
    """Whether the judge's answers can be read at all, over the run's threads.
    Until one answer of the run has parsed, an unreadable one is not asked
    again (a judge whose format the parser does not read would pay every item
    three times over); after that many unreadable answers with none
    read (the judge's `stop_after_unreadable`, 20 by default: a prompt or a
    parser that does not fit this judge would fail on every item), the
    caller halts and the run keeps the first answer to show."""

    def __init__(self, caller: ModelCaller, stop_after: int) -> None:
        self.caller = caller
        self.stop_after = stop_after
        self.lock = threading.Lock()
        self.read = 0
        self.unreadable = 0
        self.first_answer: str | None = None
        self.first_problem = ""

    def may_ask_again(self) -> bool:
        return self.read > 0

    def record(self, read: bool, answer: str, problem: str) -> None:
        with self.lock:
            if read:
                self.read += 1
                return
            self.unreadable += 1
            if self.first_answer is None:
                self.first_answer, self.first_problem = answer, problem
            if self.read == 0 and self.unreadable == self.stop_after:
                self.caller.halt(Halt.UNREADABLE, f"{self.unreadable} answers")

    def stop_message(self) -> str:
        shown = (self.first_answer or "")[:600]
        return (
            f"Stopped: the first {self.stop_after} answers held no readable score "
            f"({self.first_problem}), so the run stopped before paying for more. The first "
            f"answer was: {shown!r}. Change the judge's prompt or its answer format (its "
            "settings), then resume the run. "
        )


def judge_item(
    item: JudgeItem,
    config: JudgeConfig,
    caller: ModelCaller,
    protocol: ModelJudge,
    first: Request,
    readable: ReadableWatch | None = None,
) -> ItemResult:
    """Ask about one item (re-asking with new seeds when the answer does not
    parse, once the run has read an answer: `readable`), writing nothing but
    the ledger's calls. A stopped run (cancelled, budget spent, endpoint
    unreachable, no answer readable) leaves the item pending."""
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
        else:
            parsed = protocol.parse(call.raw_output)
            if parsed.ok:
                result.status, result.outcome, result.detail = JudgeItem.Status.DONE, "ok", ""
                result.value = parsed.value
                if readable is not None:
                    readable.record(True, "", "")
                return result
            result.outcome, result.detail = parsed.outcome, parsed.detail
        if readable is not None:
            readable.record(False, call.raw_output, result.detail)
            if not readable.may_ask_again():
                break
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

    def __init__(self, run: JudgingRun, protocol: ModelJudge, lease: Lease | None = None) -> None:
        self.run = run
        self.protocol = protocol
        self.lease = lease
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
                row.probability = answer_probability(result.call, self.protocol)
                rows.setdefault(type(row), []).append(row)
            item.status, item.outcome, item.detail = result.status, result.outcome, result.detail
            item.call = result.call
            item.attempts += result.attempts
            changed.append(item)
        # tried again whole while the database cannot be reached
        outlasting_outages(self._store, rows, changed, usage, what=f"Storing {self.run.kind_label}")

    def _store(
        self,
        rows: dict[type[Judgment | PairwiseVerdict], list],
        changed: list[JudgeItem],
        usage: dict[str, float],
    ) -> None:
        with transaction.atomic():
            if self.lease is not None and not self.lease.held():
                # taken over while this worker could not reach the database: the
                # new holder judges these items (the calls are in the ledger)
                return
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
    another live worker holds, or a finished one, is left as it is. A Batch
    API run takes one step (submit, or poll, or collect and judge): while its
    `batch_status` is a waiting one (`batch_waiting`), the caller asks again
    later (between steps nobody holds the lease)."""
    with holding_lease(JudgingRun, run_id) as lease:
        if lease is not None:
            run = JudgingRun.objects.select_related("evaluator").get(pk=run_id)
            if run.use_batch:
                _batch_step(run, lease)
            else:
                _judge_pending(run, lease)
    return JudgingRun.objects.get(pk=run_id)


def batch_waiting(run: JudgingRun) -> bool:
    """Whether a Batch API run waits for its batch (poll it again later)."""
    return bool(run.use_batch and run.batch_id and run.batch_status in WAITING)


def pending_requests(run: JudgingRun, caller: ModelCaller) -> dict[str, Request]:
    """{request hash: request} for the run's pending items (first asks)."""
    config = caller.config
    assert isinstance(config, JudgeConfig)
    items = JudgeItem.objects.filter(run=run, status=JudgeItem.Status.PENDING).select_related(
        "response", "opponent"
    )
    texts = {
        q: (t, r, list(a or []))
        for q, t, r, a in QuestionText.objects.filter(dataset=run.dataset).values_list(
            "question_id", "text", "reference_answer", "alternative_answers"
        )
    }
    judge = judge_for(config)
    requests = (first_request(item, config, caller, judge, texts) for item in items)
    return {r.digest: r for r in requests}


def _batch_step(run: JudgingRun, lease: Lease) -> None:
    config = JudgeConfig.from_dict(run.evaluator.config)
    try:
        caller = judge_caller(config, refresh=run.refresh)
    except ProviderSetupError as error:
        finish(run, JudgingRun.Status.FAILED, str(error), lease)
        return
    try:
        requests = pending_requests(run, caller)
        if not run.batch_id:
            to_send = unanswered(caller, requests)
            if not to_send:
                _judge_pending(run, lease)  # the ledger answers everything
                return
            state = submit_batch(caller, to_send, f"concord-run-{run.pk}")
            JudgingRun.objects.filter(pk=run.pk).update(
                batch_id=state.id, batch_status=state.status, requests=len(to_send)
            )
            return
        state = poll_batch(caller, run.batch_id)
        JudgingRun.objects.filter(pk=run.pk).update(batch_status=state.status)
        if state.waiting:
            return
        if state.status != "completed" or not state.output_file_id:
            finish(
                run,
                JudgingRun.Status.FAILED,
                f"Batch {run.batch_id} ended {state.status}: resume the run to send again.",
                lease,
                batch_id="",
            )
            return
        collect_batch(caller, state, requests)
    finally:
        caller.close()
    JudgingRun.objects.filter(pk=run.pk).update(batch_id="", refresh=False)
    run.refresh = False
    _judge_pending(run, lease)


def _judge_pending(run: JudgingRun, lease: Lease) -> None:
    config = JudgeConfig.from_dict(run.evaluator.config)
    budget = Budget(float(run.budget) if run.budget is not None else None, spent=run.cost)
    try:
        caller = judge_caller(config, refresh=run.refresh, budget=budget)
    except ProviderSetupError as error:
        finish(run, JudgingRun.Status.FAILED, str(error), lease)
        return
    # the items' ids only: each chunk is loaded as it goes out, so that a run of
    # tens of thousands of items holds a window of them, not all
    to_judge = JudgeItem.objects.filter(run=run, status=JudgeItem.Status.PENDING)
    item_ids = list(to_judge.order_by("pk").values_list("pk", flat=True))
    texts = {
        q: (text, reference, list(alternatives or []))
        for q, text, reference, alternatives in QuestionText.objects.filter(
            dataset=run.dataset, question_id__in=to_judge.values("response__question_id")
        ).values_list("question_id", "text", "reference_answer", "alternative_answers")
    }
    protocol = judge_for(config)
    writer = ResultWriter(run, protocol, lease)
    watch_run = RunWatch(run, caller, lease)
    # 0: the watch is off (every unreadable answer re-asked, the run never stopped for it)
    readable = (
        ReadableWatch(caller, config.stop_after_unreadable)
        if config.stop_after_unreadable > 0
        else None
    )
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

    def handed_over(result: ItemResult | None) -> None:
        if result is not None:  # None: skipped after a halt
            add(result)

    with CallPool(caller, watch_run, config.max_concurrency, handed_over) as pool:
        # Items go out a chunk at a time as soon as the ledger was asked about
        # them, so the first requests leave while the rest are prepared. Items
        # whose first answer the ledger holds are judged here at once, with no
        # thread and no query.
        for start in range(0, len(item_ids), config.max_concurrency):
            ids = item_ids[start : start + config.max_concurrency]
            loaded = outlasting_outages(
                JudgeItem.objects.select_related("response", "opponent").in_bulk,
                ids,
                what=f"Loading the items of {run.kind_label}",
            )
            chunk = [
                (loaded[pk], first_request(loaded[pk], config, caller, protocol, texts))
                for pk in ids
                if pk in loaded
            ]
            caller.prefetch(request for _, request in chunk)
            for item, request in chunk:
                if caller.cached(request):
                    add(judge_item(item, config, caller, protocol, request, readable))
                else:
                    pool.submit(judge_item, item, config, caller, protocol, request, readable)
        pool.drive()
        flush()
    pending, human = outlasting_outages(
        lambda: (
            JudgeItem.objects.filter(run=run, status=JudgeItem.Status.PENDING).count(),
            JudgeItem.objects.filter(run=run, status=JudgeItem.Status.NEEDS_HUMAN).count(),
        ),
        what=f"Counting the items of {run.kind_label}",
    )
    outlasting_outages(run.refresh_from_db, what=f"Reading {run.kind_label}")
    status = JudgingRun.Status.DONE if pending == 0 else JudgingRun.Status.FAILED
    over_budget = False
    if caller.breaker.is_open:
        problem = (
            f"{stopped_message(caller)}; "
            f"{pending} items not judged: resume the run when it answers again. "
        )
    elif caller.halt_kind is Halt.BUDGET and pending:
        status = JudgingRun.Status.CANCELLED
        over_budget = True
        problem = (
            f"Stopped: the budget of {budget.limit:g} was reached (spent {run.cost:.4f}; "
            f"{caller.halt_reason.removeprefix(HALT_WORDS[Halt.BUDGET] + ': ')}); "
            f"{pending} items not judged. "
        )
    elif caller.halt_kind is Halt.UNREADABLE and readable is not None:
        problem = readable.stop_message() + f"{pending} items not judged. "
    elif pending:
        problem = f"{pending} items failed with API errors: resume the run to ask again. "
    else:
        problem = ""
    message = problem + (f"{human} answers need a human." if human else "")

    def end() -> None:
        with transaction.atomic():
            ended = finish(run, status, usage_and_note(message, run), lease)
            if ended and over_budget and budget.limit is not None:
                budget_reached.send(
                    sender=JudgingRun, pk=run.pk, limit=budget.limit, spent=run.cost, currency="USD"
                )

    outlasting_outages(end, what=f"Ending {run.kind_label}")
