"""The "needs a human" list: answers no parser could read, resolved by a
researcher, and re-parsing stored answers with a newer parser (no calls).

A researcher enters what the judge's answer says, in the judge's protocol:
a score on the judge's own scale (a Czech judge's 0 included), or for a
pairwise judge a Verdict: A (the answer shown first), B (shown second) or a
tie. The protocol checks it and records it as the judge's own answer would
have been recorded.

Each change is a check_/do_ pair, as annotator.actions describes: check_
takes the item's row lock (judging.locks), validates and calls do_, which
writes and must only run with that lock held.
"""

from __future__ import annotations

from django.db import transaction

from core.errors import Conflict, ErrorCode, Invalid
from judging.evaluators import AnswerError, ModelJudge, judge_for
from judging.evaluators.config import JudgeConfig
from judging.locks import lock_judge_item
from judging.models import JudgeItem, JudgingRun
from judging.parsers import Verdict
from judging.token_probability import answer_probability


class ReviewError(Invalid, ValueError):
    """A resolution that cannot be stored; the message says why."""

    code = ErrorCode.REVIEW_INVALID


class ReviewConflict(ReviewError, Conflict):
    """The item's state forbids it (it does not need a human)."""

    code = ErrorCode.REVIEW_CONFLICT


def item_protocol(item: JudgeItem) -> ModelJudge:
    """The protocol of the judge that ran the item."""
    return judge_for(JudgeConfig.from_dict(item.run.evaluator.config))


@transaction.atomic
def check_resolve_item(item: JudgeItem, answer: int | Verdict, user) -> None:
    """A researcher reads the raw answer and enters what it gives: a score on
    the judge's scale, or for a pairwise judge a Verdict. Takes the item's
    row lock, checks that it still needs a human and that the answer fits the
    judge's protocol, then records it (do_resolve_item)."""
    item = lock_judge_item(item.pk)
    if item.status != JudgeItem.Status.NEEDS_HUMAN:
        raise ReviewConflict(f"Item {item.pk} does not need a human (it is {item.status}).")
    protocol = item_protocol(item)
    try:
        checked = protocol.check_answer(answer)
    except AnswerError as error:
        raise ReviewError(str(error)) from None
    do_resolve_item(item, protocol, checked, user)


def do_resolve_item(item: JudgeItem, protocol: ModelJudge, answer: int | Verdict, user) -> None:
    """Record a checked answer as the judge's own answer would have been
    recorded. Only with the item's row lock held (check_resolve_item)."""
    raw = item.call.raw_output if item.call else ""
    protocol.record(item.run, item, answer, f"Scored by {user} from the judge's answer: {raw}")
    item.status, item.outcome = JudgeItem.Status.RESOLVED, "ok"
    item.detail = f"{protocol.describe(answer)} entered by {user}"
    item.save(update_fields=["status", "outcome", "detail"])


def check_reparse_run(run: JudgingRun) -> int:
    """Parse the stored answers of the items that need a human again (after a
    parser fix): those that now parse become judgments (or verdicts). No call
    is made. Each item is locked and checked again in its own transaction, so
    that an item a researcher resolves meanwhile is never recorded twice."""
    protocol = judge_for(JudgeConfig.from_dict(run.evaluator.config))
    waiting = JudgeItem.objects.filter(
        run=run, status=JudgeItem.Status.NEEDS_HUMAN, call__isnull=False
    ).values_list("pk", flat=True)
    fixed = 0
    for pk in list(waiting):
        with transaction.atomic():
            item = lock_judge_item(pk)
            call = item.call
            if (
                item.status != JudgeItem.Status.NEEDS_HUMAN
                or call is None
                or call.finish_reason == "length"
            ):
                continue
            parsed = protocol.parse(call.raw_output)
            if not parsed.ok or parsed.value is None:
                continue
            do_reparse_item(item, protocol, parsed.value)
        fixed += 1
    return fixed


def do_reparse_item(item: JudgeItem, protocol: ModelJudge, value: int | Verdict) -> None:
    """Record an answer that now parses. Only with the item's row lock held
    (check_reparse_run)."""
    assert item.call is not None  # check_reparse_run takes only items with a call
    protocol.record(
        item.run, item, value, item.call.raw_output, answer_probability(item.call, protocol)
    )
    item.status, item.outcome, item.detail = JudgeItem.Status.DONE, "ok", "re-parsed"
    item.save(update_fields=["status", "outcome", "detail"])
