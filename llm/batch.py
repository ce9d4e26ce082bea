"""The OpenAI Batch API as a provider: many requests in one uploaded file, half
the price, answers within 24 hours, collected into the call ledger.

What a request is and what to do with its answer is the caller's business
(a judging run, say): this module sends {request hash: Request}, polls the
batch, and writes each answer into the ledger under its request hash, once,
so that the ordinary path (`ModelCaller.complete`) then answers every request
from the ledger without calling.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from llm.calls import ModelCaller, Request
from llm.models import LLMCall
from llm.providers import OpenAICompatibleModel, ProviderSetupError, token_logprobs

BATCH_PRICE_FACTOR = 0.5  # OpenAI bills batch requests at half the price
WAITING = ("validating", "in_progress", "finalizing", "cancelling")


@dataclass(frozen=True)
class BatchState:
    id: str
    status: str  # OpenAI's words: validating, in_progress, ..., completed, failed, expired
    output_file_id: str | None = None
    created_at: datetime | None = None

    @property
    def waiting(self) -> bool:
        return self.status in WAITING


def batch_model(caller: ModelCaller) -> OpenAICompatibleModel:
    if not isinstance(caller.model, OpenAICompatibleModel):
        raise ProviderSetupError(
            f"{caller.endpoint}: the Batch API needs an OpenAI-compatible server."
        )
    return caller.model


def unanswered(caller: ModelCaller, requests: dict[str, Request]) -> dict[str, Request]:
    """The requests the ledger cannot answer (all of them when the run refreshes)."""
    if caller.refresh:
        return dict(requests)
    answered = set(
        LLMCall.objects.filter(
            request_hash__in=list(requests), status=LLMCall.Status.OK
        ).values_list("request_hash", flat=True)
    )
    return {digest: r for digest, r in requests.items() if digest not in answered}


def submit_batch(caller: ModelCaller, requests: dict[str, Request], label: str) -> BatchState:
    """Upload the requests as one JSON Lines file and create the batch."""
    client = batch_model(caller).client
    lines = "\n".join(
        json.dumps(
            {
                "custom_id": digest,
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"model": caller.model_name, "messages": r.messages, **r.params},
            }
        )
        for digest, r in requests.items()
    )
    upload = client.files.create(file=(f"{label}.jsonl", lines.encode()), purpose="batch")
    batch = client.batches.create(
        input_file_id=upload.id,
        endpoint="/v1/chat/completions",
        completion_window="24h",
        metadata={"concord": label},
    )
    return BatchState(batch.id, batch.status)


def poll_batch(caller: ModelCaller, batch_id: str) -> BatchState:
    batch = batch_model(caller).client.batches.retrieve(batch_id)
    return BatchState(
        batch.id,
        batch.status,
        batch.output_file_id,
        datetime.fromtimestamp(batch.created_at, tz=UTC),
    )


def collect_batch(caller: ModelCaller, state: BatchState, requests: dict[str, Request]) -> int:
    """Put a completed batch's answers into the ledger (billed at the batch
    price), once: an answer stored since the batch was created is not stored
    again (a step resumed after a worker died). Returns how many were stored."""
    assert state.output_file_id and state.created_at, "only a completed batch is collected"
    output = batch_model(caller).client.files.content(state.output_file_id).text
    config = caller.config
    stored = 0
    for line in output.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        digest = record.get("custom_id", "")
        if digest not in requests:
            continue
        request = requests[digest]
        if LLMCall.objects.filter(
            request_hash=digest, status=LLMCall.Status.OK, created_at__gte=state.created_at
        ).exists():
            continue  # collected before
        response = record.get("response") or {}
        body = response.get("body") or {}
        if response.get("status_code") != 200 or not body.get("choices"):
            error = record.get("error") or body.get("error") or response
            fields: dict[str, object] = {
                "status": LLMCall.Status.API_ERROR,
                "error": json.dumps(error)[:2000],
            }
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
                "token_logprobs": token_logprobs(choice.get("logprobs")),
            }
        caller.ledger.store(digest, request.messages, request.params, **fields)
        stored += 1
    return stored
