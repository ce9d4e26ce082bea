"""The "needs a human" list: answers no parser could read, resolved by a
researcher, and re-parsing stored answers with a newer parser (no calls).

A researcher enters what the judge's answer says, in the judge's protocol:
a score on the judge's own scale (a Czech judge's 0 included), or for a
pairwise judge a Verdict: A (the answer shown first), B (shown second) or a
tie. The protocol checks it and records it as the judge's own answer would
have been recorded.
"""

from __future__ import annotations

from django.db import transaction

from core.errors import Conflict, ErrorCode, Invalid
from judging.evaluators import AnswerError, ModelJudge, judge_for
from judging.evaluators.config import JudgeConfig
from judging.locks import lock_judge_item
from judging.models import JudgeItem, JudgingRun
from judging.parsers import Verdict


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
def resolve_item(item: JudgeItem, answer: int | Verdict, user) -> None:
    """A researcher reads the raw answer and enters what it gives: a score on
    the judge's scale, or for a pairwise judge a Verdict."""
    item = lock_judge_item(item.pk)
    if item.status != JudgeItem.Status.NEEDS_HUMAN:
        raise ReviewConflict(f"Item {item.pk} does not need a human (it is {item.status}).")
    protocol = item_protocol(item)
    try:
        answer = protocol.check_answer(answer)
    except AnswerError as error:
        raise ReviewError(str(error)) from None
    raw = item.call.raw_output if item.call else ""
    protocol.record(item.run, item, answer, f"Scored by {user} from the judge's answer: {raw}")
    item.status, item.outcome = JudgeItem.Status.RESOLVED, "ok"
    item.detail = f"{protocol.describe(answer)} entered by {user}"
    item.save(update_fields=["status", "outcome", "detail"])


def reparse_run(run: JudgingRun) -> int:
    """Parse the stored answers of the items that need a human again (after a
    parser fix): those that now parse become judgments (or verdicts). No call
    is made."""
    protocol = judge_for(JudgeConfig.from_dict(run.evaluator.config))
    fixed = 0
    for item in JudgeItem.objects.filter(
        run=run, status=JudgeItem.Status.NEEDS_HUMAN, call__isnull=False
    ).select_related("call"):
        call = item.call
        if call is None or call.finish_reason == "length":
            continue
        parsed = protocol.parse(call.raw_output)
        if not parsed.ok:
            continue
        with transaction.atomic():
            protocol.record(run, item, parsed.value, call.raw_output)
            JudgeItem.objects.filter(pk=item.pk).update(
                status=JudgeItem.Status.DONE, outcome="ok", detail="re-parsed"
            )
        fixed += 1
    return fixed
