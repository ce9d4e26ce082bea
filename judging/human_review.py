"""The "needs a human" list: answers no parser could read, scored by a
researcher, and re-parsing stored answers with a newer parser (no calls)."""

from __future__ import annotations

from django.db import transaction

from judging.llm.config import JudgeConfig
from judging.llm.executor import parse_answer, record_result
from judging.models import JudgeItem, JudgingRun


class ReviewError(ValueError):
    pass


@transaction.atomic
def resolve_item(item: JudgeItem, raw_score: int, user) -> None:
    """A researcher reads the raw answer and enters the score (or, for a
    pairwise judge, the verdict: 0 first, 1 second, 2 tie) it gives."""
    item = (
        # lock the item's row only: PostgreSQL cannot lock the nullable call join
        JudgeItem.objects.select_for_update(of=("self",))
        .select_related("run__evaluator", "call")
        .get(pk=item.pk)
    )
    if item.status != JudgeItem.Status.NEEDS_HUMAN:
        raise ReviewError(f"Item {item.pk} does not need a human (it is {item.status}).")
    config = JudgeConfig.from_dict(item.run.evaluator.config)
    if not isinstance(raw_score, int) or not config.low <= raw_score <= config.high:
        raise ReviewError(f"Enter a whole number from {config.low} to {config.high}.")
    answer = item.call.raw_output if item.call else ""
    record_result(
        item.run, config, item, raw_score, f"Scored by {user} from the judge's answer: {answer}"
    )
    item.status, item.outcome = JudgeItem.Status.RESOLVED, "ok"
    item.detail = f"scored {raw_score} by {user}"
    item.save(update_fields=["status", "outcome", "detail"])


def reparse_run(run: JudgingRun) -> int:
    """Parse the stored answers of the items that need a human again (after a
    parser fix): those that now parse become judgments (or verdicts). No call
    is made."""
    config = JudgeConfig.from_dict(run.evaluator.config)
    fixed = 0
    for item in JudgeItem.objects.filter(
        run=run, status=JudgeItem.Status.NEEDS_HUMAN, call__isnull=False
    ).select_related("call"):
        if item.call.finish_reason == "length":
            continue
        parsed = parse_answer(config, item.call.raw_output)
        if not parsed.ok:
            continue
        with transaction.atomic():
            record_result(run, config, item, parsed.score, item.call.raw_output)
            JudgeItem.objects.filter(pk=item.pk).update(
                status=JudgeItem.Status.DONE, outcome="ok", detail="re-parsed"
            )
        fixed += 1
    return fixed
