"""Judging through the OpenAI Batch API: half the price, answers within 24 h.

A batch run sends, in one uploaded file (`llm.batch`), every request the
ledger cannot already answer; the batch id is stored on the run, so a
restarted worker resumes polling instead of sending again. When the batch
completes, its answers go into the ledger and the ordinary executor judges
every item from there (answers that do not parse are re-asked at once,
synchronously, with new seeds).
"""

from __future__ import annotations

from corpus.models import QuestionText
from judging.llm.config import JudgeConfig
from judging.llm.executor import _judge_pending, first_request, judge_caller
from judging.models import JudgeItem, JudgingRun
from judging.protocols import protocol_for
from llm.batch import collect_batch, poll_batch, submit_batch, unanswered
from llm.calls import ModelCaller, Request
from runs.lifecycle import finish, holding_lease


def pending_requests(run: JudgingRun, caller: ModelCaller) -> dict[str, Request]:
    """{request hash: request} for the run's pending items (first asks)."""
    config = caller.config
    assert isinstance(config, JudgeConfig)
    items = JudgeItem.objects.filter(run=run, status=JudgeItem.Status.PENDING).select_related(
        "response", "opponent"
    )
    texts = {
        q: (t, r)
        for q, t, r in QuestionText.objects.filter(dataset=run.dataset).values_list(
            "question_id", "text", "reference_answer"
        )
    }
    protocol = protocol_for(config)
    requests = (first_request(item, config, caller, protocol, texts) for item in items)
    return {r.digest: r for r in requests}


def run_llm_batch(run_id: int) -> JudgingRun:
    """One step of a batch run, holding the run's lease: submit, or poll, or
    collect and judge. The caller queues the next step while the run's
    batch_status is a waiting one (between steps nobody holds the lease)."""
    with holding_lease(JudgingRun, run_id) as lease:
        if lease is not None:
            _batch_step(JudgingRun.objects.select_related("evaluator").get(pk=run_id), lease)
    return JudgingRun.objects.get(pk=run_id)


def _batch_step(run: JudgingRun, lease) -> None:
    config = JudgeConfig.from_dict(run.evaluator.config)
    caller = judge_caller(config, refresh=run.refresh)
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
                batch_id="",
            )
            return
        collect_batch(caller, state, requests)
    finally:
        caller.close()
    JudgingRun.objects.filter(pk=run.pk).update(batch_id="", refresh=False)
    run.refresh = False
    _judge_pending(run, lease)
