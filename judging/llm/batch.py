"""Judging through the OpenAI Batch API: half the price, answers within 24 h.

A batch run sends, in one uploaded file, every request the ledger cannot
already answer; the batch id is stored on the run, so a restarted worker
resumes polling instead of sending again. When the batch completes, its
answers go into the ledger and the ordinary executor judges every item from
there (answers that do not parse are re-asked at once, synchronously, with
new seeds).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from corpus.models import QuestionText
from judging.llm.config import JudgeConfig
from judging.llm.executor import _judge_pending, judge_caller
from judging.models import JudgeItem, JudgingRun
from judging.protocols import protocol_for
from llm.ledger import Ledger, request_hash
from llm.models import LLMCall
from llm.providers import OpenAICompatibleModel, ProviderSetupError
from runs.lifecycle import finish, holding_lease

BATCH_PRICE_FACTOR = 0.5  # OpenAI bills batch requests at half the price
WAITING = ("validating", "in_progress", "finalizing", "cancelling")


def pending_requests(run: JudgingRun, config: JudgeConfig) -> dict[str, tuple[list, dict]]:
    """{request hash: (messages, params)} for the run's pending items (first asks)."""
    items = JudgeItem.objects.filter(run=run, status=JudgeItem.Status.PENDING).select_related(
        "response", "opponent"
    )
    texts = {
        q: (t, r)
        for q, t, r in QuestionText.objects.filter(dataset=run.dataset).values_list(
            "question_id", "text", "reference_answer"
        )
    }
    requests: dict[str, tuple[list, dict]] = {}
    protocol = protocol_for(config)
    for item in items:
        question, reference = texts[item.response.question_id]
        messages = protocol.item_messages(item, question, reference)
        params = config.sampling(item.seed)
        requests[request_hash(config.endpoint, config.model, messages, params)] = (messages, params)
    return requests


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
    caller = judge_caller(config)
    if not isinstance(caller.model, OpenAICompatibleModel):
        raise ProviderSetupError(
            f"{config.endpoint}: the Batch API needs an OpenAI-compatible server."
        )
    client = caller.model.client  # the openai client: files and batches
    requests = pending_requests(run, config)
    if not run.batch_id:
        answered = (
            set()
            if run.refresh
            else set(
                LLMCall.objects.filter(
                    request_hash__in=list(requests), status=LLMCall.Status.OK
                ).values_list("request_hash", flat=True)
            )
        )
        to_send = {h: r for h, r in requests.items() if h not in answered}
        if not to_send:
            _judge_pending(run, lease)  # the ledger answers everything
            return
        lines = "\n".join(
            json.dumps(
                {
                    "custom_id": digest,
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": {"model": config.model, "messages": messages, **params},
                }
            )
            for digest, (messages, params) in to_send.items()
        )
        upload = client.files.create(
            file=(f"concord-run-{run.pk}.jsonl", lines.encode()), purpose="batch"
        )
        batch = client.batches.create(
            input_file_id=upload.id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata={"concord_run": str(run.pk)},
        )
        JudgingRun.objects.filter(pk=run.pk).update(
            batch_id=batch.id,
            batch_status=batch.status,
            requests=len(to_send),
        )
        return
    batch = client.batches.retrieve(run.batch_id)
    JudgingRun.objects.filter(pk=run.pk).update(batch_status=batch.status)
    if batch.status in WAITING:
        return
    if batch.status != "completed" or not batch.output_file_id:
        finish(
            run,
            JudgingRun.Status.FAILED,
            f"Batch {run.batch_id} ended {batch.status}: resume the run to send again.",
            batch_id="",
        )
        return
    since = datetime.fromtimestamp(batch.created_at, tz=UTC)
    collect(client.files.content(batch.output_file_id).text, requests, config, since, caller.ledger)
    JudgingRun.objects.filter(pk=run.pk).update(batch_id="", refresh=False)
    run.refresh = False
    _judge_pending(run, lease)


def collect(
    output: str,
    requests: dict[str, tuple[list, dict]],
    config: JudgeConfig,
    since: datetime,
    ledger: Ledger,
) -> int:
    """Put the batch's answers into the ledger (billed at the batch price), once:
    an answer stored since the batch was created is not stored again."""
    stored = 0
    for line in output.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        digest = record.get("custom_id", "")
        if digest not in requests:
            continue
        messages, params = requests[digest]
        if LLMCall.objects.filter(
            request_hash=digest, status=LLMCall.Status.OK, created_at__gte=since
        ).exists():
            continue  # collected before (a resumed step)
        response = record.get("response") or {}
        body = response.get("body") or {}
        if response.get("status_code") != 200 or not body.get("choices"):
            error = record.get("error") or body.get("error") or response
            fields = {"status": LLMCall.Status.API_ERROR, "error": json.dumps(error)[:2000]}
        else:
            choice, usage = body["choices"][0], body.get("usage") or {}
            prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
            fields = {
                "status": LLMCall.Status.OK,
                "raw_output": choice["message"].get("content") or "",
                "finish_reason": choice.get("finish_reason") or "",
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "cost": BATCH_PRICE_FACTOR
                * (
                    prompt * config.price_input_per_million
                    + completion * config.price_output_per_million
                )
                / 1e6,
                "system_fingerprint": body.get("system_fingerprint") or "",
            }
        ledger.store(digest, messages, params, **fields)
        stored += 1
    return stored
